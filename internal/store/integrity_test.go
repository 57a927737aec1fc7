package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// missStore makes a store of n documents "k000000", "k000002", ... (even numbers: an odd
// one sorts between two stored ids) of about size bytes of text each, in collection "c".
func missStore(t testing.TB, n, size int) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "store.db"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	text := strings.Repeat("x", size)
	for lo := 0; lo < n; lo += 5000 {
		var puts []Put
		for i := lo; i < min(lo+5000, n); i++ {
			id := fmt.Sprintf("k%06d", 2*i)
			puts = append(puts, Put{ID: id, Record: &Record{Text: text}, Units: []string{id}})
		}
		if _, err := db.Write("c", puts, len(puts), len(puts)); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// misplaceRecord moves the record of id from to key to in collection c, as a flipped bit in
// its key leaves it (its checksum is bound to from).
func misplaceRecord(t *testing.T, db *DB, from, to string) {
	t.Helper()
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		docs := tx.Bucket(bkCols).Bucket([]byte("c")).Bucket(bkDocs)
		v := append([]byte(nil), docs.Get([]byte(from))...)
		return errors.Join(docs.Delete([]byte(from)), docs.Put([]byte(to), v))
	}); err != nil {
		t.Fatal(err)
	}
}

// TestMissChecksNeighbourhood: a lookup that misses reads the leaf around where the key
// would be: an honest miss is (nil, nil), a miss beside a record stored under a damaged key
// (the record of k000100 put under k000101, as a flipped bit leaves it) is ErrCorrupt
// naming the collection, from every read of a record.
func TestMissChecksNeighbourhood(t *testing.T) {
	db := missStore(t, 2000, 100)
	if r, _, err := db.Document("c", "k000099"); r != nil || err != nil {
		t.Fatalf("an honest miss: %v, %v", r, err)
	}
	misplaceRecord(t, db, "k000100", "k000101")
	for _, id := range []string{"k000100", "k000101", "k000097"} {
		_, _, err := db.Document("c", id)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `collection "c"`) {
			t.Errorf("Document(%q) beside a damaged key: %v", id, err)
		}
		err = db.View(func(tx *Tx) error {
			if _, err := tx.Record("c", id); !errors.Is(err, ErrCorrupt) {
				return fmt.Errorf("Record: %v", err)
			}
			if _, err := tx.RecordMeta("c", id); !errors.Is(err, ErrCorrupt) {
				return fmt.Errorf("RecordMeta: %v", err)
			}
			return nil
		})
		if err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
	// Far from the damage, a miss is honest.
	if r, _, err := db.Document("c", "k003001"); r != nil || err != nil {
		t.Fatalf("a miss far from the damage: %v, %v", r, err)
	}
}

// TestMissCheckReusesBuffers: the page check of a miss parses the pages a lookup descends
// through into buffers the checks share, not fresh ones: a bulk load checks a miss for
// every new id, and at 18M documents fresh buffers were much of its garbage. Parsing into
// fresh buffers, a miss here allocated about 69 KB (the elements of the pages it read);
// now about 2 KB of small values.
func TestMissCheckReusesBuffers(t *testing.T) {
	db := missStore(t, 100_000, 180)
	miss := func(i int) {
		if r, _, err := db.Document("c", fmt.Sprintf("k%06d", 2*i+1)); r != nil || err != nil {
			t.Fatal(r, err)
		}
	}
	miss(0)
	const n = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		miss(i * 397)
	}
	runtime.ReadMemStats(&after)
	per := (after.TotalAlloc - before.TotalAlloc) / n
	t.Logf("a miss allocated %d bytes on average", per)
	limit := uint64(8 << 10)
	if raceBuild {
		limit = 32 << 10 // the race detector's sync.Pool drops a share of the buffers
	}
	if per > limit {
		t.Fatalf("a miss allocated %d bytes on average; want at most %d (the pages' elements parsed into fresh buffers?)", per, limit)
	}
}

// BenchmarkMiss measures Document of a stored id and of one that is not, in a store of
// 100,000 records of about 200 bytes (some 15 to a leaf page).
func BenchmarkMiss(b *testing.B) {
	db := missStore(b, 100_000, 180)
	b.Run("hit", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if r, _, err := db.Document("c", fmt.Sprintf("k%06d", 2*(i%100_000))); r == nil || err != nil {
				b.Fatal(r, err)
			}
		}
	})
	b.Run("miss", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if r, _, err := db.Document("c", fmt.Sprintf("k%06d", 2*(i%100_000)+1)); r != nil || err != nil {
				b.Fatal(r, err)
			}
		}
	})
}

