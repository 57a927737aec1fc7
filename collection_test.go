package memory

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agentmem/memory/internal/memtest"
	bolt "go.etcd.io/bbolt"
)

// TestCountOfDamagedCollection: a collection whose stored state cannot be read (here its
// info bucket is gone, as a damaged page can make it) is ErrCorrupt from Count and IDs,
// never a count of 0 or no ids that pass for an empty collection; a closed store is
// ErrClosed from Count, IDs and Collections.
func TestCountOfDamagedCollection(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	m := openT(t, dir)
	if err := m.Add(bg, Document{ID: "a", Text: "alpha"}, Document{ID: "b", Text: "beta"}); err != nil {
		t.Fatal(err)
	}
	if n, err := m.Count(bg); n != 2 || err != nil {
		t.Fatalf("Count of a healthy store: %d, %v", n, err)
	}
	if _, err := m.Collection("nope").Count(bg); !errors.Is(err, ErrCollectionNotFound) {
		t.Fatalf("Count of a missing collection: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(dir, dbName), 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bkCols).Bucket([]byte(DefaultCollection)).DeleteBucket(bkInfo)
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	m = openT(t, dir, ReadOnly())
	if n, err := m.Count(bg); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Count of a collection that cannot be read: %d, %v; want ErrCorrupt", n, err)
	}
	if ids, err := m.Collection("").IDs(bg); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("IDs of a collection that cannot be read: %v, %v; want ErrCorrupt", ids, err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for what, err := range map[string]error{
		"Count":       func() error { _, err := m.Count(bg); return err }(),
		"IDs":         func() error { _, err := m.Collection("").IDs(bg); return err }(),
		"Collections": func() error { _, err := m.Collections(bg); return err }(),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s of a closed store: %v; want ErrClosed", what, err)
		}
	}
}

// persistedCounts reads a collection's info/ndocs and info/nunits straight from store.db of
// a closed store; ok is false when they are missing.
func persistedCounts(t *testing.T, dir, col string) (docs, units int, ok bool) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, dbName), 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bkCols).Bucket([]byte(col))
		if b == nil {
			t.Fatalf("no collection %q", col)
		}
		d, u := b.Bucket(bkInfo).Get(keyDocN), b.Bucket(bkInfo).Get(keyUnitN)
		if len(d) != 8 || len(u) != 8 {
			return nil
		}
		docs, units, ok = int(binary.BigEndian.Uint64(d)), int(binary.BigEndian.Uint64(u)), true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return docs, units, ok
}

// TestCountsPersisted: every write keeps the persisted document and chunk counts exact, and
// a reopened store reads them back instead of scanning.
func TestCountsPersisted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	m := openT(t, dir)
	long := prose(3, 6000)
	if err := m.Add(bg,
		Document{ID: "a", Text: "alpha text", Source: "x.md"},
		Document{ID: "b", Text: "beta text", Source: "y.md"},
		Document{ID: "long", Text: long, Source: "x.md"},
		Document{ID: "c", Text: "gamma text"},
	); err != nil {
		t.Fatal(err)
	}
	docs, units, _, _ := colIndexCounts(t, m.Collection(""))
	if docs != 4 || units < 6 {
		t.Fatalf("after add: docs %d units %d", docs, units)
	}
	// A chunked document shrinks to one chunk, a plain one grows to several.
	if err := m.Upsert(bg, Document{ID: "long", Text: "short now", Source: "x.md"}, Document{ID: "c", Text: long}); err != nil {
		t.Fatal(err)
	}
	colIndexCounts(t, m.Collection(""))
	// Unknown and repeated ids change nothing twice.
	if err := m.Delete(bg, "b", "b", "nope"); err != nil {
		t.Fatal(err)
	}
	if n, err := m.DeleteWhere(bg, Where{"source": "x.md"}); err != nil || n != 2 {
		t.Fatalf("DeleteWhere = %d, %v", n, err)
	}
	docs, units, bm25, _ := colIndexCounts(t, m.Collection(""))
	if docs != 1 || memtest.Count(t, m) != 1 || units != bm25 || units < 2 {
		t.Fatalf("after deletes: docs %d Count %d units %d bm25 %d", docs, memtest.Count(t, m), units, bm25)
	}
	if ids := memtest.IDs(t, m.Collection("")); !reflect.DeepEqual(ids, []string{"c"}) {
		t.Fatalf("IDs = %v", ids)
	}
	m.Close()
	pd, pu, ok := persistedCounts(t, dir, DefaultCollection)
	if !ok || pd != 1 || pu != units {
		t.Fatalf("persisted %d docs %d units (ok %v), want 1, %d", pd, pu, ok, units)
	}
	m2 := openT(t, dir)
	if d, u, _, _ := colIndexCounts(t, m2.Collection("")); d != 1 || u != units {
		t.Fatalf("reopened: docs %d units %d", d, u)
	}
}

