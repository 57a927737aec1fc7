package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// fakeIndex is a derived index kept in memory, with switches that make it fail or lie.
type fakeIndex struct {
	seq     uint64
	ids     map[string]int // unit id -> length of its text
	applied int            // Apply calls
	failOn  string         // Apply fails when it is asked to put this id
	panicOn string         // Apply panics when it is asked to put this id
	hide    string         // Missing reports this id as missing
	closed  bool
}

var (
	_ Index     = (*fakeIndex)(nil)
	_ IDChecker = (*fakeIndex)(nil)
)

func (f *fakeIndex) Seq() uint64 { return f.seq }

func (f *fakeIndex) Apply(_ context.Context, puts []Unit, dels []string, seq uint64) error {
	f.applied++
	for _, id := range dels {
		delete(f.ids, id)
	}
	for _, p := range puts {
		if p.ID == f.failOn {
			return fmt.Errorf("fake: cannot put %q", p.ID)
		}
		if p.ID == f.panicOn {
			panic("fake: " + p.ID)
		}
		text, _, _, _ := p.Record.UnitText(p.Chunk)
		f.ids[p.ID] = len(text)
	}
	f.seq = seq
	return nil
}

func (f *fakeIndex) Count() (int, error) { return len(f.ids), nil }

func (f *fakeIndex) Missing(ids []string) ([]string, error) {
	var out []string
	for _, id := range ids {
		if _, ok := f.ids[id]; !ok || id == f.hide {
			out = append(out, id)
		}
	}
	return out, nil
}

func (f *fakeIndex) Close() error { f.closed = true; return nil }

// fakeKind keeps its index "on disk": in held while its directory exists (a rebuild removes
// the directory, and the next open starts empty).
type fakeKind struct {
	dir   string
	held  *fakeIndex
	fail  error // Open fails with it (once)
	panic bool  // Open panics (once)
}

func newFakeKind(t *testing.T) *fakeKind { return &fakeKind{dir: filepath.Join(t.TempDir(), "fake")} }

func (k *fakeKind) kind() Kind {
	return Kind{Name: "fake", Dir: k.dir, Open: func(dir string) (Index, error) {
		if k.panic {
			k.panic = false
			panic("a damaged file")
		}
		if err := k.fail; err != nil {
			k.fail = nil
			return nil, err
		}
		if _, err := os.Stat(dir); err != nil || k.held == nil {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			k.held = &fakeIndex{ids: map[string]int{}}
		}
		k.held.closed = false
		return k.held, nil
	}}
}

