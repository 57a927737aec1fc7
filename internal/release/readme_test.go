package release

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// codeBlock is a fenced code block of a markdown file.
type codeBlock struct {
	lang string // the fence's info string up to the first space ("go", "sh", "")
	line int    // the 1-based line of the block's first line of code
	code string
}

// codeBlocks returns the fenced (```) code blocks of a markdown text, in order; an
// unclosed block is an error naming its line.
func codeBlocks(text string) ([]codeBlock, error) {
	var blocks []codeBlock
	var cur *codeBlock
	var body strings.Builder
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if !strings.HasPrefix(trimmed, "```") {
			if cur != nil {
				body.WriteString(line)
				body.WriteByte('\n')
			}
			continue
		}
		if cur != nil {
			if strings.TrimSpace(trimmed) != "```" {
				return nil, fmt.Errorf("line %d: a fence %q inside the block opened on line %d", i+1, trimmed, cur.line-1)
			}
			cur.code = body.String()
			blocks = append(blocks, *cur)
			cur = nil
			continue
		}
		lang, _, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), " ")
		cur = &codeBlock{lang: lang, line: i + 2}
		body.Reset()
	}
	if cur != nil {
		return nil, fmt.Errorf("line %d: the code block is not closed", cur.line-1)
	}
	return blocks, nil
}

func TestCodeBlocks(t *testing.T) {
	text := "# T\n\n```go\npackage main\n\nfunc main() {}\n```\n\ntext\n\n```sh\nmake test\n```\n```\nplain\n```\n"
	got, err := codeBlocks(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []codeBlock{
		{lang: "go", line: 4, code: "package main\n\nfunc main() {}\n"},
		{lang: "sh", line: 12, code: "make test\n"},
		{lang: "", line: 15, code: "plain\n"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("codeBlocks = %+v, want %+v", got, want)
	}
	if _, err := codeBlocks("```go\npackage main\n"); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("an unclosed block gave %v, want an error naming line 1", err)
	}
}

// readme returns the working tree's README.md.
func readme(t *testing.T) (root, text string) {
	t.Helper()
	root = workRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return root, string(b)
}

// TestReadmeGoBlocks builds every Go code block of README.md, each as a program of its own
// (or a package, for a block that is not package main), in a fresh module that requires the
// core from this working tree. A block must be a whole file, as a reader copies it. A
// failure names the block's line in README.md; compile errors point into README.md too.
func TestReadmeGoBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds each Go block of README.md (a link of the core each): skipped under -short")
	}
	root, text := readme(t)
	blocks, err := codeBlocks(text)
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	goCmd := goTool(t)
	mod := t.TempDir()
	gomod := fmt.Sprintf("module example.com/readme\n\ngo 1.26.0\n\nrequire github.com/agentmem/memory v0.0.0\n\nreplace github.com/agentmem/memory => %s\n", root)
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	// No network: every module comes from the module cache, as the core's own build left it.
	env := withEnv(os.Environ(), "GOWORK=off", "GOPROXY=off", "GOFLAGS=-mod=mod -trimpath", "GOTOOLCHAIN=local")
	n := 0
	for _, b := range blocks {
		if b.lang != "go" {
			continue
		}
		n++
		name := fmt.Sprintf("block%d", n)
		t.Run(fmt.Sprintf("README.md:%d", b.line), func(t *testing.T) {
			f, err := parser.ParseFile(token.NewFileSet(), "README.md", b.code, parser.PackageClauseOnly)
			if err != nil {
				t.Fatalf("README.md:%d: the Go block is not a whole file (%v): write it with its package clause and imports, so that it compiles as written", b.line, err)
			}
			dir := filepath.Join(mod, name)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			// The line directive makes the compiler's positions README.md's.
			src := fmt.Sprintf("//line %s:%d\n%s", filepath.Join(root, "README.md"), b.line, b.code)
			if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"build", "-o", os.DevNull, "./" + name}
			if f.Name.Name != "main" {
				args = []string{"build", "./" + name}
			}
			if out, err := runErr(mod, env, goCmd, args...); err != nil {
				t.Errorf("README.md:%d: the Go block does not build: %v\n%s", b.line, err, out)
				return
			}
			if out, err := runErr(mod, env, goCmd, "vet", "./"+name); err != nil {
				t.Errorf("README.md:%d: go vet of the Go block: %v\n%s", b.line, err, out)
			}
		})
	}
	if n == 0 {
		t.Fatal("README.md has no Go code block: where is its quickstart?")
	}
}