// TestCountsOfOldStore: a store written before the counts were persisted counts its
// documents once on open and keeps the counts from then on.
func TestCountsOfOldStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	m := openT(t, dir)
	if err := m.Add(bg, Document{ID: "a", Text: "alpha"}, Document{ID: "long", Text: prose(5, 5000)}); err != nil {
		t.Fatal(err)
	}
	_, units, _, _ := colIndexCounts(t, m.Collection(""))
	side, _ := m.CreateCollection("side")
	if err := side.Add(bg, Document{ID: "s", Text: "side"}); err != nil {
		t.Fatal(err)
	}
	m.Close()
	// Make it an old store: no count keys.
	db, err := bolt.Open(filepath.Join(dir, dbName), 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bkCols).ForEachBucket(func(k []byte) error {
			info := tx.Bucket(bkCols).Bucket(k).Bucket(bkInfo)
			return errors.Join(info.Delete(keyDocN), info.Delete(keyUnitN))
		})
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, _, ok := persistedCounts(t, dir, DefaultCollection); ok {
		t.Fatal("count keys not removed")
	}
	// A read-only open counts for itself and writes nothing.
	ro, err := Open(dir, ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	if memtest.Count(t, ro) != 2 || memtest.Count(t, ro.Collection("side")) != 1 {
		t.Fatalf("read-only: Count %d, side %d", memtest.Count(t, ro), memtest.Count(t, ro.Collection("side")))
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := persistedCounts(t, dir, DefaultCollection); ok {
		t.Fatal("a read-only open persisted counts")
	}
	m2 := openT(t, dir)
	if memtest.Count(t, m2) != 2 || memtest.Count(t, m2.Collection("side")) != 1 {
		t.Fatalf("Count %d, side %d", memtest.Count(t, m2), memtest.Count(t, m2.Collection("side")))
	}
	if d, u, _, _ := colIndexCounts(t, m2.Collection("")); d != 2 || u != units {
		t.Fatalf("docs %d units %d, want 2, %d", d, u, units)
	}
	m2.Close()
	if d, u, ok := persistedCounts(t, dir, DefaultCollection); !ok || d != 2 || u != units {
		t.Fatalf("persisted %d %d %v", d, u, ok)
	}
	if d, u, ok := persistedCounts(t, dir, "side"); !ok || d != 1 || u != 1 {
		t.Fatalf("side persisted %d %d %v", d, u, ok)
	}
}

// The on-disk layout of store.db (internal/store) that the tests damaging a store from outside
// rely on, spelled out here: they also pin the format that existing stores have.
var (
	bkCols   = []byte("col")
	bkDocs   = []byte("docs")
	bkVecs   = []byte("vecs")
	bkInfo   = []byte("info")
	keyDocN  = []byte("ndocs")
	keyUnitN = []byte("nunits")
	// keyCountSum is the CRC-32C of ndocs and nunits.
	keyCountSum = []byte("nsum")
)
