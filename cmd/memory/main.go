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
//	memory collections --store DIR [--json] | --create NAME | --set-metadata NAME JSON | --set-analyzer NAME X | --delete NAME | --rename OLD NEW
//	memory eval        --data DIR --mode bm25|dense|hybrid [--embedder M] [--reranker M] [--run-out FILE]
//	memory serve       --store DIR [--retrieve ADDR] [--mcp | --mcp-http ADDR]
//	memory models      list | pull NAME | path NAME
//	memory runtime     pull | path
//	memory tokenize    --model NAME_OR_DIR [--pair] TEXT...
//	memory chunk       [--json] FILE...
//	memory sop         match | list | render --dir DIR ...
//	memory version     (or memory --version)
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

// flagsAnywhereHelp is what every command's -h says about where flags go.
const flagsAnywhereHelp = `Flags may come before, between or after the arguments; "--" ends the flags (what
follows is arguments, even when it starts with "-").`

// parseFlags parses args with flags anywhere among the arguments (see interspersed): every
// command parses its flags with it, so `memory search --store S "q" --json` means --json.
// -h prints the command's help and gives flag.ErrHelp (exit 0), a bad flag gives errUsage
// (exit 2). fs.Args() are then the positional arguments in their order.
func parseFlags(fs *flag.FlagSet, args []string) error {
	usage := fs.Usage
	fs.Usage = func() {
		if usage != nil {
			usage()
		}
		fmt.Fprintf(fs.Output(), "\n%s\n", flagsAnywhereHelp)
	}
	if err := fs.Parse(interspersed(fs, args)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	return nil
}

// interspersed reorders args so that the flag package, which stops at the first
// argument that is not a flag, sees every flag: the flags (each with its value when it
// takes one as the next argument) first, in their order, then "--", then the positional
// arguments in their order. An argument is a flag when it starts with "-" and is not "-"
// alone; "--" ends the flags, and everything after it is positional. Whether a flag takes
// the next argument as its value is read from fs (a boolean flag does not; "-name=value"
// never does); an unknown flag is left for fs.Parse to report.
func interspersed(fs *flag.FlagSet, args []string) []string {
	flags := make([]string, 0, len(args)+1)
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimPrefix(a[1:], "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil || isBoolFlag(f) {
			continue
		}
		if i+1 == len(args) {
			return flags // its value is missing: fs.Parse says so (it would take "--")
		}
		i++
		flags = append(flags, args[i])
	}
	return append(append(flags, "--"), pos...)
}

// isBoolFlag reports whether f is a boolean flag (one that takes no separate value).
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
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
	if args[0] == "--version" || args[0] == "-version" {
		args = append([]string{"version"}, args[1:]...)
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "memory: unknown command %q\n", capEcho(args[0]))
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
	fmt.Fprintln(w, "usage: memory <command> [flags] [args]   (memory <command> -h: its flags and input formats)")
	fmt.Fprintf(w, "\n%s\n\ncommands:\n", flagsAnywhereHelp)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].summary)
	}
}
