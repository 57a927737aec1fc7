package memory

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentmem/memory/internal/atomicfile"
	"github.com/agentmem/memory/internal/memtest"
	bolt "go.etcd.io/bbolt"
)

// freshBolt is the file bbolt's initialisation writes (no transaction committed).
func freshBolt(t *testing.T) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fresh.db")
	db, err := bolt.Open(p, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	must(t, db.Close())
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCreateLeftovers opens directories as a creation that failed or was killed leaves
// them (issue 21, point 7: a disk filling up while a store was created left a partial
// store.db and no manifest, which every later command refused as "not a store database"):
// each is recognised and the store made, or, when the files may hold data, refused and
// left untouched.
func TestCreateLeftovers(t *testing.T) {
	fresh := freshBolt(t)
	pageSize := int(uint32(fresh[16+8]) | uint32(fresh[16+9])<<8 | uint32(fresh[16+10])<<16 | uint32(fresh[16+11])<<24)
	if len(fresh) != 4*pageSize {
		t.Fatalf("bbolt's first write is %d bytes, page size %d: not the 4 pages expected", len(fresh), pageSize)
	}
	// A store with data whose manifest was lost, and its store.db cut short.
	full := filepath.Join(t.TempDir(), "full")
	m := openT(t, full)
	must(t, m.Add(bg, corpus...))
	must(t, m.Close())
	withData, err := os.ReadFile(filepath.Join(full, dbName))
	must(t, err)

	write := func(name string, data []byte) func(dir string) {
		return func(dir string) { must(t, os.WriteFile(filepath.Join(dir, name), data, 0o644)) }
	}
	both := func(fs ...func(string)) func(string) {
		return func(dir string) {
			for _, f := range fs {
				f(dir)
			}
		}
	}
	made := []struct {
		name  string
		setup func(dir string)
	}{
		{"partial temp store.db", write(atomicfile.TempPrefix(dbName)+"123456", fresh[:pageSize])},
		{"empty temp store.db", write(atomicfile.TempPrefix(dbName)+"9", nil)},
		{"temp store.db beside a whole one", both(write(atomicfile.TempPrefix(dbName)+"1", fresh[:2*pageSize]), write(dbName, fresh))},
		{"store.db cut after its first page", write(dbName, fresh[:pageSize])},
		{"store.db cut after its meta pages", write(dbName, fresh[:2*pageSize])},
		{"store.db cut in its last page", write(dbName, fresh[:4*pageSize-100])},
		{"store.db cut, with a manifest temp", both(write(dbName, fresh[:3*pageSize]), write(manifestTempPrefix+"77", []byte(`{"form`)))},
		{"whole empty store.db, no manifest", write(dbName, fresh)},
	}
	for _, tc := range made {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "s")
			must(t, os.Mkdir(dir, 0o755))
			tc.setup(dir)
			// Read-only tools say there is no store (yet), and change nothing.
			before := treeState(t, dir)
			if _, err := OpenExisting(dir); !errors.Is(err, ErrStoreNotFound) {
				t.Fatalf("OpenExisting: %v, want ErrStoreNotFound", err)
			}
			if _, err := Open(dir, ReadOnly()); !errors.Is(err, ErrStoreNotFound) {
				t.Fatalf("Open read-only: %v, want ErrStoreNotFound", err)
			}
			if after := treeState(t, dir); after != before {
				t.Fatalf("a read-only open changed the directory:\n%s\n->\n%s", before, after)
			}
			m, err := Open(dir)
			if err != nil {
				t.Fatalf("Open after a failed creation: %v", err)
			}
			must(t, m.Add(bg, corpus...))
			must(t, m.Close())
			m = openT(t, dir)
			if n := memtest.Count(t, m); n != len(corpus) {
				t.Fatalf("count %d, want %d", n, len(corpus))
			}
			must(t, m.Close())
			entries, err := os.ReadDir(dir)
			must(t, err)
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), atomicfile.TempPrefix(dbName)) || strings.HasPrefix(e.Name(), manifestTempPrefix) {
					t.Fatalf("leftover %s not removed", e.Name())
				}
			}
		})
	}

	refused := []struct {
		name  string
		setup func(dir string)
		want  error
	}{
		{"store.db with data, no manifest", write(dbName, withData), ErrCorrupt},
		{"store.db with data cut short, no manifest", write(dbName, withData[:2*pageSize]), ErrNotAStore},
		{"store.db with data cut after its first page, no manifest", write(dbName, withData[:pageSize]), ErrNotAStore},
		{"store.db of garbage, no manifest", write(dbName, []byte(strings.Repeat("not bbolt ", 2000))), ErrNotAStore},
		{"a new store.db whose second meta page is damaged", write(dbName, append(append([]byte(nil), fresh[:pageSize]...), make([]byte, pageSize)...)), ErrNotAStore},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "s")
			must(t, os.Mkdir(dir, 0o755))
			tc.setup(dir)
			before := treeState(t, dir)
			m, err := Open(dir)
			if err == nil {
				m.Close()
				t.Fatal("Open opened it")
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open: %v, want %v", err, tc.want)
			}
			if _, err := OpenExisting(dir); !errors.Is(err, ErrNotAStore) && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("OpenExisting: %v, want ErrNotAStore or ErrCorrupt", err)
			}
			if after := treeState(t, dir); after != before {
				t.Fatalf("a refused open changed the directory:\n%s\n->\n%s", before, after)
			}
		})
	}
}

