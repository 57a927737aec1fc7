package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// findCommand returns the command at path (["models", "pull"]) of a fresh tree.
func findCommand(t *testing.T, path ...string) *cobra.Command {
	t.Helper()
	root := newRootCmd(io.Discard, io.Discard)
	root.InitDefaultHelpCmd()
	c, rest, err := root.Find(path)
	if err != nil || len(rest) != 0 || c == root {
		t.Fatalf("no command %q (%v, rest %q)", path, err, rest)
	}
	return c
}

// storeGroupFlags are the flags of opening a store; embedderFlags and indexFlags those of
// the embedder and of the dense index (see storeFlags.addEmbedder and addIndex).
var (
	embedderFlags = []string{"embedder", "query-prefix", "passage-prefix", "model-preset", "query-max-tokens", "passage-max-tokens", "device"}
	indexFlags    = []string{"index", "faiss-factory", "index-param", "rebuild-index", "vector-precision"}
	rankFlags     = []string{"reranker", "bm25-scoring"}
)

// TestCommandFlagSets: each command has the flags it uses and none of the groups it does
// not (issue #42: count -h listed --reranker and --faiss-factory).
func TestCommandFlagSets(t *testing.T) {
	cat := func(groups ...[]string) []string { return slices.Concat(groups...) }
	tests := []struct {
		path    string
		has     []string
		hasNone []string
	}{
		{"count", []string{"store", "collection", "lock-timeout", "verbose"}, cat(embedderFlags, indexFlags, rankFlags, []string{"reembed", "json"})},
		{"get", []string{"store", "collection", "json", "vectors", "lock-timeout"}, cat(embedderFlags, indexFlags, rankFlags)},
		{"delete", []string{"store", "collection", "where", "source"}, cat(embedderFlags, indexFlags, rankFlags)},
		{"check", []string{"store", "repair", "verbose"}, cat(embedderFlags, indexFlags, rankFlags)},
		{"collections", []string{"store", "create", "rename", "to", "analyzer", "metadata", "json"}, cat(embedderFlags, indexFlags, rankFlags)},
		{"restore", []string{"store", "check"}, cat(embedderFlags, indexFlags, rankFlags)},
		{"backup", []string{"store"}, cat(embedderFlags, indexFlags, rankFlags, []string{"collection", "lock-timeout"})},
		{"export", []string{"store", "collection"}, cat(embedderFlags, indexFlags, rankFlags, []string{"lock-timeout"})},
		{"import", cat([]string{"store", "collection", "batch", "reembed"}, embedderFlags, indexFlags), rankFlags},
		{"index", cat([]string{"store", "collection", "analyzer", "sync", "strict", "code", "vectors", "embedder-id", "compat", "chunk", "reembed", "verbose"}, embedderFlags, indexFlags),
			cat(rankFlags, []string{"rerank", "json", "k"})},
		{"search", cat([]string{"store", "collection", "mode", "k", "rerank", "json", "cascade", "llm-reranker"}, embedderFlags, indexFlags, rankFlags),
			[]string{"reembed", "sync", "batch", "analyzer"}},
		{"serve", cat([]string{"store", "collection", "retrieve", "mcp", "mcp-http", "reembed"}, embedderFlags, indexFlags, rankFlags), []string{"json", "k"}},
		{"eval", cat([]string{"data", "store", "keep", "mode", "k", "k1", "b", "qa", "generator", "lock-timeout"}, embedderFlags, indexFlags, rankFlags), []string{"collection"}},
		{"models info", []string{"model-preset", "query-max-tokens", "passage-max-tokens", "store"}, []string{"embedder", "device", "lock-timeout"}},
		{"models pull", []string{"base-url", "cache", "retries"}, []string{"store"}},
		{"chunk", []string{"json", "budget", "language"}, []string{"store", "verbose"}},
		{"tokenize", []string{"model", "pair", "max-length"}, []string{"store", "embedder"}},
		{"sop match", []string{"dir", "strict", "json", "n", "category"}, []string{"store"}},
		{"runtime pull", []string{"url", "dir", "force"}, []string{"store"}},
		{"version", nil, []string{"store", "verbose"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			fs := findCommand(t, strings.Fields(tt.path)...).Flags()
			for _, n := range tt.has {
				if fs.Lookup(n) == nil {
					t.Errorf("no --%s", n)
				}
			}
			for _, n := range tt.hasNone {
				if fs.Lookup(n) != nil {
					t.Errorf("--%s, which it does not use", n)
				}
			}
		})
	}
	// What the issue saw: count -h without the embedder and index flags.
	_, help := mustCLI(t, 0, "count", "-h")
	for _, f := range []string{"--reranker", "--faiss-factory", "--embedder", "--device"} {
		if strings.Contains(help, f) {
			t.Errorf("count -h lists %s:\n%s", f, help)
		}
	}
}

