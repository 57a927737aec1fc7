package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/agentmem/memory/sop"
)

func init() {
	register(command{
		name:    "sop",
		summary: "procedural memory: sop match|list|render --dir DIR",
		run:     runSOP,
	})
}

const sopUsage = `usage:
  memory sop match  --dir DIR [--json] [-n N] [--category C] [--strict] QUERY
  memory sop list   --dir DIR [--json] [--category C] [--strict]
  memory sop render --dir DIR [--query Q] [--strict] NAME

match prints the procedures that apply to QUERY, best first (name, score, matched
triggers; one JSON object each with --json). When none applies it prints
"no procedure matches QUERY" on stderr, nothing on stdout, and exits with status 0.
`

func runSOP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, sopUsage)
		return errUsage
	}
	switch args[0] {
	case "match":
		return sopMatch(ctx, args[1:], stdout, stderr)
	case "list":
		return sopList(args[1:], stdout, stderr)
	case "render":
		return sopRender(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, sopUsage)
		return nil
	}
	fmt.Fprintf(stderr, "memory sop: unknown subcommand %q\n%s", args[0], sopUsage)
	return errUsage
}

// parseInterspersed parses flags that may come after positional arguments
// ("match QUERY --dir D", see parseFlags) and returns the positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	return fs.Args(), nil
}

// sopFlags are the flags every sop subcommand takes.
type sopFlags struct {
	dir    string
	strict bool
}

func (f *sopFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.dir, "dir", "", "directory of procedure files (*.json, *.yaml, *.yml)")
	fs.BoolVar(&f.strict, "strict", false, "reject procedures with unknown fields")
}

// load loads the library, reporting invalid procedures on stderr without failing: the
// valid ones are still used. A missing or unreadable directory is an error.
func (f *sopFlags) load(stderr io.Writer) (*sop.Library, error) {
	if f.dir == "" {
		fmt.Fprintln(stderr, "memory sop: --dir is required")
		return nil, errUsage
	}
	return loadSOPs(f.dir, sop.Options{Strict: f.strict}, stderr)
}

// loadSOPs loads the procedures of dir; invalid files are warnings on stderr (the valid
// procedures are still used), a missing or unreadable directory an error.
func loadSOPs(dir string, opts sop.Options, stderr io.Writer) (*sop.Library, error) {
	lib, err := sop.LoadDir(dir, opts)
	if err != nil {
		if !errors.Is(err, sop.ErrInvalid) {
			return nil, err
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(stderr, "warning: %s\n", line)
		}
	}
	return lib, nil
}

func sopMatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sop match", stderr)
	var f sopFlags
	f.register(fs)
	asJSON := fs.Bool("json", false, "print one JSON object per match")
	n := fs.Int("n", 5, "most matches to print (0 = all)")
	category := fs.String("category", "", "only procedures of this category")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	query := strings.TrimSpace(strings.Join(pos, " "))
	if query == "" {
		fmt.Fprintln(stderr, "memory sop match: a QUERY is required")
		return errUsage
	}
	lib, err := f.load(stderr)
	if err != nil {
		return err
	}
	ms, err := lib.MatchContext(ctx, query, *n, sop.MatchOptions{Category: *category})
	if err != nil {
		return err
	}
	if len(ms) == 0 {
		fmt.Fprintf(stderr, "memory sop match: no procedure matches %q\n", query)
		return nil
	}
	enc := json.NewEncoder(stdout)
	for _, m := range ms {
		if *asJSON {
			trig := m.MatchedTriggers
			if trig == nil {
				trig = []string{}
			}
			if err := enc.Encode(struct {
				Name            string   `json:"name"`
				Score           float64  `json:"score"`
				MatchedTriggers []string `json:"matched_triggers"`
			}{m.SOP.Name, m.Score, trig}); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(stdout, "%s\t%.2f\t%s\n", m.SOP.Name, m.Score, strings.Join(m.MatchedTriggers, ", "))
	}
	return nil
}

func sopList(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sop list", stderr)
	var f sopFlags
	f.register(fs)
	asJSON := fs.Bool("json", false, "print each procedure as one JSON object")
	category := fs.String("category", "", "only procedures of this category")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "memory sop list: unexpected argument %q\n", pos[0])
		return errUsage
	}
	lib, err := f.load(stderr)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	for _, s := range lib.List(*category) {
		if *asJSON {
			if err := enc.Encode(s); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(stdout, "%s\t%s\t%d\t%s\n", s.Name, s.Category, s.Priority, s.Description)
	}
	return nil
}

func sopRender(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sop render", stderr)
	var f sopFlags
	f.register(fs)
	query := fs.String("query", "", "task to show above the steps")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "memory sop render: exactly one procedure NAME is required")
		return errUsage
	}
	lib, err := f.load(stderr)
	if err != nil {
		return err
	}
	s, err := lib.Get(pos[0])
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, sop.Render(s, sop.RenderContext{Query: *query}))
	return err
}
