package memory

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory/internal/memtest"
	"github.com/agentmem/memory/vectorstore"
)

// The multi-process tests run this test binary as children (like the crash test): with
// roChildEnv set, TestReadOnlyChild is the child's whole program and talks to the parent
// over stdin/stdout; without it, it returns at once.
const roChildEnv = "MEMORY_RO_CHILD"

// roQueries are searched by every reader; roDocs is the store they read.
var roQueries = []string{"compiled language", "garbage collector memory", "web browser", "interpreted"}

func roDocs() []Document {
	docs := append([]Document(nil), corpus...)
	for i := range 40 {
		docs = append(docs, Document{ID: fmt.Sprintf("n%02d", i), Text: fmt.Sprintf("note %d about languages and filler word%d", i, i)})
	}
	return docs
}

// roAnswer is one line naming the BM25 hits of every roQuery, as child and parent print it.
func roAnswer(m *Memory) (string, error) {
	var parts []string
	for _, q := range roQueries {
		res, err := m.Search(bg, q, WithMode(BM25), TopK(5))
		if err != nil {
			return "", err
		}
		parts = append(parts, strings.Join(ids(res), ","))
	}
	return strings.Join(parts, ";"), nil
}

// TestReadOnlyChild is the child of TestReadOnlyProcesses (it does nothing in a normal
// run). Protocol: it opens the store read-only and prints "open" (or "error <err>"), waits
// for a line "search" and prints "ok <answer>", then waits for stdin to close and closes
// the store.
func TestReadOnlyChild(t *testing.T) {
	dir := os.Getenv(roChildEnv)
	if dir == "" {
		return
	}
	m, err := Open(dir, ReadOnly())
	if err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(0)
	}
	fmt.Println("open")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() == "search" {
			ans, err := roAnswer(m)
			if err != nil {
				fmt.Printf("error %v\n", err)
				continue
			}
			fmt.Printf("ok %s\n", ans)
		}
	}
	if err := m.Close(); err != nil {
		fmt.Printf("error close: %v\n", err)
	}
	os.Exit(0)
}

// roChild is a running reader process.
type roChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

func startROChild(t *testing.T, dir string) *roChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestReadOnlyChild$")
	cmd.Env = append(childEnv(), roChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &roChild{cmd: cmd, stdin: stdin, lines: make(chan string, 16)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return c
}

// next returns the child's next protocol line ("open", "ok ...", "error ..."), skipping
// the test framework's own output.
func (c *roChild) next(t *testing.T) string {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				t.Fatal("reader process ended early")
			}
			if l == "open" || strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "error ") {
				return l
			}
		case <-timeout:
			t.Fatal("reader process did not answer in 60 s")
		}
	}
}

// Three processes open one store read-only and search it at once; meanwhile a writer gets
// ErrLocked naming the readers, and once they are gone it opens.
func TestReadOnlyProcesses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	m, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Add(bg, roDocs()...); err != nil {
		t.Fatal(err)
	}
	want, err := roAnswer(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	before := treeState(t, dir)

	children := make([]*roChild, 3)
	searchAtOnce(t, dir, children, want, "")

	// A writer is refused while they hold it; the error names the readers and the store.
	_, err = Open(dir)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "read-only readers") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("writer Open while 3 readers hold the store: %v, want ErrLocked naming read-only readers and %s", err, dir)
	}
	// Another reader (in this process) joins them.
	r, err := Open(dir, ReadOnly())
	if err != nil {
		t.Fatalf("a fourth reader: %v", err)
	}
	if got, err := roAnswer(r); err != nil || got != want {
		t.Fatalf("fourth reader: %q, %v", got, err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	for i, c := range children {
		c.stdin.Close()
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("reader %d: %v", i, err)
		}
		for l := range c.lines {
			if strings.HasPrefix(l, "error ") {
				t.Errorf("reader %d: %s", i, l)
			}
		}
	}
	if after := treeState(t, dir); after != before {
		t.Fatalf("read-only processes changed the store:\n%s\n->\n%s", before, after)
	}

	// With the readers gone a writer opens; while it holds the store, reader processes
	// read through it (issue 24), and answer as it does.
	w, err := Open(dir)
	if err != nil {
		t.Fatalf("writer after the readers closed: %v", err)
	}
	defer w.Close()
	if got, err := roAnswer(w); err != nil || got != want {
		t.Fatalf("writer: %q, %v", got, err)
	}
	searchAtOnce(t, dir, children, want, " beside a writer")
	for i, c := range children {
		c.stdin.Close()
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("reader %d: %v", i, err)
		}
	}
}

