package memory

import (
	"errors"
	"path/filepath"
	"testing"

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
