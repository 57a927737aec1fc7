// Command memory indexes, searches, evaluates and serves a memory store.
//
//	memory index       --store DIR [--collection C] [--sync] [--strict] PATH... | --code DIR
//	memory search      --store DIR [--json] [--where JSON] QUERY
//	memory get         --store DIR [--collection C] [--json] ID...
//	memory delete      --store DIR [--collection C] ID... | --where JSON | --source PATH
//	memory count       --store DIR [--collection C]
//	memory check       --store DIR [--repair]
//	memory backup      --store DIR OUT
//	memory restore     ARCHIVE --store NEWDIR [--check]
//	memory export      --store DIR [--collection C] OUT.jsonl
//	memory import      --store DIR [--collection C] IN.jsonl
//	memory collections --store DIR [--json] | --delete NAME
//	memory eval        --data DIR --mode bm25|dense|hybrid [--embedder M] [--reranker M] [--run-out FILE]
//	memory serve       --store DIR [--retrieve ADDR] [--mcp | --mcp-http ADDR]
//	memory models      list | pull NAME | path NAME
//	memory runtime     pull | path
//	memory tokenize    --model NAME_OR_DIR [--pair] TEXT...
//	memory chunk       [--json] FILE...
//	memory sop         match | list | render --dir DIR ...
//	memory version
//	memory help
//
// Read commands (search, get, count, collections, eval --store, serve) never create a store
// or a collection. Every command's -h explains its flags and input formats and exits 0.
//
// Each subcommand lives in its own file and registers itself in init with [register].
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// command is one subcommand of the CLI.
type command struct {
	name    string
	summary string // one line for `memory help`
	// run executes the subcommand with its arguments (after the name). It writes results to
	// stdout and diagnostics to stderr; a returned error is printed and exits 1, and
	// errUsage exits 2.
	run func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

// register adds a subcommand; it panics on a duplicate name.
func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("duplicate command " + c.name)
	}
	commands[c.name] = c
}

// errUsage reports bad arguments; the flag package has already printed the details.
var errUsage = errors.New("usage")

// newFlags returns a FlagSet for a subcommand that reports errors instead of exiting. Its
// usage text is the command's synopsis and help (see commandHelp), then the flags.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("memory "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { printCommandHelp(fs.Output(), name, fs) }
	return fs
}

// printCommandHelp writes the synopsis, the help text and the flags of a command.
func printCommandHelp(w io.Writer, name string, fs *flag.FlagSet) {
	c := commands[name]
	h := commandHelp[name]
	synopsis, help := h.usage, h.help
	if synopsis == "" {
		synopsis = "memory " + name + " [flags]"
	}
	fmt.Fprintf(w, "usage: %s\n", strings.ReplaceAll(strings.TrimSpace(synopsis), "\n", "\n       "))
	if c.summary != "" {
		fmt.Fprintf(w, "\n%s.\n", strings.TrimSuffix(c.summary, "."))
	}
	if help != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(help))
	}
	if fs != nil {
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(w, "\nflags:")
			fs.PrintDefaults()
		}
	}
}

// wantsHelp reports whether args (before a "--") ask for help.
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// parseFlags parses args; -h prints the command's help and gives flag.ErrHelp (exit 0), a
// bad flag gives errUsage (exit 2).
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(runMain(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "memory: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	if len(args) > 1 && args[1] == "help" {
		if _, sub := subcommandHelp[args[0]]; !sub {
			args = []string{args[0], "-h"}
		}
	}
	if err := c.run(ctx, args[1:], stdout, stderr); err != nil {
		// -h is not an error, whichever way the command reports it.
		if errors.Is(err, flag.ErrHelp) || (errors.Is(err, errUsage) && wantsHelp(args[1:])) {
			return 0
		}
		if errors.Is(err, errUsage) {
			return 2
		}
		fmt.Fprintf(stderr, "memory %s: %v\n", c.name, err)
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: memory <command> [flags] [args]   (memory <command> -h: its flags and input formats)\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].summary)
	}
}