// TestMissPastDamagedBranch: a flipped byte in a branch page's key (k000xxx sorting after
// its right neighbour) sends a lookup of the ids under it to the leaf before, where they
// are not: the lookup is ErrCorrupt (the cursor finds, after the key, a smaller one), not a
// silent "not stored" (the tamper suite's store.db flip-seed3 found it).
func TestMissPastDamagedBranch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	var puts []Put
	for i := range 2000 {
		id := fmt.Sprintf("k%06d", 2*i)
		puts = append(puts, Put{ID: id, Record: &Record{Text: strings.Repeat(id+" text ", 20)}, Units: []string{id}})
	}
	if _, err := db.Write("c", puts, len(puts), len(puts)); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const ps = 4096
	le := binary.LittleEndian
	victim := ""
	for p := 2 * ps; p+ps <= len(raw) && victim == ""; p += ps {
		if le.Uint16(raw[p+8:]) != 0x01 || le.Uint16(raw[p+10:]) < 3 { // a branch page of 3 keys or more
			continue
		}
		e := p + 16 + 16 // its second element
		k := e + int(le.Uint32(raw[e:]))
		if raw[k] != 'k' {
			continue // not the docs bucket's
		}
		victim = string(raw[k : k+7])
		raw[k+1] = '9' // k000200 -> k900200: past every key after it
	}
	if victim == "" {
		t.Fatal("no branch page in the docs bucket")
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err = Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	fmt.Sscanf(victim, "k%d", &n)
	for _, id := range []string{victim, fmt.Sprintf("k%06d", n+2), fmt.Sprintf("k%06d", n+3)} {
		if r, _, err := db.Document("c", id); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Document(%q) under a damaged branch key: %v, %v; want ErrCorrupt", id, r, err)
		}
	}
}

// TestCheckMissEdges: no bucket, or an empty one (the vectors of a store without an
// embedder), is an honest miss without reading anything.
func TestCheckMissEdges(t *testing.T) {
	db := openTestDB(t)
	if err := db.CreateCollection("c", 0, nil); err != nil {
		t.Fatal(err)
	}
	called := false
	verify := func(k, v []byte) error { called = true; return errors.New("x") }
	if err := db.view(func(tx *bolt.Tx) error {
		b, _ := colBucket(tx, "c", false)
		if err := checkMiss(nil, []byte("k"), "document", verify); err != nil {
			return err
		}
		return checkMiss(b.Bucket(bkVecs), []byte("k"), "document", verify)
	}); err != nil || called {
		t.Fatalf("checkMiss of nothing: %v (verify called: %v)", err, called)
	}
	for _, f := range []func() ([]byte, error){
		func() ([]byte, error) { return lookupRecord(nil, "x") },
		func() ([]byte, error) { return lookupVector(nil, "x") },
	} {
		if v, err := f(); v != nil || err != nil {
			t.Fatalf("lookup in no bucket: %v, %v", v, err)
		}
	}
	if inCollection("c", nil) != nil {
		t.Fatal("inCollection(nil) is not nil")
	}
	if err := inCollection("c", ErrCorrupt); !errors.Is(err, ErrCorrupt) || err.Error() != `collection "c": `+ErrCorrupt.Error() {
		t.Fatalf("inCollection: %v", err)
	}
}

// TestVectorMissChecksNeighbourhood: a vector lookup that misses beside a vector stored
// under a damaged key is ErrCorrupt (Vector, Document, StoredVectors), far from it an
// honest miss.
func TestVectorMissChecksNeighbourhood(t *testing.T) {
	db := openTestDB(t)
	var puts []Put
	for i := range 400 {
		id := fmt.Sprintf("k%04d", 2*i)
		vec := make([]float32, 64) // some 57 to a page: k0100 and k0701 are pages apart
		vec[0] = float32(i)
		puts = append(puts, Put{ID: id, Record: &Record{Text: "t"}, Units: []string{id}, Vecs: [][]float32{vec}})
	}
	if _, err := db.Write("c", puts, 400, 400); err != nil {
		t.Fatal(err)
	}
	if v, err := db.Vector("c", "k0101"); v != nil || err != nil {
		t.Fatalf("an honest miss: %v, %v", v, err)
	}
	vecs := [][]byte{bkCols, []byte("c"), bkVecs}
	var moved []byte
	db.view(func(tx *bolt.Tx) error {
		b, _ := colBucket(tx, "c", false)
		moved = append([]byte(nil), b.Bucket(bkVecs).Get([]byte("k0100"))...)
		return nil
	})
	setValue(t, db, vecs, []byte("k0100"), nil)
	setValue(t, db, vecs, []byte("k0101"), moved) // k0100's vector under a flipped key
	for _, id := range []string{"k0100", "k0099"} {
		if _, err := db.Vector("c", id); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "the vector of index id") {
			t.Errorf("Vector(%s) beside a damaged key: %v", id, err)
		}
		if _, _, err := db.StoredVectors("c", []string{id}, 64); !errors.Is(err, ErrCorrupt) {
			t.Errorf("StoredVectors(%s) beside a damaged key: %v", id, err)
		}
		if err := db.FillVectors("c", []string{id}, [][]float32{make([]float32, 64)}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("FillVectors(%s) beside a damaged key: %v", id, err)
		}
	}
	if _, _, err := db.Document("c", "k0100"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Document(k0100) whose vector is under a damaged key: %v", err)
	}
	if v, err := db.Vector("c", "k0701"); v != nil || err != nil {
		t.Fatalf("a miss far from the damage: %v, %v", v, err)
	}
}

