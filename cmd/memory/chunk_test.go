package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestChunkCommand(t *testing.T) {
	dir := t.TempDir()
	// Each function is about 60 non-whitespace characters: with a budget of 100 the package
	// clause joins A (cAST merging) but A and B do not fit together.
	src := "package p\n\n// A does a.\nfunc A(x int) int {\n\treturn x*x + 2*x + 1 + len(\"abcdefghij\")\n}\n\n" +
		"// B does b.\nfunc B(y int) int {\n\treturn y*y - 2*y - 1 - len(\"abcdefghij\")\n}\n"
	f := filepath.Join(dir, "p.go")
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := runMain(context.Background(), []string{"chunk", f, "--json", "--budget", "100"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got []chunkLine
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var c chunkLine
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got = append(got, c)
	}
	if len(got) != 2 || got[0].Name != "A" || got[0].Kind != "function" || got[1].Name != "B" || got[0].StartLine != 1 {
		t.Fatalf("chunks %+v", got)
	}
	// end_byte is exclusive: the chunks tile the file
	var b strings.Builder
	for _, c := range got {
		b.WriteString(src[c.StartByte:c.EndByte])
	}
	if b.String() != src || got[1].EndByte != len(src) {
		t.Fatalf("chunks do not tile the file: %+v", got)
	}

	out.Reset()
	if code := runMain(context.Background(), []string{"chunk", "--language", "go", "--budget", "100", f}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "\tgo\tfunction\tB\t") {
		t.Fatalf("text output:\n%s", out.String())
	}
	for _, args := range [][]string{{"chunk"}, {"chunk", f, "--budget", "0"}, {"chunk", "--nope", f}} {
		if code := runMain(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if code := runMain(context.Background(), []string{"chunk", filepath.Join(dir, "missing.go")}, &out, &errb); code != 1 {
		t.Errorf("missing file: exit %d, want 1", code)
	}
}
