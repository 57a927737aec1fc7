package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory/internal/vecmath"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// putDocs writes documents ids (text "text of <id>", with vector {i, 1} each when vecs) to
// collection col of db.
func putDocs(t *testing.T, db *DB, col string, vecs bool, ids ...string) Commit {
	t.Helper()
	var puts []Put
	for i, id := range ids {
		p := Put{ID: id, Record: &Record{Text: "text of " + id}, Units: []string{id}}
		if vecs {
			p.Vecs = [][]float32{{float32(i), 1}}
		}
		puts = append(puts, p)
	}
	w, err := db.Write(col, puts, len(puts), len(puts))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestOpenCreates: Open makes a store at a path where there is none, with PageSize pages,
// empty until something is written; it reopens with what was written.
func TestOpenCreates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no file: %v", err)
	}
	if !db.Empty() || db.ReadOnly() {
		t.Fatalf("a new store: Empty %v, ReadOnly %v", db.Empty(), db.ReadOnly())
	}
	if ps := db.bolt.Info().PageSize; ps != PageSize {
		t.Fatalf("page size %d, want %d", ps, PageSize)
	}
	if err := db.CreateCollection("c", 0, nil); err != nil {
		t.Fatal(err)
	}
	if db.Empty() {
		t.Fatal("a store with a collection is empty")
	}
	putDocs(t, db, "c", false, "a")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Empty() {
		t.Fatal("reopened: empty")
	}
	if r, _, err := db.Document("c", "a"); err != nil || r == nil || r.Text != "text of a" {
		t.Fatalf("reopened: %+v, %v", r, err)
	}
}

// TestOpenErrors: what Open cannot open is ErrCorrupt naming the file (a file that is not a
// store, a read-only open of a missing file); a lock held elsewhere is ErrLocked.
func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte(strings.Repeat("x", 64<<10)), 0o644); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.db")
	if err := os.WriteFile(short, []byte("tiny"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.db")
	for _, tc := range []struct {
		path string
		o    Options
	}{
		{garbage, Options{}},
		{garbage, Options{ReadOnly: true}},
		{short, Options{}},
		{missing, Options{ReadOnly: true}},
	} {
		db, err := Open(tc.path, tc.o)
		if err == nil {
			db.Close()
			t.Errorf("Open(%s, %+v) opened", filepath.Base(tc.path), tc.o)
			continue
		}
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("Open(%s, %+v) = %v, want ErrCorrupt naming the file", filepath.Base(tc.path), tc.o, err)
		}
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a read-only open made the file: %v", err)
	}
}

