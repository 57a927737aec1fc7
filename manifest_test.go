package memory

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory/internal/memtest"
	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/vectorstore"
)

// A manifest whose store.db is missing, empty, truncated or not a database opens as
// ErrCorrupt naming the file, never as a silently empty store (issue 12: a deleted
// store.db beside its BM25 index opened empty and the stale index filled the top-k with
// ghosts; a store.db cut to 8-16 KB panicked inside bbolt).
func TestManifestWithDamagedStoreFile(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	m := openT(t, src)
	var docs []Document
	for i := range 300 {
		docs = append(docs, Document{ID: fmt.Sprintf("d%03d", i), Text: fmt.Sprintf("document %d %s", i, strings.Repeat("filler text ", 40))})
	}
	if err := m.Add(bg, docs...); err != nil {
		t.Fatal(err)
	}
	m.Close()
	size := func() int64 {
		fi, err := os.Stat(filepath.Join(src, dbName))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}()
	if size < 64<<10 {
		t.Fatalf("store.db of %d bytes: too small to cut at 8-16 KB and half", size)
	}
	cut := func(n int64) func(string) error {
		return func(p string) error { return os.Truncate(p, n) }
	}
	cases := []struct {
		name   string
		damage func(path string) error
	}{
		{"deleted", os.Remove},
		{"empty", cut(0)},
		{"8 KB", cut(8 << 10)},
		{"12 KB", cut(12 << 10)},
		{"16 KB", cut(16 << 10)},
		{"half", func(p string) error {
			// half of the pages in use: the file itself may be longer (bbolt grows a store
			// mapped 1 GiB wide by 16 MiB at a time, a tail of unused pages)
			pageSize, pages, err := store.PageLayout(p)
			if err != nil {
				return err
			}
			return os.Truncate(p, int64(pages)*pageSize/2)
		}},
		{"last used page cut", func(p string) error {
			pageSize, pages, err := store.PageLayout(p)
			if err != nil {
				return err
			}
			return os.Truncate(p, int64(pages-1)*pageSize)
		}},
		{"not a database", func(p string) error { return os.WriteFile(p, []byte(strings.Repeat("x", 70000)), 0o644) }},
		{"both meta pages zeroed", func(p string) error {
			pageSize, _, err := store.PageLayout(p)
			if err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteAt(make([]byte, 2*pageSize), 0)
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "s")
			if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
			db := filepath.Join(dir, dbName)
			if err := tc.damage(db); err != nil {
				t.Fatal(err)
			}
			before := treeState(t, dir)
			for _, open := range []struct {
				name string
				fn   func(string, ...Option) (*Memory, error)
			}{{"Open", Open}, {"OpenExisting", OpenExisting}, {"Open read-only", func(d string, o ...Option) (*Memory, error) { return Open(d, append(o, ReadOnly())...) }}} {
				m, err := open.fn(dir)
				if err == nil {
					m.Close()
					t.Fatalf("%s opened a store whose %s is %s", open.name, dbName, tc.name)
				}
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), db) {
					t.Fatalf("%s: %v, want ErrCorrupt naming %s", open.name, err, db)
				}
			}
			if after := treeState(t, dir); after != before {
				t.Fatalf("a refused open changed the store:\n%s\n->\n%s", before, after)
			}
		})
	}
}

// The child of TestCreateRace (it does nothing in a normal run): it waits until the
// moment in createAtEnv, opens (creating) the store, adds one document and closes it,
// printing "ok", "locked" or "error <err>".
const createChildEnv, createAtEnv = "MEMORY_CREATE_CHILD", "MEMORY_CREATE_AT"

func TestCreateRaceChild(t *testing.T) {
	dir := os.Getenv(createChildEnv)
	if dir == "" {
		return
	}
	var at int64
	fmt.Sscan(os.Getenv(createAtEnv), &at)
	time.Sleep(time.Until(time.Unix(0, at)))
	m, err := Open(dir)
	switch {
	case errors.Is(err, ErrLocked):
		fmt.Println("locked")
	case err != nil:
		fmt.Printf("error %v\n", err)
	default:
		err = m.Add(bg, Document{ID: fmt.Sprint(os.Getpid()), Text: "made by a racing process"})
		if cerr := m.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			fmt.Printf("error %v\n", err)
		} else {
			fmt.Println("ok")
		}
	}
	os.Exit(0)
}

