package memory

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/agentmem/memory/internal/memtest"
	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/vectorstore"
	bolt "go.etcd.io/bbolt"
)

// The tests here damage store.db where it matters, not at random: one bit of a stored key
// (a document id, a vector's index id), a field of a bbolt leaf element's header (its key
// size, value size, position), a byte of a collection's counters. Each finds the bytes
// through bbolt itself (a read transaction's keys and values point into the mapped file).

// boltElem is where a key/value element lies in a bbolt file: the offsets of its key, its
// value and its leaf element header (16 bytes: flags, pos, ksize, vsize; pos counts from
// the header).
type boltElem struct{ key, val, hdr int64 }

// locateElem finds the element of key in the bucket at path (nested bucket names) of the
// closed bbolt file file.
func locateElem(t *testing.T, file string, path [][]byte, key []byte) boltElem {
	t.Helper()
	db, err := bolt.Open(file, 0o644, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	base := db.Info().Data
	ps := int64(db.Info().PageSize)
	var e boltElem
	if err := db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(path[0])
		for _, p := range path[1:] {
			b = b.Bucket(p)
		}
		k, v := b.Cursor().Seek(key)
		if !bytes.Equal(k, key) {
			return fmt.Errorf("key %q not stored", key)
		}
		e.key = int64(uintptr(unsafe.Pointer(&k[0])) - base)
		e.val = -1 // a bucket: its value is not handed out
		if len(v) > 0 {
			e.val = int64(uintptr(unsafe.Pointer(&v[0])) - base)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(path) > 1 && (e.key < 0 || e.key+int64(len(key)) > int64(len(raw)) || !bytes.Equal(raw[e.key:e.key+int64(len(key))], key)) {
		// Not in the mapped file: bbolt handed out a copy of a bucket kept inline in its
		// parent's value (small enough: under a quarter of a page).
		return locateInline(t, file, path[:len(path)-1], path[len(path)-1], key)
	}
	le := binary.LittleEndian
	// The leaf page holding the element starts at a page boundary at or before the key; a
	// bucket stored inline in its parent's value has its own small page header inside it.
	for start := e.key - 16; start >= 0 && e.key-start < 4*ps; start-- {
		if le.Uint16(raw[start+8:]) != 0x02 { // a leaf page
			continue
		}
		n := int64(le.Uint16(raw[start+10:]))
		for i := range n {
			h := start + 16 + 16*i
			if h+16 > int64(len(raw)) {
				break
			}
			if h+int64(le.Uint32(raw[h+4:])) == e.key && int64(le.Uint32(raw[h+8:])) == int64(len(key)) {
				e.hdr = h
				return e
			}
		}
	}
	t.Fatalf("no leaf element header found for key %q", key)
	return e
}

// locateInline finds the element of key in bucket name, a bucket small enough to be kept
// inline in its parent's leaf element (a collection's info bucket), of the bucket at
// parent (bbolt hands out a copy of such a bucket's bytes, not the mapped file's).
func locateInline(t *testing.T, file string, parent [][]byte, name, key []byte) boltElem {
	t.Helper()
	e, ok := findInline(t, file, parent, name, key)
	if !ok {
		t.Fatalf("key %q not in inline bucket %q", key, name)
	}
	return e
}

// findInline is locateInline; false when the bucket does not hold key.
func findInline(t *testing.T, file string, parent [][]byte, name, key []byte) (boltElem, bool) {
	t.Helper()
	p := locateElem(t, file, parent, name)
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	page := p.key + int64(len(name)) + 16 // the value: a bucket header, then its page
	if le.Uint16(raw[page+8:]) != 0x02 {
		t.Fatalf("bucket %q is not stored inline", name)
	}
	for i := range int64(le.Uint16(raw[page+10:])) {
		h := page + 16 + 16*i
		k := h + int64(le.Uint32(raw[h+4:]))
		ks := int64(le.Uint32(raw[h+8:]))
		if bytes.Equal(raw[k:k+ks], key) {
			return boltElem{key: k, val: k + ks, hdr: h}, true
		}
	}
	return boltElem{}, false
}

// xorByte flips the bits mask of the byte at off of file.
func xorByte(t *testing.T, file string, off int64, mask byte) {
	t.Helper()
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= mask
	if _, err := f.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
}

// integrityStore makes a closed store of 300 documents "d0000", "d0010", ... (ids 10 apart,
// so that a flipped last digit names a document that is not stored and sorts where the
// damaged one did: bbolt's own check sees nothing), with a hash embedder.
func integrityStore(t *testing.T) (string, Option) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "s")
	emb := WithEmbedder(vectorstore.NewHashEmbedder(16))
	m, err := Open(dir, emb)
	if err != nil {
		t.Fatal(err)
	}
	var docs []Document
	for i := range 300 {
		docs = append(docs, Document{ID: fmt.Sprintf("d%04d", i*10), Text: fmt.Sprintf("word%d shared text of document %d", i*10, i)})
	}
	if err := m.Add(bg, docs...); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, emb
}

