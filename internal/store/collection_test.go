package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// logBuffer is a slog handler's output that tests read.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// openLogged opens the store at path with a logger whose output it returns.
func openLogged(t *testing.T, path string, ro bool) (*DB, *logBuffer) {
	t.Helper()
	lb := &logBuffer{}
	db, err := Open(path, Options{NoSync: true, ReadOnly: ro, Logger: slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, lb
}

// change is one entry of a change log.
type change struct {
	seq uint64
	op  byte
	uid string
}

// changeLog reads collection col's change log.
func changeLog(t *testing.T, db *DB, col string) []change {
	t.Helper()
	var out []change
	if err := db.view(func(tx *bolt.Tx) error {
		b, _ := colBucket(tx, col, false)
		return b.Bucket(bkChanges).ForEach(func(k, v []byte) error {
			out = append(out, change{u64(k), v[0], string(v[1:])})
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLoadCollectionMissing(t *testing.T) {
	db := openTestDB(t)
	c, err := db.LoadCollection("nope")
	if err != nil || !reflect.DeepEqual(*c, Collection{Name: "nope"}) {
		t.Fatalf("a missing collection: %+v, %v", c, err)
	}
	if ok, _ := db.CollectionExists("nope"); ok {
		t.Fatal("LoadCollection made the collection")
	}
}

// TestLoadCollectionCounters: what loading a collection does with its persisted counters in
// each state, writable and read-only: trusted ones are taken as they are; absent ones, and
// unchecked ones on a writable store, are counted quietly (and persisted); damaged ones are
// counted, persisted where the store is writable, logged and reported by Recounted.
func TestLoadCollectionCounters(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(info *bolt.Bucket) error
		ro     bool
		docs   int // what LoadCollection says
		noted  bool
		log    string
		after  countState // what the file holds after
	}{
		{"trusted", func(*bolt.Bucket) error { return nil }, false, 3, false, "", countsOK},
		{"missing", func(info *bolt.Bucket) error {
			return errors.Join(info.Delete(keyDocN), info.Delete(keyUnitN), info.Delete(keyCountSum))
		}, false, 3, false, "older version (once)", countsOK},
		{"missing, read-only", func(info *bolt.Bucket) error {
			return errors.Join(info.Delete(keyDocN), info.Delete(keyUnitN), info.Delete(keyCountSum))
		}, true, 3, false, "older version (once)", countsMissing},
		{"unchecked", func(info *bolt.Bucket) error { return info.Put(keyDocN, u64b(7)) }, false, 3, false, "checking the counters", countsOK},
		{"unchecked, read-only", func(info *bolt.Bucket) error { return info.Put(keyDocN, u64b(7)) }, true, 7, false, "", countsUnchecked},
		{"damaged", func(info *bolt.Bucket) error { return info.Put(keyUnitN, []byte{1, 2}) }, false, 3, true, "counters are damaged", countsOK},
		{"damaged, read-only", func(info *bolt.Bucket) error { return info.Put(keyUnitN, []byte{1, 2}) }, true, 3, true, "counters are damaged", countsDamaged},
		{"wrong checksum", func(info *bolt.Bucket) error { return info.Put(keyCountSum, []byte{0, 0, 0, 0}) }, false, 3, true, "counters are damaged", countsOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "store.db")
			db, err := Open(path, Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			putDocs(t, db, "c", false, "a", "b", "c")
			if err := db.update(func(tx *bolt.Tx) error {
				b, _ := colBucket(tx, "c", false)
				info := b.Bucket(bkInfo)
				if strings.HasPrefix(tc.name, "unchecked") {
					if err := info.Delete(keyCountSum); err != nil {
						return err
					}
				}
				return tc.damage(info)
			}); err != nil {
				t.Fatal(err)
			}
			db.Close()
			db, lb := openLogged(t, path, tc.ro)
			c, err := db.LoadCollection("c")
			if err != nil {
				t.Fatal(err)
			}
			if c.Docs != tc.docs {
				t.Errorf("Docs %d, want %d", c.Docs, tc.docs)
			}
			if tc.docs == 3 && c.Units != 3 {
				t.Errorf("Units %d, want 3", c.Units)
			}
			r, noted := db.Recounted("c")
			if noted != tc.noted {
				t.Errorf("Recounted: %+v, %v; want noted %v", r, noted, tc.noted)
			}
			if noted && (r.Docs != 3 || r.Units != 3 || r.Persisted == tc.ro || !strings.Contains(r.Reason, "damaged")) {
				t.Errorf("Recounted: %+v", r)
			}
			if tc.log == "" && lb.String() != "" || tc.log != "" && !strings.Contains(lb.String(), tc.log) {
				t.Errorf("log %q, want %q", lb.String(), tc.log)
			}
			var st countState
			db.view(func(tx *bolt.Tx) error {
				b, _ := colBucket(tx, "c", false)
				_, _, st = counts(b)
				return nil
			})
			if st != tc.after {
				t.Errorf("the file's counters are %v after, want %v", st, tc.after)
			}
		})
	}
}

// TestLoadCollectionCountFails: counters that must be counted again, beside a record that
// cannot be read, make LoadCollection ErrCorrupt naming the collection (the counts cannot
// be known).
func TestLoadCollectionCountFails(t *testing.T) {
	db := openTestDB(t)
	putDocs(t, db, "c", false, "a", "b")
	setValue(t, db, [][]byte{bkCols, []byte("c"), bkDocs}, []byte("b"), []byte("\x02garbage"))
	setValue(t, db, [][]byte{bkCols, []byte("c"), bkInfo}, keyCountSum, nil)
	if _, err := db.LoadCollection("c"); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `collection "c"`) {
		t.Fatalf("LoadCollection: %v", err)
	}
}

// TestChangeLogAcrossReopen: every unit a write puts or drops, a delete removes and a
// replacement changes is one entry of the change log, in sequence order; a reopened store
// finds the same log, its reach (LastSeq, Changes) and counters, and a catch-up from any
// point in it gives the collection's units then.
func TestChangeLogAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	chunked := &Record{Text: "0123456789", Chunks: []Chunk{{S: 0, E: 5}, {S: 5, E: 10}}}
	var c Collection
	c.Name = "c"
	step := func(w Commit, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		c.Committed(w)
	}
	step(db.Write("c", []Put{
		{ID: "a", Record: &Record{Text: "a"}, Units: []string{"a"}},
		{ID: "b", Record: chunked, Units: chunked.UnitIDs("b")},
	}, 2, 3))
	// b rewritten unchunked: its two chunk units are dropped, its own put.
	step(db.Write("c", []Put{{ID: "b", Record: &Record{Text: "b"}, Units: []string{"b"}, Stale: chunked.UnitIDs("b")}}, 0, -1))
	step(db.Delete("c", []string{"a", "missing"}))
	w, removed, err := db.Replace("c", []Put{{ID: "d", Record: &Record{Text: "d"}, Units: []string{"d"}}}, []string{"b"}, 1, 1)
	if removed != 1 {
		t.Fatalf("Replace removed %d", removed)
	}
	step(w, err)
	want := []change{
		{1, opPut, "a"}, {2, opPut, "b\x000"}, {3, opPut, "b\x001"},
		{4, opDel, "b\x000"}, {5, opDel, "b\x001"}, {6, opPut, "b"},
		{7, opDel, "a"},
		{8, opDel, "b"}, {9, opPut, "d"},
	}
	if got := changeLog(t, db, "c"); !reflect.DeepEqual(got, want) {
		t.Fatalf("change log %v, want %v", got, want)
	}
	if c.LastSeq != 9 || c.Changes != 9 || c.Docs != 1 || c.Units != 1 {
		t.Fatalf("committed state %+v", c)
	}
	db.Close()
	for _, ro := range []bool{false, true} {
		db, err := Open(path, Options{NoSync: true, ReadOnly: ro})
		if err != nil {
			t.Fatal(err)
		}
		got, err := db.LoadCollection("c")
		if err != nil {
			t.Fatal(err)
		}
		wantC := c
		if ro {
			wantC.Changes = 0
		}
		if got.LastSeq != wantC.LastSeq || got.Changes != wantC.Changes || got.Docs != 1 || got.Units != 1 || got.Trimmed != 0 {
			t.Errorf("read-only %v: reloaded %+v, want %+v", ro, got, wantC)
		}
		if log := changeLog(t, db, "c"); !reflect.DeepEqual(log, want) {
			t.Errorf("read-only %v: change log %v", ro, log)
		}
		// Catch-up from each point: an index that held the units then ends with "d" alone.
		before := map[uint64][]string{0: nil, 3: {"a", "b\x000", "b\x001"}, 6: {"a", "b"}, 7: {"b"}, 8: nil}
		for from, held := range before {
			ix := &fakeIndex{ids: map[string]int{}}
			for _, id := range held {
				ix.ids[id] = 1
			}
			if err := db.catchUp(got, from, ix.Apply); err != nil {
				t.Fatal(err)
			}
			if ids := sortedKeys(ix.ids); !slices.Equal(ids, []string{"d"}) || ix.seq != 9 {
				t.Errorf("read-only %v: caught up from %d: %q at %d", ro, from, ids, ix.seq)
			}
		}
		db.Close()
	}
}

// TestWriteCommit: a write's commit carries what the derived indexes need: each unit put
// with its record, chunk index and vector, each unit dropped; Committed moves the
// collection to it; stale units lose their vectors.
func TestWriteCommit(t *testing.T) {
	db := openTestDB(t)
	r := &Record{Text: "0123456789", Chunks: []Chunk{{S: 0, E: 4}, {S: 4, E: 10}}}
	w, err := db.Write("c", []Put{
		{ID: "a", Record: &Record{Text: "a"}, Units: []string{"a"}, Vecs: [][]float32{{1, 0}}},
		{ID: "b", Record: r, Units: r.UnitIDs("b"), Vecs: [][]float32{{2, 0}, {3, 0}}},
		{ID: "n", Record: &Record{Text: "no vector"}, Units: []string{"n"}},
	}, 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	if w.Seq != 4 || w.Changes != 4 || w.Docs != 3 || w.Units != 4 || len(w.Dels) != 0 {
		t.Fatalf("commit %+v", w)
	}
	wantPuts := []Unit{
		{ID: "a", Record: &Record{Text: "a"}, Chunk: -1, Vec: []float32{1, 0}},
		{ID: "b\x000", Record: r, Chunk: 0, Vec: []float32{2, 0}},
		{ID: "b\x001", Record: r, Chunk: 1, Vec: []float32{3, 0}},
		{ID: "n", Record: &Record{Text: "no vector"}, Chunk: -1},
	}
	if !reflect.DeepEqual(w.Puts, wantPuts) {
		t.Fatalf("puts %+v, want %+v", w.Puts, wantPuts)
	}
	c := &Collection{Name: "c"}
	c.Committed(w)
	if c.LastSeq != 4 || c.Changes != 4 || c.Docs != 3 || c.Units != 4 {
		t.Fatalf("committed %+v", c)
	}
	if n, _ := db.VectorCount("c"); n != 3 {
		t.Fatalf("%d vectors, want 3", n)
	}
	// b unchunked: its chunks' vectors go, its own comes.
	w, err = db.Write("c", []Put{{ID: "b", Record: &Record{Text: "b"}, Units: []string{"b"}, Stale: r.UnitIDs("b"), Vecs: [][]float32{{4, 0}}}}, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(w.Dels, r.UnitIDs("b")) || len(w.Puts) != 1 || w.Puts[0].ID != "b" || w.Docs != 3 || w.Units != 3 || w.Seq != 7 || w.Changes != 3 {
		t.Fatalf("second commit %+v", w)
	}
	c.Committed(w)
	if c.LastSeq != 7 || c.Changes != 7 || c.Units != 3 {
		t.Fatalf("committed %+v", c)
	}
	vids, _, err := db.StoredVectors("c", []string{"a", "b", "b\x000", "b\x001", "n"}, 2)
	if err != nil || !slices.Equal(vids, []string{"a", "b"}) {
		t.Fatalf("vectors after: %q, %v", vids, err)
	}
	// A commit with no changes (counters only) leaves the reach as it is.
	c.Committed(Commit{Docs: 9, Units: 9})
	if c.LastSeq != 7 || c.Changes != 7 || c.Docs != 9 {
		t.Fatalf("a commit without changes: %+v", c)
	}
}

// TestDeleteChunked: deleting a chunked document removes every unit's vector and logs a
// change per unit; the counts follow; ids not stored are skipped.
func TestDeleteChunked(t *testing.T) {
	db := openTestDB(t)
	r := &Record{Text: "0123456789", Chunks: []Chunk{{S: 0, E: 3}, {S: 3, E: 6}, {S: 6, E: 10}}}
	if _, err := db.Write("c", []Put{
		{ID: "k", Record: r, Units: r.UnitIDs("k"), Vecs: [][]float32{{1}, {2}, {3}}},
		{ID: "p", Record: &Record{Text: "p"}, Units: []string{"p"}, Vecs: [][]float32{{4}}},
	}, 2, 4); err != nil {
		t.Fatal(err)
	}
	w, err := db.Delete("c", []string{"x", "k", "y"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(w.Dels, r.UnitIDs("k")) || w.Changes != 3 || w.Seq != 7 || w.Docs != 1 || w.Units != 1 || len(w.Puts) != 0 {
		t.Fatalf("commit %+v", w)
	}
	if n, _ := db.VectorCount("c"); n != 1 {
		t.Fatalf("%d vectors left, want 1", n)
	}
	// Nothing stored among the ids: nothing logged, nothing changed.
	w, err = db.Delete("c", []string{"k", "zz"})
	if err != nil || w.Changes != 0 || w.Seq != 0 || w.Docs != 1 || w.Units != 1 {
		t.Fatalf("delete of nothing stored: %+v, %v", w, err)
	}
	if log := changeLog(t, db, "c"); len(log) != 7 {
		t.Fatalf("%d changes logged, want 7", len(log))
	}
}

// TestDeleteDamagedRecord: a record that cannot be read cannot be deleted (its units are
// unknown): ErrCorrupt, and the transaction leaves everything as it was.
func TestDeleteDamagedRecord(t *testing.T) {
	db := openTestDB(t)
	putDocs(t, db, "c", false, "a", "b")
	setValue(t, db, [][]byte{bkCols, []byte("c"), bkDocs}, []byte("b"), []byte{recordMagic, 1, 1, 1, 1, '{', '}'})
	if _, err := db.Delete("c", []string{"a", "b"}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Delete of a damaged record: %v", err)
	}
	if ids, _ := db.IDs("c"); !slices.Equal(ids, []string{"a", "b"}) {
		t.Fatalf("a failed delete removed %v", ids)
	}
}

// TestWriteEmpty: a write of nothing makes the collection and logs nothing.
func TestWriteEmpty(t *testing.T) {
	db := openTestDB(t)
	w, err := db.Write("c", nil, 0, 0)
	if err != nil || w.Changes != 0 || w.Seq != 0 || w.Docs != 0 || w.Puts != nil {
		t.Fatalf("empty write: %+v, %v", w, err)
	}
	if ok, _ := db.CollectionExists("c"); !ok {
		t.Fatal("an empty write did not make its collection")
	}
}

// TestTrimCollection: Trim drops the whole change log and moves the trim point to the last
// change, persisted; a collection with no changes, or a missing one, is left alone; writes
// after it log from the next sequence number.
func TestTrimCollection(t *testing.T) {
	db := openTestDB(t)
	if err := db.Trim(&Collection{Name: "missing", Changes: 3, LastSeq: 3}); err != nil {
		t.Fatalf("Trim of a missing collection: %v", err)
	}
	putDocs(t, db, "c", false, "a", "b", "c")
	c, _ := db.LoadCollection("c")
	zero := *c
	zero.Changes = 0
	if err := db.Trim(&zero); err != nil || zero.Trimmed != 0 {
		t.Fatalf("Trim of no changes: %+v, %v", zero, err)
	}
	if len(changeLog(t, db, "c")) != 3 {
		t.Fatal("Trim with Changes 0 dropped the log")
	}
	if err := db.Trim(c); err != nil {
		t.Fatal(err)
	}
	if c.Changes != 0 || c.Trimmed != 3 || c.LastSeq != 3 {
		t.Fatalf("trimmed: %+v", c)
	}
	if n := len(changeLog(t, db, "c")); n != 0 {
		t.Fatalf("%d changes left", n)
	}
	putDocs(t, db, "c", false, "d")
	again, err := db.LoadCollection("c")
	if err != nil || again.Trimmed != 3 || again.LastSeq != 4 || again.Changes != 1 || again.Docs != 4 {
		t.Fatalf("reloaded: %+v, %v", again, err)
	}
}

// TestMaybeTrim: a change log up to MaxChanges is kept whole; past it, its oldest half is
// dropped, and the trim point is the newest change dropped.
func TestMaybeTrim(t *testing.T) {
	db := openTestDB(t)
	putDocs(t, db, "c", false, "a")
	const n = MaxChanges + 2
	// A log of n changes, made directly (a write of n units would take long).
	if err := db.update(func(tx *bolt.Tx) error {
		b, _ := colBucket(tx, "c", false)
		cb := b.Bucket(bkChanges)
		cb.FillPercent = 1
		for s := uint64(2); s <= n; s++ {
			if err := cb.Put(u64b(s), []byte{opPut, 'a'}); err != nil {
				return err
			}
		}
		return tx.Bucket(bkMeta).Put(keySeq, u64b(n))
	}); err != nil {
		t.Fatal(err)
	}
	c, err := db.LoadCollection("c")
	if err != nil || c.Changes != n || c.LastSeq != n {
		t.Fatalf("loaded %+v, %v", c, err)
	}
	under := *c
	under.Changes = MaxChanges
	if err := db.MaybeTrim(&under); err != nil || under.Changes != MaxChanges || under.Trimmed != 0 {
		t.Fatalf("MaybeTrim at MaxChanges: %+v, %v", under, err)
	}
	if err := db.MaybeTrim(c); err != nil {
		t.Fatal(err)
	}
	if c.Changes != n/2 || c.Trimmed != n/2 || c.LastSeq != n {
		t.Errorf("after MaybeTrim: Changes %d, Trimmed %d, LastSeq %d; want %d, %d, %d", c.Changes, c.Trimmed, c.LastSeq, n/2, n/2, n)
	}
	log := changeLog(t, db, "c")
	if len(log) != n/2 || log[0].seq != n/2+1 || log[len(log)-1].seq != n {
		first, last := uint64(0), uint64(0)
		if len(log) > 0 {
			first, last = log[0].seq, log[len(log)-1].seq
		}
		t.Errorf("the log kept %d changes, %d to %d; want the newest %d, %d to %d", len(log), first, last, n/2, n/2+1, n)
	}
	again, err := db.LoadCollection("c")
	if err != nil || again.Trimmed != c.Trimmed || again.Changes != c.Changes || again.LastSeq != n {
		t.Errorf("reloaded %+v, %v; want %+v", again, err, c)
	}
}

// TestMaybeTrimMissing: MaybeTrim of a collection that is gone does nothing.
func TestMaybeTrimMissing(t *testing.T) {
	db := openTestDB(t)
	c := &Collection{Name: "gone", Changes: MaxChanges + 1}
	if err := db.MaybeTrim(c); err != nil || c.Changes != MaxChanges+1 {
		t.Fatalf("%+v, %v", c, err)
	}
}

// applyLog records the calls of an applyFunc.
type applyLog struct {
	calls [][2]int // puts, dels of each call
	seqs  []uint64
	ids   []string
	fail  error
}

func (a *applyLog) apply(_ context.Context, puts []Unit, dels []string, seq uint64) error {
	a.calls = append(a.calls, [2]int{len(puts), len(dels)})
	a.seqs = append(a.seqs, seq)
	for _, p := range puts {
		a.ids = append(a.ids, p.ID)
	}
	return a.fail
}

// TestCatchUpBatches: a catch-up over more touched units than catchUpBatch applies them a
// batch at a time, the deletes with the first, each at the collection's last change; one
// from the last change applies nothing; an apply error ends it.
func TestCatchUpBatches(t *testing.T) {
	db := openTestDB(t)
	const n = catchUpBatch + 100
	puts := make([]Put, n)
	for i := range puts {
		id := fmt.Sprintf("d%05d", i)
		puts[i] = Put{ID: id, Record: &Record{Text: "x"}, Units: []string{id}}
	}
	w := must(db.Write("c", puts, n, n))
	if _, err := db.Delete("c", []string{"d00000", "d00001"}); err != nil {
		t.Fatal(err)
	}
	c, _ := db.LoadCollection("c")
	var a applyLog
	if err := db.catchUp(c, 0, a.apply); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.calls, [][2]int{{catchUpBatch, 2}, {n - 2 - catchUpBatch, 0}}) {
		t.Fatalf("calls %v", a.calls)
	}
	for _, s := range a.seqs {
		if s != c.LastSeq {
			t.Fatalf("applied at %d, want %d", s, c.LastSeq)
		}
	}
	if !slices.IsSorted(a.ids) || a.ids[0] != "d00002" {
		t.Fatalf("puts not in id order from d00002: %q...", a.ids[:3])
	}
	// From the write's end: only the deletes.
	a = applyLog{}
	if err := db.catchUp(c, w.Seq, a.apply); err != nil || !reflect.DeepEqual(a.calls, [][2]int{{0, 2}}) {
		t.Fatalf("from %d: %v, %v", w.Seq, a.calls, err)
	}
	for _, from := range []uint64{c.LastSeq, c.LastSeq + 5} {
		a = applyLog{}
		if err := db.catchUp(c, from, a.apply); err != nil || a.calls != nil {
			t.Fatalf("from %d: %v, %v", from, a.calls, err)
		}
	}
	boom := errors.New("boom")
	a = applyLog{fail: boom}
	if err := db.catchUp(c, 0, a.apply); !errors.Is(err, boom) || len(a.calls) != 1 {
		t.Fatalf("a failing apply: %v after %d calls", err, len(a.calls))
	}
}

// TestCatchUpDamagedRecord: a touched unit whose record cannot be read makes the catch-up
// ErrCorrupt (never a delete of a document that is stored).
func TestCatchUpDamagedRecord(t *testing.T) {
	db := openTestDB(t)
	putDocs(t, db, "c", false, "a", "b")
	setValue(t, db, [][]byte{bkCols, []byte("c"), bkDocs}, []byte("b"), []byte{recordMagic, 0, 0, 0, 0, '{', '}'})
	c, _ := db.LoadCollection("c")
	var a applyLog
	if err := db.catchUp(c, 0, a.apply); !errors.Is(err, ErrCorrupt) || a.calls != nil {
		t.Fatalf("catch-up over a damaged record: %v, calls %v", err, a.calls)
	}
}

// TestRebuildBatches: a rebuild loads every unit, a batch of about catchUpBatch per call,
// each at the collection's last change; an empty or missing collection gets one call with
// nothing (which records its sequence number); a damaged record is ErrCorrupt.
func TestRebuildBatches(t *testing.T) {
	db := openTestDB(t)
	const n = catchUpBatch + 10
	puts := make([]Put, n)
	for i := range puts {
		id := fmt.Sprintf("d%05d", i)
		r := &Record{Text: "0123"}
		if i == 0 {
			r.Chunks = []Chunk{{S: 0, E: 2}, {S: 2, E: 4}}
		}
		puts[i] = Put{ID: id, Record: r, Units: r.UnitIDs(id)}
	}
	if _, err := db.Write("c", puts, n, n+1); err != nil {
		t.Fatal(err)
	}
	c, _ := db.LoadCollection("c")
	var a applyLog
	if err := db.rebuild(c, a.apply); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, call := range a.calls {
		total += call[0]
		if call[1] != 0 || call[0] > catchUpBatch {
			t.Fatalf("calls %v", a.calls)
		}
	}
	if len(a.calls) != 2 || total != n+1 || a.ids[0] != "d00000\x000" || a.ids[1] != "d00000\x001" || a.ids[len(a.ids)-1] != fmt.Sprintf("d%05d", n-1) {
		t.Fatalf("rebuild applied %v (%d units)", a.calls, total)
	}
	if len(slices.Compact(slices.Clone(a.ids))) != len(a.ids) {
		t.Fatal("a unit was applied twice")
	}
	for _, col := range []string{"empty", "missing"} {
		if col == "empty" {
			if err := db.CreateCollection(col, 0, nil); err != nil {
				t.Fatal(err)
			}
		}
		a = applyLog{}
		if err := db.rebuild(&Collection{Name: col, LastSeq: 42}, a.apply); err != nil || !reflect.DeepEqual(a.calls, [][2]int{{0, 0}}) || a.seqs[0] != 42 {
			t.Fatalf("%s collection: %v at %v, %v", col, a.calls, a.seqs, err)
		}
	}
	setValue(t, db, [][]byte{bkCols, []byte("c"), bkDocs}, []byte("d00005"), []byte("{broken"))
	if err := db.rebuild(c, (&applyLog{}).apply); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("rebuild over a damaged record: %v", err)
	}
}

// TestFillWhenAppending: a bucket is set to fill its pages only when every key the write
// brings sorts after those it holds.
func TestFillWhenAppending(t *testing.T) {
	db := openTestDB(t)
	if err := db.update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("b"))
		if err != nil {
			return err
		}
		fillWhenAppending(b, "m")
		if b.FillPercent != appendFill {
			return fmt.Errorf("empty bucket: fill %v", b.FillPercent)
		}
		if err := b.Put([]byte("m"), []byte("v")); err != nil {
			return err
		}
		for first, want := range map[string]float64{"n": appendFill, "m": bolt.DefaultFillPercent, "a": bolt.DefaultFillPercent} {
			b.FillPercent = bolt.DefaultFillPercent
			fillWhenAppending(b, first)
			if b.FillPercent != want {
				return fmt.Errorf("first key %q: fill %v, want %v", first, b.FillPercent, want)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestEncodePuts: records are encoded (with a dictionary, packed), vectors in the store's
// precision, on one core or several; an error from any of them is the call's, with nothing
// returned, on either path.
func TestEncodePuts(t *testing.T) {
	for _, n := range []int{3, 4 * encodeParallelMin} {
		puts := make([]Put, n)
		for i := range puts {
			id := fmt.Sprintf("d%05d", i)
			puts[i] = Put{ID: id, Record: zRecord(i), Units: []string{id}, Vecs: [][]float32{{float32(i), 0.5}}}
		}
		puts[1].Vecs = nil // a put without vectors
		encs, vencs, err := encodePuts(puts, nil, func(u string, v []float32) ([]byte, error) { return EncodeVector(u, v), nil })
		if err != nil || len(encs) != n || len(vencs) != n {
			t.Fatalf("n=%d: %d, %d, %v", n, len(encs), len(vencs), err)
		}
		for i, p := range puts {
			if got, err := DecodeRecord(p.ID, encs[i]); err != nil || !reflect.DeepEqual(got, p.Record) {
				t.Fatalf("n=%d: record %d: %+v, %v", n, i, got, err)
			}
			if p.Vecs == nil {
				if vencs[i] != nil {
					t.Fatalf("n=%d: a put without vectors has %d", n, len(vencs[i]))
				}
				continue
			}
			if v, err := DecodeVector(p.ID, vencs[i][0]); err != nil || !slices.Equal(v, p.Vecs[0]) {
				t.Fatalf("n=%d: vector %d: %v, %v", n, i, v, err)
			}
		}
		// Without an encoder for vectors: none.
		if _, vencs, err := encodePuts(puts, nil, nil); err != nil || vencs != nil {
			t.Fatalf("n=%d: no vector encoder: %v, %v", n, vencs, err)
		}
		// Packed with a dictionary.
		samples := make([]*Record, 20)
		for i := range samples {
			samples[i] = zRecord(i)
		}
		_, d := dictDB(t, samples)
		encs, _, err = encodePuts(puts, d, nil)
		if err != nil || encs[n-1][0] != recordMagicZ {
			t.Fatalf("n=%d: packed: %v", n, err)
		}
		// A vector encoder's error, and a record's, in the last put.
		boom := errors.New("boom")
		encs, vencs, err = encodePuts(puts, nil, func(u string, v []float32) ([]byte, error) {
			if u == puts[n-1].ID {
				return nil, boom
			}
			return EncodeVector(u, v), nil
		})
		if !errors.Is(err, boom) || encs != nil || vencs != nil {
			t.Fatalf("n=%d: a vector error: %v", n, err)
		}
		bad := slices.Clone(puts)
		bad[n-1].Record = &Record{Metadata: map[string]any{"x": make(chan int)}}
		if encs, _, err := encodePuts(bad, nil, nil); err == nil || encs != nil {
			t.Fatalf("n=%d: a record that cannot be encoded: %v", n, err)
		}
	}
}
