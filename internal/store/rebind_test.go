package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math"
	"reflect"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// legacyRecordV1 is record r of the layout before keys were bound: 0x01, the CRC-32C of the
// JSON alone, the JSON.
func legacyRecordV1(r *Record) []byte {
	js, _ := json.Marshal(r)
	v := append([]byte{recordMagicV1, 0, 0, 0, 0}, js...)
	binary.BigEndian.PutUint32(v[1:], crc32.Checksum(js, castagnoli))
	return v
}

// legacyVector is vector v of the layout before keys were bound (vecMagic, the CRC-32C of
// the values alone, the values); with plain, the values alone (before checksums).
func legacyVector(v []float32, plain bool) []byte {
	vals := make([]byte, 0, 4*len(v))
	for _, f := range v {
		vals = binary.LittleEndian.AppendUint32(vals, math.Float32bits(f))
	}
	if plain {
		return vals
	}
	out := binary.LittleEndian.AppendUint32(nil, vecMagic)
	out = binary.BigEndian.AppendUint32(out, crc32.Checksum(vals, castagnoli))
	return append(out, vals...)
}

// TestRebound: which stored values Rebind rewrites, and to what: records and vectors of the
// older layouts become the key-bound ones of the same content; values already bound
// (compressed records, float16 vectors included), damaged ones and nested buckets are left.
func TestRebound(t *testing.T) {
	r := &Record{Title: "T", Text: "text", Metadata: map[string]any{"k": "v"}}
	js, _ := json.Marshal(r)
	bound := must(EncodeRecord("id", r))
	badV1 := legacyRecordV1(r)
	badV1[len(badV1)-2] ^= 1
	recs := make([]*Record, 30)
	for i := range recs {
		recs[i] = zRecord(i)
	}
	_, d := dictDB(t, recs)
	for _, tc := range []struct {
		name string
		v    []byte
		want []byte
	}{
		{"bound", bound, nil},
		{"compressed", must(encodeRecordZ("id", zRecord(3), d)), nil},
		{"JSON alone", js, bound},
		{"v1", legacyRecordV1(r), bound},
		{"v1 damaged", badV1, nil},
		{"unknown layout", []byte{0x09, 1, 2, 3, 4, 5}, nil},
		{"empty", []byte{}, nil},
	} {
		if got := rebound(bkDocs, []byte("id"), tc.v); !bytes.Equal(got, tc.want) {
			t.Errorf("record %s: %q, want %q", tc.name, got, tc.want)
		}
	}
	vec := []float32{0.5, -1, 2}
	boundVec := EncodeVector("id", vec)
	badLegacy := legacyVector(vec, false)
	badLegacy[9] ^= 1
	for _, tc := range []struct {
		name string
		v    []byte
		want []byte
	}{
		{"bound", boundVec, nil},
		{"float16", must(EncodeVectorHalf("id", vec)), nil},
		{"nested bucket", nil, nil},
		{"vecMagic", legacyVector(vec, false), boundVec},
		{"values alone", legacyVector(vec, true), boundVec},
		{"vecMagic damaged", badLegacy, nil},
		{"odd length", []byte{1, 2, 3, 4, 5}, nil},
	} {
		if got := rebound(bkVecs, []byte("id"), tc.v); !bytes.Equal(got, tc.want) {
			t.Errorf("vector %s: %x, want %x", tc.name, got, tc.want)
		}
	}
}