var colPath = func(col string, sub []byte) [][]byte { return [][]byte{bkCols, []byte(col), sub} }

// TestKeyFlipIsCorrupt: one flipped bit in a stored document id (d1230 -> d1231, still in
// key order) is ErrCorrupt from Get under the old id and the new one, and from a search
// that finds the document, and check reports the damaged record (issue 21, point 2). Before
// key-bound checksums, Get(old) said not found, Get(new) returned the document under the
// wrong id, the search dropped it silently and check passed.
func TestKeyFlipIsCorrupt(t *testing.T) {
	dir, emb := integrityStore(t)
	e := locateElem(t, filepath.Join(dir, dbName), colPath(DefaultCollection, bkDocs), []byte("d1230"))
	xorByte(t, filepath.Join(dir, dbName), e.key+4, 0x01)

	m := openT(t, dir, emb, ReadOnly())
	for _, id := range []string{"d1230", "d1231"} {
		if d, err := m.Get(bg, id); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Get(%q) after a flipped key bit: %q, %v; want ErrCorrupt", id, d.ID, err)
		}
	}
	if d, err := m.Get(bg, "d1240"); err != nil || d.ID != "d1240" {
		t.Errorf("Get of an undamaged document beside it: %v", err)
	}
	// The dense query is the document's whole text: the hashing embedder ranks it first
	// only then (with "word1230" alone it is not in the top 5, and no search touches it).
	for mode, q := range map[Mode]string{BM25: "word1230", Dense: "word1230 shared text of document 123"} {
		res, err := m.Search(bg, q, WithMode(mode), TopK(5))
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s search for the damaged document: %v, %v; want ErrCorrupt", mode, ids(res), err)
		}
	}
	rep, err := m.Check(bg, false)
	if err != nil {
		t.Fatal(err)
	}
	st := find(t, rep, DefaultCollection, "store")
	if rep.OK() || !rep.StoreDamaged() || !strings.Contains(st.String(), "d1231") {
		t.Fatalf("check: %v", rep.Indexes)
	}
	if !strings.Contains(st.String(), "restore store.db from a backup") {
		t.Errorf("check's line %q does not say what to do", st)
	}
}

// TestVectorKeyFlipIsCorrupt: a flipped bit in a stored vector's index id is ErrCorrupt
// from Get (which returns a document's vector), not a document without its embedding, and
// check names the damaged key.
func TestVectorKeyFlipIsCorrupt(t *testing.T) {
	dir, emb := integrityStore(t)
	e := locateElem(t, filepath.Join(dir, dbName), colPath(DefaultCollection, bkVecs), []byte("d0500"))
	xorByte(t, filepath.Join(dir, dbName), e.key+4, 0x01)

	m := openT(t, dir, emb, ReadOnly())
	if d, err := m.Get(bg, "d0500"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Get after its vector's key was flipped: %d values, %v; want ErrCorrupt", len(d.Embedding), err)
	}
	rep, err := m.Check(bg, false)
	if err != nil {
		t.Fatal(err)
	}
	if st := find(t, rep, DefaultCollection, "store"); rep.OK() || !strings.Contains(st.String(), "d0501") {
		t.Fatalf("check: %s", st)
	}
}

