package release

import (
	"archive/zip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func TestVendored(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"vendor/modules.txt", true},
		{"vendor/example.com/p/p.go", true},
		{"vendor/vendor.go", false}, // a package named vendor at the root
		{"pkg/vendor/example.com/p/p.go", true},
		{"pkg/vendor/v.go", false},
		{"vendors/example.com/p/p.go", false},
		{"pkg/vendored/x/y.go", false},
		{"main.go", false},
	} {
		if got := vendored(tc.name); got != tc.want {
			t.Errorf("vendored(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestModuleContent(t *testing.T) {
	var files []zipFile
	for _, n := range []string{
		"main.go", "go.mod", "LICENSE", "z/z.go", ".hg_archival.txt",
		"sub/go.mod", "sub/x.go", "sub/deeper/y.go", // a nested module, left out whole
		"testdata/gen/go.mod", "testdata/gen/main.go", "testdata/fixture.txt",
		"subway/s.go", // not under sub/
		"vendor/modules.txt", "vendor/example.com/p/p.go", "pkg/vendor/v.go",
	} {
		files = append(files, zipFile{name: n})
	}
	var got []string
	for _, f := range moduleContent(files) {
		got = append(got, f.name)
	}
	want := []string{"LICENSE", "go.mod", "main.go", "pkg/vendor/v.go", "subway/s.go", "testdata/fixture.txt", "z/z.go"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("moduleContent kept %q, want %q", got, want)
	}
}

func TestEscapeModulePath(t *testing.T) {
	for in, want := range map[string]string{
		"github.com/agentmem/memory":         "github.com/agentmem/memory",
		"github.com/DataIntelligenceCrew/go": "github.com/!data!intelligence!crew/go",
	} {
		if got := escapeModulePath(in); got != want {
			t.Errorf("escapeModulePath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPublishFromGit publishes a root module and a module in a folder from a scratch git
// repository: the zips hold the committed files only (not an uncommitted change, a nested
// module or a symbolic link), the folder's module gets the root LICENSE, and a tag, once
// made, is served instead of HEAD.
func TestPublishFromGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("no git command: %v", err)
	}
	repo := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		p := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitT := func(args ...string) string {
		t.Helper()
		out, err := git(repo, append([]string{"-c", "user.name=test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	write("go.mod", "module example.com/m\n\ngo 1.26.0\n")
	write("LICENSE", "root license\n")
	write("m.go", "package m\n")
	write("adapters/a/go.mod", "module example.com/m/adapters/a\n\ngo 1.26.0\n")
	write("adapters/a/a.go", "package a\n")
	write("tools/go.mod", "module example.com/m/tools\n")
	write("tools/t.go", "package tools\n")
	if err := os.Symlink("m.go", filepath.Join(repo, "link.go")); err != nil {
		t.Fatal(err)
	}
	gitT("init", "-q")
	gitT("add", "-A")
	gitT("commit", "-q", "-m", "first")
	first := gitT("rev-parse", "HEAD")
	write("m.go", "package m // uncommitted\n")

	root := gitModule{path: "example.com/m", version: "v0.1.0"}
	sub := gitModule{path: "example.com/m/adapters/a", subdir: "adapters/a", version: "v0.1.0"}
	if got := sub.tag(); got != "adapters/a/v0.1.0" {
		t.Errorf("tag of %s = %q, want adapters/a/v0.1.0", sub.path, got)
	}
	proxy := t.TempDir()
	for _, m := range []gitModule{root, sub} {
		commit, fromTag, err := releaseCommit(repo, m)
		if err != nil || fromTag || commit != first {
			t.Fatalf("releaseCommit(%s) = %s, %v, %v; want HEAD %s, false", m.path, commit, fromTag, err, first)
		}
		if err := publish(proxy, repo, commit, m); err != nil {
			t.Fatal(err)
		}
	}
	zipContent := func(m gitModule) map[string]string {
		t.Helper()
		zr, err := zip.OpenReader(filepath.Join(proxy, filepath.FromSlash(m.path), "@v", m.version+".zip"))
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		got := map[string]string{}
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			got[f.Name] = string(b)
		}
		return got
	}
	wantRoot := map[string]string{
		"example.com/m@v0.1.0/LICENSE": "root license\n",
		"example.com/m@v0.1.0/go.mod":  "module example.com/m\n\ngo 1.26.0\n",
		"example.com/m@v0.1.0/m.go":    "package m\n",
	}
	if got := zipContent(root); !reflect.DeepEqual(got, wantRoot) {
		t.Errorf("root module zip holds %v, want %v", got, wantRoot)
	}
	wantSub := map[string]string{
		"example.com/m/adapters/a@v0.1.0/LICENSE": "root license\n",
		"example.com/m/adapters/a@v0.1.0/a.go":    "package a\n",
		"example.com/m/adapters/a@v0.1.0/go.mod":  "module example.com/m/adapters/a\n\ngo 1.26.0\n",
	}
	if got := zipContent(sub); !reflect.DeepEqual(got, wantSub) {
		t.Errorf("adapter module zip holds %v, want %v", got, wantSub)
	}
	vdir := filepath.Join(proxy, "example.com", "m", "adapters", "a", "@v")
	entries, err := os.ReadDir(vdir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if want := []string{"list", "v0.1.0.info", "v0.1.0.mod", "v0.1.0.zip"}; !reflect.DeepEqual(names, want) {
		t.Errorf("%s holds %q, want %q", vdir, names, want)
	}
	if b, err := os.ReadFile(filepath.Join(vdir, "v0.1.0.mod")); err != nil || string(b) != wantSub["example.com/m/adapters/a@v0.1.0/go.mod"] {
		t.Errorf("v0.1.0.mod = %q, %v; want the adapter's go.mod", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(vdir, "v0.1.0.info")); err != nil || !strings.HasPrefix(string(b), `{"Version":"v0.1.0","Time":"`) {
		t.Errorf("v0.1.0.info = %q, %v", b, err)
	}

	// Tag the first commit, then commit more: the tag is served, not HEAD.
	gitT("tag", "adapters/a/v0.1.0", first)
	gitT("commit", "-q", "-am", "second")
	if commit, fromTag, err := releaseCommit(repo, sub); err != nil || !fromTag || commit != first {
		t.Errorf("releaseCommit(%s) after tagging = %s, %v, %v; want the tagged %s, true", sub.path, commit, fromTag, err, first)
	}
	if commit, fromTag, err := releaseCommit(repo, root); err != nil || fromTag || commit == first {
		t.Errorf("releaseCommit(%s) with no tag v0.1.0 = %s, %v, %v; want the new HEAD, false", root.path, commit, fromTag, err)
	}
}
