package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestCollectionLifecycle: collections are created (with metadata or none; a second create
// leaves the first's metadata), listed sorted, found, counted, and deleted with everything
// they hold; deleting one that is not stored is no error.
func TestCollectionLifecycle(t *testing.T) {
	db := openTestDB(t)
	if names, err := db.CollectionNames(); err != nil || names != nil {
		t.Fatalf("names of an empty store: %v, %v", names, err)
	}
	if n, err := db.CountDocs(); err != nil || n != 0 {
		t.Fatalf("CountDocs of an empty store: %d, %v", n, err)
	}
	if err := db.DeleteCollection("nope"); err != nil {
		t.Fatalf("DeleteCollection of an empty store: %v", err)
	}
	for _, name := range []string{"zeta", "alpha", "Mid", "with space", "ünï"} {
		if err := db.CreateCollection(name, 0, []byte(`{"name":"`+name+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.CreateCollection("alpha", 0, []byte(`{"name":"other"}`)); err != nil {
		t.Fatal(err)
	}
	if md, _ := db.CollectionMeta("alpha"); string(md) != `{"name":"alpha"}` {
		t.Fatalf("a second create changed the metadata: %s", md)
	}
	names, err := db.CollectionNames()
	if want := []string{"Mid", "alpha", "with space", "zeta", "ünï"}; err != nil || !slices.Equal(names, want) {
		t.Fatalf("names %q, %v; want %q", names, err, want)
	}
	for _, tc := range []struct {
		name string
		ok   bool
	}{{"alpha", true}, {"ünï", true}, {"Alpha", false}, {"", false}, {"alph", false}} {
		if ok, err := db.CollectionExists(tc.name); err != nil || ok != tc.ok {
			t.Errorf("CollectionExists(%q) = %v, %v", tc.name, ok, err)
		}
	}
	putDocs(t, db, "alpha", true, "a", "b", "c")
	putDocs(t, db, "zeta", false, "a")
	if n, err := db.CountDocs(); err != nil || n != 4 {
		t.Fatalf("CountDocs = %d, %v; want 4", n, err)
	}
	if err := db.DeleteCollection("alpha"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := db.CollectionExists("alpha"); ok {
		t.Fatal("a deleted collection exists")
	}
	if n, _ := db.CountDocs(); n != 1 {
		t.Fatalf("CountDocs after a delete = %d, want 1", n)
	}
	if ids, err := db.IDs("alpha"); err != nil || len(ids) != 0 || ids == nil {
		t.Fatalf("IDs of a deleted collection: %#v, %v", ids, err)
	}
	if n, err := db.VectorCount("alpha"); err != nil || n != 0 {
		t.Fatalf("VectorCount of a deleted collection: %d, %v", n, err)
	}
	// Made again, it starts empty, with new metadata.
	if err := db.CreateCollection("alpha", 0, nil); err != nil {
		t.Fatal(err)
	}
	c, err := db.LoadCollection("alpha")
	if err != nil || c.Docs != 0 || c.Changes != 0 {
		t.Fatalf("re-created: %+v, %v", c, err)
	}
	if md, _ := db.CollectionMeta("alpha"); md != nil {
		t.Fatalf("re-created collection has the old metadata %s", md)
	}
}

// TestCreateCollectionCap: the cap counts the collections stored; 0 is no cap; an existing
// collection is no error at the cap; a deleted one frees its place.
func TestCreateCollectionCap(t *testing.T) {
	db := openTestDB(t)
	for i := range 5 {
		if err := db.CreateCollection(fmt.Sprint("c", i), 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		max  int
		want error
	}{
		{"new", 5, ErrTooManyCollections},
		{"new", 3, ErrTooManyCollections},
		{"new", -1, nil},
		{"c0", 1, nil},
		{"another", 7, nil},
	} {
		err := db.CreateCollection(tc.name, tc.max, nil)
		if !errors.Is(err, tc.want) {
			t.Fatalf("CreateCollection(%q, %d) = %v, want %v", tc.name, tc.max, err, tc.want)
		}
		if err != nil && !strings.Contains(err.Error(), "has 5") {
			t.Errorf("the error does not say how many: %v", err)
		}
	}
	if ok, _ := db.CollectionExists("new"); !ok {
		t.Fatal("a create under no cap did not make the collection")
	}
	if err := db.CreateCollection("x", 7, nil); !errors.Is(err, ErrTooManyCollections) {
		t.Fatalf("at 7 of 7: %v", err)
	}
	if err := db.DeleteCollection("c1"); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateCollection("x", 7, nil); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
}

// TestDocument: a stored unchunked document comes with its vector (or none), a chunked one
// without; a missing one, or one of a missing collection, is nil without an error.
func TestDocument(t *testing.T) {
	db := openTestDB(t)
	r := &Record{Text: "0123456789", Chunks: []Chunk{{S: 0, E: 5}, {S: 5, E: 10}}}
	if _, err := db.Write("c", []Put{
		{ID: "v", Record: &Record{Title: "T", Text: "with vector"}, Units: []string{"v"}, Vecs: [][]float32{{1, 2, 3}}},
		{ID: "n", Record: &Record{Text: "no vector"}, Units: []string{"n"}},
		{ID: "k", Record: r, Units: r.UnitIDs("k"), Vecs: [][]float32{{1}, {2}}},
	}, 3, 4); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		col, id string
		text    string
		vec     []float32
	}{
		{"c", "v", "with vector", []float32{1, 2, 3}},
		{"c", "n", "no vector", nil},
		{"c", "k", "0123456789", nil},
		{"c", "zz", "", nil},
		{"other", "v", "", nil},
	} {
		got, vec, err := db.Document(tc.col, tc.id)
		if err != nil || (got == nil) != (tc.text == "") || got != nil && got.Text != tc.text || !slices.Equal(vec, tc.vec) {
			t.Errorf("Document(%s, %s) = %+v, %v, %v", tc.col, tc.id, got, vec, err)
		}
	}
	if v, err := db.Vector("c", "k\x001"); err != nil || !slices.Equal(v, []float32{2}) {
		t.Errorf("Vector of a chunk: %v, %v", v, err)
	}
	if v, err := db.Vector("c", "k"); err != nil || v != nil {
		t.Errorf("Vector of a chunked document's own id: %v, %v", v, err)
	}
	// A damaged vector of a stored document is ErrCorrupt, naming the collection.
	setValue(t, db, [][]byte{bkCols, []byte("c"), bkVecs}, []byte("v"), EncodeVector("w", []float32{1, 2, 3}))
	if _, _, err := db.Document("c", "v"); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `collection "c"`) {
		t.Errorf("Document with a damaged vector: %v", err)
	}
}

// TestStoredVectors: the vectors of the ids asked, in their order, those without one left
// out; one of another length than dim is ErrCorrupt; a missing collection has none.
func TestStoredVectors(t *testing.T) {
	db := openTestDB(t)
	putDocs(t, db, "c", true, "a", "b", "c")
	if err := db.PutVectors("c", []string{"odd"}, [][]float32{{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	ids, vecs, err := db.StoredVectors("c", []string{"c", "x", "a"}, 2)
	if err != nil || !slices.Equal(ids, []string{"c", "a"}) || len(vecs) != 2 || !slices.Equal(vecs[0], []float32{2, 1}) || !slices.Equal(vecs[1], []float32{0, 1}) {
		t.Fatalf("StoredVectors = %q, %v, %v", ids, vecs, err)
	}
	if ids, _, err := db.StoredVectors("c", []string{"a", "odd"}, 0); err != nil || len(ids) != 2 {
		t.Fatalf("dim 0 takes any length: %q, %v", ids, err)
	}
	if _, _, err := db.StoredVectors("c", []string{"a", "odd"}, 2); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `"odd" has 3 values, want 2`) {
		t.Fatalf("a vector of another length: %v", err)
	}
	if ids, vecs, err := db.StoredVectors("missing", []string{"a"}, 2); err != nil || ids != nil || vecs != nil {
		t.Fatalf("missing collection: %v, %v, %v", ids, vecs, err)
	}
	setValue(t, db, [][]byte{bkCols, []byte("c"), bkVecs}, []byte("b"), []byte{1, 2, 3})
	if _, _, err := db.StoredVectors("c", []string{"b"}, 2); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a damaged vector: %v", err)
	}
}

// TestPutVectors: vectors replace the stored ones without a change logged (a re-embedding);
// a collection that is not stored is ErrCorrupt (it vanished under the caller).
func TestPutVectors(t *testing.T) {
	db := openTestDB(t)
	putDocs(t, db, "c", true, "a", "b")
	before, _ := db.LoadCollection("c")
	if err := db.PutVectors("c", []string{"a", "b", "new"}, [][]float32{{7, 7}, {8, 8}, {9, 9}}); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string][]float32{"a": {7, 7}, "b": {8, 8}, "new": {9, 9}} {
		if v, err := db.Vector("c", id); err != nil || !slices.Equal(v, want) {
			t.Errorf("%s: %v, %v", id, v, err)
		}
	}
	after, _ := db.LoadCollection("c")
	if after.LastSeq != before.LastSeq || after.Changes != before.Changes || after.Docs != 2 {
		t.Fatalf("PutVectors changed the collection: %+v, was %+v", after, before)
	}
	if n, _ := db.VectorCount("c"); n != 3 {
		t.Fatalf("VectorCount %d, want 3", n)
	}
	if err := db.PutVectors("gone", []string{"a"}, [][]float32{{1}}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("PutVectors to a missing collection: %v", err)
	}
	if ok, _ := db.CollectionExists("gone"); ok {
		t.Fatal("PutVectors made a collection")
	}
}

// TestSampleUnits: up to n documents' units, the first and the last among them, spread
// over the id space, each once, the same each time; chunked documents give their chunks;
// a missing collection gives none.
func TestSampleUnits(t *testing.T) {
	db := openTestDB(t)
	var ids []string
	for c := byte('0'); c <= 'z'; c += 3 {
		ids = append(ids, fmt.Sprintf("%c-doc", c))
	}
	putDocs(t, db, "c", false, ids...)
	r := &Record{Text: "abcd", Chunks: []Chunk{{S: 0, E: 2}, {S: 2, E: 4}}}
	if _, err := db.Write("c", []Put{{ID: "~last", Record: r, Units: r.UnitIDs("~last")}}, 1, 2); err != nil {
		t.Fatal(err)
	}
	s, err := db.SampleUnits("c", 8)
	if err != nil {
		t.Fatal(err)
	}
	// The first, the last, then ids sought at the bytes 32, 64, ... 192: the ids here are
	// ASCII, so 128 and after find nothing, and 32 finds the first again.
	if want := []string{ids[0], "~last\x000", "~last\x001", "B-doc", "`-doc"}; !slices.Equal(s, want) {
		t.Fatalf("SampleUnits(8) = %q, want %q", s, want)
	}
	again, _ := db.SampleUnits("c", 8)
	if !slices.Equal(s, again) {
		t.Fatalf("not deterministic: %q then %q", s, again)
	}
	// More asked than stored: each at most once.
	all, _ := db.SampleUnits("c", 1000)
	if len(all) > len(ids)+2 {
		t.Fatalf("%d units sampled of %d", len(all), len(ids)+2)
	}
	for _, n := range []int{0, 1, 2} {
		if s, err := db.SampleUnits("c", n); err != nil || len(s) != 3 {
			t.Errorf("SampleUnits(%d) = %q, %v; want the first and last", n, s, err)
		}
	}
	if s, err := db.SampleUnits("missing", 8); err != nil || s != nil {
		t.Fatalf("missing collection: %q, %v", s, err)
	}
	if err := db.CreateCollection("empty", 0, nil); err != nil {
		t.Fatal(err)
	}
	if s, err := db.SampleUnits("empty", 8); err != nil || s != nil {
		t.Fatalf("empty collection: %q, %v", s, err)
	}
	setValue(t, db, [][]byte{bkCols, []byte("c"), bkDocs}, []byte(ids[0]), []byte("\x02xxxx{}"))
	if _, err := db.SampleUnits("c", 8); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a damaged sampled record: %v", err)
	}
}

// TestStepSample: documents at even steps in id order from the first, their units, the same
// each time.
func TestStepSample(t *testing.T) {
	db := openTestDB(t)
	var ids []string
	for i := range 100 {
		ids = append(ids, fmt.Sprintf("d%03d", i))
	}
	putDocs(t, db, "c", false, ids...)
	for _, tc := range []struct {
		n     int
		first []string // the ids it starts with
		count int
	}{
		{10, []string{"d000", "d010", "d020", "d030", "d040", "d050", "d060", "d070", "d080", "d090"}, 10},
		{1, []string{"d000"}, 1}, // a step of 100
		{200, ids, 100},          // more asked than stored: every one
	} {
		got, err := db.StepSample("c", tc.n)
		if err != nil || len(got) != tc.count || !slices.Equal(got[:len(tc.first)], tc.first) {
			t.Errorf("StepSample(%d) = %q, %v", tc.n, got, err)
		}
		if again, _ := db.StepSample("c", tc.n); !slices.Equal(again, got) {
			t.Errorf("StepSample(%d) not deterministic", tc.n)
		}
	}
	// Chunked documents give their chunks.
	var puts []Put
	for i := range 30 {
		id := fmt.Sprintf("k%02d", i)
		r := &Record{Text: "abcdef", Chunks: []Chunk{{S: 0, E: 2}, {S: 2, E: 4}, {S: 4, E: 6}}}
		puts = append(puts, Put{ID: id, Record: r, Units: r.UnitIDs(id)})
	}
	if _, err := db.Write("k", puts, 30, 90); err != nil {
		t.Fatal(err)
	}
	if got, err := db.StepSample("k", 5); err != nil || len(got) != 15 || got[0] != "k00\x000" || got[3] != "k06\x000" || got[14] != "k24\x002" {
		t.Errorf("StepSample of chunked documents: %q, %v", got, err)
	}
	if got, err := db.StepSample("missing", 5); err != nil || got != nil {
		t.Errorf("missing collection: %q, %v", got, err)
	}
}

// TestStepSampleBounds holds StepSample to what it documents: "up to n documents", "at most
// 4n ids". The step is rounded down (30 documents, n 4: a step of 7, 5 documents taken)
// and the 4n bound is checked before a document's units are added (n 2, documents of 5
// chunks: 10 ids).
func TestStepSampleBounds(t *testing.T) {
	db := openTestDB(t)
	var ids []string
	for i := range 30 {
		ids = append(ids, fmt.Sprintf("d%02d", i))
	}
	putDocs(t, db, "c", false, ids...)
	if got, _ := db.StepSample("c", 4); len(got) > 4 {
		t.Errorf("StepSample(4) of 30 documents: %d documents %q", len(got), got)
	}
	r := &Record{Text: "abcde", Chunks: []Chunk{{S: 0, E: 1}, {S: 1, E: 2}, {S: 2, E: 3}, {S: 3, E: 4}, {S: 4, E: 5}}}
	var puts []Put
	for _, id := range []string{"a", "b", "c"} {
		puts = append(puts, Put{ID: id, Record: r, Units: r.UnitIDs(id)})
	}
	if _, err := db.Write("k", puts, 3, 15); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.StepSample("k", 2); len(got) > 8 {
		t.Errorf("StepSample(2) of 5-chunk documents: %d ids", len(got))
	}
}

// TestTally: a full read of a healthy collection counts its documents, units and vectors;
// every kind of damage is counted, the first three described without ErrCorrupt's own
// words, the first ten keys listed; values of older layouts are counted as unbound.
func TestTally(t *testing.T) {
	db := openTestDB(t)
	var puts []Put
	for i := range 20 {
		id := fmt.Sprintf("d%02d", i)
		puts = append(puts, Put{ID: id, Record: &Record{Text: "t"}, Units: []string{id}, Vecs: [][]float32{{float32(i), 0}}})
	}
	r := &Record{Text: "abcd", Chunks: []Chunk{{S: 0, E: 2}, {S: 2, E: 4}}}
	puts = append(puts, Put{ID: "k", Record: r, Units: r.UnitIDs("k"), Vecs: [][]float32{{1, 1}, {2, 2}}})
	if _, err := db.Write("c", puts, 21, 22); err != nil {
		t.Fatal(err)
	}
	for _, dim := range []int{0, 2} {
		tl, err := db.Tally("c", dim)
		if err != nil || tl.Docs != 21 || tl.Units != 22 || tl.Vectors != 22 || tl.Damaged != 0 || tl.Unbound != 0 || tl.Problems != nil || tl.Keys != nil {
			t.Fatalf("healthy, dim %d: %+v, %v", dim, tl, err)
		}
	}
	if tl, err := db.Tally("c", 3); err != nil || tl.Damaged != 22 || len(tl.Problems) != 3 || len(tl.Keys) != 10 {
		t.Fatalf("every vector of another length: %+v, %v", tl, err)
	} else if !strings.Contains(tl.Problems[0], "2 values, want 3") {
		t.Fatalf("problem %q", tl.Problems[0])
	}
	docs := [][]byte{bkCols, []byte("c"), bkDocs}
	vecs := [][]byte{bkCols, []byte("c"), bkVecs}
	js := []byte(`{"x":"t"}`)
	setValue(t, db, docs, []byte("d00"), []byte{recordMagic, 9, 9, 9, 9, '{', '}'}) // damaged
	setValue(t, db, docs, []byte("d01"), js)                                        // before checksums: unbound
	setValue(t, db, vecs, []byte("d02"), nil)                                       // a missing vector
	setValue(t, db, vecs, []byte("d03"), []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0})      // legacy: unbound
	setValue(t, db, vecs, []byte("d04"), EncodeVector("d05", []float32{4, 0}))      // under another key
	tl, err := db.Tally("c", 2)
	if err != nil {
		t.Fatal(err)
	}
	if tl.Docs != 21 || tl.Units != 21 || tl.Vectors != 21 || tl.Damaged != 3 || tl.Unbound != 2 {
		t.Fatalf("tally %+v", tl)
	}
	if !slices.Equal(tl.Keys, []string{"d00", "d02", "d04"}) {
		t.Fatalf("keys %q", tl.Keys)
	}
	for _, p := range tl.Problems {
		if strings.HasPrefix(p, ErrCorrupt.Error()) || strings.Contains(p, "\n") {
			t.Errorf("problem %q keeps ErrCorrupt's words", p)
		}
	}
	if !strings.Contains(tl.Problems[0], `document "d00"`) || !strings.Contains(tl.Problems[1], `index id "d02" has no vector`) || !strings.Contains(tl.Problems[2], `"d04"`) {
		t.Fatalf("problems %q", tl.Problems)
	}
	// Without a dimension, vectors are counted, not read.
	if tl, err := db.Tally("c", 0); err != nil || tl.Damaged != 1 || tl.Vectors != 21 {
		t.Fatalf("dim 0: %+v, %v", tl, err)
	}
	if tl, err := db.Tally("missing", 2); err != nil || tl.Docs != 0 || tl.Damaged != 0 {
		t.Fatalf("missing collection: %+v, %v", tl, err)
	}
}

func TestTrimCorrupt(t *testing.T) {
	in := []string{ErrCorrupt.Error() + ": document \"a\": x", "plain", ErrCorrupt.Error()}
	got := trimCorrupt(in)
	if want := []string{`document "a": x`, "plain", ErrCorrupt.Error()}; !slices.Equal(got, want) {
		t.Fatalf("trimCorrupt = %q, want %q", got, want)
	}
	if trimCorrupt(nil) != nil {
		t.Fatal("trimCorrupt(nil) is not nil")
	}
}

// TestRecount: Recount counts a collection from its records, persists the count (not on a
// read-only store) and reports it through Recounted with its reason.
func TestRecount(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	putDocs(t, db, "c", false, "a", "b")
	if err := db.update(func(tx *bolt.Tx) error {
		b, _ := colBucket(tx, "c", false)
		return putCounts(b, 40, 50) // wrong, with a valid checksum
	}); err != nil {
		t.Fatal(err)
	}
	c, _ := db.LoadCollection("c")
	if c.Docs != 40 {
		t.Fatalf("checked counters not taken: %+v", c)
	}
	if _, ok := db.Recounted("c"); ok {
		t.Fatal("Recounted before a recount")
	}
	if err := db.Recount(c, "a derived index disagreed"); err != nil {
		t.Fatal(err)
	}
	if c.Docs != 2 || c.Units != 2 {
		t.Fatalf("recounted: %+v", c)
	}
	if r, ok := db.Recounted("c"); !ok || r != (Recount{Reason: "a derived index disagreed", Docs: 2, Units: 2, Persisted: true}) {
		t.Fatalf("Recounted: %+v, %v", r, ok)
	}
	db.Close()
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	c, _ = ro.LoadCollection("c")
	if c.Docs != 2 {
		t.Fatalf("the recount was not persisted: %+v", c)
	}
	c.Docs = 99
	if err := ro.Recount(c, "why not"); err != nil || c.Docs != 2 {
		t.Fatalf("read-only recount: %+v, %v", c, err)
	}
	if r, _ := ro.Recounted("c"); r.Persisted {
		t.Fatalf("read-only recount says persisted: %+v", r)
	}
	if err := ro.Recount(&Collection{Name: "missing", Docs: 3}, "x"); err != nil {
		t.Fatalf("Recount of a missing collection: %v", err)
	}
}

// TestConsistency: a healthy store has no findings; a damaged freelist is one (found
// before bbolt's check would read it on a goroutine where it could not be recovered).
func TestConsistency(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	putDocs(t, db, "c", true, "a", "b", "c")
	if _, err := db.Delete("c", []string{"b"}); err != nil {
		t.Fatal(err)
	}
	if found, err := db.Consistency(10); err != nil || found != nil {
		t.Fatalf("healthy: %q, %v", found, err)
	}
	db.Close()
	// Damage the current freelist page's flags.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := currentMeta(f, fileSize(t, path))
	if !ok || m.freelist == ^uint64(0) {
		t.Fatalf("no freelist page: %+v", m)
	}
	var flags [2]byte
	binary.LittleEndian.PutUint16(flags[:], 0x02) // a leaf page's
	if _, err := f.WriteAt(flags[:], int64(m.freelist)*int64(m.pageSize)+8); err != nil {
		t.Fatal(err)
	}
	f.Close()
	db, err = Open(path, Options{NoSync: true, ReadOnly: true}) // read-only: bbolt does not load the freelist
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	found, err := db.Consistency(10)
	if err != nil || len(found) != 1 || !strings.HasPrefix(found[0], "the freelist is damaged: ") {
		t.Fatalf("a damaged freelist: %q, %v", found, err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