// TestHelpEveryCommand: every command (and subcommand) has a summary, a description and
// examples, its help names each flag in GNU form with one "(default ...)" at most, and each
// flag its synopsis names exists.
func TestHelpEveryCommand(t *testing.T) {
	synopsisFlag := regexp.MustCompile(`--([a-z0-9][a-z0-9-]*)`)
	for _, inv := range everyInvocation(t) {
		t.Run(strings.Join(inv, "_"), func(t *testing.T) {
			c := findCommand(t, inv...)
			if c.Short == "" || c.Long == "" || c.Example == "" {
				t.Errorf("short %q, long %d bytes, example %q: want all three", c.Short, len(c.Long), c.Example)
			}
			c.InitDefaultHelpFlag()
			c.Flags().VisitAll(func(f *pflag.Flag) {
				one := pflag.NewFlagSet("one", pflag.ContinueOnError)
				one.AddFlag(f)
				if line := one.FlagUsagesWrapped(0); strings.Count(line, "(default") > 1 {
					t.Errorf("--%s says its default twice: %s", f.Name, line)
				}
			})
			for _, line := range synopsis(c) {
				if c.HasSubCommands() || strings.HasPrefix(line, "memory --") {
					continue // its subcommands' synopses; memory --version
				}
				for _, m := range synopsisFlag.FindAllStringSubmatch(line, -1) {
					if c.Flags().Lookup(m[1]) == nil {
						t.Errorf("its synopsis names --%s, which it has not: %s", m[1], line)
					}
				}
			}
			_, help := mustCLI(t, 0, append(slices.Clone(inv), "--help")...)
			for _, line := range strings.Split(help, "\n") {
				if strings.Count(line, "(default") > 1 {
					t.Errorf("a help line repeats its default: %q", line)
				}
				if regexp.MustCompile(`^\s+-[a-z][a-z-]+ `).MatchString(line) {
					t.Errorf("a flag in single-dash form: %q", line)
				}
			}
			for _, want := range []string{"usage: memory", "Examples:", "Flags:", "--help", `"--" ends the flags`} {
				if !strings.Contains(help, want) {
					t.Errorf("the help lacks %q:\n%s", want, help)
				}
			}
		})
	}
	// serve -h describes what it serves (issue #42: it printed its flags only).
	if _, help := mustCLI(t, 0, "serve", "-h"); !strings.Contains(help, "Search-R1's POST /retrieve") {
		t.Errorf("serve -h has no description:\n%s", help)
	}
	// search -h says one thing of --rerank: no reranking by default with --reranker, 20
	// candidates with --llm-reranker.
	_, help := mustCLI(t, 0, "search", "-h")
	if strings.Contains(help, "(0: off)") || strings.Contains(help, "--rerank N (default 20)") || !strings.Contains(help, "the top 20 unless --rerank N") {
		t.Errorf("search -h on --rerank:\n%s", help)
	}
}

