package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// errUsage is what every bad flag or argument matches (errors.Is): runMain exits with
// status 2 on it.
var errUsage = errors.New("usage")

// usageError is a bad flag or argument. execute prints it on one line, followed by a
// pointer to the command's help; it matches errUsage.
type usageError struct {
	msg string // "" when the help was printed in its place (memory, memory models alone)
}

func (e *usageError) Error() string {
	if e.msg == "" {
		return errUsage.Error()
	}
	return e.msg
}

// Is makes every usage error match errUsage.
func (e *usageError) Is(target error) bool { return target == errUsage }

// usagef is a usage error with a formatted message.
func usagef(format string, a ...any) error {
	return &usageError{msg: fmt.Sprintf(format, a...)}
}

// errHelpShown is a usage error whose help was printed already (memory without a command).
var errHelpShown = &usageError{}

// flagsAnywhereHelp is what every command's help says about where flags go.
const flagsAnywhereHelp = `Flags may come before, between or after the arguments; "--" ends the flags (what
follows is arguments, even when it starts with "-"). A long flag takes one dash or two
(-store DIR is --store DIR).`

// runFunc is the body of a command: it runs with the positional arguments, writes results
// to stdout and diagnostics to stderr. A usage error (usagef) exits 2, another error 1.
type runFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// runE adapts run to cobra.
func runE(run runFunc) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		return run(c.Context(), args, c.OutOrStdout(), c.ErrOrStderr())
	}
}

// newCommand returns the command at path ("count", "models pull") with its synopsis, help
// and examples from commandHelp and short as its summary; run gets its positional
// arguments. The caller adds its flags.
func newCommand(path, short string, run runFunc) *cobra.Command {
	h, ok := commandHelp[path]
	if !ok || h.usage == "" || h.help == "" || h.example == "" {
		panic("memory: no help text for command " + path) // caught by every test run
	}
	name := path[strings.LastIndexByte(path, ' ')+1:]
	first, _, _ := strings.Cut(strings.TrimSpace(h.usage), "\n")
	c := &cobra.Command{
		Use:     name + strings.TrimPrefix(first, "memory "+path),
		Short:   short,
		Long:    strings.TrimSpace(h.help),
		Example: strings.TrimRight(h.example, "\n"),
	}
	if run != nil {
		c.RunE = runE(run)
	}
	return c
}

// newParentCommand returns a command that only selects one of subs (memory models,
// memory sop, memory runtime): alone it prints its help and exits 2, "help [SUB]" prints
// the help, another word is a usage error naming the subcommands.
func newParentCommand(path, short string, subs ...*cobra.Command) *cobra.Command {
	c := newCommand(path, short, nil)
	c.AddCommand(subs...)
	c.Args = cobra.ArbitraryArgs
	c.RunE = selectSubcommand
	return c
}

// selectSubcommand runs a command that only selects a subcommand, when none of its
// subcommands was named.
func selectSubcommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		printHelp(c.ErrOrStderr(), c)
		return errHelpShown
	}
	if args[0] == "help" {
		target := c
		if len(args) > 1 {
			if sub, _, err := c.Find(args[1:2]); err == nil && sub != c {
				target = sub
			}
		}
		printHelp(c.ErrOrStderr(), target)
		return nil
	}
	return usagef("unknown subcommand %q (%s)", capEcho(args[0]), subcommandNames(c))
}

// subcommandNames lists the subcommands of c for a message: "list, pull or path".
func subcommandNames(c *cobra.Command) string {
	var names []string
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() {
			names = append(names, s.Name())
		}
	}
	if len(names) < 2 {
		return "want " + strings.Join(names, "")
	}
	return "want " + strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// newRootCmd builds the whole command tree, writing to stdout and stderr. It is built anew