// TestOpenLocks: a writer excludes every other open; readers share the file with each
// other; a lock held past Timeout is ErrLocked naming the file.
func TestOpenLocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	w, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	putDocs(t, w, "c", false, "a")
	const wait = 30 * time.Millisecond
	for _, ro := range []bool{false, true} {
		db, err := Open(path, Options{ReadOnly: ro, Timeout: wait})
		if err == nil {
			db.Close()
			t.Fatalf("read-only %v: opened beside a writer", ro)
		}
		if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), path) || errors.Is(err, ErrCorrupt) {
			t.Fatalf("read-only %v: %v, want ErrLocked naming the file", ro, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r1, err := Open(path, Options{ReadOnly: true, Timeout: wait})
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	r2, err := Open(path, Options{ReadOnly: true, Timeout: wait})
	if err != nil {
		t.Fatalf("a second reader: %v", err)
	}
	defer r2.Close()
	if !r1.ReadOnly() || !r2.ReadOnly() {
		t.Fatal("ReadOnly() is false on a read-only store")
	}
	if _, err := Open(path, Options{Timeout: wait}); !errors.Is(err, ErrLocked) {
		t.Fatalf("a writer beside readers: %v, want ErrLocked", err)
	}
	for _, db := range []*DB{r1, r2} {
		if r, _, err := db.Document("c", "a"); err != nil || r == nil {
			t.Fatalf("reader: %+v, %v", r, err)
		}
	}
}

// TestReadOnlyWritesNothing: every write of a read-only store fails with bbolt's read-only
// error (not ErrCorrupt) and the file is unchanged; reads work.
func TestReadOnlyWritesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	putDocs(t, db, "c", true, "a", "b")
	db.Close()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	db, err = Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]func() error{
		"Write": func() error {
			_, err := db.Write("c", []Put{{ID: "x", Record: &Record{Text: "x"}, Units: []string{"x"}}}, 1, 1)
			return err
		},
		"Delete":           func() error { _, err := db.Delete("c", []string{"a"}); return err },
		"Replace":          func() error { _, _, err := db.Replace("c", nil, []string{"a"}, 0, 0); return err },
		"CreateCollection": func() error { return db.CreateCollection("d", 0, nil) },
		"DeleteCollection": func() error { return db.DeleteCollection("c") },
		"RenameCollection": func() error { return db.RenameCollection("c", "d", nil) },
		"SetCollectionMeta": func() error {
			return db.SetCollectionMeta("c", []byte(`{"a":1}`))
		},
		"PutVectors": func() error { return db.PutVectors("c", []string{"a"}, [][]float32{{9, 9}}) },
	} {
		if err := op(); !errors.Is(err, berrors.ErrDatabaseReadOnly) || errors.Is(err, ErrCorrupt) {
			t.Errorf("%s on a read-only store: %v", name, err)
		}
	}
	// What needs no write does nothing.
	c, err := db.LoadCollection("c")
	if err != nil || c.Docs != 2 || c.Changes != 0 {
		t.Fatalf("LoadCollection: %+v, %v", c, err)
	}
	c.Changes = 5
	if err := db.Trim(c); err != nil {
		t.Errorf("Trim on a read-only store: %v", err)
	}
	c.Changes = MaxChanges + 1
	if err := db.MaybeTrim(c); err != nil {
		t.Errorf("MaybeTrim on a read-only store: %v", err)
	}
	if n, err := db.Rebind("c"); !errors.Is(err, berrors.ErrDatabaseReadOnly) || n != 0 {
		t.Errorf("Rebind on a read-only store: %d, %v", n, err)
	}
	if v, err := db.Vector("c", "b"); err != nil || !slices.Equal(v, []float32{1, 1}) {
		t.Errorf("Vector: %v, %v", v, err)
	}
	db.Close()
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatal("a read-only store changed its file")
	}
}

// TestHalfVectorsSetting: with HalfVectors (an option, or SetHalfVectors) vectors are
// written in float16 and read back rounded; without, in float32 exactly; both layouts read
// side by side. A value float16 cannot hold fails the write, which stores nothing.
func TestHalfVectorsSetting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := Open(path, Options{NoSync: true, HalfVectors: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v := []float32{0.1, -2.5, 1000.3}
	half, err := vecmath.RoundHalf(v)
	if err != nil {
		t.Fatal(err)
	}
	write := func(id string, vec []float32) error {
		_, err := db.Write("c", []Put{{ID: id, Record: &Record{Text: id}, Units: []string{id}, Vecs: [][]float32{vec}}}, 1, 1)
		return err
	}
	tag := func(id string) uint32 {
		var tg uint32
		db.view(func(tx *bolt.Tx) error {
			b, _ := colBucket(tx, "c", false)
			tg = binary.LittleEndian.Uint32(b.Bucket(bkVecs).Get([]byte(id)))
			return nil
		})
		return tg
	}
	if err := write("h", v); err != nil {
		t.Fatal(err)
	}
	db.SetHalfVectors(false)
	if err := write("f", v); err != nil {
		t.Fatal(err)
	}
	if err := db.PutVectors("c", []string{"p"}, [][]float32{v}); err != nil {
		t.Fatal(err)
	}
	db.SetHalfVectors(true)
	if err := db.PutVectors("c", []string{"q"}, [][]float32{v}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id   string
		tag  uint32
		want []float32
	}{{"h", vecMagicHalf, half}, {"f", vecMagicKey, v}, {"p", vecMagicKey, v}, {"q", vecMagicHalf, half}} {
		if got := tag(tc.id); got != tc.tag {
			t.Errorf("%s: layout tag %#x, want %#x", tc.id, got, tc.tag)
		}
		if got, err := db.Vector("c", tc.id); err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.id, got, err, tc.want)
		}
	}
	c, _ := db.LoadCollection("c")
	if err := write("big", []float32{1, 1e6}); !errors.Is(err, vecmath.ErrHalfRange) {
		t.Fatalf("a value past float16: %v", err)
	}
	if err := db.PutVectors("c", []string{"big"}, [][]float32{{1e6}}); !errors.Is(err, vecmath.ErrHalfRange) {
		t.Fatalf("PutVectors of a value past float16: %v", err)
	}
	if again, _ := db.LoadCollection("c"); again.LastSeq != c.LastSeq || again.Docs != c.Docs {
		t.Fatalf("a failed write changed the collection: %+v, was %+v", again, c)
	}
	if r, _, err := db.Document("c", "big"); err != nil || r != nil {
		t.Fatalf("a failed write stored its record: %+v, %v", r, err)
	}
}

