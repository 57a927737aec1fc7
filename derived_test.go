package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/memory/internal/bm25"
	"github.com/agentmem/memory/internal/store"
)

// TestToyDerivedIndex registers a new kind of derived index (below, in this file) and checks
// that writes, deletes and the open-time load reach it through the seam.
func TestToyDerivedIndex(t *testing.T) {
	// A store of many small writes, reopened: every index is verified and none rebuilt.
	t.Run("no spurious rebuild", func(t *testing.T) {
		dir := t.TempDir()
		m := openT(t, dir)
		for i := range 30 {
			if err := m.Add(context.Background(), crashDoc(i)); err != nil {
				t.Fatal(err)
			}
		}
		m.Close()
		var logs strings.Builder
		m = openT(t, dir, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		if _, err := m.Search(context.Background(), "crashword3"); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(logs.String(), "rebuild") {
			t.Fatalf("reopen rebuilt an index: %s", logs.String())
		}
	})
	ctx := context.Background()
	dir := t.TempDir()
	toyLog = nil
	m := openT(t, dir, withDerivedKind(toyKind))
	if err := m.Add(ctx, Document{ID: "a", Text: "alpha"}, Document{ID: "b", Text: "beta"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if want := []string{"put a", "put b", "del a"}; !slices.Equal(toyLog, want) {
		t.Fatalf("toy index saw %q, want %q", toyLog, want)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// Its Seq is 0 after a reopen (it keeps nothing on disk): it is loaded from the store.
	toyLog = nil
	m = openT(t, dir, withDerivedKind(toyKind))
	if _, err := m.Search(ctx, "beta"); err != nil { // a BM25 search opens BM25 alone
		t.Fatal(err)
	}
	if len(toyLog) != 0 {
		t.Fatalf("a BM25 search opened the toy index: it saw %q", toyLog)
	}
	s, err := m.Collection("").state(false)
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := m.reg.rlockOpen(s) // what a dense search or a write opens: every kind
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if want := []string{"put b"}; !slices.Equal(toyLog, want) {
		t.Fatalf("after reopen the toy index saw %q, want %q", toyLog, want)
	}
	if n, _ := s.Indexes[len(s.Indexes)-1].Count(); n != 1 {
		t.Fatalf("toy index holds %d ids, want 1", n)
	}
}

// TestDerivedIndexRebuiltWhenItDisagrees damages the BM25 index in ways that open cleanly
// (an index of another store, an index ahead of the store, an index missing documents)
// and checks that each is rebuilt from the store of record and answers right.
func TestDerivedIndexRebuiltWhenItDisagrees(t *testing.T) {
	ctx := context.Background()
	docs := []Document{
		{ID: "d1", Text: "the quick brown fox"},
		{ID: "d2", Text: "jumps over the lazy dog"},
		{ID: "d3", Text: "a fox and a dog are friends"},
	}
	build := func(t *testing.T, docs []Document) string {
		dir := t.TempDir()
		m := openT(t, dir)
		if err := m.Add(ctx, docs...); err != nil {
			t.Fatal(err)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	other := func(t *testing.T) string {
		return build(t, []Document{{ID: "x1", Text: "fox fox fox"}, {ID: "x2", Text: "dog"}, {ID: "x3", Text: "zebra"}})
	}
	cases := map[string]func(t *testing.T, dir string){
		"another store's index": func(t *testing.T, dir string) {
			swapDir(t, filepath.Join(other(t), bm25Dir), filepath.Join(dir, bm25Dir))
		},
		"index ahead of the store": func(t *testing.T, dir string) {
			more := build(t, append(slices.Clone(docs), Document{ID: "d4", Text: "fox"}))
			swapDir(t, filepath.Join(more, bm25Dir), filepath.Join(dir, bm25Dir))
		},
		"index missing a document": func(t *testing.T, dir string) {
			less := build(t, docs[:2])
			swapDir(t, filepath.Join(less, bm25Dir), filepath.Join(dir, bm25Dir))
		},
		"index deleted": func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, bm25Dir)); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			dir := build(t, docs)
			damage(t, dir)
			m := openT(t, dir)
			res, err := m.Search(ctx, "fox", WithMode(BM25), TopK(10))
			if err != nil {
				t.Fatal(err)
			}
			got := ids(res)
			slices.Sort(got)
			if want := []string{"d1", "d3"}; !slices.Equal(got, want) {
				t.Fatalf("fox -> %q, want %q", got, want)
			}
		})
	}
}

// swapDir replaces dst with a copy of src.
func swapDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.RemoveAll(dst); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}

// TestGuardTurnsPanicsIntoErrCorrupt pins the seam's panic guard.
func TestGuardTurnsPanicsIntoErrCorrupt(t *testing.T) {
	err := store.Guard("bm25 open", func() error { panic("zap: index out of range") })
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "bm25 open") {
		t.Fatalf("guard: %v", err)
	}
	if err := store.Guard("x", func() error { return bm25.ErrBM25 }); !errors.Is(err, bm25.ErrBM25) {
		t.Fatalf("guard changed an error: %v", err)
	}
}

