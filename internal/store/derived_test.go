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

// errIndex is an Index whose every method can fail (and whose Seq can lie).
type errIndex struct {
	fakeIndex
	countErr, missErr, closeErr, applyErr error
	seqOverride                           uint64
}

func (e *errIndex) Seq() uint64 {
	if e.seqOverride != 0 {
		return e.seqOverride
	}
	return e.seq
}

func (e *errIndex) Count() (int, error) {
	if e.countErr != nil {
		return 0, e.countErr
	}
	return e.fakeIndex.Count()
}

func (e *errIndex) Missing(ids []string) ([]string, error) {
	if e.missErr != nil {
		return nil, e.missErr
	}
	return e.fakeIndex.Missing(ids)
}

func (e *errIndex) Close() error { e.closed = true; return e.closeErr }

func (e *errIndex) Apply(ctx context.Context, puts []Unit, dels []string, seq uint64) error {
	if e.applyErr != nil {
		return e.applyErr
	}
	return e.fakeIndex.Apply(ctx, puts, dels, seq)
}

// TestCompare: what an index says against the store of record, in each way it can
// disagree.
func TestCompare(t *testing.T) {
	c := &Collection{Name: "c", LastSeq: 10, Units: 3}
	held := func() *errIndex {
		return &errIndex{fakeIndex: fakeIndex{seq: 10, ids: map[string]int{"a": 1, "b": 1, "c": 1}}}
	}
	for _, tc := range []struct {
		name     string
		ix       *errIndex
		want     int
		check    bool
		ids      []string
		problems []string
		count    int
		missing  []string
	}{
		{"agrees", held(), 3, true, []string{"a", "c"}, nil, 3, nil},
		{"not counted", held(), -1, false, nil, nil, -1, nil},
		{"seq 0 (not persisted)", func() *errIndex { x := held(); x.seq = 0; return x }(), 3, false, nil, nil, 3, nil},
		{"behind", func() *errIndex { x := held(); x.seq = 9; return x }(), -1, false, nil, []string{"index at change 9, the store of record at 10"}, -1, nil},
		{"count", held(), 4, false, nil, []string{"holds 3 ids, the store of record 4"}, 3, nil},
		{"cannot count", func() *errIndex { x := held(); x.countErr = errors.New("boom\nstack"); return x }(), 3, false, nil, []string{"cannot count its ids: boom"}, -1, nil},
		{"missing", held(), 3, true, []string{"a", "x", "y"}, []string{`lacks 2 of 3 sampled ids (e.g. "x")`}, 3, []string{"x", "y"}},
		{"cannot look up", func() *errIndex { x := held(); x.missErr = errors.New("io"); return x }(), 3, true, []string{"a"}, []string{"cannot look ids up: io"}, 3, nil},
		{"no ids to sample", held(), 3, true, nil, nil, 3, nil},
	} {
		var ch IDChecker
		if tc.check {
			ch = tc.ix
		}
		r := Compare(c, tc.ix, tc.want, ch, tc.ids)
		if !slices.Equal(r.Problems, tc.problems) || r.Count != tc.count || !slices.Equal(r.Missing, tc.missing) || r.Seq != tc.ix.seq {
			t.Errorf("%s: %+v", tc.name, r)
		}
		if sampled := tc.check && tc.ix.missErr == nil && len(tc.ids) > 0; sampled != (r.Sampled == len(tc.ids) && r.Sampled > 0) {
			t.Errorf("%s: sampled %d", tc.name, r.Sampled)
		}
	}
}

// TestVerify: an index that agrees passes; one that disagrees is ErrCorrupt listing every
// problem; without full, only its sequence number is compared; a panic is ErrCorrupt.
func TestVerify(t *testing.T) {
	db := openTestDB(t)
	c, _ := db.LoadCollection("c")
	write(t, db, c, map[string]string{"a": "x", "b": "y"})
	good := &fakeIndex{seq: c.LastSeq, ids: map[string]int{"a": 1, "b": 1}}
	if err := db.Verify(c, good, true); err != nil {
		t.Fatalf("an index that agrees: %v", err)
	}
	bad := &fakeIndex{seq: c.LastSeq - 1, ids: map[string]int{"a": 1}}
	err := db.Verify(c, bad, true)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "index at change 1") || !strings.Contains(err.Error(), "holds 1 ids") || !strings.Contains(err.Error(), "lacks 1 of 2") {
		t.Fatalf("an index that disagrees: %v", err)
	}
	// Not full: the count and the sample are not compared.
	short := &fakeIndex{seq: c.LastSeq, ids: map[string]int{}}
	if err := db.Verify(c, short, false); err != nil {
		t.Fatalf("not full: %v", err)
	}
	if err := db.Verify(c, panicIndex{}, true); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a panicking index: %v", err)
	}
}

