package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/agentmem/memory/internal/memtest"
	"github.com/agentmem/memory/vectorstore"
)

// TestCollectionCap: creating one collection past Options.MaxCollections is
// ErrTooManyCollections, and nothing stored is touched.
func TestCollectionCap(t *testing.T) {
	ctx := context.Background()
	m := openT(t, "", func(o *Options) { o.MaxCollections = 3 })
	for i := range 3 {
		if err := m.Collection(fmt.Sprintf("c%d", i)).Add(ctx, Document{ID: "x", Text: "hello"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.CreateCollection("c3"); !errors.Is(err, ErrTooManyCollections) {
		t.Fatalf("CreateCollection past the cap: %v, want ErrTooManyCollections", err)
	}
	if err := m.Collection("c4").Add(ctx, Document{ID: "x", Text: "hello"}); !errors.Is(err, ErrTooManyCollections) {
		t.Fatalf("Add to a new collection past the cap: %v, want ErrTooManyCollections", err)
	}
	if got := memtest.Collections(t, m); len(got) != 3 {
		t.Fatalf("collections %q", got)
	}
	if err := m.DeleteCollection(ctx, "c0"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateCollection("c3"); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
	if res, err := m.Collection("c1").Search(ctx, "hello"); err != nil || len(res) != 1 {
		t.Fatalf("c1 after the cap: %v %v", res, err)
	}
}

// TestIdleCollectionsClose opens more collections than Options.MaxOpenCollections, from
// several goroutines, and checks that at most that many keep their indexes open, that
// searches on closed ones reopen them with the right answers, and that open files stay
// bounded.
func TestIdleCollectionsClose(t *testing.T) {
	ctx := context.Background()
	const cols, maxOpen = 40, 4
	m := openT(t, t.TempDir(), func(o *Options) { o.MaxOpenCollections = maxOpen })
	for i := range cols {
		c := m.Collection(fmt.Sprintf("col%02d", i))
		if err := c.Add(ctx, Document{ID: "a", Text: fmt.Sprintf("apple word%d", i)}, Document{ID: "b", Text: "banana"}); err != nil {
			t.Fatal(err)
		}
	}
	fds := func() int {
		e, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd")
		}
		return len(e)
	}
	before := fds()
	var wg sync.WaitGroup
	errs := make(chan error, 4*cols)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range cols {
				i := (r*7 + g*11) % cols
				res, err := m.Collection(fmt.Sprintf("col%02d", i)).Search(ctx, fmt.Sprintf("word%d", i), WithMode(BM25))
				if err != nil {
					errs <- err
					return
				}
				if len(res) != 1 || res[0].ID != "a" {
					errs <- fmt.Errorf("col%02d: %v", i, ids(res))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Opening one more with no search running closes every idle one past the cap (while
	// searches ran, those in use could not be closed).
	if err := m.Collection("fresh").Add(ctx, Document{ID: "f", Text: "fresh"}); err != nil {
		t.Fatal(err)
	}
	if n := m.reg.openCount.Load(); n > maxOpen {
		t.Fatalf("%d collections have their indexes open, want <= %d", n, maxOpen)
	}
	open := 0
	m.reg.mu.RLock()
	for _, s := range m.reg.cols {
		if s.Indexes != nil {
			open++
		}
	}
	m.reg.mu.RUnlock()
	if open > maxOpen {
		t.Fatalf("%d collections hold open indexes, want <= %d", open, maxOpen)
	}
	if after := fds(); after > before+10*maxOpen {
		t.Fatalf("open files grew from %d to %d", before, after)
	}
	// Writes to a closed collection reopen it and catch it up.
	if err := m.Collection("col00").Upsert(ctx, Document{ID: "a", Text: "cherry"}); err != nil {
		t.Fatal(err)
	}
	if res, err := m.Collection("col00").Search(ctx, "cherry", WithMode(BM25)); err != nil || len(ids(res)) != 1 {
		t.Fatalf("after upsert: %v %v", ids(res), err)
	}
}

// TestSearchOpensTheIndexesItNeeds: a BM25 search opens the collection's BM25 index alone
// (the vector index and any other kind stay closed and unread), a dense search without
// filters the vector index alone, a hybrid search every kind; a write opens every kind first
// (so none misses it), and closing a collection opened for some kinds keeps its change log
// (an index not opened may still need it).
func TestSearchOpensTheIndexesItNeeds(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	opts := []Option{WithEmbedder(vectorstore.NewHashEmbedder(64)), withDerivedKind(toyKind)}
	docs := []Document{{ID: "a", Text: "alpha fox"}, {ID: "b", Text: "beta dog"}, {ID: "c", Text: "gamma fox dog"}}
	m := openT(t, dir, opts...)
	if err := m.Add(ctx, docs...); err != nil {
		t.Fatal(err)
	}
	want, err := m.Search(ctx, "fox", WithMode(BM25))
	if err != nil || len(want) != 2 {
		t.Fatalf("fox: %v %v", ids(want), err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	state := func(m *Memory) *colState {
		t.Helper()
		s, err := m.Collection("").state(false)
		if err != nil || s == nil {
			t.Fatalf("state: %v", err)
		}
		return s
	}

	toyLog = nil
	m = openT(t, dir, opts...)
	got, err := m.Search(ctx, "fox", WithMode(BM25))
	if err != nil || !slices.Equal(ids(got), ids(want)) {
		t.Fatalf("fox after reopen: %v %v, want %v", ids(got), err, ids(want))
	}
	s := state(m)
	if s.bm25 == nil || s.vec != nil || !s.Closed(nil) || len(toyLog) != 0 {
		t.Fatalf("after a BM25 search: bm25 %v, vectors %v, kinds left closed %v, toy index saw %q; want only BM25 open",
			s.bm25 != nil, s.vec != nil, s.Closed(nil), toyLog)
	}
	// A dense search needs the vector index: it opens it, and leaves the toy kind closed.
	dense, err := m.Search(ctx, "gamma fox dog", WithMode(Dense))
	if err != nil || len(dense) == 0 || dense[0].ID != "c" {
		t.Fatalf("dense: %v %v", ids(dense), err)
	}
	if s.vec == nil || s.bm25 == nil || !s.Closed(nil) || len(toyLog) != 0 {
		t.Fatalf("after a dense search: bm25 %v, vectors %v, kinds left closed %v, toy index saw %q", s.bm25 != nil, s.vec != nil, s.Closed(nil), toyLog)
	}
	// A hybrid search opens every kind.
	if res, err := m.Search(ctx, "fox"); err != nil || len(res) == 0 {
		t.Fatalf("hybrid: %v %v", ids(res), err)
	}
	if s.Closed(nil) || len(toyLog) != len(docs) {
		t.Fatalf("after a hybrid search: kinds left closed %v, toy index saw %q", s.Closed(nil), toyLog)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	// A dense search without filters opens the vector index alone, with the same results;
	// one with a Where needs the BM25 index's metadata terms too.
	toyLog = nil
	m = openT(t, dir, opts...)
	got, err = m.Search(ctx, "gamma fox dog", WithMode(Dense))
	if err != nil || !slices.Equal(ids(got), ids(dense)) {
		t.Fatalf("dense after reopen: %v %v, want %v", ids(got), err, ids(dense))
	}
	s = state(m)
	if s.bm25 != nil || s.vec == nil || len(toyLog) != 0 {
		t.Fatalf("after a dense search: bm25 %v, vectors %v, toy index saw %q; want only the vectors open", s.bm25 != nil, s.vec != nil, toyLog)
	}
	if _, err := m.Search(ctx, "gamma fox dog", WithMode(Dense), WithWhere(Where{"n": 1})); err != nil {
		t.Fatal(err)
	}
	if s.bm25 == nil {
		t.Fatal("a filtered dense search left the BM25 index closed")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	// A write after a BM25 search opens the other kinds first: the toy index sees the
	// stored documents (its open loads them), then the new one.
	toyLog = nil
	m = openT(t, dir, opts...)
	if _, err := m.Search(ctx, "fox", WithMode(BM25)); err != nil {
		t.Fatal(err)
	}
	if err := m.Add(ctx, Document{ID: "d", Text: "delta fox"}); err != nil {
		t.Fatal(err)
	}
	if len(toyLog) != len(docs)+1 || toyLog[len(docs)] != "put d" {
		t.Fatalf("toy index saw %q, want the %d stored documents, then put d", toyLog, len(docs))
	}
	if res, err := m.Search(ctx, "delta fox", WithMode(Dense)); err != nil || len(res) == 0 || res[0].ID != "d" {
		t.Fatalf("dense after the write: %v %v", ids(res), err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	// The change log: collection "x" is closed while idle (MaxOpenCollections 1), which
	// persists its indexes but keeps its log; a later store that opens it for a BM25
	// search alone keeps the log too, one that opens every kind trims it on Close.
	dir = t.TempDir()
	one := func(o *Options) { o.MaxOpenCollections = 1 }
	m = openT(t, dir, append(opts, one)...)
	if err := m.Collection("x").Add(ctx, docs...); err != nil {
		t.Fatal(err)
	}
	if err := m.Collection("y").Add(ctx, docs...); err != nil { // closes x
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	changes := func() int {
		t.Helper()
		m := openT(t, dir, append(opts, one)...)
		s, err := m.Collection("x").state(false)
		if err != nil || s == nil {
			t.Fatalf("state: %v", err)
		}
		n := s.Changes
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		return n
	}
	kept := changes()
	if kept == 0 {
		t.Fatal("an idle collection's change log was trimmed when it closed: the test needs it kept")
	}
	m = openT(t, dir, append(opts, one)...)
	if res, err := m.Collection("x").Search(ctx, "fox", WithMode(BM25)); err != nil || len(res) != 2 {
		t.Fatalf("x: %v %v", ids(res), err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if n := changes(); n != kept {
		t.Fatalf("closing a collection opened for BM25 only left %d changes in its log, want %d", n, kept)
	}
	m = openT(t, dir, append(opts, one)...)
	if _, err := m.Collection("x").Search(ctx, "fox"); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if n := changes(); n != 0 {
		t.Fatalf("closing a collection with every index open left %d changes in its log, want 0", n)
	}
}

// TestLaterOpenFails: when the vector index, left closed by a BM25 search, cannot be
// opened or rebuilt (its files gone, a stored vector damaged), the dense search fails with
// ErrCorrupt, the BM25 index stays open and answering, and the collection keeps no closed
// vector index in its search field.
func TestLaterOpenFails(t *testing.T) {
	dir := t.TempDir()
	buildVecDamageStore(t, dir)
	db := filepath.Join(dir, dbName)
	e := locateElem(t, db, [][]byte{bkCols, []byte(DefaultCollection), bkVecs}, []byte("d0005"))
	raw, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	raw[e.val+4] ^= 0x10
	if err := os.WriteFile(db, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, vecDir, DefaultCollection, "disk.json")); err != nil {
		t.Fatal(err)
	}
	m := openT(t, dir, vecDamageOptions()...)
	if res, err := m.Search(bg, "document 150", WithMode(BM25), TopK(3)); err != nil || len(res) == 0 {
		t.Fatalf("bm25: %v %v", ids(res), err)
	}
	_, err = m.Search(bg, "document 150", WithMode(Dense), TopK(3))
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("dense search over a vector index that cannot be rebuilt: %v, want ErrCorrupt", err)
	}
	s, err := m.Collection("").state(false)
	if err != nil {
		t.Fatal(err)
	}
	if s.vec != nil || s.bm25 == nil || !s.Closed(nil) {
		t.Fatalf("after the failed open: vectors field set %v, bm25 %v, kinds closed %v", s.vec != nil, s.bm25 != nil, s.Closed(nil))
	}
	if res, err := m.Search(bg, "document 150", WithMode(BM25), TopK(3)); err != nil || len(res) == 0 {
		t.Fatalf("bm25 after the failed open: %v %v", ids(res), err)
	}
}
