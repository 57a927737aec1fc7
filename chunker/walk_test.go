package chunker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestIgnore(t *testing.T) {
	ig := &ignore{}
	ig.Add("", "# comment\n*.log\n!keep.log\nbuild/\n/root-only.txt\ndocs/**/*.tmp\n**/cache\nfoo/**\n\\#hash\nspace\\ \n")
	ig.Add("sub", "*.gen.go\n/local\n")
	tests := []struct {
		path  string
		isDir bool
		want  bool
	}{
		{"a.log", false, true},
		{"deep/dir/a.log", false, true},
		{"keep.log", false, false},        // negation
		{"deep/keep.log", false, false},   // negation at any depth
		{"build", true, true},             // dir-only
		{"build", false, false},           // dir-only does not match a file
		{"x/build", true, true},           // dir-only, any depth
		{"x/build/out.o", false, true},    // inside an ignored directory
		{"root-only.txt", false, true},    // anchored
		{"x/root-only.txt", false, false}, // anchored: not below
		{"docs/a/b/c.tmp", false, true},   // ** in the middle
		{"docs/c.tmp", false, true},       // ** matches zero segments
		{"other/c.tmp", false, false},
		{"a/b/cache", true, true}, // leading **
		{"cache", false, true},
		{"foo", true, false}, // trailing ** needs something inside
		{"foo/x", false, true},
		{"foo/x/y", false, true},
		{"#hash", false, true},        // escaped #
		{"space ", false, true},       // escaped trailing space
		{"sub/a.gen.go", false, true}, // nested .gitignore
		{"sub/deeper/a.gen.go", false, true},
		{"a.gen.go", false, false}, // nested rules stay below their dir
		{"sub/local", false, true}, // anchored to the nested dir
		{"sub/x/local", false, false},
		{"main.go", false, false},
	}
	for _, tt := range tests {
		if got := ig.Match(tt.path, tt.isDir); got != tt.want {
			t.Errorf("Match(%q, dir=%v) = %v, want %v", tt.path, tt.isDir, got, tt.want)
		}
	}
	var zero ignore
	if zero.Match("a.log", false) {
		t.Error("zero Ignore matched")
	}
}

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestWalk(t *testing.T) {
	root := writeTree(t, map[string]string{
		".gitignore":              "*.log\ngen/\n",
		"main.go":                 "package main\n\nfunc main() {}\n",
		"lib/util.py":             "def f():\n    return 1\n",
		"lib/.gitignore":          "secret.py\n",
		"lib/secret.py":           "x = 1\n",
		"gen/out.go":              "package gen\n",
		"debug.log":               "log line\n",
		"README.md":               "# Title\n\nHello.\n",
		"notes.xyz":               "plain text\n",
		"image.png":               "\x89PNG\x00\x00",
		"bad.go":                  "package bad \xff\n",
		"big.go":                  "package big\n// " + string(make([]byte, 0)) + "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
		"vendor/dep/dep.go":       "package dep\n",
		"node_modules/m/index.js": "module.exports = 1;\n",
		".git/config":             "[core]\n",
	})
	var paths []string
	sum, err := Walk(context.Background(), root, WalkOptions{MaxFileSize: 60}, func(p string, chunks []Chunk) error {
		paths = append(paths, p)
		if len(chunks) == 0 {
			t.Errorf("%s: no chunks", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantPaths := []string{"README.md", "lib/util.py", "main.go"}
	if !reflect.DeepEqual(paths, wantPaths) {
		t.Errorf("paths %v, want %v", paths, wantPaths)
	}
	// unsupported: notes.xyz, image.png and the two .gitignore files
	wantSkipped := map[string]int{SkipIgnored: 3, SkipDir: 3, SkipUnsupported: 4, SkipInvalidUTF8: 1, SkipTooLarge: 1}
	if !reflect.DeepEqual(sum.Skipped, wantSkipped) {
		t.Errorf("skipped %v, want %v", sum.Skipped, wantSkipped)
	}
	if sum.Files != 3 || sum.FilesByLanguage["go"] != 1 || sum.FilesByLanguage["python"] != 1 || sum.FilesByLanguage["markdown"] != 1 {
		t.Errorf("summary %+v", sum)
	}
	if sum.Chunks != sum.ChunksByLanguage["go"]+sum.ChunksByLanguage["python"]+sum.ChunksByLanguage["markdown"] {
		t.Errorf("chunk counts disagree: %+v", sum)
	}

	// AllFiles chunks unknown languages too (the binary is still skipped).
	sum, err = Walk(context.Background(), root, WalkOptions{AllFiles: true, NoGitignore: true}, func(string, []Chunk) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if sum.Skipped[SkipBinary] != 1 || sum.FilesByLanguage["text"] != 4 {
		t.Errorf("AllFiles summary %+v", sum)
	}

	// Errors from fn stop the walk.
	stop := errors.New("stop")
	if _, err := Walk(context.Background(), root, WalkOptions{}, func(string, []Chunk) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("err = %v, want stop", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Walk(ctx, root, WalkOptions{}, func(string, []Chunk) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if _, err := Walk(context.Background(), filepath.Join(root, "missing"), WalkOptions{}, nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want ErrNotExist", err)
	}
}