// panicIndex panics in every method.
type panicIndex struct{}

func (panicIndex) Seq() uint64                                           { panic("seq") }
func (panicIndex) Apply(context.Context, []Unit, []string, uint64) error { panic("apply") }
func (panicIndex) Count() (int, error)                                   { panic("count") }
func (panicIndex) Close() error                                          { panic("close") }

// TestOpenIndexKindNotApplying: a kind whose Open returns (nil, nil) does not apply: no
// index, no error, a nil entry among the collection's indexes that writes and closes skip.
func TestOpenIndexKindNotApplying(t *testing.T) {
	db := openTestDB(t)
	c, _ := db.LoadCollection("c")
	none := Kind{Name: "none", Open: func(string) (Index, error) { return nil, nil }}
	k := newFakeKind(t)
	if err := db.OpenIndexes(c, []Kind{none, k.kind()}); err != nil {
		t.Fatal(err)
	}
	if len(c.Indexes) != 2 || c.Indexes[0] != nil || c.Indexes[1] == nil {
		t.Fatalf("indexes %v", c.Indexes)
	}
	write(t, db, c, map[string]string{"a": "x"})
	if k.held.ids["a"] != 1 {
		t.Fatal("the write did not reach the index that applies")
	}
	if err := c.CloseIndexes(); err != nil || c.Indexes != nil {
		t.Fatalf("close: %v", err)
	}
	if ix, err := db.RebuildIndex(c, none); ix != nil || err != nil {
		t.Fatalf("rebuild of a kind that does not apply: %v, %v", ix, err)
	}
}

// TestOpenIndexesFailure: when one kind cannot be opened or rebuilt, OpenIndexes fails and
// closes the indexes it opened before it.
func TestOpenIndexesFailure(t *testing.T) {
	db := openTestDB(t)
	c, _ := db.LoadCollection("c")
	write(t, db, c, map[string]string{"a": "x"})
	k := newFakeKind(t)
	boom := errors.New("cannot open")
	broken := Kind{Name: "broken", Open: func(string) (Index, error) { return nil, boom }}
	err := db.OpenIndexes(c, []Kind{k.kind(), broken})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "rebuilding its broken index") {
		t.Fatalf("OpenIndexes: %v", err)
	}
	if !k.held.closed || c.Indexes != nil {
		t.Fatalf("the first index was left open (closed %v), indexes %v", k.held.closed, c.Indexes)
	}
}

