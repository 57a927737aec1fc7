package memory

import (
	"errors"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestLenOfDamagedCollection: a collection whose stored state cannot be read (here its info
// bucket is gone, as a damaged page can make it) is ErrCorrupt from Len, never a count of 0
// that passes for an empty collection; Count, which has no error, logs it.
func TestLenOfDamagedCollection(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	m := openT(t, dir)
	if err := m.Add(bg, Document{ID: "a", Text: "alpha"}, Document{ID: "b", Text: "beta"}); err != nil {
		t.Fatal(err)
	}
	if n, err := m.Len(bg); n != 2 || err != nil {
		t.Fatalf("Len of a healthy store: %d, %v", n, err)
	}
	if _, err := m.Collection("nope").Len(bg); !errors.Is(err, ErrCollectionNotFound) {
		t.Fatalf("Len of a missing collection: %v", err)
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
	var log countLog
	m = openT(t, dir, ReadOnly(), WithLogger(log.logger()))
	if n, err := m.Len(bg); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Len of a collection that cannot be read: %d, %v; want ErrCorrupt", n, err)
	}
	if n := m.Count(); n != 0 {
		t.Fatalf("Count: %d", n)
	}
	if log.Len() == 0 {
		t.Fatal("Count of a collection that cannot be read logged nothing")
	}
}
