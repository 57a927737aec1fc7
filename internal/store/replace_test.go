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
