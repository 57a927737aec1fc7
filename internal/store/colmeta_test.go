package store

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestRenameCollectionMovesEverything renames a collection of many pages (records,
// vectors, change log, counters, metadata) and checks that the new name holds all of it, the
// old one nothing, and bbolt's own check finds the file consistent.
func TestRenameCollectionMovesEverything(t *testing.T) {
	db := openTestDB(t)
	if err := db.CreateCollection("old", 0, []byte(`{"gold":true}`)); err != nil {
		t.Fatal(err)
	}
	c, err := db.LoadCollection("old")
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	for i := range 3000 {
		docs[fmt.Sprintf("d%05d", i)] = strings.Repeat(fmt.Sprintf("word%d ", i), 8)
	}
	write(t, db, c, docs)
	if err := db.PutVectors("old", []string{"d00001", "d00002"}, [][]float32{{1, 2}, {3, 4}}); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateCollection("other", 0, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		from, to string
		want     error
	}{{"nope", "x", ErrCollectionNotFound}, {"old", "other", ErrCollectionExists}} {
		if err := db.RenameCollection(tc.from, tc.to, nil); !errors.Is(err, tc.want) {
			t.Fatalf("RenameCollection(%q, %q) = %v, want %v", tc.from, tc.to, err, tc.want)
		}
	}
	if err := db.RenameCollection("old", "new", nil); err != nil {
		t.Fatal(err)
	}
	if names, _ := db.CollectionNames(); fmt.Sprint(names) != "[new other]" {
		t.Fatalf("names = %v", names)
	}
	if ok, _ := db.CollectionExists("old"); ok {
		t.Fatal("old still exists")
	}
	nc, err := db.LoadCollection("new")
	if err != nil {
		t.Fatal(err)
	}
	if nc.Docs != len(docs) || nc.Units != len(docs) || nc.LastSeq != c.LastSeq || nc.Changes != c.Changes {
		t.Fatalf("renamed collection %+v, was %+v", nc, c)
	}
	ids, err := db.IDs("new")
	if err != nil || len(ids) != len(docs) {
		t.Fatalf("ids: %d, %v", len(ids), err)
	}
	r, _, err := db.Document("new", "d02999")
	if err != nil || r == nil || r.Text != docs["d02999"] {
		t.Fatalf("document: %v, %v", r, err)
	}
	if v, err := db.Vector("new", "d00002"); err != nil || fmt.Sprint(v) != "[3 4]" {
		t.Fatalf("vector: %v, %v", v, err)
	}
	if md, err := db.CollectionMeta("new"); err != nil || string(md) != `{"gold":true}` {
		t.Fatalf("metadata: %s, %v", md, err)
	}
	if tally, err := db.Tally("new", 0); err != nil || tally.Docs != len(docs) || tally.Damaged != 0 {
		t.Fatalf("tally: %+v, %v", tally, err)
	}
	if found, err := db.Consistency(10); err != nil || len(found) != 0 {
		t.Fatalf("consistency: %v, %v", found, err)
	}
}

// TestCollectionMetaStored: none reads as nil (a store made before collection metadata was
// kept), a replacement is read back, "{}" removes it, a damaged value is ErrCorrupt.
func TestCollectionMetaStored(t *testing.T) {
	db := openTestDB(t)
	if err := db.CreateCollection("c", 0, nil); err != nil {
		t.Fatal(err)
	}
	if md, err := db.CollectionMeta("c"); err != nil || md != nil {
		t.Fatalf("no metadata: %s, %v", md, err)
	}
	if _, err := db.CollectionMeta("nope"); !errors.Is(err, ErrCollectionNotFound) {
		t.Fatalf("missing collection: %v", err)
	}
	if err := db.SetCollectionMeta("nope", []byte(`{"a":1}`)); !errors.Is(err, ErrCollectionNotFound) {
		t.Fatalf("set on a missing collection: %v", err)
	}
	if err := db.SetCollectionMeta("c", []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if md, err := db.CollectionMeta("c"); err != nil || string(md) != `{"a":1}` {
		t.Fatalf("after set: %s, %v", md, err)
	}
	// A flipped byte of the stored value fails its checksum.
	if err := db.update(func(tx *bolt.Tx) error {
		info := tx.Bucket(bkCols).Bucket([]byte("c")).Bucket(bkInfo)
		v := append([]byte(nil), info.Get(keyColMeta)...)
		v[len(v)-2] ^= 1
		return info.Put(keyColMeta, v)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CollectionMeta("c"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged metadata: %v", err)
	}
	if err := db.SetCollectionMeta("c", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if md, err := db.CollectionMeta("c"); err != nil || md != nil {
		t.Fatalf("cleared: %s, %v", md, err)
	}
}
