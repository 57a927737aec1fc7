package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentmem/memory/sop"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newSOPCmd() *cobra.Command {
	var mf sopFlags
	var mo sopMatchOptions
	match := newCommand("sop match", "print the procedures that apply to a task, best first", func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		return sopMatch(ctx, mf, mo, args, stdout, stderr)
	})
	match.ValidArgsFunction = cobra.NoFileCompletions
	fs := match.Flags()
	mf.register(fs)
	fs.BoolVar(&mo.asJSON, "json", false, "print one JSON object per match")
	fs.IntVarP(&mo.n, "n", "n", 5, "most matches to print (0 = all)")
	fs.StringVar(&mo.category, "category", "", "only procedures of this `CATEGORY`")

	var lf sopFlags
	var lo sopMatchOptions
	list := newCommand("sop list", "list the procedures of a folder", func(_ context.Context, args []string, stdout, stderr io.Writer) error {
		return sopList(lf, lo, args, stdout, stderr)
	})
	list.ValidArgsFunction = cobra.NoFileCompletions
	fs = list.Flags()
	lf.register(fs)
	fs.BoolVar(&lo.asJSON, "json", false, "print each procedure as one JSON object")
	fs.StringVar(&lo.category, "category", "", "only procedures of this `CATEGORY`")

	var rf sopFlags
	var query string
	render := newCommand("sop render", "print a procedure as the steps an agent follows", func(_ context.Context, args []string, stdout, stderr io.Writer) error {
		return sopRender(rf, query, args, stdout, stderr)
	})
	render.ValidArgsFunction = cobra.NoFileCompletions
	fs = render.Flags()
	rf.register(fs)
	fs.StringVar(&query, "query", "", "the task to show above the steps")

	return newParentCommand("sop", "procedural memory: sop match|list|render --dir DIR", match, list, render)
}

// sopMatchOptions are the flags of sop match and sop list beside sopFlags.
type sopMatchOptions struct {
	asJSON   bool
	n        int
	category string
}

// sopFlags are the flags every sop subcommand takes.
type sopFlags struct {
	dir    string
	strict bool
}

// register adds --dir and --strict to fs.
func (f *sopFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.dir, "dir", "", "the folder `DIR` of procedure files (*.json, *.yaml, *.yml) (required)")
	fs.BoolVar(&f.strict, "strict", false, "reject procedures with unknown fields")
	completeDirs(fs, "dir")
}

// load loads the library, reporting invalid procedures on stderr without failing: the
// valid ones are still used. A missing or unreadable directory is an error.
func (f *sopFlags) load(stderr io.Writer) (*sop.Library, error) {
	if f.dir == "" {
		return nil, usagef("--dir DIR is required")
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

func sopMatch(ctx context.Context, f sopFlags, o sopMatchOptions, args []string, stdout, stderr io.Writer) error {
	query := strings.TrimSpace(strings.Join(args, " "))
	if query == "" {
		return usagef("a QUERY is required")
	}
	lib, err := f.load(stderr)
	if err != nil {
		return err
	}
	ms, err := lib.MatchContext(ctx, query, o.n, sop.MatchOptions{Category: o.category})
	if err != nil {
		return err
	}
	if len(ms) == 0 {
		fmt.Fprintf(stderr, "memory sop match: no procedure matches %q\n", query)
		return nil
	}
	enc := json.NewEncoder(stdout)
	for _, m := range ms {
		if o.asJSON {
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

func sopList(f sopFlags, o sopMatchOptions, args []string, stdout, stderr io.Writer) error {
	if err := noArgs(args); err != nil {
		return err
	}
	lib, err := f.load(stderr)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	for _, s := range lib.List(o.category) {
		if o.asJSON {
			if err := enc.Encode(s); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(stdout, "%s\t%s\t%d\t%s\n", s.Name, s.Category, s.Priority, s.Description)
	}
	return nil
}

func sopRender(f sopFlags, query string, args []string, stdout, stderr io.Writer) error {
	if len(args) != 1 {
		return usagef("exactly one procedure NAME is required")
	}
	lib, err := f.load(stderr)
	if err != nil {
		return err
	}
	s, err := lib.Get(args[0])
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, sop.Render(s, sop.RenderContext{Query: query}))
	return err
}