// Processes creating one new store at the same moment do not race: each either creates
// (or opens) it or gets ErrLocked; none fails with an untyped error (issue 12: the manifest
// temp file race), and the store opens afterwards with every acknowledged document.
func TestCreateRace(t *testing.T) {
	const procs, rounds = 4, 5
	for round := range rounds {
		dir := filepath.Join(t.TempDir(), "new")
		if round%2 == 1 {
			os.Mkdir(dir, 0o755) // an empty directory, the other rounds none
		}
		at := time.Now().Add(800 * time.Millisecond).UnixNano()
		cmds := make([]*exec.Cmd, procs)
		outs := make([]*strings.Builder, procs)
		for i := range cmds {
			cmds[i] = exec.Command(os.Args[0], "-test.run=^TestCreateRaceChild$")
			cmds[i].Env = append(childEnv(), createChildEnv+"="+dir, fmt.Sprintf("%s=%d", createAtEnv, at))
			outs[i] = &strings.Builder{}
			cmds[i].Stdout, cmds[i].Stderr = outs[i], outs[i]
			if err := cmds[i].Start(); err != nil {
				t.Fatal(err)
			}
		}
		oks := 0
		for i, c := range cmds {
			if err := c.Wait(); err != nil {
				t.Fatalf("round %d, process %d: %v\n%s", round, i, err, outs[i])
			}
			out := outs[i].String()
			switch {
			case strings.Contains(out, "\nok\n") || strings.HasPrefix(out, "ok\n"):
				oks++
			case strings.Contains(out, "locked\n"):
			default:
				t.Fatalf("round %d, process %d: %s", round, i, out)
			}
		}
		if oks == 0 {
			t.Fatalf("round %d: no process created the store", round)
		}
		m, err := Open(dir)
		if err != nil {
			t.Fatalf("round %d: the raced store does not open: %v", round, err)
		}
		if n := memtest.Count(t, m); n != oks {
			t.Errorf("round %d: %d documents, %d processes acknowledged one", round, n, oks)
		}
		m.Close()
	}
}

// store.CheckFile reads untrusted bytes (a damaged store.db) before bbolt maps them: it
// never panics, and what it accepts has a valid meta page whose data lies in the file.
func FuzzCheckStoreFile(f *testing.F) {
	dir := f.TempDir()
	m, err := Open(filepath.Join(dir, "seed"))
	if err != nil {
		f.Fatal(err)
	}
	m.Add(bg, corpus...)
	m.Close()
	good, err := os.ReadFile(filepath.Join(dir, "seed", dbName))
	if err != nil {
		f.Fatal(err)
	}
	manifestJSON, err := os.ReadFile(filepath.Join(dir, "seed", manifestName))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good[:8192])
	f.Add(good)
	f.Add([]byte{})
	f.Add(make([]byte, 4096))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), dbName)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		err := store.CheckFile(path)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v: want ErrCorrupt naming %s", err, path)
			}
			return
		}
		// Accepted: a store of it opens (read-only: the fuzzed file is not changed) or
		// fails with a typed error, never a panic or a fault.
		if err := os.WriteFile(filepath.Join(filepath.Dir(path), manifestName), manifestJSON, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := Open(filepath.Dir(path), ReadOnly())
		if err != nil {
			if !typedStoreError(err) {
				t.Fatalf("accepted, then Open: untyped %v", err)
			}
			return
		}
		m.Close()
	})
}

// A byte flipped in the manifest where the JSON still parses (the embedder's name, a field
// name) is ErrCorrupt on open: before the manifest had a checksum, a flipped embedder name
// opened as a store of another, unknown embedder and `check` reported nothing (bench/flipfuzz,
// issue #39). A manifest of an older version, without a checksum, still opens.
func TestManifestChecksum(t *testing.T) {
	dir := t.TempDir()
	m, err := Open(dir, WithEmbedder(vectorstore.NewHashEmbedder(8)))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Add(t.Context(), Document{ID: "a", Text: "alpha"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, manifestName)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(good), `"crc"`) {
		t.Fatalf("the manifest records no checksum:\n%s", good)
	}
	for _, tc := range []struct{ name, from, to string }{
		{"embedder id", `"id": "`, `"id": "x`},
		{"dimension", `"dim": 8`, `"dim": 9`},
		{"field name", `"embedder"`, `"embeddes"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := strings.Replace(string(good), tc.from, tc.to, 1)
			if bad == string(good) {
				t.Fatalf("%q not in the manifest", tc.from)
			}
			if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
				t.Fatal(err)
			}
			if m, err := Open(dir, WithEmbedder(vectorstore.NewHashEmbedder(8))); !errors.Is(err, ErrCorrupt) {
				if err == nil {
					m.Close()
				}
				t.Fatalf("open with a damaged manifest: %v, want ErrCorrupt", err)
			}
		})
	}
	// Without its checksum (a manifest of an older version) it is read as it is.
	var legacy []string
	for _, l := range strings.Split(string(good), "\n") {
		if !strings.Contains(l, `"crc"`) {
			legacy = append(legacy, l)
		}
	}
	old := strings.Join(legacy, "\n")
	old = strings.Replace(old, ",\n}", "\n}", 1) // the field before crc ended with a comma
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err = Open(dir, WithEmbedder(vectorstore.NewHashEmbedder(8)))
	if err != nil {
		t.Fatalf("open with a manifest without checksum: %v\n%s", err, old)
	}
	defer m.Close()
	if n, err := m.Count(t.Context()); err != nil || n != 1 {
		t.Fatalf("count %d, %v", n, err)
	}
}
