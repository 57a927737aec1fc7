package main

import (
	"encoding/json"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestInterspersed(t *testing.T) {
	// A command with the flags of the old TestInterspersed, parsed as the CLI parses: the
	// single-dash long flags rewritten (gnuArgs), then cobra and pflag.
	run := func(args []string) (pos []string, store string, js bool, k int, err error) {
		root := &cobra.Command{Use: "memory", SilenceErrors: true, SilenceUsage: true}
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		c := &cobra.Command{Use: "t", RunE: func(_ *cobra.Command, a []string) error { pos = a; return nil }}
		c.Flags().StringVar(&store, "store", "", "")
		c.Flags().BoolVar(&js, "json", false, "")
		c.Flags().IntVarP(&k, "k", "k", 10, "")
		root.AddCommand(c)
		root.SetArgs(gnuArgs(root, append([]string{"t"}, args...)))
		err = root.Execute()
		return pos, store, js, k, err
	}
	tests := []struct {
		name       string
		args       []string
		wantPos    []string
		wantStore  string
		wantJSON   bool
		wantK      int
		wantErrSub string // a Parse error is expected when set
	}{
		{"flags first", []string{"--store", "s", "--json", "q"}, []string{"q"}, "s", true, 10, ""},
		{"flags last", []string{"how", "do", "I", "deploy", "--store", "s", "--json"}, []string{"how", "do", "I", "deploy"}, "s", true, 10, ""},
		{"flags between", []string{"--store", "s", "how do I deploy", "--json", "-k", "3", "x"}, []string{"how do I deploy", "x"}, "s", true, 3, ""},
		{"equals form", []string{"q", "--store=s", "-json=false", "-k=4"}, []string{"q"}, "s", false, 4, ""},
		{"single dash", []string{"q", "-store", "s", "-json"}, []string{"q"}, "s", true, 10, ""},
		{"single dash long k", []string{"q", "--k", "7"}, []string{"q"}, "", false, 7, ""},
		{"double dash ends flags", []string{"--store", "s", "--", "-deploy", "--json"}, []string{"-deploy", "--json"}, "s", false, 10, ""},
		{"single dash after double dash stays", []string{"--", "-store", "x"}, []string{"-store", "x"}, "", false, 10, ""},
		{"dash alone is an argument", []string{"-", "--json"}, []string{"-"}, "", true, 10, ""},
		{"value that looks like a flag", []string{"--store", "--json", "q"}, []string{"q"}, "--json", false, 10, ""},
		{"single-dash value is not rewritten", []string{"--store", "-json", "q"}, []string{"q"}, "-json", false, 10, ""},
		{"no arguments", nil, nil, "", false, 10, ""},
		{"unknown flag after an argument", []string{"q", "--nope"}, nil, "", false, 10, "unknown flag: --nope"},
		{"missing value at the end", []string{"q", "--store"}, nil, "", false, 10, "needs an argument"},
		{"bad int after an argument", []string{"q", "-k", "x"}, nil, "", false, 10, "invalid argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pos, store, js, k, err := run(tt.args)
			if tt.wantErrSub != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrSub) {
					t.Fatalf("err %v, want one containing %q", err, tt.wantErrSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(pos, tt.wantPos) && (len(pos) != 0 || len(tt.wantPos) != 0) {
				t.Errorf("args %q, want %q", pos, tt.wantPos)
			}
			if store != tt.wantStore || js != tt.wantJSON || k != tt.wantK {
				t.Errorf("store %q json %v k %d, want %q %v %d", store, js, k, tt.wantStore, tt.wantJSON, tt.wantK)
			}
		})
	}
}

// everyInvocation is every command and subcommand of the CLI (its path under memory, as
// arguments), hidden ones left out: every way the CLI parses flags. A command added later
// is covered without an edit.
func everyInvocation(t *testing.T) [][]string {
	t.Helper()
	var out [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, s := range c.Commands() {
			if s.Hidden {
				continue
			}
			p := append(slices.Clone(path), s.Name())
			out = append(out, p)
			walk(s, p)
		}
	}
	root := newRootCmd(io.Discard, io.Discard)
	root.InitDefaultHelpCmd()
	walk(root, nil)
	if len(out) < 25 {
		t.Fatalf("only %d commands: %q", len(out), out)
	}
	return out
}

// TestFlagsAfterArgumentsEveryCommand: in every command a flag after a positional argument
// is parsed as a flag (an unknown one is a usage error naming it, not an argument), and -h
// after an argument prints help that says flags go anywhere.
func TestFlagsAfterArgumentsEveryCommand(t *testing.T) {
	for _, inv := range everyInvocation(t) {
		t.Run(strings.Join(inv, "_"), func(t *testing.T) {
			code, out, errs := cli(t, append(slices.Clone(inv), "some-argument", "--no-such-flag-xyz")...)
			if code != 2 || !strings.Contains(errs, "unknown flag: --no-such-flag-xyz") {
				t.Errorf("unknown flag after an argument: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
			code, out, errs = cli(t, append(slices.Clone(inv), "some-argument", "-h")...)
			if code != 0 || !strings.Contains(out+errs, `"--" ends the flags`) {
				t.Errorf("-h after an argument: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
		})
	}
	_, errs := mustCLI(t, 2)
	if !strings.Contains(errs, `"--" ends the flags`) {
		t.Errorf("memory without a command does not say where flags go:\n%s", errs)
	}
}

// TestFlagsAnywhereBehaviour runs each command that takes arguments with its flags after
// (or around) them and checks that the flags took effect.
func TestFlagsAnywhereBehaviour(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "s")
	file := filepath.Join(dir, "c.jsonl")
	jsonl(t, file, 5, nil)
	writeFile(t, filepath.Join(dir, "dash.md"), "# Dashes\n-deploy is a word that starts with a dash")
	goFile := filepath.Join(dir, "a.go")
	writeFile(t, goFile, "package a\n\nfunc A() int { return 1 }\n")

	isJSONLines := func(out string) bool {
		lines := strings.Split(strings.TrimSpace(out), "\n")
		for _, l := range lines {
			if !json.Valid([]byte(l)) {
				return false
			}
		}
		return len(lines) > 0 && lines[0] != ""
	}
	tests := []struct {
		name  string
		args  []string
		check func(out string) bool
	}{
		{"index", []string{"index", file, "--store", store, "--collection", "c2"}, func(string) bool { return true }},
		{"index md", []string{"index", filepath.Join(dir, "dash.md"), "--store", store}, func(string) bool { return true }},
		{"count", []string{"count", "--collection", "c2", "--store", store}, func(o string) bool { return strings.TrimSpace(o) == "5" }},
		{"search json last", []string{"search", "--store", store, "--collection", "c2", "document about otters", "--json"}, isJSONLines},
		{"search json between", []string{"search", "document", "--json", "about", "otters", "--store", store, "--collection", "c2", "--k", "2"},
			func(o string) bool { return isJSONLines(o) && strings.Count(strings.TrimSpace(o), "\n") == 1 }},
		{"search dash query", []string{"search", "--store", store, "--json", "--mode", "bm25", "--", "-deploy"},
			func(o string) bool { return isJSONLines(o) && strings.Contains(o, "dash.md") }},
		{"get", []string{"get", "d1", "--json", "--store", store, "--collection", "c2"},
			func(o string) bool { return isJSONLines(o) && strings.Contains(o, `"id":"d1"`) }},
		{"collections", []string{"collections", "--json", "--store", store}, isJSONLines},
		{"delete", []string{"delete", "d1", "d2", "--store", store, "--collection", "c2"}, func(o string) bool { return strings.Contains(o, "deleted 2") }},
		{"check", []string{"check", "--store", store}, func(string) bool { return true }},
		{"chunk", []string{"chunk", goFile, "--json", "--budget", "50"}, isJSONLines},
		{"sop match", []string{"sop", "match", "rebase", "went", "wrong", "--json", "--dir", sopTestDir}, isJSONLines},
	}
	for _, tt := range tests {
		out, errs := mustCLI(t, 0, tt.args...)
		if !tt.check(out) {
			t.Errorf("%s: memory %q:\nstdout:\n%s\nstderr:\n%s", tt.name, tt.args, out, errs)
		}
	}
}
