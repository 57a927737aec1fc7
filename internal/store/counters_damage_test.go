package store

import (
	"errors"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// A damaged sequence number, trim point or change-log key is ErrCorrupt, never read as 0:
// a sequence number restarting at 1, or a trim point at 0, would send the derived indexes'
// catch-up to the wrong changes.
func TestDamagedNumbersAreCorrupt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(tx *bolt.Tx) error
		check  func(db *DB) error
	}{
		{"sequence number", func(tx *bolt.Tx) error {
			return tx.Bucket(bkMeta).Put(keySeq, []byte{0, 0, 7})
		}, func(db *DB) error {
			_, err := db.Write("c", []Put{{ID: "b", Record: &Record{Text: "two"}, Units: []string{"b"}}}, 1, 1)
			return err
		}},
		{"trim point", func(tx *bolt.Tx) error {
			b, _ := colBucket(tx, "c", false)
			return b.Bucket(bkInfo).Put(keyTrim, []byte{1})
		}, func(db *DB) error {
			_, err := db.LoadCollection("c")
			return err
		}},
		{"change-log key", func(tx *bolt.Tx) error {
			b, _ := colBucket(tx, "c", false)
			return b.Bucket(bkChanges).Put([]byte("bad"), []byte{opPut, 'a'})
		}, func(db *DB) error {
			_, err := db.LoadCollection("c")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openTestDB(t)
			if _, err := db.Write("c", []Put{{ID: "a", Record: &Record{Text: "one"}, Units: []string{"a"}}}, 1, 1); err != nil {
				t.Fatal(err)
			}
			if _, err := db.LoadCollection("c"); err != nil {
				t.Fatalf("healthy store: %v", err)
			}
			if err := db.bolt.Update(tc.damage); err != nil {
				t.Fatal(err)
			}
			if err := tc.check(db); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestU64Stored(t *testing.T) {
	for _, tc := range []struct {
		b    []byte
		want uint64
		bad  bool
	}{
		{nil, 0, false},
		{[]byte{0, 0, 0, 0, 0, 0, 1, 2}, 258, false},
		{[]byte{1, 2, 3}, 0, true},
		{make([]byte, 9), 0, true},
	} {
		got, err := u64Stored(tc.b, "x")
		if got != tc.want || (err != nil) != tc.bad || (err != nil && !errors.Is(err, ErrCorrupt)) {
			t.Errorf("u64Stored(%x) = %d, %v; want %d, bad %v", tc.b, got, err, tc.want, tc.bad)
		}
	}
}