// TestOpenIndexesOf: the kinds a call does not want stay closed (nil, reported by Closed)
// and miss the writes applied meanwhile; a later call that wants them opens them caught up
// from the change log; one that fails there leaves the open ones open.
func TestOpenIndexesOf(t *testing.T) {
	db := openTestDB(t)
	c, _ := db.LoadCollection("c")
	write(t, db, c, map[string]string{"a": "x"})
	first, second := newFakeKind(t), newFakeKind(t)
	kinds := []Kind{first.kind(), second.kind()}
	kinds[1].Name = "second"
	onlyFirst := func(k Kind) bool { return k.Name == "fake" }
	if err := db.OpenIndexesOf(c, kinds, onlyFirst); err != nil {
		t.Fatal(err)
	}
	if c.Indexes[0] == nil || c.Indexes[1] != nil || second.held != nil {
		t.Fatalf("indexes %v: want the first open, the second never opened", c.Indexes)
	}
	if !c.Closed(nil) || c.Closed(onlyFirst) || !c.Closed(func(k Kind) bool { return k.Name == "second" }) {
		t.Fatal("Closed does not report the second kind alone")
	}
	write(t, db, c, map[string]string{"b": "yy"}) // reaches the first only
	if err := db.OpenIndexesOf(c, nil, onlyFirst); err != nil || c.Indexes[1] != nil {
		t.Fatalf("a call wanting what is open opened more: %v %v", err, c.Indexes)
	}
	boom := errors.New("cannot open")
	saved := c.Kinds[1]
	c.Kinds[1] = Kind{Name: "second", Open: func(string) (Index, error) { return nil, boom }}
	if err := db.OpenIndexesOf(c, nil, nil); !errors.Is(err, boom) {
		t.Fatalf("opening a broken kind: %v", err)
	}
	if c.Indexes[0] == nil || first.held.closed || !c.Closed(nil) {
		t.Fatal("a failed open of the second kind closed the first or marked the second open")
	}
	c.Kinds[1] = saved
	if err := db.OpenIndexesOf(c, nil, nil); err != nil {
		t.Fatal(err)
	}
	if c.Closed(nil) || c.Indexes[1] == nil || len(second.held.ids) != 2 || second.held.seq != c.LastSeq {
		t.Fatalf("the second kind opened with %v at seq %d (store at %d): want both documents, caught up",
			second.held.ids, second.held.seq, c.LastSeq)
	}
	if err := c.CloseIndexes(); err != nil || c.Indexes != nil || c.Closed(nil) {
		t.Fatalf("close: %v", err)
	}
}

// TestRebuildIndexFailures: an index whose rebuild fails (Apply errs or panics) or whose
// rebuilt state does not verify is closed and the error names the collection and kind.
func TestRebuildIndexFailures(t *testing.T) {
	db := openTestDB(t)
	c, _ := db.LoadCollection("c")
	write(t, db, c, map[string]string{"a": "x", "b": "y"})
	for _, tc := range []struct {
		name string
		ix   *errIndex
		want string
	}{
		{"apply fails", &errIndex{fakeIndex: fakeIndex{ids: map[string]int{}}, applyErr: errors.New("disk full")}, "rebuilding its k index: disk full"},
		{"apply panics", &errIndex{fakeIndex: fakeIndex{ids: map[string]int{}, panicOn: "b"}}, "rebuilding its k index"},
		{"does not verify", &errIndex{fakeIndex: fakeIndex{ids: map[string]int{}}, seqOverride: 99}, "its rebuilt k index"},
	} {
		ix := tc.ix
		k := Kind{Name: "k", Dir: filepath.Join(t.TempDir(), "k"), Open: func(string) (Index, error) { return ix, nil }}
		got, err := db.RebuildIndex(c, k)
		if err == nil || got != nil || !ix.closed || !strings.Contains(err.Error(), `collection "c"`) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, %v (closed %v)", tc.name, got, err, ix.closed)
		}
	}
}

// TestRebuildIndexReadOnly: a read-only store rebuilds in memory (Open gets ""), leaves the
// kind's directory on disk as it is, and warns only for a kind that persists.
func TestRebuildIndexReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	w, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	putDocs(t, w, "c", false, "a", "b")
	w.Close()
	db, lb := openLogged(t, path, true)
	c, _ := db.LoadCollection("c")
	dir := filepath.Join(t.TempDir(), "ix")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "data")
	if err := os.WriteFile(marker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, kdir := range []string{"", dir} {
		var opened []string
		k := Kind{Name: "mem", Dir: kdir, Open: func(d string) (Index, error) {
			opened = append(opened, d)
			return &fakeIndex{ids: map[string]int{}}, nil
		}}
		ix, err := db.RebuildIndex(c, k)
		if err != nil || ix == nil || len(ix.(*fakeIndex).ids) != 2 {
			t.Fatalf("dir %q: %v, %v", kdir, ix, err)
		}
		if !slices.Equal(opened, []string{""}) {
			t.Fatalf("dir %q: opened in %q, want in memory", kdir, opened)
		}
		if warned := strings.Contains(lb.String(), "read-only store: rebuilding"); warned != (kdir != "") {
			t.Fatalf("dir %q: warned %v: %q", kdir, warned, lb.String())
		}
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("a read-only store removed an index directory: %v", err)
	}
}