// searchAtOnce starts a reader process on dir in each slot of children and, once all
// hold the store open, has them search at once (each gets "search" before any answer is
// read); each must answer want. where follows "reader N" in the errors.
func searchAtOnce(t *testing.T, dir string, children []*roChild, want, where string) {
	t.Helper()
	for i := range children {
		children[i] = startROChild(t, dir)
	}
	for i, c := range children {
		if l := c.next(t); l != "open" {
			t.Fatalf("reader %d%s: %s", i, where, l)
		}
	}
	for _, c := range children {
		fmt.Fprintln(c.stdin, "search")
	}
	for i, c := range children {
		if a := c.next(t); a != "ok "+want {
			t.Errorf("reader %d%s answered %q, want %q", i, where, a, "ok "+want)
		}
	}
}

// treeState lists every file under root with its size and content hash.
func treeState(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			fmt.Fprintf(&b, "%s/\n", rel)
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %x\n", rel, len(data), sha256.Sum256(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// In one process: a read-only store reads and searches like a writable one, refuses every
// write with ErrReadOnly, and leaves the files as they were.
func TestReadOnlySemantics(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	emb := vectorstore.NewHashEmbedder(32)
	m := openT(t, dir, WithEmbedder(emb))
	if err := m.Add(bg, corpus...); err != nil {
		t.Fatal(err)
	}
	if err := m.Collection("notes").Add(bg, Document{ID: "n1", Text: "a note about compiled languages"}); err != nil {
		t.Fatal(err)
	}
	want, err := roAnswer(m)
	if err != nil {
		t.Fatal(err)
	}
	wantHybrid, err := m.Search(bg, "compiled language", TopK(3))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	before := treeState(t, dir)

	r := openT(t, dir, ReadOnly(), WithEmbedder(emb))
	if got, err := roAnswer(r); err != nil || got != want {
		t.Fatalf("read-only BM25 answers %q, %v; want %q", got, err, want)
	}
	if got, err := r.Search(bg, "compiled language", TopK(3)); err != nil || strings.Join(ids(got), ",") != strings.Join(ids(wantHybrid), ",") {
		t.Fatalf("read-only hybrid search: %v, %v; want %v", ids(got), err, ids(wantHybrid))
	}
	if d, err := r.Get(bg, "go"); err != nil || d.Text != corpus[0].Text {
		t.Fatalf("Get: %+v, %v", d, err)
	}
	if memtest.Count(t, r) != len(corpus) || memtest.Count(t, r.Collection("notes")) != 1 {
		t.Fatalf("counts %d, %d", memtest.Count(t, r), memtest.Count(t, r.Collection("notes")))
	}
	if got := strings.Join(memtest.Collections(t, r), ","); got != "default,notes" {
		t.Fatalf("collections %q", got)
	}

	doc := Document{ID: "new", Text: "new text"}
	writes := []struct {
		name string
		fn   func() error
	}{
		{"Add", func() error { return r.Add(bg, doc) }},
		{"Upsert", func() error { return r.Upsert(bg, corpus[0]) }},
		{"Delete", func() error { return r.Delete(bg, "go") }},
		{"DeleteWhere", func() error { _, err := r.DeleteWhere(bg, Where{"lang": "go"}); return err }},
		{"CreateCollection", func() error { _, err := r.CreateCollection("fresh"); return err }},
		{"DeleteCollection", func() error { return r.DeleteCollection(bg, "notes") }},
		{"Add to a new collection", func() error { return r.Collection("other").Add(bg, doc) }},
		{"Delete in a named collection", func() error { return r.Collection("notes").Delete(bg, "n1") }},
		{"SaveSOPs", r.SaveSOPs},
	}
	for _, w := range writes {
		if err := w.fn(); !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s on a read-only store: %v, want ErrReadOnly", w.name, err)
		}
	}
	if memtest.Count(t, r) != len(corpus) || memtest.Count(t, r.Collection("notes")) != 1 {
		t.Fatal("a refused write changed the counts")
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close of a read-only store: %v", err)
	}
	if after := treeState(t, dir); after != before {
		t.Fatalf("a read-only open changed the store:\n%s\n->\n%s", before, after)
	}
}