// TestLeafHeaderFlip: a flipped bit in the leaf element header of a stored document (its
// position, key size or value size) is ErrCorrupt or the right document from Get and
// search, never "not found", and check reports it.
func TestLeafHeaderFlip(t *testing.T) {
	for _, c := range []struct {
		name string
		off  int64
		mask byte
	}{{"pos", 4, 0x04}, {"pos-high", 5, 0x01}, {"ksize", 8, 0x01}, {"ksize-grow", 8, 0x02}, {"vsize", 12, 0x01}, {"vsize-high", 13, 0x02}} {
		t.Run(c.name, func(t *testing.T) {
			dir, emb := integrityStore(t)
			e := locateElem(t, filepath.Join(dir, dbName), colPath(DefaultCollection, bkDocs), []byte("d1230"))
			xorByte(t, filepath.Join(dir, dbName), e.hdr+c.off, c.mask)
			m, err := Open(dir, emb, ReadOnly())
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Open: %v", err)
				}
				return
			}
			defer m.Close()
			if d, err := m.Get(bg, "d1230"); !errors.Is(err, ErrCorrupt) && (err != nil || d.Text != "word1230 shared text of document 123") {
				t.Errorf("Get: %q, %v; want ErrCorrupt or the document", d.Text, err)
			}
			if res, err := m.Search(bg, "word1230", WithMode(BM25), TopK(3)); !errors.Is(err, ErrCorrupt) && (err != nil || len(res) == 0 || res[0].ID != "d1230") {
				t.Errorf("search: %v, %v; want ErrCorrupt or the document", ids(res), err)
			}
			rep, err := m.Check(bg, false)
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatal(err)
			}
			if err == nil && (rep.OK() || !rep.StoreDamaged()) {
				t.Errorf("check reports no damage: %v", rep.Indexes)
			}
		})
	}
}

// countLog records whether a log told of an index rebuilt or of counters counted again.
type countLog struct{ bytes.Buffer }

func (l *countLog) logger() *slog.Logger { return slog.New(slog.NewTextHandler(&l.Buffer, nil)) }

// TestDamagedCounters: a flipped byte in a collection's ndocs or nunits is never printed
// by Count, nor carried forward by a write, nor a reason to rebuild a healthy index: the
// collection is counted again (in memory on a read-only open, persisted on a writable one);
// check reports it and check --repair fixes it (issue 21, point 3).
func TestDamagedCounters(t *testing.T) {
	for _, key := range [][]byte{keyDocN, keyUnitN} {
		t.Run(string(key), func(t *testing.T) {
			dir, emb := integrityStore(t)
			e := locateInline(t, filepath.Join(dir, dbName), [][]byte{bkCols, []byte(DefaultCollection)}, bkInfo, key)
			xorByte(t, filepath.Join(dir, dbName), e.val+7, 0x10) // 300 -> 316 (or 284)

			var lg countLog
			ro := openT(t, dir, emb, ReadOnly(), WithLogger(lg.logger()))
			if n := memtest.Count(t, ro); n != 300 {
				t.Errorf("read-only Count = %d, want 300", n)
			}
			if res, err := ro.Search(bg, "word10", WithMode(BM25), TopK(1)); err != nil || len(res) != 1 {
				t.Fatalf("search: %v, %v", res, err)
			}
			if strings.Contains(lg.String(), "cannot be trusted") {
				t.Errorf("a healthy index was rebuilt for a damaged counter:\n%s", lg.String())
			}
			rep, err := ro.Check(bg, false)
			if err != nil {
				t.Fatal(err)
			}
			if c := find(t, rep, DefaultCollection, countersEntry); rep.OK() || len(c.Problems) == 0 || c.Repaired || rep.StoreDamaged() || !rep.Repairable() {
				t.Errorf("read-only check: %v", rep.Indexes)
			}
			ro.Close()

			lg.Reset()
			m := openT(t, dir, emb, WithLogger(lg.logger()))
			rep, err = m.Check(bg, true)
			if err != nil {
				t.Fatal(err)
			}
			if c := find(t, rep, DefaultCollection, countersEntry); !rep.OK() || !c.Repaired {
				t.Errorf("check --repair: %s", c)
			}
			if err := m.Delete(bg, "d0000"); err != nil {
				t.Fatal(err)
			}
			if n := memtest.Count(t, m); n != 299 {
				t.Errorf("Count after a delete = %d, want 299", n)
			}
			if strings.Contains(lg.String(), "cannot be trusted") {
				t.Errorf("a healthy index was rebuilt for a damaged counter:\n%s", lg.String())
			}
			m.Close()
			if d, u, ok := persistedCounts(t, dir, DefaultCollection); !ok || d != 299 || u != 299 {
				t.Errorf("persisted counters %d, %d (%v), want 299", d, u, ok)
			}
		})
	}
}