// TestViewGuards: View passes fn's error through and turns a panic in fn into ErrCorrupt.
func TestViewGuards(t *testing.T) {
	db := openTestDB(t)
	own := errors.New("mine")
	if err := db.View(func(*Tx) error { return own }); !errors.Is(err, own) {
		t.Fatalf("View: %v", err)
	}
	err := db.View(func(*Tx) error { panic("a damaged page") })
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "store.db read") {
		t.Fatalf("View of a panic: %v", err)
	}
	if err := db.update(func(*bolt.Tx) error { panic("x") }); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "store.db write") {
		t.Fatalf("update of a panic: %v", err)
	}
	// The store is usable after: the transactions were ended.
	putDocs(t, db, "c", false, "a")
}

// TestBeginSeesItsMoment: a transaction from Begin reads the store as it was when it began,
// until Rollback; a later one sees the writes made meanwhile.
func TestBeginSeesItsMoment(t *testing.T) {
	db := openTestDB(t)
	putDocs(t, db, "c", false, "a")
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	putDocs(t, db, "c", false, "b")
	if tx.Has("c", "b") || !tx.Has("c", "a") {
		t.Fatal("an open transaction sees a later write")
	}
	if r, err := tx.Record("c", "b"); err != nil || r != nil {
		t.Fatalf("Record of a later write: %+v, %v", r, err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err == nil {
		t.Fatal("a second Rollback succeeded")
	}
	tx, err = db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if !tx.Has("c", "b") {
		t.Fatal("a new transaction misses a committed write")
	}
}

// TestTxReads: Record, RecordMeta, Has and Vector in a missing collection, of a missing
// document and of stored ones, switching collections in one transaction (the docs bucket
// it keeps is the right one's).
func TestTxReads(t *testing.T) {
	db := openTestDB(t)
	putDocs(t, db, "c1", true, "a", "b")
	putDocs(t, db, "c2", false, "b", "z")
	err := db.View(func(tx *Tx) error {
		for _, tc := range []struct {
			col, id string
			has     bool
			vec     []float32
		}{
			{"c1", "a", true, []float32{0, 1}},
			{"c2", "b", true, nil},
			{"c1", "b", true, []float32{1, 1}},
			{"c2", "z", true, nil},
			{"c1", "z", false, nil},
			{"c2", "a", false, nil},
			{"none", "a", false, nil},
			{"c1", "", false, nil},
		} {
			if got := tx.Has(tc.col, tc.id); got != tc.has {
				return fmt.Errorf("Has(%s, %s) = %v", tc.col, tc.id, got)
			}
			r, err := tx.Record(tc.col, tc.id)
			if err != nil || (r != nil) != tc.has || r != nil && r.Text != "text of "+tc.id {
				return fmt.Errorf("Record(%s, %s) = %+v, %v", tc.col, tc.id, r, err)
			}
			m, err := tx.RecordMeta(tc.col, tc.id)
			if err != nil || (m != nil) != tc.has {
				return fmt.Errorf("RecordMeta(%s, %s) = %+v, %v", tc.col, tc.id, m, err)
			}
			v, err := tx.Vector(tc.col, tc.id)
			if err != nil || !slices.Equal(v, tc.vec) || (v == nil) != (tc.vec == nil) {
				return fmt.Errorf("Vector(%s, %s) = %v, %v", tc.col, tc.id, v, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTxReadsDamage: a damaged record or vector read through a Tx is ErrCorrupt naming the
// collection.
func TestTxReadsDamage(t *testing.T) {
	db := openTestDB(t)
	putDocs(t, db, "c", true, "a")
	setValue(t, db, [][]byte{bkCols, []byte("c"), bkDocs}, []byte("a"), []byte{recordMagic, 0, 0, 0, 0, '{', '}'})
	setValue(t, db, [][]byte{bkCols, []byte("c"), bkVecs}, []byte("a"), EncodeVector("b", []float32{1, 2}))
	err := db.View(func(tx *Tx) error {
		if _, err := tx.Record("c", "a"); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `collection "c"`) {
			return fmt.Errorf("Record: %v", err)
		}
		if _, err := tx.RecordMeta("c", "a"); !errors.Is(err, ErrCorrupt) {
			return fmt.Errorf("RecordMeta: %v", err)
		}
		if _, err := tx.Vector("c", "a"); !errors.Is(err, ErrCorrupt) {
			return fmt.Errorf("Vector: %v", err)
		}
		if !tx.Has("c", "a") {
			return errors.New("Has: a damaged record is not stored")
		}
		return tx.EachRecord("c", false, func(string, *Record) error { return errors.New("called") })
	})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("EachRecord over a damaged record: %v", err)
	}
}

// TestEachRecordAfter pages through a collection: from the start, after a stored id, after
// an id between stored ones, after the last; fn's error ends it; a missing collection has
// nothing; metaOnly reads metadata and chunks.
func TestEachRecordAfter(t *testing.T) {
	db := openTestDB(t)
	ids := []string{"a", "b", "d", "e", "f"}
	var puts []Put
	for _, id := range ids {
		r := &Record{Title: "T" + id, Text: "text " + id, Metadata: map[string]any{"id": id}}
		puts = append(puts, Put{ID: id, Record: r, Units: []string{id}})
	}
	if _, err := db.Write("c", puts, 5, 5); err != nil {
		t.Fatal(err)
	}
	each := func(col, after string, metaOnly bool, stop string) ([]string, error) {
		var got []string
		err := db.View(func(tx *Tx) error {
			return tx.EachRecordAfter(col, after, metaOnly, func(id string, r *Record) error {
				if r.Metadata["id"] != id {
					return fmt.Errorf("%s: metadata %v", id, r.Metadata)
				}
				if !metaOnly && (r.Title != "T"+id || r.Text != "text "+id) {
					return fmt.Errorf("%s: %+v", id, r)
				}
				got = append(got, id)
				if id == stop {
					return errStop
				}
				return nil
			})
		})
		return got, err
	}
	for _, tc := range []struct {
		after string
		want  []string
	}{
		{"", ids},
		{"a", ids[1:]},
		{"c", []string{"d", "e", "f"}},
		{"0", ids},
		{"f", nil},
		{"zz", nil},
	} {
		for _, meta := range []bool{false, true} {
			got, err := each("c", tc.after, meta, "")
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("after %q (meta %v): %v, %v; want %v", tc.after, meta, got, err, tc.want)
			}
		}
	}
	if got, err := each("c", "", false, "d"); !errors.Is(err, errStop) || !slices.Equal(got, []string{"a", "b", "d"}) {
		t.Errorf("stopped at d: %v, %v", got, err)
	}
	if got, err := each("none", "", false, ""); err != nil || got != nil {
		t.Errorf("missing collection: %v, %v", got, err)
	}
	var all []string
	if err := db.View(func(tx *Tx) error {
		return tx.EachRecord("c", true, func(id string, _ *Record) error { all = append(all, id); return nil })
	}); err != nil || !slices.Equal(all, ids) {
		t.Errorf("EachRecord: %v, %v", all, err)
	}
}

// TestSequenceNumbers: the sequence number is the store's, shared by its collections, one
// per change (unit put or removed), and survives a reopen; LoadCollection finds each
// collection's last.
func TestSequenceNumbers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	w1 := putDocs(t, db, "a", false, "x", "y")
	w2 := putDocs(t, db, "b", false, "x")
	w3, err := db.Delete("a", []string{"x"})
	if err != nil {
		t.Fatal(err)
	}
	if w1.Seq != 2 || w1.Changes != 2 || w2.Seq != 3 || w2.Changes != 1 || w3.Seq != 4 || w3.Changes != 1 {
		t.Fatalf("sequence numbers %d/%d, %d/%d, %d/%d", w1.Seq, w1.Changes, w2.Seq, w2.Changes, w3.Seq, w3.Changes)
	}
	db.Close()
	db, err = Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	w4 := putDocs(t, db, "b", false, "z")
	if w4.Seq != 5 {
		t.Fatalf("after a reopen: seq %d, want 5", w4.Seq)
	}
	for col, want := range map[string]uint64{"a": 4, "b": 5} {
		c, err := db.LoadCollection(col)
		if err != nil || c.LastSeq != want {
			t.Errorf("%s: %+v, %v; want LastSeq %d", col, c, err, want)
		}
	}
	var stored uint64
	db.view(func(tx *bolt.Tx) error { stored = u64(tx.Bucket(bkMeta).Get(keySeq)); return nil })
	if stored != 5 {
		t.Fatalf("stored sequence number %d", stored)
	}
	// nextSeq inside a transaction: one more each call.
	if err := db.update(func(tx *bolt.Tx) error {
		for want := uint64(6); want < 9; want++ {
			if s, err := nextSeq(tx); err != nil || s != want {
				return fmt.Errorf("nextSeq = %d, %v; want %d", s, err, want)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestNextSeqInEmptyStore: the first sequence number is 1, and nextSeq makes the meta
// bucket.
func TestNextSeqInEmptyStore(t *testing.T) {
	db := openTestDB(t)
	if err := db.update(func(tx *bolt.Tx) error {
		if tx.Bucket(bkMeta) != nil {
			return errors.New("a new store has a meta bucket")
		}
		s, err := nextSeq(tx)
		if err != nil || s != 1 {
			return fmt.Errorf("first nextSeq = %d, %v", s, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestU64(t *testing.T) {
	for _, v := range []uint64{0, 1, 255, 256, 1 << 32, 1<<64 - 1} {
		b := u64b(v)
		if len(b) != 8 || u64(b) != v || binary.BigEndian.Uint64(b) != v {
			t.Errorf("u64b(%d) = %x", v, b)
		}
		if got, err := u64Stored(b, "x"); err != nil || got != v {
			t.Errorf("u64Stored(u64b(%d)) = %d, %v", v, got, err)
		}
	}
	// Keys in sequence order sort as bytes (the change log relies on it).
	if string(u64b(255)) >= string(u64b(256)) || string(u64b(1<<32-1)) >= string(u64b(1<<32)) {
		t.Error("u64b does not sort as its numbers")
	}
	for _, b := range [][]byte{nil, {}, {1}, make([]byte, 7), make([]byte, 9)} {
		if got := u64(b); got != 0 {
			t.Errorf("u64(%x) = %d, want 0", b, got)
		}
	}
	err := func() error { _, err := u64Stored([]byte{1, 2}, "the thing"); return err }()
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "the thing is 2 bytes, not 8") {
		t.Errorf("u64Stored of 2 bytes: %v", err)
	}
}

// TestColBucket: colBucket finds nothing in an empty store without create; with create it
// makes the collection's four buckets and zero counters that pass their checksum, and a
// second call finds the same bucket.
func TestColBucket(t *testing.T) {
	db := openTestDB(t)
	if err := db.view(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, "c", false)
		if b != nil || err != nil {
			return fmt.Errorf("empty store: %v, %v", b, err)
		}
		if d, err := docsBucket(tx, "c"); d != nil || err != nil {
			return fmt.Errorf("docsBucket of a missing collection: %v, %v", d, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.update(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, "c", true)
		if err != nil {
			return err
		}
		for _, sub := range [][]byte{bkDocs, bkVecs, bkChanges, bkInfo} {
			if b.Bucket(sub) == nil {
				return fmt.Errorf("no %s bucket", sub)
			}
		}
		if d, u, st := counts(b); d != 0 || u != 0 || st != countsOK {
			return fmt.Errorf("counts of a new collection: %d, %d, %v", d, u, st)
		}
		again, err := colBucket(tx, "c", true)
		if err != nil || again == nil || again.Bucket(bkDocs) == nil {
			return fmt.Errorf("second colBucket: %v, %v", again, err)
		}
		if other, _ := colBucket(tx, "d", false); other != nil {
			return errors.New("another name found")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestCountsStates: counts says how far a collection's persisted counters can be trusted,
// for every way they can be stored or damaged.
func TestCountsStates(t *testing.T) {
	sum := func(d, u []byte) []byte {
		return binary.BigEndian.AppendUint32(nil, countSum(d, u))
	}
	d3, u5 := u64b(3), u64b(5)
	neg := u64b(1 << 63)
	for _, tc := range []struct {
		name       string
		d, u, s    []byte
		docs, unit int
		st         countState
	}{
		{"checked", d3, u5, sum(d3, u5), 3, 5, countsOK},
		{"no checksum", d3, u5, nil, 3, 5, countsUnchecked},
		{"absent", nil, nil, nil, 0, 0, countsMissing},
		{"absent with a checksum", nil, nil, sum(d3, u5), 0, 0, countsMissing},
		{"docs absent", nil, u5, sum(d3, u5), 0, 0, countsDamaged},
		{"units absent", d3, nil, nil, 0, 0, countsDamaged},
		{"docs short", d3[:7], u5, sum(d3, u5), 0, 0, countsDamaged},
		{"units long", d3, append(u5, 0), sum(d3, u5), 0, 0, countsDamaged},
		{"wrong checksum", d3, u5, sum(u5, d3), 3, 5, countsDamaged},
		{"short checksum", d3, u5, sum(d3, u5)[:3], 3, 5, countsDamaged},
		{"docs changed", u64b(4), u5, sum(d3, u5), 4, 5, countsDamaged},
		{"negative", neg, u5, sum(neg, u5), -1 << 63, 5, countsDamaged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openTestDB(t)
			if err := db.update(func(tx *bolt.Tx) error {
				b, err := colBucket(tx, "c", true)
				if err != nil {
					return err
				}
				info := b.Bucket(bkInfo)
				for _, kv := range []struct{ k, v []byte }{{keyDocN, tc.d}, {keyUnitN, tc.u}, {keyCountSum, tc.s}} {
					if kv.v == nil {
						err = info.Delete(kv.k)
					} else {
						err = info.Put(kv.k, kv.v)
					}
					if err != nil {
						return err
					}
				}
				docs, units, st := counts(b)
				if st != tc.st || st != countsDamaged && (docs != tc.docs || units != tc.unit) {
					return fmt.Errorf("counts = %d, %d, %v; want %d, %d, %v", docs, units, st, tc.docs, tc.unit, tc.st)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestAddCounts: trusted counters are added to (never below zero); ones that cannot be
// trusted are counted again from the records, the deltas not added on top, and persisted
// with their checksum.
func TestAddCounts(t *testing.T) {
	db := openTestDB(t)
	var puts []Put
	for i := range 4 {
		id := fmt.Sprintf("d%d", i)
		r := &Record{Text: "0123456789"}
		if i == 3 {
			r.Chunks = []Chunk{{S: 0, E: 5}, {S: 5, E: 10}}
		}
		puts = append(puts, Put{ID: id, Record: r, Units: r.UnitIDs(id)})
	}
	if _, err := db.Write("c", puts, 4, 5); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		damage       func(info *bolt.Bucket) error
		dd, du       int
		wantD, wantU int
	}{
		{"trusted", func(*bolt.Bucket) error { return nil }, 2, 3, 6, 8},
		{"clamped at zero", func(*bolt.Bucket) error { return nil }, -10, -10, 0, 0},
		{"missing", func(info *bolt.Bucket) error {
			return errors.Join(info.Delete(keyDocN), info.Delete(keyUnitN), info.Delete(keyCountSum))
		}, 2, 3, 4, 5},
		{"unchecked", func(info *bolt.Bucket) error { return info.Delete(keyCountSum) }, 2, 3, 4, 5},
		{"damaged", func(info *bolt.Bucket) error { return info.Put(keyDocN, []byte{9}) }, 2, 3, 4, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := db.update(func(tx *bolt.Tx) error {
				b, _ := colBucket(tx, "c", false)
				if err := putCounts(b, 4, 5); err != nil {
					return err
				}
				if err := tc.damage(b.Bucket(bkInfo)); err != nil {
					return err
				}
				d, u, err := addCounts(b, tc.dd, tc.du)
				if err != nil || d != tc.wantD || u != tc.wantU {
					return fmt.Errorf("addCounts(%d, %d) = %d, %d, %v; want %d, %d", tc.dd, tc.du, d, u, err, tc.wantD, tc.wantU)
				}
				if pd, pu, st := counts(b); st != countsOK || pd != d || pu != u {
					return fmt.Errorf("persisted %d, %d, %v", pd, pu, st)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestDamagedSequenceNumberEveryWriter: every write that logs a change (Write, Delete,
// Replace) refuses a damaged sequence number with ErrCorrupt and changes nothing; a write
// that logs none (PutVectors) does not read it.
func TestDamagedSequenceNumberEveryWriter(t *testing.T) {
	db := openTestDB(t)
	putDocs(t, db, "c", true, "a", "b")
	setValue(t, db, [][]byte{bkMeta}, keySeq, []byte{0, 0, 0, 0, 0, 0, 2}) // 7 bytes
	for name, op := range map[string]func() error{
		"Write": func() error {
			_, err := db.Write("c", []Put{{ID: "x", Record: &Record{Text: "x"}, Units: []string{"x"}}}, 1, 1)
			return err
		},
		"Write to a new collection": func() error {
			_, err := db.Write("d", []Put{{ID: "x", Record: &Record{Text: "x"}, Units: []string{"x"}}}, 1, 1)
			return err
		},
		"Delete":  func() error { _, err := db.Delete("c", []string{"a"}); return err },
		"Replace": func() error { _, _, err := db.Replace("c", nil, []string{"b"}, 0, 0); return err },
	} {
		if err := op(); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "sequence number is 7 bytes") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if ids, _ := db.IDs("c"); !slices.Equal(ids, []string{"a", "b"}) {
		t.Fatalf("failed writes changed the documents: %q", ids)
	}
	if ok, _ := db.CollectionExists("d"); ok {
		t.Fatal("a failed write made its collection")
	}
	if err := db.PutVectors("c", []string{"a"}, [][]float32{{5, 5}}); err != nil {
		t.Fatalf("PutVectors: %v", err)
	}
	// A delete of nothing stored logs nothing, and so succeeds.
	if _, err := db.Delete("c", []string{"zz"}); err != nil {
		t.Fatalf("a delete of nothing: %v", err)
	}
}

// TestClosedStore: after Close every operation fails with an error (bbolt's: not ErrCorrupt,
// nothing is damaged), none panics; a second Close is harmless.
func TestClosedStore(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "store.db"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	putDocs(t, db, "c", false, "a")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]func() error{
		"View": func() error { return db.View(func(*Tx) error { return nil }) },
		"Write": func() error {
			_, err := db.Write("c", []Put{{ID: "x", Record: &Record{Text: "x"}, Units: []string{"x"}}}, 1, 1)
			return err
		},
		"Delete":          func() error { _, err := db.Delete("c", []string{"a"}); return err },
		"LoadCollection":  func() error { _, err := db.LoadCollection("c"); return err },
		"CollectionNames": func() error { _, err := db.CollectionNames(); return err },
		"Document":        func() error { _, _, err := db.Document("c", "a"); return err },
		"CreateCollection": func() error {
			return db.CreateCollection("d", 0, nil)
		},
	} {
		if err := op(); err == nil || errors.Is(err, ErrCorrupt) {
			t.Errorf("%s on a closed store: %v", name, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

// TestInt8VectorsSetting: with PrecisionInt8 (an option, or SetPrecision) vectors are
// written in int8 and read back as vecmath.RoundInt8 of their values; SetHalfVectors still
// switches float16 on and off; every layout reads side by side. FillVectors reads a batch
// (in any id order) into the caller's slices; a missing id is ErrNoVector, a slice of
// another length ErrCorrupt; Tx.FillVectors reads the same in the caller's transaction.
func TestInt8VectorsSetting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := Open(path, Options{NoSync: true, Precision: PrecisionInt8})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v := []float32{0.1, -2.5, 1000.3}
	i8, _ := vecmath.RoundInt8(v)
	half, _ := vecmath.RoundHalf(v)
	write := func(id string, vec []float32) error {
		_, err := db.Write("c", []Put{{ID: id, Record: &Record{Text: id}, Units: []string{id}, Vecs: [][]float32{vec}}}, 1, 1)
		return err
	}
	if err := write("i", v); err != nil {
		t.Fatal(err)
	}
	db.SetHalfVectors(true)
	if err := write("h", v); err != nil {
		t.Fatal(err)
	}
	db.SetHalfVectors(false)
	if err := write("f", v); err != nil {
		t.Fatal(err)
	}
	db.SetPrecision(PrecisionInt8)
	if err := db.PutVectors("c", []string{"p"}, [][]float32{v}); err != nil {
		t.Fatal(err)
	}
	ids := []string{"p", "f", "i", "h"}
	want := [][]float32{i8, v, i8, half}
	dst := make([][]float32, len(ids))
	for i := range dst {
		dst[i] = make([]float32, 3)
	}
	if err := db.FillVectors("c", ids, dst); err != nil {
		t.Fatal(err)
	}
	for i := range ids {
		if !slices.Equal(dst[i], want[i]) {
			t.Errorf("%s: %v, want %v", ids[i], dst[i], want[i])
		}
		if got, err := db.Vector("c", ids[i]); err != nil || !slices.Equal(got, want[i]) {
			t.Errorf("Vector(%s): %v, %v", ids[i], got, err)
		}
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	clear(dst[0])
	if err := tx.FillVectors("c", ids[:1], dst[:1]); err != nil || !slices.Equal(dst[0], i8) {
		t.Errorf("Tx.FillVectors: %v, %v", dst[0], err)
	}
	tx.Rollback()
	if err := db.FillVectors("c", []string{"i", "nope"}, dst[:2]); !errors.Is(err, ErrNoVector) {
		t.Errorf("a missing id: %v, want ErrNoVector", err)
	}
	if err := db.FillVectors("c", []string{"i"}, [][]float32{make([]float32, 4)}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("another length: %v, want ErrCorrupt", err)
	}
	if err := db.FillVectors("nocol", []string{"i"}, dst[:1]); !errors.Is(err, ErrCollectionNotFound) {
		t.Errorf("no collection: %v", err)
	}
	if n, err := db.VectorBytes("c"); err != nil || n < 4*12+3 {
		t.Errorf("VectorBytes: %d, %v", n, err)
	}
	if err := write("bad", []float32{1, float32(math.NaN())}); !errors.Is(err, vecmath.ErrNonFinite) {
		t.Errorf("a NaN in an int8 store: %v", err)
	}
}