// TestCreateOnFullDisk creates stores on a small tmpfs filled so that the creation runs
// out of space at every step in turn; once space is freed, the store opens, takes
// documents and keeps them (issue 21, point 7). It needs to mount a tmpfs (root on Linux)
// and is skipped where it cannot.
func TestCreateOnFullDisk(t *testing.T) {
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (needs root on Linux): %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	filler := filepath.Join(mnt, "filler")
	fill := func(leave int) {
		f, err := os.Create(filler)
		must(t, err)
		defer f.Close()
		chunk := make([]byte, 4096)
		n := 0
		for {
			if _, err := f.Write(chunk); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
			n += len(chunk)
		}
		must(t, f.Truncate(int64(max(n-leave, 0))))
	}
	failed := 0
	for leave := 0; leave <= 48<<10; leave += 4 << 10 {
		dir := filepath.Join(mnt, fmt.Sprintf("s%d", leave))
		fill(leave)
		m, err := Open(dir, WithNoSync())
		if err == nil {
			err = m.Add(bg, corpus...)
			m.Close()
		}
		if err != nil {
			failed++
		}
		must(t, os.Remove(filler))
		m, err = Open(dir, WithNoSync())
		if err != nil {
			t.Fatalf("%d KB free during creation, then freed: Open: %v", leave>>10, err)
		}
		if err := m.Add(bg, corpus...); err != nil {
			t.Fatalf("%d KB free during creation, then freed: Add: %v", leave>>10, err)
		}
		must(t, m.Close())
		m, err = OpenExisting(dir, WithNoSync())
		if err != nil {
			t.Fatalf("%d KB free during creation: reopen: %v", leave>>10, err)
		}
		if n := memtest.Count(t, m); n != len(corpus) {
			t.Fatalf("%d KB free during creation: count %d, want %d", leave>>10, n, len(corpus))
		}
		must(t, m.Close())
		must(t, os.RemoveAll(dir))
	}
	if failed == 0 {
		t.Fatal("no creation ran out of space: the test filled nothing")
	}
}

// TestCreateLeftoversRace opens a directory holding a store.db cut short in its creation
// from several goroutines at once (each open locks store.db like another process would):
// each creates or opens the store, or gets ErrLocked, and the store keeps every
// acknowledged document.
func TestCreateLeftoversRace(t *testing.T) {
	fresh := freshBolt(t)
	for round := range 8 {
		dir := filepath.Join(t.TempDir(), "s")
		must(t, os.Mkdir(dir, 0o755))
		cut := []int{4096, 8192, 12288, len(fresh) - 1}[round%4]
		must(t, os.WriteFile(filepath.Join(dir, dbName), fresh[:cut], 0o644))
		const n = 4
		errs := make(chan error, n)
		for i := range n {
			go func() {
				m, err := Open(dir, WithNoSync())
				if err != nil {
					errs <- err
					return
				}
				err = m.Add(bg, Document{ID: fmt.Sprint(i), Text: "made by a racing opener"})
				errs <- errors.Join(err, m.Close())
			}()
		}
		oks := 0
		for range n {
			switch err := <-errs; {
			case err == nil:
				oks++
			case errors.Is(err, ErrLocked):
			default:
				t.Fatalf("round %d (store.db cut at %d): %v", round, cut, err)
			}
		}
		if oks == 0 {
			t.Fatalf("round %d: no opener created the store", round)
		}
		m := openT(t, dir)
		if c := memtest.Count(t, m); c != oks {
			t.Fatalf("round %d: %d documents, %d acknowledged", round, c, oks)
		}
		must(t, m.Close())
	}
}

// TestMakeDBInterleavings runs what another process may do between a new store.db's
// initialisation under its temporary name and its link into place (testHookMakeDB): make
// store.db first, remove the temporary file as a leftover, or fail (a full disk). The
// creation opens the store that is there, or fails and leaves nothing in the way.
func TestMakeDBInterleavings(t *testing.T) {
	fresh := freshBolt(t)
	cases := []struct {
		name    string
		between func(dir, tmp string) error
		fails   bool
	}{
		{"another made store.db", func(dir, _ string) error {
			return os.WriteFile(filepath.Join(dir, dbName), fresh, 0o644)
		}, false},
		{"another made store.db and removed ours", func(dir, tmp string) error {
			return errors.Join(os.WriteFile(filepath.Join(dir, dbName), fresh, 0o644), os.Remove(tmp))
		}, false},
		{"the disk filled up", func(string, string) error { return syscall.ENOSPC }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "s")
			testHookMakeDB = func(tmp string) error { return tc.between(dir, tmp) }
			m, err := Open(dir)
			testHookMakeDB = nil
			if tc.fails {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("Open: %v, want ENOSPC", err)
				}
				if entries, _ := os.ReadDir(dir); len(entries) != 0 {
					t.Fatalf("a failed creation left %v", entries)
				}
				m, err = Open(dir)
			}
			if err != nil {
				t.Fatal(err)
			}
			must(t, m.Add(bg, corpus...))
			must(t, m.Close())
			m = openT(t, dir)
			if n := memtest.Count(t, m); n != len(corpus) {
				t.Fatalf("count %d", n)
			}
			must(t, m.Close())
		})
	}
}
