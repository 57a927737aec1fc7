package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestCountSum: the counters' checksum is the CRC-32C of the two values one after the
// other, so it changes with either and with their order.
func TestCountSum(t *testing.T) {
	d, u := u64b(3), u64b(5)
	want := crc32.Checksum(append(append([]byte(nil), d...), u...), castagnoli)
	if got := countSum(d, u); got != want {
		t.Fatalf("countSum = %08x, want %08x", got, want)
	}
	if countSum(u, d) == countSum(d, u) {
		t.Fatal("the checksum does not depend on the order")
	}
	for i := range 16 {
		for bit := range 8 {
			dd, uu := u64b(3), u64b(5)
			if i < 8 {
				dd[i] ^= 1 << bit
			} else {
				uu[i-8] ^= 1 << bit
			}
			if countSum(dd, uu) == want {
				t.Fatalf("byte %d bit %d flipped: same checksum", i, bit)
			}
		}
	}
}

// TestPutCountsLayout: putCounts stores the two counters as 8-byte big-endian numbers and
// their checksum as 4 bytes, which counts reads back as trusted.
func TestPutCountsLayout(t *testing.T) {
	db := openTestDB(t)
	if err := db.update(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, "c", true)
		if err != nil {
			return err
		}
		for _, tc := range [][2]int{{0, 0}, {1, 1}, {12, 345}, {1 << 40, 1<<40 + 7}} {
			if err := putCounts(b, tc[0], tc[1]); err != nil {
				return err
			}
			info := b.Bucket(bkInfo)
			d, u, s := info.Get(keyDocN), info.Get(keyUnitN), info.Get(keyCountSum)
			if binary.BigEndian.Uint64(d) != uint64(tc[0]) || binary.BigEndian.Uint64(u) != uint64(tc[1]) || len(s) != 4 || binary.BigEndian.Uint32(s) != countSum(d, u) {
				return fmt.Errorf("%v stored as %x %x %x", tc, d, u, s)
			}
			if docs, units, st := counts(b); docs != tc[0] || units != tc[1] || st != countsOK {
				return fmt.Errorf("%v read back as %d, %d, %v", tc, docs, units, st)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestRecountRecords: recount counts documents and units (a chunked document's chunks) in
// every record layout, compressed ones without unpacking; a record that cannot be read,
// or whose chunks are not a list, is ErrCorrupt.
func TestRecountRecords(t *testing.T) {
	db := openTestDB(t)
	recs := make([]*Record, 40)
	for i := range recs {
		recs[i] = zRecord(i)
	}
	_, d := dictDB(t, recs)
	chunked := &Record{Text: "abcdef", Chunks: []Chunk{{S: 0, E: 2}, {S: 2, E: 4}, {S: 4, E: 6}}}
	js := []byte(`{"x":"legacy","c":[{"s":0,"e":1},{"s":1,"e":6}]}`)
	v1 := append([]byte{recordMagicV1, 0, 0, 0, 0}, `{"x":"v1"}`...)
	binary.BigEndian.PutUint32(v1[1:], crc32.Checksum(v1[5:], castagnoli))
	values := map[string][]byte{
		"bound":   must(EncodeRecord("bound", &Record{Text: "t"})),
		"chunked": must(EncodeRecord("chunked", chunked)),
		"legacy":  js,
		"v1":      v1,
		"zplain":  must(encodeRecordZ("zplain", zRecord(1), d)),
		"zchunks": must(encodeRecordZ("zchunks", zRecord(7), d)), // zRecord(7) has 2 chunks
	}
	if values["zchunks"][0] != recordMagicZ || values["zplain"][0] != recordMagicZ {
		t.Fatal("not packed")
	}
	count := func() (int, int, error) {
		var docs, units int
		err := db.view(func(tx *bolt.Tx) error {
			b, _ := colBucket(tx, "c", false)
			var err error
			docs, units, err = recount(b)
			return err
		})
		return docs, units, err
	}
	if err := db.CreateCollection("c", 0, nil); err != nil {
		t.Fatal(err)
	}
	if docs, units, err := count(); docs != 0 || units != 0 || err != nil {
		t.Fatalf("empty: %d, %d, %v", docs, units, err)
	}
	for k, v := range values {
		setValue(t, db, [][]byte{bkCols, []byte("c"), bkDocs}, []byte(k), v)
	}
	if docs, units, err := count(); docs != 6 || units != 1+3+2+1+1+2 || err != nil {
		t.Fatalf("recount = %d, %d, %v; want 6, 10", docs, units, err)
	}
	for name, v := range map[string][]byte{
		"damaged":           {recordMagic, 1, 2, 3, 4, '{', '}'},
		"chunks not a list": boundRecord("bad", []byte(`{"x":"a","c":{"s":1}}`)),
		"not JSON":          boundRecord("bad", []byte(`{"x":`)),
	} {
		setValue(t, db, [][]byte{bkCols, []byte("c"), bkDocs}, []byte("bad"), v)
		if _, _, err := count(); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "counting its documents") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestNoteRecount: the last recount of a collection is kept; one without a reason keeps
// the reason of the one before; collections are kept apart.
func TestNoteRecount(t *testing.T) {
	db := openTestDB(t)
	db.noteRecount("a", Recount{Reason: "first", Docs: 1, Units: 1, Persisted: true})
	db.noteRecount("a", Recount{Docs: 2, Units: 3})
	db.noteRecount("b", Recount{Reason: "other", Docs: 9})
	if r, ok := db.Recounted("a"); !ok || r != (Recount{Reason: "first", Docs: 2, Units: 3}) {
		t.Fatalf("a: %+v, %v", r, ok)
	}
	db.noteRecount("a", Recount{Reason: "second", Docs: 4})
	if r, _ := db.Recounted("a"); r.Reason != "second" || r.Docs != 4 {
		t.Fatalf("a after a second reason: %+v", r)
	}
	if r, ok := db.Recounted("b"); !ok || r.Reason != "other" {
		t.Fatalf("b: %+v, %v", r, ok)
	}
	if _, ok := db.Recounted("c"); ok {
		t.Fatal("c was never counted again")
	}
}

// countIndex is an Index that holds n ids (or fails to count).
type countIndex struct {
	n   int
	err error
}

func (c countIndex) Seq() uint64                                           { return 0 }
func (c countIndex) Apply(context.Context, []Unit, []string, uint64) error { return nil }
func (c countIndex) Count() (int, error)                                   { return c.n, c.err }
func (c countIndex) Close() error                                          { return nil }

// TestRecountIfDisagrees: counters that agree with an index, or an index that cannot count,
// change nothing; counters that disagree are counted again from the records: changed when
// the count differs (persisted unless read-only, noted with the numbers), not when the
// counters were right (the index is what is wrong).
func TestRecountIfDisagrees(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	putDocs(t, db, "c", false, "a", "b", "c")
	c, _ := db.LoadCollection("c")
	for _, ix := range []Index{countIndex{n: 3}, countIndex{err: errors.New("cannot count")}, countIndex{n: 5}} {
		changed, err := db.RecountIfDisagrees(c, ix)
		if changed || err != nil || c.Docs != 3 || c.Units != 3 {
			t.Fatalf("%+v: %v, %v, %+v", ix, changed, err, c)
		}
		if _, ok := db.Recounted("c"); ok {
			t.Fatalf("%+v: noted a recount that changed nothing", ix)
		}
	}
	// Counters that are wrong (but pass their checksum, as a bug would write them).
	if err := db.update(func(tx *bolt.Tx) error {
		b, _ := colBucket(tx, "c", false)
		return putCounts(b, 7, 8)
	}); err != nil {
		t.Fatal(err)
	}
	c, _ = db.LoadCollection("c")
	changed, err := db.RecountIfDisagrees(c, countIndex{n: 3})
	if !changed || err != nil || c.Docs != 3 || c.Units != 3 {
		t.Fatalf("wrong counters: %v, %v, %+v", changed, err, c)
	}
	r, ok := db.Recounted("c")
	if !ok || !r.Persisted || r.Docs != 3 || !strings.Contains(r.Reason, "counters said 7 documents and 8 index ids, a derived index holds 3") {
		t.Fatalf("Recounted: %+v, %v", r, ok)
	}
	if again, _ := db.LoadCollection("c"); again.Docs != 3 || again.Units != 3 {
		t.Fatalf("not persisted: %+v", again)
	}
	// Read-only: counted for this process only.
	if err := db.update(func(tx *bolt.Tx) error {
		b, _ := colBucket(tx, "c", false)
		return putCounts(b, 7, 8)
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	c, _ = ro.LoadCollection("c")
	if changed, err := ro.RecountIfDisagrees(c, countIndex{n: 3}); !changed || err != nil || c.Units != 3 {
		t.Fatalf("read-only: %v, %v, %+v", changed, err, c)
	}
	if r, _ := ro.Recounted("c"); r.Persisted {
		t.Fatalf("read-only recount persisted: %+v", r)
	}
	if again, _ := ro.LoadCollection("c"); again.Docs != 7 {
		t.Fatalf("a read-only store wrote its count: %+v", again)
	}
}

// TestRecountIfDisagreesDamaged: when the records cannot be counted, RecountIfDisagrees is
// their ErrCorrupt and the collection's counters are left as they were.
func TestRecountIfDisagreesDamaged(t *testing.T) {
	db := openTestDB(t)
	putDocs(t, db, "c", false, "a", "b")
	setValue(t, db, [][]byte{bkCols, []byte("c"), bkDocs}, []byte("b"), []byte("\x02bad"))
	c, _ := db.LoadCollection("c")
	changed, err := db.RecountIfDisagrees(c, countIndex{n: 1})
	if changed || !errors.Is(err, ErrCorrupt) || c.Docs != 2 || c.Units != 2 {
		t.Fatalf("%v, %v, %+v", changed, err, c)
	}
}

// TestOpenIndexRecountsFirst: an index whose count disagrees with counters that are wrong
// is kept (the counters are counted again), not rebuilt.
func TestOpenIndexRecountsFirst(t *testing.T) {
	db := openTestDB(t)
	c, _ := db.LoadCollection("c")
	k := newFakeKind(t)
	if err := db.OpenIndexes(c, []Kind{k.kind()}); err != nil {
		t.Fatal(err)
	}
	write(t, db, c, map[string]string{"a": "alpha", "b": "beta"})
	c.CloseIndexes()
	if err := db.update(func(tx *bolt.Tx) error {
		b, _ := colBucket(tx, "c", false)
		return putCounts(b, 2, 5)
	}); err != nil {
		t.Fatal(err)
	}
	c, _ = db.LoadCollection("c")
	held := k.held
	applied := held.applied
	if err := db.OpenIndexes(c, []Kind{k.kind()}); err != nil {
		t.Fatal(err)
	}
	if c.Indexes[0] != held || held.applied != applied || c.Units != 2 {
		t.Fatalf("index rebuilt (%v) or counters not fixed: %+v", c.Indexes[0] != held, c)
	}
	if r, ok := db.Recounted("c"); !ok || r.Units != 2 {
		t.Fatalf("Recounted: %+v, %v", r, ok)
	}
}
