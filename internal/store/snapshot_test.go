package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// beginSnapshot begins a snapshot of db that the test's cleanup closes (if the test has not),
// before the store's own Close, which would wait for it forever.
func beginSnapshot(t *testing.T, db *DB) *Snapshot {
	t.Helper()
	s, err := db.BeginSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestSnapshotCopiesItsMoment: a snapshot writes a complete store file of the store as it
// was when the snapshot began: writes, deletes and collections made after are not in it,
// while the store itself takes them; the copy passes the file checks and opens.
func TestSnapshotCopiesItsMoment(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(filepath.Join(dir, "store.db"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	putDocs(t, db, "c", true, "a", "b", "c")
	if err := db.SetCollectionMeta("c", []byte(`{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	snap := beginSnapshot(t, db)
	// Writes go on while it is open.
	putDocs(t, db, "c", true, "d")
	if _, err := db.Delete("c", []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateCollection("later", 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.SetCollectionMeta("c", []byte(`{"v":2}`)); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	n, err := snap.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != snap.Size() || int64(buf.Len()) != n || n%PageSize != 0 {
		t.Fatalf("wrote %d bytes (buffer %d), Size %d", n, buf.Len(), snap.Size())
	}
	if got := snap.Documents(); got != 3 {
		t.Fatalf("Documents = %d, want 3", got)
	}
	if err := snap.Close(); err != nil {
		t.Fatal(err)
	}
	if err := snap.Close(); err == nil {
		t.Fatal("a second Close succeeded")
	}
	copyPath := filepath.Join(dir, "copy.db")
	if err := os.WriteFile(copyPath, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckFileDeep(copyPath); err != nil {
		t.Fatalf("the copy does not pass the deep check: %v", err)
	}
	cp, err := Open(copyPath, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	if ids, err := cp.IDs("c"); err != nil || !slices.Equal(ids, []string{"a", "b", "c"}) {
		t.Fatalf("the copy holds %q, %v", ids, err)
	}
	if names, _ := cp.CollectionNames(); !slices.Equal(names, []string{"c"}) {
		t.Fatalf("the copy's collections: %q", names)
	}
	if md, _ := cp.CollectionMeta("c"); string(md) != `{"v":1}` {
		t.Fatalf("the copy's metadata: %s", md)
	}
	if v, err := cp.Vector("c", "a"); err != nil || !slices.Equal(v, []float32{0, 1}) {
		t.Fatalf("the copy's vector: %v, %v", v, err)
	}
	c, err := cp.LoadCollection("c")
	if err != nil || c.Docs != 3 || c.LastSeq != 3 {
		t.Fatalf("the copy's collection: %+v, %v", c, err)
	}
	if found, err := cp.Consistency(5); err != nil || found != nil {
		t.Fatalf("the copy's consistency: %q, %v", found, err)
	}
	// The store itself has every write.
	if ids, _ := db.IDs("c"); !slices.Equal(ids, []string{"b", "c", "d"}) {
		t.Fatalf("the store holds %q", ids)
	}
}

// TestSnapshotDocuments: the number of documents from the collections' counters, summed;
// -1 when one collection's counters are missing, unchecked or damaged; 0 for an empty
// store.
func TestSnapshotDocuments(t *testing.T) {
	db := openTestDB(t)
	count := func() int {
		t.Helper()
		s, err := db.BeginSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		return s.Documents()
	}
	if n := count(); n != 0 {
		t.Fatalf("empty store: %d", n)
	}
	putDocs(t, db, "a", false, "1", "2")
	putDocs(t, db, "b", false, "1", "2", "3")
	if err := db.CreateCollection("empty", 0, nil); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 5 {
		t.Fatalf("Documents = %d, want 5", n)
	}
	info := [][]byte{bkCols, []byte("b"), bkInfo}
	for _, tc := range []struct {
		name   string
		key, v []byte
	}{
		{"unchecked", keyCountSum, nil},
		{"damaged", keyDocN, []byte{1}},
		{"missing", keyUnitN, nil},
	} {
		setValue(t, db, info, tc.key, tc.v)
		if n := count(); n != -1 {
			t.Errorf("%s counters: %d, want -1", tc.name, n)
		}
		if err := db.update(func(tx *bolt.Tx) error {
			b, _ := colBucket(tx, "b", false)
			return putCounts(b, 3, 3)
		}); err != nil {
			t.Fatal(err)
		}
		if n := count(); n != 5 {
			t.Fatalf("restored: %d", n)
		}
	}
	// A collection without its info bucket (damage): -1, not a crash.
	if err := db.update(func(tx *bolt.Tx) error {
		b, _ := colBucket(tx, "b", false)
		return b.DeleteBucket(bkInfo)
	}); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != -1 {
		t.Fatalf("a collection without counters: %d", n)
	}
}

// failWriter fails after n bytes.
type failWriter struct{ n int }

var errFull = errors.New("disk full")

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		k := w.n
		w.n = 0
		return k, errFull
	}
	w.n -= len(p)
	return len(p), nil
}

// TestSnapshotWriteFails: a writer's error is WriteTo's (not ErrCorrupt: nothing is
// damaged), and the snapshot can still be closed.
func TestSnapshotWriteFails(t *testing.T) {
	db := openTestDB(t)
	putDocs(t, db, "c", false, "a")
	s := beginSnapshot(t, db)
	for _, room := range []int{0, 100, PageSize + 10, 3 * PageSize} {
		// bbolt words the writer's error into its own ("meta 0 copy: disk full").
		n, err := s.WriteTo(&failWriter{n: room})
		if err == nil || !strings.Contains(err.Error(), errFull.Error()) || errors.Is(err, ErrCorrupt) || n > int64(room) {
			t.Fatalf("room %d: wrote %d, %v", room, n, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotAfterClose: a snapshot of a closed store cannot begin.
func TestSnapshotAfterClose(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "store.db"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if s, err := db.BeginSnapshot(); err == nil || s != nil {
		t.Fatalf("BeginSnapshot of a closed store: %v, %v", s, err)
	}
	if tx, err := db.Begin(); err == nil || tx != nil {
		t.Fatalf("Begin of a closed store: %v, %v", tx, err)
	}
}