// TestUsageErrorsOneLine: a bad flag or argument prints one line naming it and one line
// pointing at the command's help, nothing on stdout, and exits 2.
func TestUsageErrorsOneLine(t *testing.T) {
	store := t.TempDir()
	tests := []struct {
		args []string
		path string // the command the pointer names
		msg  string // in the first line
	}{
		{[]string{"count", "--bogus"}, "memory count", "unknown flag: --bogus"},
		{[]string{"count", "--store", store, "extra"}, "memory count", `unexpected argument "extra"`},
		{[]string{"count"}, "memory count", "--store DIR is required"},
		{[]string{"count", "--store", store, "--reranker", "x"}, "memory count", "unknown flag: --reranker"},
		{[]string{"count", "-x"}, "memory count", "unknown shorthand flag: 'x' in -x"},
		{[]string{"search", "--store", store}, "memory search", "no QUERY given"},
		{[]string{"search", "--store", store, "-k", "many", "q"}, "memory search", `invalid argument "many"`},
		{[]string{"search", "q", "--store"}, "memory search", "flag needs an argument: --store"},
		{[]string{"index", "--store", store}, "memory index", "nothing to index"},
		{[]string{"delete", "--store", store}, "memory delete", "nothing to delete"},
		{[]string{"eval"}, "memory eval", "--data DIR (a BEIR folder) is required"},
		{[]string{"serve", "--store", store}, "memory serve", "nothing to serve"},
		{[]string{"serve", "--store", store, "--mcp", "--mode", "magic"}, "memory serve", `--mode "magic"`},
		{[]string{"models", "frobnicate"}, "memory models", `unknown subcommand "frobnicate"`},
		{[]string{"models", "path"}, "memory models path", "want one model NAME"},
		{[]string{"sop", "match", "--dir", "d"}, "memory sop match", "a QUERY is required"},
		{[]string{"tokenize", "text"}, "memory tokenize", "--model is required"},
		{[]string{"chunk"}, "memory chunk", "no FILE given"},
		{[]string{"version", "now"}, "memory version", `unexpected argument "now"`},
		{[]string{"completion", "tcsh"}, "memory completion", `unknown subcommand "tcsh" (want bash, fish, powershell or zsh)`},
		{[]string{"serch", "q"}, "memory", `unknown command "serch" (did you mean search`},
		{[]string{"help", "nope"}, "memory help", `unknown command "nope"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errs := cli(t, tt.args...)
			lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
			if code != 2 || out != "" || len(lines) != 2 {
				t.Fatalf("exit %d, stdout %q, %d lines on stderr, want 2, nothing and 2:\n%s", code, out, len(lines), errs)
			}
			if !strings.HasPrefix(lines[0], tt.path+": ") || !strings.Contains(lines[0], tt.msg) {
				t.Errorf("first line %q, want %q and %q", lines[0], tt.path+": ", tt.msg)
			}
			if want := fmt.Sprintf("Run '%s --help' for usage.", tt.path); lines[1] != want {
				t.Errorf("second line %q, want %q", lines[1], want)
			}
		})
	}
	// Help asked for beside a bad flag is still help (exit 0), as before.
	if code, _, errs := cli(t, "search", "--bogus", "-h"); code != 0 || !strings.Contains(errs, "usage: memory search") {
		t.Errorf("search --bogus -h: exit %d\n%s", code, errs)
	}
	// A missing command word prints the commands and exits 2; the words that asked for
	// help exit 0.
	if _, errs := mustCLI(t, 2); !strings.Contains(errs, "Commands:") || !strings.Contains(errs, "completion") {
		t.Errorf("memory alone:\n%s", errs)
	}
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}, {"-help"}, {"help", "search"}, {"search", "help"}, {"models", "help", "pull"}} {
		if _, errs := mustCLI(t, 0, args...); !strings.Contains(errs, "usage: memory") {
			t.Errorf("%q:\n%s", args, errs)
		}
	}
	if _, errs := mustCLI(t, 0, "models", "help", "pull"); !strings.Contains(errs, "usage: memory models pull") {
		t.Errorf("models help pull:\n%s", errs)
	}
}

// TestCompletion: memory completion writes each shell's script to stdout, and the shell's
// requests complete the values of flags (--mode, --analyzer, --store folders, model names)
// and each command's own flags only.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		out, errs := mustCLI(t, 0, "completion", shell)
		if len(out) < 1000 || !strings.Contains(out, "memory") || errs != "" {
			t.Errorf("completion %s: %d bytes (stderr %q):\n%.300s", shell, len(out), errs, out)
		}
	}
	if out, _ := mustCLI(t, 0, "completion", "bash"); !strings.Contains(out, "__start_memory") {
		t.Errorf("the bash script does not define __start_memory")
	}
	tests := []struct {
		args      []string
		want      []string
		wantNot   []string
		directive string
	}{
		{[]string{"search", "--mode", ""}, []string{"hybrid", "bm25", "dense"}, nil, ":4"},
		{[]string{"serve", "--store", "s", "--mode", "b"}, []string{"bm25"}, nil, ":4"},
		{[]string{"index", "--analyzer", ""}, []string{"en", "en_lucene", "cjk"}, nil, ":4"},
		{[]string{"search", "--store", ""}, nil, nil, ":16"},
		{[]string{"search", "-store", "s", "--device", ""}, []string{"cpu", "cuda", "auto"}, nil, ":4"},
		{[]string{"models", "pull", ""}, []string{"all-MiniLM-L6-v2"}, nil, ":4"},
		{[]string{"search", "--embedder", ""}, []string{"all-MiniLM-L6-v2"}, []string{"ms-marco-MiniLM-L-6-v2"}, ":0"},
		{[]string{"count", "--"}, []string{"--store", "--collection"}, []string{"--reranker", "--faiss-factory", "--embedder"}, ":4"},
		{[]string{""}, []string{"search", "completion", "serve"}, []string{"__complete"}, ":4"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, _ := mustCLI(t, 0, append([]string{"__complete"}, tt.args...)...)
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				got = append(got, strings.SplitN(line, "\t", 2)[0])
			}
			if len(got) == 0 || got[len(got)-1] != tt.directive {
				t.Errorf("directive %q, want %q:\n%s", got, tt.directive, out)
			}
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("no %q among %q", w, got)
				}
			}
			for _, w := range tt.wantNot {
				if slices.Contains(got, w) {
					t.Errorf("%q among %q", w, got)
				}
			}
		})
	}
}

// TestGNUArgs: the single-dash long flags of a command are rewritten to their double-dash
// form, and nothing else is: shorthands, the values of flags, unknown flags and what
// follows "--" are left as they are.
func TestGNUArgs(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		want     []string
		wantSame bool
	}{
		{"long flags", []string{"search", "-store", "s", "-json", "q"}, []string{"search", "--store", "s", "--json", "q"}, false},
		{"equals form", []string{"search", "-store=s", "-json=false", "q"}, []string{"search", "--store=s", "--json=false", "q"}, false},
		{"shorthands kept", []string{"search", "-k", "3", "-v", "-s", "s", "-k10", "q"}, nil, true},
		{"a value is not a flag", []string{"search", "--where", "-json", "-cascade", "-store", "q"}, []string{"search", "--where", "-json", "--cascade", "-store", "q"}, false},
		{"after --", []string{"search", "-store", "s", "--", "-json", "-store"}, []string{"search", "--store", "s", "--", "-json", "-store"}, false},
		{"two-letter long beside a shorthand", []string{"eval", "-k1=1.2", "-k", "10", "-b", "0.5", "-k1", "0.9"}, []string{"eval", "--k1=1.2", "-k", "10", "-b", "0.5", "--k1", "0.9"}, false},
		{"bool flag takes no value", []string{"index", "-sync", "docs", "-auto-code=false"}, []string{"index", "--sync", "docs", "--auto-code=false"}, false},
		{"unknown flag left for pflag", []string{"count", "-bogus", "-reranker", "x"}, nil, true},
		{"help", []string{"count", "-help"}, []string{"count", "--help"}, false},
		{"subcommand", []string{"sop", "match", "-dir", "d", "-n", "2", "q"}, []string{"sop", "match", "--dir", "d", "-n", "2", "q"}, false},
		{"dash alone", []string{"restore", "-", "-store", "d"}, []string{"restore", "-", "--store", "d"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := gnuArgs(newRootCmd(io.Discard, io.Discard), tt.args)
			want := tt.want
			if tt.wantSame {
				want = tt.args
			}
			if !slices.Equal(got, want) {
				t.Errorf("gnuArgs(%q) = %q, want %q", tt.args, got, want)
			}
		})
	}
}

// TestFlagFormsCLI runs real commands with flags after their arguments, in single-dash
// form, with --v (the old spelling of -v), and with "--" before an argument that starts
// with a dash.
func TestFlagFormsCLI(t *testing.T) {
	dir := t.TempDir()
	goFile := filepath.Join(dir, "a.go")
	writeFile(t, goFile, "package a\n\nfunc A() int { return 1 }\n\nfunc B() int { return 2 }\n")
	dashFile := filepath.Join(dir, "-dash.go")
	writeFile(t, dashFile, "package a\n\nfunc C() int { return 3 }\n")
	jsonLines := func(out string) int {
		n := 0
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if !json.Valid([]byte(l)) {
				return -1
			}
			n++
		}
		return n
	}
	for _, args := range [][]string{
		{"chunk", goFile, "--json"},
		{"chunk", "-json", goFile},
		{"chunk", "-json=true", "-budget", "500", goFile},
		{"chunk", goFile, "-language", "go", "-json"},
	} {
		if out, errs := mustCLI(t, 0, args...); jsonLines(out) < 1 {
			t.Errorf("%q: not JSON lines:\n%s%s", args, out, errs)
		}
	}
	// "--" ends the flags: a file whose name starts with a dash.
	t.Chdir(dir)
	if out, errs := mustCLI(t, 0, "chunk", "--json", "--", "-dash.go"); jsonLines(out) != 1 || !strings.Contains(out, `"name":"C"`) {
		t.Errorf("chunk --json -- -dash.go:\n%s%s", out, errs)
	}
	if code, _, errs := cli(t, "chunk", "--json", "-dash.go"); code != 2 || !strings.Contains(errs, "unknown shorthand flag") {
		t.Errorf("chunk --json -dash.go: exit %d, want 2 (a flag)\n%s", code, errs)
	}
	// --v and -v are --verbose: the run gets past its flags (the store is missing: exit 1).
	for _, v := range []string{"-v", "--v", "-verbose", "--verbose"} {
		if code, _, errs := cli(t, "count", "-store", filepath.Join(dir, "none"), v); code != 1 || !strings.Contains(errs, "no store") {
			t.Errorf("count %s: exit %d, want 1\n%s", v, code, errs)
		}
	}
}

// TestRunsShareNoState runs the CLI concurrently with different flags: each run sees its
// own (the command tree is built per run).
func TestRunsShareNoState(t *testing.T) {
	dir := t.TempDir()
	goFile := filepath.Join(dir, "a.go")
	writeFile(t, goFile, "package a\n\nfunc A() int { return 1 }\n\nfunc B() int { return 2 }\n")
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := []string{"chunk", goFile}
			if i%2 == 0 {
				args = append(args, "--json")
			}
			var out, e bytes.Buffer
			if code := runMain(context.Background(), args, &out, &e); code != 0 {
				errs <- fmt.Errorf("%q: exit %d: %s", args, code, e.String())
				return
			}
			if isJSON := strings.HasPrefix(out.String(), "{"); isJSON != (i%2 == 0) {
				errs <- fmt.Errorf("%q: output %q", args, out.String())
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