// TestRebind rewrites a collection's values of older layouts in the key-bound ones: the
// contents read the same, Tally finds none unbound, the change log and counters do not
// move, a damaged value is left as it was, and a second Rebind has nothing to do.
func TestRebind(t *testing.T) {
	db := openTestDB(t)
	var puts []Put
	for i := range 10 {
		id := fmt.Sprintf("d%d", i)
		puts = append(puts, Put{ID: id, Record: &Record{Title: "t" + id, Text: "text " + id, Metadata: map[string]any{"i": float64(i)}}, Units: []string{id}, Vecs: [][]float32{{float32(i), 1}}})
	}
	if _, err := db.Write("c", puts, 10, 10); err != nil {
		t.Fatal(err)
	}
	putDocs(t, db, "other", true, "d0")
	docs, vecs := [][]byte{bkCols, []byte("c"), bkDocs}, [][]byte{bkCols, []byte("c"), bkVecs}
	js, _ := json.Marshal(puts[0].Record)
	setValue(t, db, docs, []byte("d0"), js)
	setValue(t, db, docs, []byte("d1"), legacyRecordV1(puts[1].Record))
	damaged := legacyRecordV1(puts[2].Record)
	damaged[6] ^= 0x20
	setValue(t, db, docs, []byte("d2"), damaged)
	setValue(t, db, vecs, []byte("d3"), legacyVector(puts[3].Vecs[0], false))
	setValue(t, db, vecs, []byte("d4"), legacyVector(puts[4].Vecs[0], true))
	setValue(t, db, [][]byte{bkCols, []byte("other"), bkDocs}, []byte("d0"), js)
	before, _ := db.LoadCollection("c")
	beforeLog := changeLog(t, db, "c")
	if tl, _ := db.Tally("c", 2); tl.Unbound != 5 || tl.Damaged != 1 {
		t.Fatalf("before: %+v", tl)
	}
	n, err := db.Rebind("c")
	if err != nil || n != 4 {
		t.Fatalf("Rebind = %d, %v; want 4", n, err)
	}
	tl, err := db.Tally("c", 2)
	if err != nil || tl.Unbound != 1 || tl.Damaged != 1 || !slices.Equal(tl.Keys, []string{"d2"}) {
		t.Fatalf("after: %+v, %v", tl, err)
	}
	if v := rawRecord(t, db, "d2"); !bytes.Equal(v, damaged) {
		t.Fatal("a damaged record was rewritten")
	}
	for i, p := range puts {
		if i == 2 {
			continue
		}
		r, v, err := db.Document("c", p.ID)
		if err != nil || !reflect.DeepEqual(r, p.Record) || !slices.Equal(v, p.Vecs[0]) {
			t.Errorf("%s after Rebind: %+v, %v, %v", p.ID, r, v, err)
		}
	}
	after, _ := db.LoadCollection("c")
	if after.LastSeq != before.LastSeq || after.Changes != before.Changes || after.Docs != before.Docs || !reflect.DeepEqual(changeLog(t, db, "c"), beforeLog) {
		t.Fatalf("Rebind changed the collection: %+v, was %+v", after, before)
	}
	if n, err := db.Rebind("c"); err != nil || n != 0 {
		t.Fatalf("second Rebind = %d, %v", n, err)
	}
	// Other collections are left alone.
	if tl, _ := db.Tally("other", 2); tl.Unbound != 1 {
		t.Fatalf("Rebind of c rewrote other: %+v", tl)
	}
	if n, err := db.Rebind("missing"); err != nil || n != 0 {
		t.Fatalf("Rebind of a missing collection = %d, %v", n, err)
	}
}

// TestRebindBatches: a collection with more values to rewrite than a transaction takes
// (rebindBatch), and more to scan than one scans (16 rebindBatch), is rewritten whole over
// several transactions, every value once.
func TestRebindBatches(t *testing.T) {
	db := openTestDB(t)
	const n = 16*rebindBatch + 2*rebindBatch + 10
	legacy := map[int]bool{}
	for i := range rebindBatch + 5 { // the first batch's worth and more, at the start
		legacy[i] = true
	}
	for _, i := range []int{16*rebindBatch - 1, 16 * rebindBatch, n - 2, n - 1} { // around the scan limit and at the end
		legacy[i] = true
	}
	if err := db.update(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, "c", true)
		if err != nil {
			return err
		}
		docs, vecs := b.Bucket(bkDocs), b.Bucket(bkVecs)
		docs.FillPercent, vecs.FillPercent = 1, 1
		for i := range n {
			id := fmt.Sprintf("d%06d", i)
			js := []byte(`{"x":"` + id + `"}`)
			v, vec := boundRecord(id, js), EncodeVector(id, []float32{float32(i)})
			if legacy[i] {
				v, vec = js, legacyVector([]float32{float32(i)}, false)
			}
			if err := docs.Put([]byte(id), v); err != nil {
				return err
			}
			if err := vecs.Put([]byte(id), vec); err != nil {
				return err
			}
		}
		return putCounts(b, n, n)
	}); err != nil {
		t.Fatal(err)
	}
	got, err := db.Rebind("c")
	if err != nil || got != 2*len(legacy) {
		t.Fatalf("Rebind = %d, %v; want %d", got, err, 2*len(legacy))
	}
	tl, err := db.Tally("c", 1)
	if err != nil || tl.Unbound != 0 || tl.Damaged != 0 || tl.Docs != n || tl.Vectors != n {
		t.Fatalf("after: %+v, %v", tl, err)
	}
	for i := range legacy {
		id := fmt.Sprintf("d%06d", i)
		r, v, err := db.Document("c", id)
		if err != nil || r == nil || r.Text != id || len(v) != 1 || v[0] != float32(i) {
			t.Fatalf("%s: %+v, %v, %v", id, r, v, err)
		}
	}
}