// makeCommand is a `make TARGET` command line, its comment left out.
var makeCommand = regexp.MustCompile(`^make\s+([A-Za-z0-9_.-]+)\s*(#.*)?$`)

// TestReadmeSetup holds the README to its two set-up commands, `make demo` and `make test`,
// and those to what they must be: targets of the Makefile, the second being the one
// .ci/run runs, the first running the quickstart example.
func TestReadmeSetup(t *testing.T) {
	root, text := readme(t)
	blocks, err := codeBlocks(text)
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	var cmds []string
	for _, b := range blocks {
		if b.lang != "sh" {
			continue
		}
		for _, line := range strings.Split(b.code, "\n") {
			if m := makeCommand.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
				cmds = append(cmds, "make "+m[1])
			}
		}
	}
	if want := []string{"make demo", "make test"}; !reflect.DeepEqual(cmds, want) {
		t.Errorf("README.md's set-up commands are %q, want exactly %q", cmds, want)
	}
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"demo", "test"} {
		if !regexp.MustCompile(`(?m)^` + target + `:`).Match(mk) {
			t.Errorf("the Makefile has no %q target", target)
		}
	}
	if !regexp.MustCompile(`(?m)^demo:.*\n\t\$\(GO\) run \./examples/quickstart\b`).Match(mk) {
		t.Errorf("the Makefile's demo target does not run ./examples/quickstart")
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^make test\s*$`).Match(ci) {
		t.Errorf(".ci/run does not run `make test`:\n%s", ci)
	}
}

// headingAnchor is the anchor GitHub gives a markdown heading: lower case, spaces to
// hyphens, punctuation other than hyphens and underscores dropped.
func headingAnchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestReadmeContents checks README.md's table of contents: every section (## heading) and
// subsection (###) is listed, in order, and every link to a #anchor names a heading.
func TestReadmeContents(t *testing.T) {
	_, text := readme(t)
	if got := headingAnchor("Code, SOPs and Search-R1"); got != "code-sops-and-search-r1" {
		t.Fatalf("headingAnchor = %q", got)
	}
	blocks, err := codeBlocks(text)
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	inBlock := map[int]bool{}
	for _, b := range blocks {
		for i := 0; i < strings.Count(b.code, "\n"); i++ {
			inBlock[b.line+i] = true
		}
	}
	anchors := map[string]bool{}
	var headings []string
	for i, line := range strings.Split(text, "\n") {
		if inBlock[i+1] {
			continue
		}
		for _, prefix := range []string{"## ", "### "} {
			if h, ok := strings.CutPrefix(line, prefix); ok && h != "Contents" {
				a := headingAnchor(h)
				anchors[a] = true
				headings = append(headings, a)
			}
		}
	}
	contents, _, ok := strings.Cut(text[strings.Index(text, "## Contents")+1:], "\n## ")
	if !ok || !strings.HasPrefix(contents, "# Contents") {
		t.Fatal("README.md has no ## Contents section")
	}
	var listed []string
	for _, m := range regexp.MustCompile(`\]\(#([^)]+)\)`).FindAllStringSubmatch(contents, -1) {
		listed = append(listed, m[1])
	}
	if !reflect.DeepEqual(listed, headings) {
		t.Errorf("the contents list %q, want every ## and ### heading in order: %q", listed, headings)
	}
	for _, m := range regexp.MustCompile(`\]\(#([^)]+)\)`).FindAllStringSubmatch(text, -1) {
		if !anchors[m[1]] {
			t.Errorf("README.md links to #%s, which is no heading", m[1])
		}
	}
}