// TestRebuildIndexRemovesDir: a writable store removes the kind's directory before the
// rebuild.
func TestRebuildIndexRemovesDir(t *testing.T) {
	db := openTestDB(t)
	c, _ := db.LoadCollection("c")
	write(t, db, c, map[string]string{"a": "x"})
	dir := filepath.Join(t.TempDir(), "ix")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	var sawOld bool
	k := Kind{Name: "k", Dir: dir, Open: func(d string) (Index, error) {
		_, err := os.Stat(filepath.Join(d, "sub"))
		sawOld = err == nil
		return &fakeIndex{ids: map[string]int{}}, nil
	}}
	if ix, err := db.RebuildIndex(c, k); err != nil || ix == nil {
		t.Fatal(err)
	}
	if sawOld {
		t.Fatal("the old index directory was not removed before the rebuild")
	}
}

// TestRepairIndex: the i-th index is closed (a close error only logged) and replaced by a
// rebuilt one holding the store's units.
func TestRepairIndex(t *testing.T) {
	db := openTestDB(t)
	c, _ := db.LoadCollection("c")
	k := newFakeKind(t)
	if err := db.OpenIndexes(c, []Kind{k.kind()}); err != nil {
		t.Fatal(err)
	}
	write(t, db, c, map[string]string{"a": "x", "b": "y"})
	old := c.Indexes[0].(*fakeIndex)
	old.ids["ghost"] = 1
	if err := db.RepairIndex(c, 0); err != nil {
		t.Fatal(err)
	}
	got := c.Indexes[0].(*fakeIndex)
	if got == old || !old.closed || !slices.Equal(sortedKeys(got.ids), []string{"a", "b"}) || got.seq != c.LastSeq {
		t.Fatalf("repaired: %v at %d (old closed %v)", sortedKeys(got.ids), got.seq, old.closed)
	}
	// An old index that fails to close is still replaced; a rebuild that fails leaves none.
	closer := &errIndex{fakeIndex: fakeIndex{ids: map[string]int{}}, closeErr: errors.New("close failed")}
	c.Indexes[0] = closer
	if err := db.RepairIndex(c, 0); err != nil || c.Indexes[0] == Index(closer) {
		t.Fatalf("repair past a close error: %v", err)
	}
	c.Kinds[0].Open = func(string) (Index, error) { return nil, errors.New("gone") }
	if err := db.RepairIndex(c, 0); err == nil || c.Indexes[0] != nil {
		t.Fatalf("a repair that fails: %v, %v", err, c.Indexes[0])
	}
}

// TestCloseIndexesErrors: every index is closed even when some fail or panic; their errors
// are joined.
func TestCloseIndexesErrors(t *testing.T) {
	a := &errIndex{fakeIndex: fakeIndex{ids: map[string]int{}}, closeErr: errors.New("a failed")}
	b := &fakeIndex{ids: map[string]int{}}
	c := &Collection{Indexes: []Index{a, nil, panicIndex{}, b}}
	err := c.CloseIndexes()
	if err == nil || !strings.Contains(err.Error(), "a failed") || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("CloseIndexes: %v", err)
	}
	if !a.closed || !b.closed || c.Indexes != nil {
		t.Fatalf("closed a %v, b %v; indexes %v", a.closed, b.closed, c.Indexes)
	}
	if err := (&Collection{}).CloseIndexes(); err != nil {
		t.Fatalf("no indexes: %v", err)
	}
}

// TestApplyNoIndexes: a write applied to a collection with no open index, or only nil ones,
// is nothing to do.
func TestApplyNoIndexes(t *testing.T) {
	db := openTestDB(t)
	w := Commit{Seq: 3, Puts: []Unit{{ID: "a", Record: &Record{Text: "x"}, Chunk: -1}}}
	for _, c := range []*Collection{{}, {Indexes: []Index{nil, nil}, Kinds: []Kind{{Name: "a"}, {Name: "b"}}}} {
		if err := db.Apply(context.Background(), c, w); err != nil {
			t.Fatalf("%d indexes: %v", len(c.Indexes), err)
		}
	}
}