// for every run, so runs share no flag values (tests run the CLI in parallel).
func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "memory COMMAND [flags] [args]",
		Short: "index, search, evaluate and serve a memory store",
		Long: `memory indexes documents, code and passages into a store, searches it (BM25, dense and
hybrid, with reranking), evaluates retrieval and serves a store over HTTP and MCP.`,
		Example: `  memory index --store ./s docs/
  memory search --store ./s "how do I deploy"
  memory serve --store ./s --mcp
  source <(memory completion bash)`,
		Args:          cobra.ArbitraryArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		// A mistyped command word gets the commands at most two edits away.
		SuggestionsMinimumDistance: 2,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				printHelp(c.ErrOrStderr(), c)
				return errHelpShown
			}
			return unknownCommand(c, args[0])
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(
		newIndexCmd(),
		newSearchCmd(),
		newGetCmd(),
		newDeleteCmd(),
		newCountCmd(),
		newCompactCmd(),
		newCheckCmd(),
		newBackupCmd(),
		newRestoreCmd(),
		newExportCmd(),
		newImportCmd(),
		newCollectionsCmd(),
		newEvalCmd(),
		newServeCmd(),
		newModelsCmd(),
		newRuntimeCmd(),
		newTokenizeCmd(),
		newChunkCmd(),
		newSOPCmd(),
		newVersionCmd(),
	)
	root.SetHelpCommand(newHelpCmd())
	root.SetHelpFunc(func(c *cobra.Command, _ []string) { printHelp(c.ErrOrStderr(), c) })
	root.SetUsageFunc(func(c *cobra.Command) error {
		printHelp(c.ErrOrStderr(), c)
		return nil
	})
	// --v was the old spelling of -v (--verbose).
	root.SetGlobalNormalizationFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if name == "v" {
			name = "verbose"
		}
		return pflag.NormalizedName(name)
	})
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			describeCompletion(c)
		}
	}
	return root
}

// flagError returns the handler of a flag that cannot be parsed in a run with args: a usage
// error, or, when args ask for help (-h before a "--"), pflag.ErrHelp, on which cobra prints
// the help and the run exits 0, as the CLI did before it was built on cobra.
func flagError(args []string) func(*cobra.Command, error) error {
	return func(_ *cobra.Command, err error) error {
		for _, a := range args {
			switch a {
			case "--":
				return &usageError{msg: err.Error()}
			case "-h", "--help":
				return pflag.ErrHelp
			}
		}
		return &usageError{msg: err.Error()}
	}
}

// unknownCommand is the usage error of a command word memory does not know, with the
// commands it may have meant.
func unknownCommand(c *cobra.Command, word string) error {
	if s := c.SuggestionsFor(word); len(s) > 0 {
		return usagef("unknown command %q (did you mean %s?)", capEcho(word), strings.Join(s, " or "))
	}
	return usagef("unknown command %q", capEcho(word))
}

// newHelpCmd is `memory help [COMMAND...]`: the help of memory or of a command, on stderr
// as -h prints it.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND [SUBCOMMAND]]",
		Short: "show the help of memory or of a command (as COMMAND -h does)",
		Long: `Prints the help of memory (its commands) or of COMMAND: its synopsis, what it does, its
input formats, examples and flags.`,
		Example: `  memory help
  memory help search
  memory help models pull`,
		Args: cobra.ArbitraryArgs,
		ValidArgsFunction: func(c *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			target, _, err := c.Root().Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []cobra.Completion
			for _, s := range target.Commands() {
				if s.IsAvailableCommand() {
					names = append(names, cobra.CompletionWithDesc(s.Name(), s.Short))
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := c.Root().Find(args)
			if err != nil {
				return err
			}
			if len(rest) > 0 {
				return unknownCommand(target, rest[0])
			}
			printHelp(c.ErrOrStderr(), target)
			return nil
		},
	}
}

// describeCompletion gives cobra's completion command and its shell subcommands examples,
// and makes the completion command select a shell as models selects a subcommand.
func describeCompletion(c *cobra.Command) {
	c.Args = cobra.ArbitraryArgs
	c.RunE = selectSubcommand
	c.Short = "print the shell completion script for bash, zsh, fish or powershell"
	c.Example = `  source <(memory completion bash)
  memory completion zsh > "${fpath[1]}/_memory"
  memory completion fish > ~/.config/fish/completions/memory.fish`
	for _, s := range c.Commands() {
		switch s.Name() {
		case "bash":
			s.Example = "  source <(memory completion bash)\n  memory completion bash > /etc/bash_completion.d/memory"
		case "zsh":
			s.Example = `  memory completion zsh > "${fpath[1]}/_memory"`
		case "fish":
			s.Example = "  memory completion fish > ~/.config/fish/completions/memory.fish"
		case "powershell":
			s.Example = "  memory completion powershell | Out-String | Invoke-Expression"
		}
	}
}

