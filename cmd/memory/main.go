// Command memory indexes, searches, evaluates and serves a memory store.
//
//	memory index    --store DIR [--collection C] PATH... | --code DIR
//	memory search   --store DIR [--json] [--where JSON] QUERY
//	memory eval     --data DIR --mode bm25|dense|hybrid [--embedder M] [--reranker M] [--run-out FILE]
//	memory serve    --store DIR [--retrieve ADDR] [--mcp | --mcp-http ADDR]
//	memory models   list | pull NAME | path NAME
//	memory tokenize --model NAME_OR_DIR [--pair] TEXT...
//	memory chunk    [--json] FILE...
//	memory sop      match | list | render --dir DIR ...
//	memory help
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

// newFlags returns a FlagSet for a subcommand that reports errors instead of exiting.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("memory "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
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
	if err := c.run(ctx, args[1:], stdout, stderr); err != nil {
		if errors.Is(err, errUsage) || errors.Is(err, flag.ErrHelp) {
			return 2
		}
		fmt.Fprintf(stderr, "memory %s: %v\n", c.name, err)
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: memory <command> [flags] [args]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
}