// TestVerifyElems: an element of a docs or vecs bucket that is a nested bucket (damaged
// flags) or fails its checksum is an error; a whole one is not.
func TestVerifyElems(t *testing.T) {
	rec := must(EncodeRecord("k", &Record{Text: "x"}))
	vec := EncodeVector("k", []float32{1})
	for _, tc := range []struct {
		name string
		err  error
		bad  bool
	}{
		{"record", verifyRecordElem([]byte("k"), rec), false},
		{"record under another key", verifyRecordElem([]byte("j"), rec), true},
		{"nested bucket in docs", verifyRecordElem([]byte("k"), nil), true},
		{"vector", verifyVectorElem([]byte("k"), vec), false},
		{"vector under another key", verifyVectorElem([]byte("j"), vec), true},
		{"int8 vector", verifyVectorElem([]byte("k"), must(EncodeVectorInt8("k", []float32{1, -0.5}))), false},
		{"int8 vector under another key", verifyVectorElem([]byte("j"), must(EncodeVectorInt8("k", []float32{1}))), true},
		{"int8 vector, a flipped value", verifyVectorElem([]byte("k"), func() []byte {
			b := must(EncodeVectorInt8("k", []float32{1, -0.5}))
			b[13] ^= 4
			return b
		}()), true},
		{"nested bucket in vecs", verifyVectorElem([]byte("k"), nil), true},
	} {
		if (tc.err != nil) != tc.bad {
			t.Errorf("%s: %v", tc.name, tc.err)
		}
	}
	if err := verifyRecordElem([]byte("k"), nil); !errors.Is(err, errNested) {
		t.Errorf("nested: %v", err)
	}
	if err := verifyRecordElem([]byte("j"), rec); !errors.Is(err, ErrCorrupt) {
		t.Errorf("another key: %v", err)
	}
}

// TestMissBesideNestedBucket: a docs bucket element turned into a bucket (its flags
// damaged) beside a missed id makes the miss ErrCorrupt.
func TestMissBesideNestedBucket(t *testing.T) {
	db := openTestDB(t)
	putDocs(t, db, "c", false, "a", "c", "e")
	if err := db.update(func(tx *bolt.Tx) error {
		b, _ := colBucket(tx, "c", false)
		docs := b.Bucket(bkDocs)
		if err := docs.Delete([]byte("c")); err != nil {
			return err
		}
		_, err := docs.CreateBucket([]byte("c"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Document("c", "b"); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), errNested.Error()) {
		t.Fatalf("a miss beside a nested bucket: %v", err)
	}
}

// TestMissGap: in one read-only transaction, RecordMeta of an id that sorts between the
// same two stored ids as the last honest miss is a miss without a second check of the
// neighbourhood (the pages cannot change under the transaction); an id elsewhere is
// checked; damage beside a gap is reported for every id there, the first and the next
// (a failed check leaves no gap behind); a new transaction checks again.
func TestMissGap(t *testing.T) {
	db := missStore(t, 2000, 100) // k000000, k000002, ..., k003998
	checks := 0
	orig := checkDocsMiss
	checkDocsMiss = func(docs *bolt.Bucket, key []byte) error {
		checks++
		return orig(docs, key)
	}
	t.Cleanup(func() { checkDocsMiss = orig })
	steps := []struct {
		id     string
		checks int // the checks so far after it
	}{
		{"k000099", 1},  // a miss between k000098 and k000100: checked
		{"k000099a", 1}, // the same gap
		{"k0000985", 1}, // the same gap (k000098 < k0000985 < k000100)
		{"k000098", 1},  // stored: a hit
		{"k000101", 2},  // another gap
		{"k000099b", 3}, // the first gap again: not the last one
		{"k999999", 4},  // past the last id
		{"k9999990", 4}, // the same (end) gap
		{"a", 5},        // before the first id
		{"k", 5},        // the same (start) gap
	}
	if err := db.View(func(tx *Tx) error {
		for _, s := range steps {
			r, err := tx.RecordMeta("c", s.id)
			if err != nil || (r != nil) != (s.id == "k000098") {
				return fmt.Errorf("RecordMeta(%s) = %v, %v", s.id, r, err)
			}
			if checks != s.checks {
				return fmt.Errorf("after RecordMeta(%s): %d checks, want %d", s.id, checks, s.checks)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.View(func(tx *Tx) error {
		_, err := tx.RecordMeta("c", "k000099a")
		return err
	}); err != nil || checks != 6 {
		t.Fatalf("a new transaction: %v, %d checks (want 6)", err, checks)
	}
	// Damage beside k000100: every miss near it is ErrCorrupt, the second as the first.
	misplaceRecord(t, db, "k000100", "k000101")
	if err := db.View(func(tx *Tx) error {
		for _, id := range []string{"k000099", "k000099a", "k000097"} {
			if _, err := tx.RecordMeta("c", id); !errors.Is(err, ErrCorrupt) {
				return fmt.Errorf("RecordMeta(%s) beside damage: %v", id, err)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
