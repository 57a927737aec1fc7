package store

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// TestReplace removes and puts in one transaction: the commit carries both for the derived
// indexes, the counts follow, a catch-up from the change log gives the same index, and a
// fault between the two steps leaves nothing of either.
func TestReplace(t *testing.T) {
	db := openTestDB(t)
	k := newFakeKind(t)
	c, err := db.LoadCollection("c")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.OpenIndexes(c, []Kind{k.kind()}); err != nil {
		t.Fatal(err)
	}
	write(t, db, c, map[string]string{"a": "aa", "b": "bb", "c": "cc"})
	before := c.LastSeq

	// A fault after the deletes: the transaction is rolled back.
	boom := errors.New("fault")
	SetReplaceFault(func() error { return boom })
	_, _, err = db.Replace("c", []Put{{ID: "d", Record: &Record{Text: "dd"}, Units: []string{"d"}}}, []string{"a", "b"}, 1, 1)
	SetReplaceFault(nil)
	if !errors.Is(err, boom) {
		t.Fatalf("Replace with a fault: %v", err)
	}
	if ids, _ := db.IDs("c"); !slices.Equal(ids, []string{"a", "b", "c"}) {
		t.Fatalf("after a failed Replace: %v", ids)
	}
	if re, _ := db.LoadCollection("c"); re.Docs != 3 || re.Units != 3 || re.LastSeq != before {
		t.Fatalf("after a failed Replace: %+v", re)
	}

	// b is replaced in place, d added, a removed ("zz" is not stored: skipped).
	w, removed, err := db.Replace("c", []Put{
		{ID: "b", Record: &Record{Text: "b2"}, Units: []string{"b"}},
		{ID: "d", Record: &Record{Text: "dd"}, Units: []string{"d"}},
	}, []string{"a", "zz"}, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if removed != 1 || w.Docs != 3 || w.Units != 3 || !slices.Equal(w.Dels, []string{"a"}) || len(w.Puts) != 2 {
		t.Fatalf("commit %+v, removed %d", w, removed)
	}
	c.Committed(w)
	if err := db.Apply(context.Background(), c, w); err != nil {
		t.Fatal(err)
	}
	if got := sortedKeys(k.held.ids); !slices.Equal(got, []string{"b", "c", "d"}) {
		t.Fatalf("index after Replace: %v", got)
	}
	if re, _ := db.LoadCollection("c"); re.Docs != 3 || re.Units != 3 || re.LastSeq != w.Seq {
		t.Fatalf("persisted after Replace: %+v (commit %+v)", re, w)
	}
	// A fresh index caught up from the change log agrees.
	fresh := &fakeIndex{ids: map[string]int{"a": 2, "b": 2, "c": 2}, seq: before}
	if err := db.catchUp(c, before, fresh.Apply); err != nil {
		t.Fatal(err)
	}
	if got := sortedKeys(fresh.ids); !slices.Equal(got, []string{"b", "c", "d"}) {
		t.Fatalf("caught up: %v", got)
	}

	// Without puts, a collection that does not exist is ErrCollectionNotFound (not created).
	if _, _, err := db.Replace("nope", nil, []string{"a"}, 0, 0); !errors.Is(err, ErrCollectionNotFound) {
		t.Fatalf("Replace in a missing collection: %v", err)
	}
}

// TestReplaceCreatesAndRemoves: with puts, a missing collection is created; without puts,
// an existing one only loses documents (chunked ones with every unit); the counts and the
// commit follow.
func TestReplaceCreatesAndRemoves(t *testing.T) {
	db := openTestDB(t)
	w, removed, err := db.Replace("new", []Put{{ID: "a", Record: &Record{Text: "a"}, Units: []string{"a"}}}, []string{"x"}, 1, 1)
	if err != nil || removed != 0 || w.Docs != 1 || w.Units != 1 || w.Changes != 1 || len(w.Dels) != 0 {
		t.Fatalf("Replace into a new collection: %+v, %d, %v", w, removed, err)
	}
	r := &Record{Text: "abcdef", Chunks: []Chunk{{S: 0, E: 3}, {S: 3, E: 6}}}
	if _, err := db.Write("new", []Put{{ID: "k", Record: r, Units: r.UnitIDs("k"), Vecs: [][]float32{{1}, {2}}}}, 1, 2); err != nil {
		t.Fatal(err)
	}
	w, removed, err = db.Replace("new", nil, []string{"k", "nope"}, 0, 0)
	if err != nil || removed != 1 || w.Docs != 1 || w.Units != 1 || w.Changes != 2 || !slices.Equal(w.Dels, r.UnitIDs("k")) || w.Puts != nil {
		t.Fatalf("Replace removing a chunked document: %+v, %d, %v", w, removed, err)
	}
	if n, _ := db.VectorCount("new"); n != 0 {
		t.Fatalf("%d vectors left", n)
	}
	// Nothing to remove and nothing to put: nothing changes.
	w, removed, err = db.Replace("new", nil, nil, 0, 0)
	if err != nil || removed != 0 || w.Changes != 0 || w.Docs != 1 {
		t.Fatalf("an empty Replace: %+v, %d, %v", w, removed, err)
	}
}

// TestReplaceFailures: a document to remove that cannot be read, or a put that cannot be
// encoded, fails the Replace before anything changes.
func TestReplaceFailures(t *testing.T) {
	db := openTestDB(t)
	putDocs(t, db, "c", false, "a", "b")
	before, _ := db.LoadCollection("c")
	if _, _, err := db.Replace("c", []Put{{ID: "z", Record: &Record{Metadata: map[string]any{"f": func() {}}}, Units: []string{"z"}}}, []string{"a"}, 1, 1); err == nil {
		t.Fatal("a put that cannot be encoded was replaced")
	}
	setValue(t, db, [][]byte{bkCols, []byte("c"), bkDocs}, []byte("b"), []byte{recordMagic, 1, 1, 1, 1, '{', '}'})
	if _, _, err := db.Replace("c", []Put{{ID: "z", Record: &Record{Text: "z"}, Units: []string{"z"}}}, []string{"a", "b"}, 1, 1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("removing a damaged record: %v", err)
	}
	after, _ := db.LoadCollection("c")
	if ids, _ := db.IDs("c"); !slices.Equal(ids, []string{"a", "b"}) || after.LastSeq != before.LastSeq {
		t.Fatalf("a failed Replace changed the collection: %q, %+v", ids, after)
	}
}