// A read-only open never creates anything, and tells a missing store from a foreign one.
func TestReadOnlyOpenErrors(t *testing.T) {
	root := t.TempDir()
	missing := filepath.Join(root, "missing")
	if _, err := Open(missing, ReadOnly()); !errors.Is(err, ErrStoreNotFound) {
		t.Fatalf("missing dir: %v", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("a read-only open created the directory")
	}
	empty := filepath.Join(root, "empty")
	os.Mkdir(empty, 0o755)
	if _, err := Open(empty, ReadOnly()); !errors.Is(err, ErrStoreNotFound) {
		t.Fatalf("empty dir: %v", err)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Fatal("a read-only open wrote into an empty directory")
	}
	foreign := filepath.Join(root, "foreign")
	os.Mkdir(foreign, 0o755)
	os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("x"), 0o644)
	if _, err := Open(foreign, ReadOnly()); !errors.Is(err, ErrNotAStore) {
		t.Fatalf("foreign dir: %v", err)
	}
	// A store of another embedder cannot be re-embedded read-only.
	dir := filepath.Join(root, "store")
	m := openT(t, dir, WithEmbedder(vectorstore.NewHashEmbedder(16)))
	m.Add(bg, corpus...)
	m.Close()
	if _, err := Open(dir, ReadOnly(), WithEmbedder(vectorstore.NewHashEmbedder(24))); !errors.Is(err, ErrEmbedderMismatch) {
		t.Fatalf("other embedder, read-only: %v", err)
	}
	// Readers and a writer in one process exclude each other too.
	r := openT(t, dir, ReadOnly())
	if _, err := Open(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("writer beside a reader: %v", err)
	}
	r.Close()
	w := openT(t, dir)
	if r, err := Open(dir, ReadOnly()); err != nil || r.remote == nil { // it reads through the writer
		t.Fatalf("reader beside a writer: %v", err)
	} else {
		r.Close()
	}
	if _, err := Open(dir); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "(a writer") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("writer beside a writer: %v, want ErrLocked naming a writer and %s", err, dir)
	}
	w.Close()
}

// A read-only store whose BM25 index is missing, or lags behind the store of record (a
// writer killed before it persisted the index), rebuilds it in memory for this process and
// answers right, writing nothing.
func TestReadOnlyRebuildsInMemory(t *testing.T) {
	src := filepath.Join(t.TempDir(), "store")
	m := openT(t, src)
	if err := m.Add(bg, roDocs()...); err != nil {
		t.Fatal(err)
	}
	want, err := roAnswer(m)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	cases := []struct {
		name   string
		damage func(dir string) error
	}{
		{"index missing", func(dir string) error { return os.RemoveAll(filepath.Join(dir, bm25Dir)) }},
		{"index of another store", func(dir string) error {
			other := filepath.Join(t.TempDir(), "other")
			o, err := Open(other)
			if err != nil {
				return err
			}
			docs := roDocs()
			for i := range docs {
				docs[i].ID = "x" + docs[i].ID
			}
			if err := o.Add(bg, docs...); err != nil {
				return err
			}
			o.Close()
			if err := os.RemoveAll(filepath.Join(dir, bm25Dir)); err != nil {
				return err
			}
			return os.CopyFS(filepath.Join(dir, bm25Dir), os.DirFS(filepath.Join(other, bm25Dir)))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "s")
			if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
			if err := tc.damage(dir); err != nil {
				t.Fatal(err)
			}
			before := treeState(t, dir)
			r := openT(t, dir, ReadOnly())
			if got, err := roAnswer(r); err != nil || got != want {
				t.Fatalf("read-only answers %q, %v; want %q", got, err, want)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if after := treeState(t, dir); after != before {
				t.Fatalf("a read-only open changed the store:\n%s\n->\n%s", before, after)
			}
		})
	}
}

// A read-only open of a healthy store with an embedder logs no warning: its vector index,
// kept in memory, is loaded from the store of record by design, which needs no repair.
// (Every read-only search used to log a WARN telling the user to run `memory check
// --repair`, which found nothing.)
func TestReadOnlyHealthyStoreNoWarning(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	emb := vectorstore.NewHashEmbedder(32)
	m := openT(t, dir, WithEmbedder(emb))
	if err := m.Add(bg, roDocs()...); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	r2 := openT(t, dir, ReadOnly(), WithEmbedder(emb), WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	for _, mode := range []Mode{Hybrid, Dense, BM25} {
		if res, err := r2.Search(bg, "compiled language", WithMode(mode), TopK(3)); err != nil || len(res) == 0 {
			t.Fatalf("%s search: %v, %v", mode, ids(res), err)
		}
	}
	if strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("a read-only open of a healthy store warned:\n%s", logs.String())
	}
}
