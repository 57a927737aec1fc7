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

// TestDecodeColMeta: stored metadata is read when its tag and checksum (of the key "cmeta"
// and the JSON) hold; anything else is ErrCorrupt naming the collection.
func TestDecodeColMeta(t *testing.T) {
	js := []byte(`{"a":1,"b":"x"}`)
	good := encodeColMeta(js)
	if got, err := decodeColMeta("c", good); err != nil || string(got) != string(js) {
		t.Fatalf("whole: %s, %v", got, err)
	}
	if got, err := decodeColMeta("any other name", good); err != nil || string(got) != string(js) {
		t.Fatalf("the collection's name is not bound (a rename keeps it): %s, %v", got, err)
	}
	flipped := append([]byte(nil), good...)
	flipped[7] ^= 0x40
	for _, tc := range []struct {
		name string
		v    []byte
		want string
	}{
		{"empty", nil, "unknown layout"},
		{"short", good[:4], "unknown layout"},
		{"tag", append([]byte{recordMagicV1}, good[1:]...), "unknown layout"},
		{"JSON alone", js, "unknown layout"},
		{"flipped", flipped, "fails its checksum"},
		{"cut", good[:len(good)-1], "fails its checksum"},
		{"another key's", boundRecord("other", js), "fails its checksum"},
	} {
		_, err := decodeColMeta("c", tc.v)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `collection "c"`) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
}

// FuzzDecodeColMeta: any stored metadata value is ErrCorrupt or JSON that encodes back to
// the same value; with fix, the value gets the tag and checksum of its bytes after them.
func FuzzDecodeColMeta(f *testing.F) {
	f.Add(encodeColMeta([]byte(`{"a":1}`)), false)
	f.Add([]byte(`{"a":1}`), false)
	f.Add([]byte{recordMagic, 0, 0, 0, 0}, true)
	f.Add([]byte{}, false)
	f.Fuzz(func(t *testing.T, v []byte, fix bool) {
		v = append([]byte(nil), v...)
		if fix && len(v) >= 5 {
			copy(v, encodeColMeta(v[5:])[:5])
		}
		js, err := decodeColMeta("c", v)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		if again := encodeColMeta(js); string(again) != string(v) {
			t.Fatalf("%x re-encodes to %x", v, again)
		}
	})
}

// TestColMetaClearing: nil, "{}" and "null" store no metadata (read back as nil), at create,
// set and rename; a collection without its info bucket (damage) cannot take metadata.
func TestColMetaClearing(t *testing.T) {
	db := openTestDB(t)
	for _, md := range []string{"{}", "null"} {
		if err := db.CreateCollection("c"+md, 0, []byte(md)); err != nil {
			t.Fatal(err)
		}
		if got, err := db.CollectionMeta("c" + md); err != nil || got != nil {
			t.Errorf("created with %s: %s, %v", md, got, err)
		}
	}
	if err := db.CreateCollection("c", 0, []byte(`{"k":"v"}`)); err != nil {
		t.Fatal(err)
	}
	for _, md := range [][]byte{nil, []byte("{}"), []byte("null"), {}} {
		if err := db.SetCollectionMeta("c", []byte(`{"k":"v"}`)); err != nil {
			t.Fatal(err)
		}
		if err := db.SetCollectionMeta("c", md); err != nil {
			t.Fatal(err)
		}
		if got, err := db.CollectionMeta("c"); err != nil || got != nil {
			t.Errorf("set to %q: %s, %v", md, got, err)
		}
	}
	// A collection whose info bucket is gone is damaged (every collection is made with
	// it): its metadata can be neither read nor set.
	if err := db.update(func(tx *bolt.Tx) error {
		b, _ := colBucket(tx, "c", false)
		return b.DeleteBucket(bkInfo)
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := db.CollectionMeta("c"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("no info bucket: %s, %v; want ErrCorrupt", got, err)
	}
	if err := db.SetCollectionMeta("c", []byte(`{"a":1}`)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("set without an info bucket: %v", err)
	}
}

// TestRenameCollectionMeta: a rename keeps the metadata when meta is nil, replaces it when
// given, removes it with "{}", in the same transaction; a failed rename changes nothing.
func TestRenameCollectionMeta(t *testing.T) {
	db := openTestDB(t)
	if err := db.CreateCollection("a", 0, []byte(`{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	putDocs(t, db, "a", false, "x")
	for _, tc := range []struct {
		to   string
		meta []byte
		want string
	}{
		{"b", nil, `{"v":1}`},
		{"c", []byte(`{"v":2}`), `{"v":2}`},
		{"d", []byte(`{}`), ""},
		{"e", nil, ""},
	} {
		from := map[string]string{"b": "a", "c": "b", "d": "c", "e": "d"}[tc.to]
		if err := db.RenameCollection(from, tc.to, tc.meta); err != nil {
			t.Fatal(err)
		}
		got, err := db.CollectionMeta(tc.to)
		if err != nil || string(got) != tc.want {
			t.Errorf("renamed to %s with %s: %s, %v; want %s", tc.to, tc.meta, got, err, tc.want)
		}
		if r, _, err := db.Document(tc.to, "x"); err != nil || r == nil {
			t.Errorf("renamed to %s: document %+v, %v", tc.to, r, err)
		}
	}
	if err := db.CreateCollection("f", 0, []byte(`{"f":1}`)); err != nil {
		t.Fatal(err)
	}
	for _, to := range []string{"f", "e"} {
		if err := db.RenameCollection("e", to, []byte(`{"x":1}`)); !errors.Is(err, ErrCollectionExists) {
			t.Errorf("rename e to %s: %v", to, err)
		}
	}
	if md, _ := db.CollectionMeta("f"); string(md) != `{"f":1}` {
		t.Errorf("a failed rename changed the target's metadata: %s", md)
	}
	if names, _ := db.CollectionNames(); fmt.Sprint(names) != "[e f]" {
		t.Errorf("names %v", names)
	}
}

// TestRenameCollectionPlainValues: a name held by a plain value among the collections
// (damage, or a later version's) cannot be renamed to; plain values inside a collection's
// bucket move with it.
func TestRenameCollectionPlainValues(t *testing.T) {
	db := openTestDB(t)
	putDocs(t, db, "a", false, "x")
	if err := db.update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bkCols).Put([]byte("plain"), []byte("v")); err != nil {
			return err
		}
		b, _ := colBucket(tx, "a", false)
		return b.Put([]byte("extra"), []byte("kept"))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.RenameCollection("a", "plain", nil); !errors.Is(err, ErrCollectionExists) {
		t.Fatalf("rename onto a plain value: %v", err)
	}
	if err := db.RenameCollection("plain", "z", nil); !errors.Is(err, ErrCollectionNotFound) {
		t.Fatalf("rename of a plain value: %v", err)
	}
	if err := db.RenameCollection("a", "b", nil); err != nil {
		t.Fatal(err)
	}
	if err := db.view(func(tx *bolt.Tx) error {
		b, _ := colBucket(tx, "b", false)
		if v := b.Get([]byte("extra")); string(v) != "kept" {
			return fmt.Errorf("plain value after the rename: %q", v)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The plain value is no collection.
	if names, _ := db.CollectionNames(); fmt.Sprint(names) != "[b]" {
		t.Fatalf("names %v", names)
	}
	if ok, _ := db.CollectionExists("plain"); ok {
		t.Fatal("a plain value is a collection")
	}
}
