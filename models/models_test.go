package models

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/environ"
)

func TestManifest(t *testing.T) {
	names := names()
	want := []string{"all-MiniLM-L6-v2", "e5-base-v2", "ms-marco-MiniLM-L-12-v2", "ms-marco-MiniLM-L-6-v2", "potion-base-2M"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("Names = %v", names)
	}
	for _, m := range List() {
		if m.Repo == "" || m.Revision == "" || len(m.Files) == 0 || m.Kind == "" {
			t.Errorf("%s: incomplete entry %+v", m.Name, m)
		}
		for _, f := range m.Files {
			if f.SHA256 != "" && len(f.SHA256) != 64 && !strings.Contains(f.SHA256, "…") {
				t.Errorf("%s/%s: malformed pin %q", m.Name, f.Path, f.SHA256)
			}
		}
	}
	m, err := Lookup("ALL-minilm-l6-v2")
	if err != nil || m.Name != "all-MiniLM-L6-v2" || m.Dim != 384 || !m.Pinned() {
		t.Fatalf("Lookup: %+v %v", m, err)
	}
	if m.Size() != 90387606+711661+231508+650+366+125+53+349+190 {
		t.Fatalf("Size %d", m.Size())
	}
	// Search-R1's retriever and reranker, at recorded revisions (commit ids).
	for name, repo := range map[string]string{"e5-base-v2": "intfloat/e5-base-v2", "ms-marco-MiniLM-L-12-v2": "cross-encoder/ms-marco-MiniLM-L12-v2"} {
		m, err := Lookup(name)
		if err != nil || m.Repo != repo || len(m.Revision) != 40 || m.Files[0].Path != "onnx/model.onnx" {
			t.Fatalf("Lookup(%s): %+v %v", name, m, err)
		}
	}
	if m, _ := Lookup("e5-base-v2"); m.Kind != "embedder" || m.Dim != 768 {
		t.Fatalf("e5-base-v2: %+v", m)
	}
	// List returns copies.
	List()[0].Files[0].Path = "changed"
	if List()[0].Files[0].Path == "changed" {
		t.Fatal("List exposes the manifest")
	}
}

// TestManifestMatchesSharedFixtures checks the pins against the files present in the
// shared model folder (tokenizers and configs; the weights are not available here).
func TestManifestMatchesSharedFixtures(t *testing.T) {
	root := os.Getenv(environ.Models)
	if root == "" {
		root = filepath.Join("..", "..", "shared", "models")
	}
	if _, err := os.Stat(root); err != nil {
		if os.Getenv("MEMORY_REQUIRE_FIXTURES") == "1" {
			t.Fatalf("shared models missing: %v", err)
		}
		t.Skip("shared models missing")
	}
	checked := 0
	for _, m := range List() {
		for _, f := range m.Files {
			sum, size, err := hashFile(filepath.Join(root, m.Name, filepath.FromSlash(f.Path)))
			if err != nil {
				continue
			}
			checked++
			if !digestMatches(sum, f.SHA256) || (f.Size > 0 && size != f.Size) {
				t.Errorf("%s/%s: pin %s/%d, shared copy %s/%d", m.Name, f.Path, f.SHA256, f.Size, sum, size)
			}
		}
	}
	if checked < 11 {
		t.Fatalf("only %d shared files checked", checked)
	}
}

func TestResolve(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(environ.Cache, cache)
	shared := t.TempDir()
	t.Setenv(environ.Models, shared)

	// Unknown names resolve only to a folder of $MEMORY_MODELS.
	if _, err := Resolve("tiny-bert-encoder"); !errors.Is(err, ErrUnknownModel) {
		t.Fatalf("unknown: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(shared, "tiny-bert-encoder"), 0o755); err != nil {
		t.Fatal(err)
	}
	if dir, err := Resolve("tiny-bert-encoder"); err != nil || dir != filepath.Join(shared, "tiny-bert-encoder") {
		t.Fatalf("MEMORY_MODELS folder: %q %v", dir, err)
	}
	for _, bad := range []string{"", "..", "a/b", `a\b`} {
		if _, err := Resolve(bad); !errors.Is(err, ErrUnknownModel) {
			t.Errorf("Resolve(%q) = %v", bad, err)
		}
	}

	// A known model with an incomplete $MEMORY_MODELS folder and no pull: ErrNotPulled.
	m, _ := Lookup("potion-base-2M")
	mdir := filepath.Join(shared, m.Name)
	if err := os.MkdirAll(mdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(m.Name); !errors.Is(err, ErrNotPulled) {
		t.Fatalf("not pulled: %v", err)
	}
	// Complete it (right sizes where pinned): $MEMORY_MODELS wins.
	for _, f := range m.Files {
		p := filepath.Join(mdir, f.Path)
		if err := os.WriteFile(p, make([]byte, f.Size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if dir, err := Resolve(m.Name); err != nil || dir != mdir {
		t.Fatalf("complete MEMORY_MODELS folder: %q %v", dir, err)
	}
	// Pull returns it too, without any network.
	if dir, err := Pull(context.Background(), m.Name, Options{BaseURL: "http://127.0.0.1:1"}); err != nil || dir != mdir {
		t.Fatalf("Pull with a ready folder: %q %v", dir, err)
	}
	if d, _ := CacheDir(); d != filepath.Join(cache, "models") {
		t.Fatalf("CacheDir %s", d)
	}
}

func TestDigestMatches(t *testing.T) {
	full := strings.Repeat("ab", 32)
	for _, c := range []struct {
		got, pin string
		want     bool
	}{
		{full, full, true},
		{full, strings.ToUpper(full), true},
		{full, "", true},
		{full, "abab…abab", true},
		{full, "abab...ab", true},
		{full, "abac…abab", false},
		{full, strings.Repeat("cd", 32), false},
		{"ab", "ab…ab", false},
	} {
		if got := digestMatches(c.got, c.pin); got != c.want {
			t.Errorf("digestMatches(%q, %q) = %v", c.got, c.pin, got)
		}
	}
}

func TestRangeStart(t *testing.T) {
	for h, want := range map[string]int64{"bytes 0-9/10": 0, "bytes 100-199/200": 100, " bytes 5-/*": 5} {
		if got, ok := rangeStart(h); !ok || got != want {
			t.Errorf("rangeStart(%q) = %d, %v", h, got, ok)
		}
	}
	for _, h := range []string{"", "bytes */10", "items 1-2/3", "bytes x-1/2"} {
		if _, ok := rangeStart(h); ok {
			t.Errorf("rangeStart(%q) accepted", h)
		}
	}
}

func FuzzRangeStart(f *testing.F) {
	for _, s := range []string{"bytes 0-9/10", "bytes */10", "", "bytes -1-2/3", "bytes 99999999999999999999-1/2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		n, ok := rangeStart(h)
		if ok && !strings.HasPrefix(strings.TrimSpace(h), "bytes ") {
			t.Fatalf("accepted %q", h)
		}
		if ok && !strings.Contains(h, fmt.Sprint(n)) && n != 0 {
			t.Fatalf("%q -> %d", h, n)
		}
	})
}
