package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func runSOPCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := runMain(context.Background(), append([]string{"sop"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

var sopTestDir = filepath.Join("..", "..", "sop", "testdata", "eval", "procedures")

func TestSOPMatchJSON(t *testing.T) {
	code, out, errOut := runSOPCLI("match", "--dir", sopTestDir, "--json", "-n", "2", "there seems to be a memory leak in the worker")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 JSON lines, got %q", out)
	}
	var first struct {
		Name            string   `json:"name"`
		Score           float64  `json:"score"`
		MatchedTriggers []string `json:"matched_triggers"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if first.Name != "performance_profiling" || first.Score <= 0 || len(first.MatchedTriggers) != 1 || first.MatchedTriggers[0] != "memory leak" {
		t.Errorf("first match %+v", first)
	}
	if !strings.Contains(lines[1], `"name":"security_incident_response"`) {
		t.Errorf("second line %q", lines[1])
	}
}

func TestSOPMatchPlainAndNoMatch(t *testing.T) {
	// Flags after the query work too.
	code, out, _ := runSOPCLI("match", "rebase", "went", "wrong", "--dir", sopTestDir)
	if code != 0 || !strings.HasPrefix(out, "git_merge_conflict\t") || !strings.HasSuffix(out, "\trebase\n") {
		t.Errorf("plain match: %d %q", code, out)
	}
	// No procedure applies: a clear line on stderr, nothing on stdout (plain or JSON),
	// exit status 0; likewise when --category leaves none.
	for _, args := range [][]string{
		{"match", "--dir", sopTestDir, "--json", "what's the best debugger for Go?"},
		{"match", "--dir", sopTestDir, "what's the best debugger for Go?"},
		{"match", "--dir", sopTestDir, "--category", "no-such-category", "rebase went wrong"},
	} {
		code, out, errOut := runSOPCLI(args...)
		query := args[len(args)-1]
		if code != 0 || out != "" || errOut != "memory sop match: no procedure matches "+strconv.Quote(query)+"\n" {
			t.Errorf("%q: no match must say so on stderr only: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

func TestSOPList(t *testing.T) {
	code, out, _ := runSOPCLI("list", "--dir", sopTestDir)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 15 || !strings.HasPrefix(lines[0], "code_review\tcoding\t6\t") {
		t.Errorf("list: %d %q", code, out)
	}
	code, out, _ = runSOPCLI("list", "--dir", sopTestDir, "--category", "database", "--json")
	if code != 0 || strings.Count(out, "\n") != 2 || !strings.Contains(out, `"name":"data_migration"`) {
		t.Errorf("list --category --json: %d %q", code, out)
	}
}

func TestSOPRender(t *testing.T) {
	code, out, _ := runSOPCLI("render", "--dir", sopTestDir, "debug_python_code")
	if code != 0 || !strings.HasPrefix(out, "Procedure debug_python_code: ") ||
		!strings.Contains(out, "\n5. [if fix proposed] Run the reproduction and the test suite again\n") {
		t.Errorf("render: %d %q", code, out)
	}
	if code, _, errOut := runSOPCLI("render", "--dir", sopTestDir, "nope"); code != 1 || !strings.Contains(errOut, "not found") {
		t.Errorf("render unknown: %d %q", code, errOut)
	}
}

func TestSOPErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"bogus"},
		{"match", "query"},                 // no --dir
		{"match", "--dir", sopTestDir},     // no query
		{"render", "--dir", sopTestDir},    // no name
		{"list", "--dir", sopTestDir, "x"}, // stray argument
		{"match", "--bogus", "--dir", "d", "q"},
	} {
		if code, _, _ := runSOPCLI(args...); code != 2 {
			t.Errorf("sop %q: exit %d, want 2", args, code)
		}
	}
	if code, _, _ := runSOPCLI("list", "--dir", filepath.Join(t.TempDir(), "missing")); code != 1 {
		t.Errorf("missing dir: exit %d, want 1", code)
	}
	// Bad files are reported as warnings; the good ones are still used.
	dir := t.TempDir()
	for name, data := range map[string]string{
		"good.json": `{"name":"g","trigger":"deploy","steps":["x"]}`,
		"bad.json":  `{"name":"b","priority":42,"steps":["x"]}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runSOPCLI("match", "--dir", dir, "deploy it")
	if code != 0 || !strings.HasPrefix(out, "g\t") || !strings.Contains(errOut, "warning: sop: ") || !strings.Contains(errOut, "bad.json") {
		t.Errorf("mixed dir: %d %q %q", code, out, errOut)
	}
}
