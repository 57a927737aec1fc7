package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// entries lists dir's names.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteFileReplaces(t *testing.T) {
	for _, tc := range []struct {
		name string
		old  string // "" : no file before
		o    Options
		mode os.FileMode
	}{
		{"new file", "", Options{}, 0o644},
		{"replace", "old content, longer than the new", Options{}, 0o644},
		{"perm", "x", Options{Perm: 0o600}, 0o600},
		{"nosync", "x", Options{NoSync: true}, 0o644},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f.json")
			if tc.old != "" {
				if err := os.WriteFile(path, []byte(tc.old), 0o666); err != nil {
					t.Fatal(err)
				}
			}
			if err := WriteFile(path, []byte("new"), tc.o); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != "new" {
				t.Fatalf("content %q, %v; want \"new\"", got, err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != tc.mode {
				t.Errorf("mode %v, want %v", fi.Mode().Perm(), tc.mode)
			}
			if names := entries(t, dir); len(names) != 1 {
				t.Errorf("folder holds %v, want only f.json", names)
			}
		})
	}
}

func TestWriteFillErrorKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(path, Options{}, func(w io.Writer) error {
		io.WriteString(w, strings.Repeat("partial ", 1<<18)) // past the buffer: on disk already
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want the fill's", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Errorf("content %q, want the old one", got)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("folder holds %v: the temporary file stayed", names)
	}
}

func TestWriteMissingFolder(t *testing.T) {
	err := WriteFile(filepath.Join(t.TempDir(), "no", "f"), []byte("x"), Options{})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err %v, want fs.ErrNotExist", err)
	}
}

func TestPublish(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lib.so")
	tmp := filepath.Join(dir, "lib.so.part")
	if err := os.WriteFile(tmp, []byte("bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Publish(tmp, path, Options{Perm: 0o755}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("stat %v, %v; want mode 0755", fi, err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the temporary file is still there: %v", err)
	}
	// A missing temporary file, or one in another folder, changes nothing.
	if err := Publish(tmp, path, Options{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing tmp: %v, want fs.ErrNotExist", err)
	}
	other := filepath.Join(t.TempDir(), "x")
	os.WriteFile(other, nil, 0o644)
	if err := Publish(other, path, Options{}); err == nil {
		t.Error("a temporary file in another folder was renamed over path")
	}
	if got, _ := os.ReadFile(path); string(got) != "bytes" {
		t.Errorf("content %q after the refused publishes", got)
	}
}

// Concurrent writers each replace the file whole: a reader only ever sees one of the
// contents written, never a mix, and no temporary file is left.
func TestConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	contents := map[string]bool{}
	for i := range 8 {
		contents[strings.Repeat(fmt.Sprint(i), 10_000)] = true
	}
	var wg sync.WaitGroup
	for c := range contents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				if err := WriteFile(path, []byte(c), Options{NoSync: true}); err != nil {
					t.Error(err)
				}
				got, err := os.ReadFile(path)
				if err != nil || !contents[string(got)] {
					t.Errorf("read %d bytes (%v): not one whole content", len(got), err)
				}
			}
		}()
	}
	wg.Wait()
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("folder holds %v", names)
	}
}

func TestIsTemp(t *testing.T) {
	for name, want := range map[string]bool{
		TempPrefix("disk.json") + "123": true,
		".manifest.json.tmp9":           true,
		"disk.json":                     false,
		"seg-000001.f32":                false,
		".hidden":                       false,
		"x.tmp":                         false,
	} {
		if got := IsTemp(name); got != want {
			t.Errorf("IsTemp(%q) = %v, want %v", name, got, want)
		}
	}
}