// toyIndex is a derived index kept in memory: the set of live index ids with the length of
// each one's text. It is the whole of what a new kind of derived index needs: this type and
// one registration (withDerivedKind(toyKind), or a line in derivedKinds).
type toyIndex struct {
	mu   sync.Mutex
	seq  uint64
	lens map[string]int
	log  *[]string // every call, for the test
}

var toyKind = derivedKind{name: "toy", open: func(m *Memory, s *colState, dir string) (store.Index, error) {
	return &toyIndex{lens: map[string]int{}, log: &toyLog}, nil
}}

var toyLog []string

func (t *toyIndex) Seq() uint64 { return t.seq } // in memory: loaded on every open

func (t *toyIndex) Apply(_ context.Context, puts []store.Unit, dels []string, seq uint64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range dels {
		delete(t.lens, id)
		*t.log = append(*t.log, "del "+id)
	}
	for _, p := range puts {
		text, _, _, _ := p.Record.UnitText(p.Chunk)
		t.lens[p.ID] = len(text)
		*t.log = append(*t.log, "put "+p.ID)
	}
	t.seq = seq
	return nil
}

func (t *toyIndex) Count() (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.lens), nil
}

func (t *toyIndex) Close() error { return nil }

// TestOrphanSegmentIgnored leaves segment files that no snapshot of the BM25 index names
// (a kill during a segment write leaves an empty one) beside a healthy index: a read-only
// open must neither distrust nor rebuild the index, check must be clean, and the next
// writable open removes the orphans (issue 21, point 6).
func TestOrphanSegmentIgnored(t *testing.T) {
	dir := t.TempDir()
	m := openT(t, dir)
	for i := range 40 {
		if err := m.Add(bg, crashDoc(i)); err != nil {
			t.Fatal(err)
		}
	}
	want, err := m.Search(bg, "crashword7", WithMode(BM25), TopK(3))
	if err != nil || len(want) == 0 {
		t.Fatalf("search: %v, %d results", err, len(want))
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	segDir := filepath.Join(m.dx.colPath(bm25Dir, DefaultCollection), "store")
	orphans := map[string][]byte{
		"000000000abc.zap": nil,                                   // killed before any byte
		"000000000abd.zap": []byte(strings.Repeat("partial", 40)), // killed mid-write
	}
	for name, data := range orphans {
		if err := os.WriteFile(filepath.Join(segDir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	for round := range 2 { // the second open must not have been changed by the first
		var logs strings.Builder
		ro, err := Open(dir, ReadOnly(), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := ro.Check(bg, false) // first: it checks the index on disk before opening it
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() {
			t.Fatalf("round %d: check of a store with orphan segments is not clean:\n%s", round, fmt.Sprint(rep.Indexes))
		}
		got, err := ro.Search(bg, "crashword7", WithMode(BM25), TopK(3))
		if err != nil || !slices.Equal(ids(got), ids(want)) {
			t.Fatalf("round %d: read-only search: %v, %v (want %v)", round, err, ids(got), ids(want))
		}
		if err := ro.Close(); err != nil {
			t.Fatal(err)
		}
		if l := logs.String(); strings.Contains(l, "rebuild") || strings.Contains(l, "cannot be trusted") {
			t.Fatalf("round %d: a read-only open distrusted the index for an orphan segment:\n%s", round, l)
		}
		for name := range orphans {
			if !fileExists(filepath.Join(segDir, name)) {
				t.Fatalf("round %d: a read-only open removed %s", round, name)
			}
		}
	}

	var logs strings.Builder
	m = openT(t, dir, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	got, err := m.Search(bg, "crashword7", WithMode(BM25), TopK(3)) // opens the indexes
	if err != nil || !slices.Equal(ids(got), ids(want)) {
		t.Fatalf("writable search: %v, %v (want %v)", err, ids(got), ids(want))
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if l := logs.String(); strings.Contains(l, "rebuild") {
		t.Fatalf("a writable open rebuilt the index for an orphan segment:\n%s", l)
	}
	for name := range orphans {
		if fileExists(filepath.Join(segDir, name)) {
			t.Fatalf("the writable open left the orphan %s", name)
		}
	}
	live, _ := filepath.Glob(filepath.Join(segDir, "*.zap"))
	if len(live) == 0 {
		t.Fatal("the writable open removed the live segments")
	}
}