func openTestDB(t *testing.T) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "store.db"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// write stores documents id -> text in collection col and applies the commit to c's indexes.
func write(t *testing.T, db *DB, c *Collection, docs map[string]string) {
	t.Helper()
	var puts []Put
	ids := make([]string, 0, len(docs))
	for id := range docs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	added := 0
	for _, id := range ids {
		var stale []string
		if err := db.View(func(tx *Tx) error {
			if !tx.Has(c.Name, id) {
				added++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		puts = append(puts, Put{ID: id, Record: &Record{Text: docs[id]}, Units: []string{id}, Stale: stale})
	}
	w, err := db.Write(c.Name, puts, added, added)
	if err != nil {
		t.Fatal(err)
	}
	c.Committed(w)
	if err := db.Apply(context.Background(), c, w); err != nil {
		t.Fatal(err)
	}
}

func TestSeamCatchUpAndRebuild(t *testing.T) {
	db := openTestDB(t)
	if err := db.CreateCollection("c", 0, nil); err != nil {
		t.Fatal(err)
	}
	c, err := db.LoadCollection("c")
	if err != nil {
		t.Fatal(err)
	}
	k := newFakeKind(t)
	if err := db.OpenIndexes(c, []Kind{k.kind()}); err != nil {
		t.Fatal(err)
	}
	write(t, db, c, map[string]string{"a": "alpha", "b": "beta"})
	if c.Docs != 2 || c.Units != 2 || c.LastSeq != 2 || k.held.seq != 2 || len(k.held.ids) != 2 {
		t.Fatalf("after a write: %+v, index %+v", c, k.held)
	}
	if err := c.CloseIndexes(); err != nil || !k.held.closed {
		t.Fatalf("close: %v", err)
	}

	// Writes while the index is closed: reopening replays the change log after its Seq.
	w, err := db.Delete("c", []string{"a", "nope"})
	if err != nil {
		t.Fatal(err)
	}
	c.Committed(w)
	write(t, db, c, map[string]string{"d": "delta"})
	applied := k.held.applied
	if err := db.OpenIndexes(c, []Kind{k.kind()}); err != nil {
		t.Fatal(err)
	}
	if got := sortedKeys(k.held.ids); !slices.Equal(got, []string{"b", "d"}) || k.held.seq != c.LastSeq || k.held.applied != applied+1 {
		t.Fatalf("caught up to %v at %d (store at %d), %d applies", got, k.held.seq, c.LastSeq, k.held.applied-applied)
	}
	c.CloseIndexes()

	// An index that lies about its ids is rebuilt from the store of record.
	for name, damage := range map[string]func(f *fakeIndex){
		"a ghost id":         func(f *fakeIndex) { f.ids["ghost"] = 1 },
		"a lost id":          func(f *fakeIndex) { delete(f.ids, "b"); f.ids["x"] = 1 },
		"a sampled id lost":  func(f *fakeIndex) { f.hide = "b" },
		"ahead of the store": func(f *fakeIndex) { f.seq = c.LastSeq + 10 },
		"open fails":         func(*fakeIndex) { k.fail = errors.New("damaged") },
		"open panics":        func(*fakeIndex) { k.panic = true },
	} {
		stale := k.held
		damage(stale)
		if err := db.OpenIndexes(c, []Kind{k.kind()}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := c.Indexes[0].(*fakeIndex)
		if got == stale || !slices.Equal(sortedKeys(got.ids), []string{"b", "d"}) || got.seq != c.LastSeq || got.hide != "" {
			t.Fatalf("%s: kept or rebuilt wrong: %v at %d", name, sortedKeys(got.ids), got.seq)
		}
		c.CloseIndexes()
	}
}

// TestSeamWriteFailure: an index whose Apply fails is reported, and the write stays durable:
// the next open catches the index up.
func TestSeamWriteFailure(t *testing.T) {
	db := openTestDB(t)
	if err := db.CreateCollection("c", 0, nil); err != nil {
		t.Fatal(err)
	}
	c, _ := db.LoadCollection("c")
	k := newFakeKind(t)
	if err := db.OpenIndexes(c, []Kind{k.kind()}); err != nil {
		t.Fatal(err)
	}
	k.held.failOn = "bad"
	w, err := db.Write("c", []Put{{ID: "bad", Record: &Record{Text: "x"}, Units: []string{"bad"}}}, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	c.Committed(w)
	if err := db.Apply(context.Background(), c, w); err == nil {
		t.Fatal("a failed Apply was not reported")
	}
	c.CloseIndexes()
	k.held.failOn = ""
	if err := db.OpenIndexes(c, []Kind{k.kind()}); err != nil || k.held.ids["bad"] != 1 {
		t.Fatalf("reopen: %v, %v", err, k.held.ids)
	}
}

// TestApplyEveryIndex applies a write to three indexes (they are updated at the same time):
// one that fails and one that panics are each reported under their name, and do not keep
// the others from taking the write.
func TestApplyEveryIndex(t *testing.T) {
	db := openTestDB(t)
	if err := db.CreateCollection("c", 0, nil); err != nil {
		t.Fatal(err)
	}
	c, _ := db.LoadCollection("c")
	var kinds []Kind
	var fakes []*fakeKind
	for _, name := range []string{"fails", "panics", "fine"} {
		k := newFakeKind(t)
		k.dir = filepath.Join(filepath.Dir(k.dir), name)
		kind := k.kind()
		kind.Name = name
		kinds, fakes = append(kinds, kind), append(fakes, k)
	}
	if err := db.OpenIndexes(c, kinds); err != nil {
		t.Fatal(err)
	}
	fakes[0].held.failOn, fakes[1].held.panicOn = "b", "b"
	w, err := db.Write("c", []Put{
		{ID: "a", Record: &Record{Text: "xx"}, Units: []string{"a"}},
		{ID: "b", Record: &Record{Text: "yyy"}, Units: []string{"b"}},
	}, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	c.Committed(w)
	err = db.Apply(context.Background(), c, w)
	if err == nil || !strings.Contains(err.Error(), "fails index") || !strings.Contains(err.Error(), "panics index") || strings.Contains(err.Error(), "fine index") {
		t.Fatalf("Apply: %v, want the failing and the panicking index named", err)
	}
	if got := fakes[2].held; got.seq != w.Seq || got.ids["a"] != 2 || got.ids["b"] != 3 {
		t.Fatalf("the healthy index holds %v at %d, want a and b at %d", got.ids, got.seq, w.Seq)
	}
	for i, k := range fakes {
		if k.held.applied != 1 {
			t.Errorf("index %d applied %d times, want 1", i, k.held.applied)
		}
	}
}

func TestCollectionsCap(t *testing.T) {
	db := openTestDB(t)
	for _, name := range []string{"a", "b"} {
		if err := db.CreateCollection(name, 2, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.CreateCollection("a", 2, nil); err != nil {
		t.Fatalf("an existing collection: %v", err)
	}
	if err := db.CreateCollection("c", 2, nil); !errors.Is(err, ErrTooManyCollections) {
		t.Fatalf("past the cap: %v", err)
	}
	if _, err := db.Delete("nope", []string{"x"}); !errors.Is(err, ErrCollectionNotFound) {
		t.Fatalf("delete in a missing collection: %v", err)
	}
}

// TestTrim: trimming keeps LastSeq and moves Trimmed; an index older than the trimmed log
// is rebuilt, not caught up.
func TestTrim(t *testing.T) {
	db := openTestDB(t)
	db.CreateCollection("c", 0, nil)
	c, _ := db.LoadCollection("c")
	k := newFakeKind(t)
	db.OpenIndexes(c, []Kind{k.kind()})
	write(t, db, c, map[string]string{"a": "alpha"})
	c.CloseIndexes()
	old := k.held.seq
	write(t, db, c, map[string]string{"b": "beta"}) // no index open: only logged
	if err := db.Trim(c); err != nil || c.Trimmed != c.LastSeq || c.Changes != 0 {
		t.Fatalf("trim: %v, %+v", err, c)
	}
	again, err := db.LoadCollection("c")
	if err != nil || again.LastSeq != c.LastSeq || again.Trimmed != c.Trimmed || again.Docs != 2 {
		t.Fatalf("reloaded %+v, %v; want %+v", again, err, c)
	}
	k.held.seq = old
	if err := db.OpenIndexes(again, []Kind{k.kind()}); err != nil || len(k.held.ids) != 2 {
		t.Fatalf("after trim: %v, %v", err, k.held.ids)
	}
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