// execute runs the CLI with args: it prints a usage error as one line and a pointer to
// the command's help, another error as "memory COMMAND: error", and returns the error.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	root := newRootCmd(stdout, stderr)
	args = legacyArgs(root, args)
	root.SetFlagErrorFunc(flagError(args))
	if isCompletionRequest(args) {
		registerCompletions(root)
	}
	root.SetArgs(args)
	c, err := root.ExecuteContextC(ctx)
	if err == nil {
		return nil
	}
	if c == nil {
		c = root
	}
	var ue *usageError
	if errors.As(err, &ue) {
		if ue.msg != "" {
			fmt.Fprintf(stderr, "%s: %s\nRun '%s --help' for usage.\n", c.CommandPath(), ue.msg, c.CommandPath())
		}
		return err
	}
	fmt.Fprintf(stderr, "%s: %v\n", topCommandPath(c), err)
	return err
}

// topCommandPath is "memory NAME" for the top-level command c is (or is under), as errors
// name it.
func topCommandPath(c *cobra.Command) string {
	for c.HasParent() && c.Parent().HasParent() {
		c = c.Parent()
	}
	return c.CommandPath()
}

// legacyArgs rewrites what the CLI accepted before it was built on cobra into what cobra
// parses: --version and -version as the first word (memory version), COMMAND help
// (COMMAND --help, for a command without subcommands), and single-dash long flags (see
// gnuArgs).
func legacyArgs(root *cobra.Command, args []string) []string {
	args = slices.Clone(args)
	if args == nil {
		args = []string{} // cobra reads os.Args when given nil
	}
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		args[0] = "version"
	}
	if len(args) > 0 && args[0] == "-help" {
		args[0] = "--help"
	}
	if len(args) > 1 && args[1] == "help" {
		if c, _, err := root.Find(args[:1]); err == nil && c != root && !c.HasSubCommands() {
			return []string{args[0], "--help"}
		}
	}
	if isCompletionRequest(args) {
		// The words of the command line being completed, but the last (being typed).
		if len(args) > 2 {
			return slices.Concat(args[:1], gnuArgs(root, args[1:len(args)-1]), args[len(args)-1:])
		}
		return args
	}
	return gnuArgs(root, args)
}

// gnuArgs rewrites each single-dash long flag of the command args name ("-store DIR",
// "-json", "-k1=0.9": the standard flag package's form, which scripts written for the
// earlier CLI use) into its double-dash form. A word is rewritten only when it names a long
// flag of the command; shorthands (-k 5, -v) and clusters of them are left as they are,
// and so are the values of flags and everything after "--".
func gnuArgs(root *cobra.Command, args []string) []string {
	c, _, err := root.Find(args)
	if err != nil || c == nil {
		return args
	}
	fs := c.Flags()
	out := slices.Clone(args)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if a == "--" {
			break
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		if a == "-help" {
			out[i] = "--help"
			continue
		}
		var f *pflag.Flag
		if strings.HasPrefix(a, "--") {
			name, _, hasValue := strings.Cut(a[2:], "=")
			if f = fs.Lookup(name); hasValue {
				continue
			}
		} else {
			name, _, hasValue := strings.Cut(a[1:], "=")
			long := fs.Lookup(name)
			switch {
			case len(name) == 1 && fs.ShorthandLookup(name) != nil:
				f = fs.ShorthandLookup(name)
			case long != nil:
				out[i] = "-" + a
				f = long
			default:
				continue // a cluster of shorthands, or an unknown flag for pflag to report
			}
			if hasValue {
				continue
			}
		}
		if f != nil && f.NoOptDefVal == "" {
			i++ // its value: the next word, whatever it looks like
		}
	}
	return out
}

// isCompletionRequest reports whether args are the shell completion's request for
// candidates (cobra's hidden __complete command).
func isCompletionRequest(args []string) bool {
	return len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd)
}

// noArgs is the usage error of a command that takes no arguments given some.
func noArgs(args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q (this command takes none)", capEcho(args[0]))
	}
	return nil
}
