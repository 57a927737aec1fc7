package memory

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/bm25"
	"github.com/agentmem/memory/vectorstore"
	bolt "go.etcd.io/bbolt"
)

// checkStore makes a closed store with 50 documents in the default collection and 10 in
// "notes", embedded with a hash embedder.
func checkStore(t *testing.T) (string, Option) {
	t.Helper()
	dir := t.TempDir() + "/store"
	emb := WithEmbedder(vectorstore.NewHashEmbedder(16))
	m, err := Open(dir, emb)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if err := m.Add(bg, Document{ID: fmt.Sprintf("d%03d", i), Text: fmt.Sprintf("document %d marker%d shared words", i, i)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		if err := m.Collection("notes").Add(bg, Document{ID: fmt.Sprintf("n%d", i), Text: fmt.Sprintf("note %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, emb
}

// damageBM25 changes a closed store's BM25 index of col behind its back, keeping its
// sequence number: dels are removed and puts (ghost ids) added.
func damageBM25(t *testing.T, m *Memory, dir, col string, puts []string, dels []string) {
	t.Helper()
	ix, err := bm25.OpenWith(m.dx.colPath(bm25Dir, col), bm25.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []bm25.Doc
	for _, id := range puts {
		docs = append(docs, bm25.Doc{ID: id, Text: "ghost text " + id})
	}
	if err := ix.Apply(docs, dels, ix.Seq()); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
}

// find returns the check of col/index in rep.
func find(t *testing.T, rep CheckReport, col, index string) IndexCheck {
	t.Helper()
	for _, c := range rep.Indexes {
		if c.Collection == col && c.Index == index {
			return c
		}
	}
	t.Fatalf("no check of %s/%s in %v", col, index, rep.Indexes)
	return IndexCheck{}
}

func TestCheckCleanStore(t *testing.T) {
	dir, emb := checkStore(t)
	for _, ro := range []bool{false, true} {
		opts := []Option{emb}
		if ro {
			opts = append(opts, ReadOnly())
		}
		m := openT(t, dir, opts...)
		rep, err := m.Check(bg, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Indexes) != 9 || !rep.OK() { // store.db, and store, counters, bm25, vectors of 2 collections
			t.Fatalf("read-only %v: %v", ro, rep.Indexes)
		}
		for _, c := range rep.Indexes {
			if len(c.Problems) > 0 || c.Repaired {
				t.Errorf("clean store: %s", c)
			}
			if !strings.Contains(c.String(), ": ok (") {
				t.Errorf("line %q does not say ok", c)
			}
		}
		b := find(t, rep, DefaultCollection, bm25Dir)
		if b.Count != 50 || b.StoreUnits != 50 || b.Sampled != 50 || len(b.Missing) != 0 || b.Seq != b.StoreSeq {
			t.Errorf("default/bm25: %+v", b)
		}
		v := find(t, rep, "notes", vecDir)
		if v.Count != 10 || v.StoreUnits != 10 || v.Sampled != 10 || len(v.Missing) != 0 {
			t.Errorf("notes/vectors: %+v", v)
		}
		if ro {
			if _, err := m.Check(bg, true); !errors.Is(err, ErrReadOnly) {
				t.Errorf("Check(repair) on a read-only store: %v", err)
			}
		}
		m.Close()
	}
}

// An index with the right sequence number and count but other ids (a ghost in place of a
// stored document, in the middle of the id space) is found by the sample and repaired.
func TestCheckFindsAndRepairsSwappedIDs(t *testing.T) {
	dir, emb := checkStore(t)
	m := openT(t, dir, emb)
	m.Close()
	damageBM25(t, m, dir, DefaultCollection, []string{"ghost"}, []string{"d025"})

	r := openT(t, dir, emb, ReadOnly())
	rep, err := r.Check(bg, false)
	if err != nil {
		t.Fatal(err)
	}
	c := find(t, rep, DefaultCollection, bm25Dir)
	if rep.OK() || len(c.Problems) == 0 || c.Repaired || !strings.Contains(c.String(), "DISAGREES") {
		t.Fatalf("read-only check of a swapped index: %s (OK %v)", c, rep.OK())
	}
	if len(c.Missing) != 1 || c.Missing[0] != "d025" {
		t.Errorf("missing %v, want [d025]", c.Missing)
	}
	if n := find(t, rep, "notes", bm25Dir); len(n.Problems) != 0 {
		t.Errorf("the other collection: %s", n)
	}
	r.Close()

	w := openT(t, dir, emb)
	rep, err = w.Check(bg, true)
	if err != nil {
		t.Fatal(err)
	}
	c = find(t, rep, DefaultCollection, bm25Dir)
	if !rep.OK() || !c.Repaired || !strings.Contains(c.String(), "REPAIRED") {
		t.Fatalf("repair: %s", c)
	}
	res, err := w.Search(bg, "marker25", WithMode(BM25), TopK(3))
	if err != nil || len(res) == 0 || res[0].ID != "d025" {
		t.Fatalf("after repair, marker25 finds %v, %v", ids(res), err)
	}
	if res, _ := w.Search(bg, "ghost", WithMode(BM25)); len(res) != 0 {
		t.Fatalf("after repair the ghost is still found: %v", ids(res))
	}
	w.Close()

	// Repaired on disk: a fresh check finds nothing.
	w2 := openT(t, dir, emb)
	rep, err = w2.Check(bg, false)
	if err != nil || !rep.OK() {
		t.Fatalf("after repair: %v %v", rep.Indexes, err)
	}
	for _, c := range rep.Indexes {
		if len(c.Problems) > 0 {
			t.Errorf("after repair: %s", c)
		}
	}
}

// An index that lost a document (its count disagrees) is reported; a writable open
// already rebuilds it, which the report says.
func TestCheckCountMismatch(t *testing.T) {
	dir, emb := checkStore(t)
	m := openT(t, dir, emb)
	m.Close()
	damageBM25(t, m, dir, "notes", nil, []string{"n3"})

	r := openT(t, dir, emb, ReadOnly())
	rep, err := r.Check(bg, false)
	if err != nil {
		t.Fatal(err)
	}
	if c := find(t, rep, "notes", bm25Dir); rep.OK() || len(c.Problems) == 0 || !strings.Contains(strings.Join(c.Problems, ";"), "holds 9 ids, the store of record 10") {
		t.Fatalf("read-only check: %s", c)
	}
	r.Close()
	w := openT(t, dir, emb)
	rep, err = w.Check(bg, false)
	if err != nil {
		t.Fatal(err)
	}
	if c := find(t, rep, "notes", bm25Dir); !rep.OK() || !c.Repaired {
		t.Fatalf("writable check: %s", c)
	}
}

// Damage in the store of record itself (a record that does not decode, a vector of the
// wrong size) is reported, and repair cannot clear it.
func TestCheckDamagedRecords(t *testing.T) {
	dir, emb := checkStore(t)
	db, err := bolt.Open(filepath.Join(dir, dbName), 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bkCols).Bucket([]byte(DefaultCollection))
		if err := b.Bucket(bkDocs).Put([]byte("d010"), []byte(`{"x":"trunc`)); err != nil {
			return err
		}
		return b.Bucket(bkVecs).Put([]byte("d020"), []byte{1, 2, 3, 4})
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	m := openT(t, dir, emb)
	rep, err := m.Check(bg, true)
	if err != nil {
		t.Fatal(err)
	}
	c := find(t, rep, DefaultCollection, "store")
	all := strings.Join(c.Problems, "; ")
	if rep.OK() || !strings.Contains(all, `"d010"`) || !strings.Contains(all, `the vector of "d020" is damaged (1 values, want 16`) || c.Repaired {
		t.Fatalf("damaged records: %s", c)
	}
	if !strings.Contains(c.String(), "restore store.db from a backup") {
		t.Errorf("line %q does not say what to do", c)
	}
	if ix := find(t, rep, DefaultCollection, "indexes"); len(ix.Problems) == 0 || !strings.Contains(ix.String(), "DISAGREES") {
		t.Errorf("the damaged collection's indexes: %s", ix)
	}
	if n := find(t, rep, "notes", "store"); len(n.Problems) != 0 {
		t.Errorf("the other collection: %s", n)
	}
	if f := find(t, rep, "*", dbName); len(f.Problems) != 0 {
		t.Errorf("bbolt's own check: %s", f)
	}
}

// Check runs beside writers and searchers (under -race): it takes the writer lock per
// collection, so each collection is checked whole and agrees.
func TestCheckConcurrentWrites(t *testing.T) {
	dir, emb := checkStore(t)
	m := openT(t, dir, emb)
	done := make(chan error, 2)
	stop := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := m.Add(bg, Document{ID: fmt.Sprintf("w%04d", i), Text: fmt.Sprintf("written while checking %d", i)}); err != nil {
				done <- err
				return
			}
		}
	}()
	go func() {
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if _, err := m.Search(bg, "document marker7", WithMode(BM25)); err != nil {
				done <- err
				return
			}
		}
	}()
	for range 3 {
		rep, err := m.Check(bg, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range rep.Indexes {
			if len(c.Problems) > 0 {
				t.Errorf("check beside writes: %s", c)
			}
		}
	}
	close(stop)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// A check after a BM25 search, which opened the BM25 index alone, still checks the vector
// index (a disk index, its metadata damaged: a writable open rebuilds it) as it is on
// disk, and reports what the check of a store not searched reports.
func TestCheckAfterBM25Search(t *testing.T) {
	opts := []Option{WithEmbedder(vectorstore.NewHashEmbedder(16)), WithIndex(vectorstore.IndexConfig{Backend: "disk"})}
	for _, searched := range []bool{false, true} {
		dir := t.TempDir()
		m := openT(t, dir, opts...)
		for i := range 50 {
			if err := m.Add(bg, Document{ID: fmt.Sprintf("d%03d", i), Text: fmt.Sprintf("document %d marker%d", i, i)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		meta := filepath.Join(dir, vecDir, DefaultCollection, "disk.json")
		b, err := os.ReadFile(meta)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0x20
		if err := os.WriteFile(meta, b, 0o644); err != nil {
			t.Fatal(err)
		}
		m = openT(t, dir, opts...)
		if searched {
			if res, err := m.Search(bg, "marker7", WithMode(BM25), TopK(1)); err != nil || len(res) != 1 {
				t.Fatalf("search: %v %v", ids(res), err)
			}
		}
		rep, err := m.Check(bg, false)
		if err != nil {
			t.Fatal(err)
		}
		v := find(t, rep, DefaultCollection, vecDir)
		if len(v.Problems) == 0 || !v.Repaired || v.Count != 50 {
			t.Fatalf("searched %v: the deleted vector index: %s", searched, v)
		}
		if b := find(t, rep, DefaultCollection, bm25Dir); len(b.Problems) != 0 {
			t.Fatalf("searched %v: bm25: %s", searched, b)
		}
	}
}