// TestDamagedCounterNotCarriedForward: a write to a collection whose persisted counters
// are damaged (behind the back of an open store: they are read again by the write) counts
// them again instead of adding to the damaged value.
func TestDamagedCounterNotCarriedForward(t *testing.T) {
	dir, _ := integrityStore(t)
	e := locateInline(t, filepath.Join(dir, dbName), [][]byte{bkCols, []byte(DefaultCollection)}, bkInfo, keyDocN)
	xorByte(t, filepath.Join(dir, dbName), e.val+6, 0x01) // 300 -> 556
	sdb, err := store.Open(filepath.Join(dir, dbName), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	w, err := sdb.Delete(DefaultCollection, []string{"d0000"})
	if err != nil {
		t.Fatal(err)
	}
	if w.Docs != 299 || w.Units != 299 {
		t.Fatalf("after a delete: %d documents, %d index ids; want 299", w.Docs, w.Units)
	}
}

// TestGuardMessages: a panic turned into an error (a damaged page read) says what failed
// without the words of a Go crash (issue 21, point 9).
func TestGuardMessages(t *testing.T) {
	err := store.Guard("reading", func() error {
		var s []int
		_ = s[len(os.Args)+3] // index out of range
		return nil
	})
	if !errors.Is(err, ErrCorrupt) || strings.Contains(err.Error(), "panic") || strings.Contains(err.Error(), "runtime error") {
		t.Fatalf("Guard's error: %v", err)
	}
}

// TestUncheckedCountersRecountedBeforeIndexRebuilt: counters without a checksum (an older
// version's) that disagree with a healthy index's count are counted again on open, and
// the index is kept (before, every open distrusted the index and rebuilt it); a writable
// open checks such counters once and persists them with their checksum.
func TestUncheckedCountersRecountedBeforeIndexRebuilt(t *testing.T) {
	dir, emb := integrityStore(t)
	db, err := bolt.Open(filepath.Join(dir, dbName), 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		info := tx.Bucket(bkCols).Bucket([]byte(DefaultCollection)).Bucket(bkInfo)
		return errors.Join(info.Put(keyUnitN, []byte{0, 0, 0, 0, 0, 0, 1, 0}), info.Delete(keyCountSum))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	var lg countLog
	ro := openT(t, dir, emb, ReadOnly(), WithLogger(lg.logger()))
	if res, err := ro.Search(bg, "word10", WithMode(BM25), TopK(1)); err != nil || len(res) != 1 {
		t.Fatalf("search: %v, %v", res, err)
	}
	if strings.Contains(lg.String(), "cannot be trusted") {
		t.Errorf("a healthy index was distrusted for an unchecked counter:\n%s", lg.String())
	}
	ro.Close()
	m := openT(t, dir, emb)
	if n := memtest.Count(t, m); n != 300 {
		t.Errorf("Count = %d", n)
	}
	m.Close()
	if _, ok := findInline(t, filepath.Join(dir, dbName), [][]byte{bkCols, []byte(DefaultCollection)}, bkInfo, keyCountSum); !ok {
		t.Errorf("a writable open did not persist the counters' checksum")
	}
	if d, u, ok := persistedCounts(t, dir, DefaultCollection); !ok || d != 300 || u != 300 {
		t.Errorf("persisted %d, %d (%v)", d, u, ok)
	}
}
