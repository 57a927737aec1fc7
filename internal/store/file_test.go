package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// Offsets in a bbolt meta page (after its 16-byte page header).
const (
	metaOff     = 16
	metaPSize   = metaOff + 8
	metaRoot    = metaOff + 16
	metaFree    = metaOff + 32
	metaPgid    = metaOff + 40
	metaTxid    = metaOff + 48
	metaSum     = metaOff + 56
	metaVersion = metaOff + 4
)

// resum recomputes the checksum of the meta page at the start of page.
func resum(page []byte) {
	h := fnv.New64a()
	h.Write(page[metaOff:metaSum])
	binary.LittleEndian.PutUint64(page[metaSum:], h.Sum64())
}

// storeFile makes a store file with a few writes and deletes (free pages in its freelist),
// closes it and returns its path and bytes.
func storeFile(t testing.TB, dir string) (string, []byte) {
	t.Helper()
	path := filepath.Join(dir, "store.db")
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		var puts []Put
		for i := range 200 {
			id := fmt.Sprintf("d%04d", i)
			puts = append(puts, Put{ID: id, Record: &Record{Text: strings.Repeat(fmt.Sprint(round, i), 40)}, Units: []string{id}})
		}
		if _, err := db.Write("c", puts, 200, 200); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, raw
}

// freshFile makes a store file that Open created and nothing was written to.
func freshFile(t testing.TB, dir string) (string, []byte) {
	t.Helper()
	path := filepath.Join(dir, "fresh.db")
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, raw
}

// currentPage is the offset of the current meta page of store file raw.
func currentPage(t testing.TB, raw []byte) int {
	t.Helper()
	m0, err0 := readBoltMeta(bytes.NewReader(raw), 0)
	m1, err1 := readBoltMeta(bytes.NewReader(raw), PageSize)
	if err0 != nil || err1 != nil {
		t.Fatalf("meta pages: %v, %v", err0, err1)
	}
	if m1.txid > m0.txid {
		return PageSize
	}
	return 0
}

func writeFile(t testing.TB, path string, raw []byte) string {
	t.Helper()
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCheckFile: a whole store passes; a missing, empty, foreign, truncated one, or one
// whose current meta page points past its end, is ErrCorrupt naming the file and saying
// what is wrong.
func TestCheckFile(t *testing.T) {
	dir := t.TempDir()
	path, raw := storeFile(t, dir)
	if err := CheckFile(path); err != nil {
		t.Fatalf("a whole store: %v", err)
	}
	_, fresh := freshFile(t, dir)
	cur := currentPage(t, raw)
	meta := func(off int, v uint64) []byte {
		b := bytes.Clone(raw)
		binary.LittleEndian.PutUint64(b[cur+off:], v)
		resum(b[cur:])
		return b
	}
	pgid := binary.LittleEndian.Uint64(raw[cur+metaPgid:])
	both := bytes.Clone(raw)
	both[metaOff] ^= 1
	both[PageSize+metaOff] ^= 1
	for _, tc := range []struct {
		name string
		raw  []byte // nil: no file
		want string
	}{
		{"missing", nil, "is missing"},
		{"empty", []byte{}, "is empty"},
		{"foreign", bytes.Repeat([]byte("not bbolt "), 10000), "no valid bbolt meta page"},
		{"short", []byte("x"), "no valid bbolt meta page"},
		{"both meta pages damaged", both, "no valid bbolt meta page"},
		{"truncated", raw[:(pgid-1)*PageSize], "is truncated"},
		{"cut in a page", raw[:pgid*PageSize-1], "is truncated"},
		{"fewer than 2 pages", meta(metaPgid, 1), "is truncated"},
		{"root past the end", meta(metaRoot, pgid), "points past the end"},
		{"freelist past the end", meta(metaFree, pgid+3), "points past the end"},
		{"a fresh store", fresh, ""},
		{"freelist not persisted", meta(metaFree, ^uint64(0)), ""},
		{"longer than its pages", append(bytes.Clone(raw), make([]byte, PageSize)...), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "store.db")
			if tc.raw != nil {
				writeFile(t, p, tc.raw)
			}
			err := CheckFile(p)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckFile: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckFile: %v; want ErrCorrupt naming the file, %q", err, tc.want)
			}
		})
	}
}

// TestCheckFileHugePageCount: a meta page (its checksum valid) that names more pages than
// the file holds is a truncated file, however many it names. CheckFile multiplies the page
// count by the page size in int64, which wraps: 2^50 pages of 16 KiB is 2^64 bytes, 0 after
// the wrap, and the file passes; bbolt then maps it, and its consistency check (Consistency)
// walks 2^50 pages, which never ends (checkFreelist passes it too).
func TestCheckFileHugePageCount(t *testing.T) {
	_, fresh := freshFile(t, t.TempDir())
	for _, pages := range []uint64{1 << 50, 1<<63 + 4, ^uint64(0) - 1} {
		b := bytes.Clone(fresh)
		for _, off := range []int{0, PageSize} {
			binary.LittleEndian.PutUint64(b[off+metaPgid:], pages)
			resum(b[off:])
		}
		p := writeFile(t, filepath.Join(t.TempDir(), "store.db"), b)
		if err := CheckFile(p); !errors.Is(err, ErrCorrupt) {
			t.Errorf("a meta page naming %d pages in a file of %d bytes: %v", pages, len(b), err)
		}
	}
}

// TestCurrentMeta: the newer of two valid meta pages; the valid one of a damaged pair,
// looked for one page of the file's own size in (4 KiB or PageSize).
func TestCurrentMeta(t *testing.T) {
	dir := t.TempDir()
	_, raw := storeFile(t, dir)
	m0, _ := readBoltMeta(bytes.NewReader(raw), 0)
	m1, _ := readBoltMeta(bytes.NewReader(raw), PageSize)
	newer, older := m0, m1
	if m1.txid > m0.txid {
		newer, older = m1, m0
	}
	if newer.txid != older.txid+1 {
		t.Fatalf("meta pages at transactions %d and %d", m0.txid, m1.txid)
	}
	size := int64(len(raw))
	if m, ok := currentMeta(bytes.NewReader(raw), size); !ok || m != newer {
		t.Fatalf("currentMeta = %+v, %v; want %+v", m, ok, newer)
	}
	for i, want := range []boltMeta{m1, m0} { // damage page i: the other one is read
		b := bytes.Clone(raw)
		b[i*PageSize+metaSum] ^= 0xff
		if m, ok := currentMeta(bytes.NewReader(b), size); !ok || m != want {
			t.Errorf("meta page %d damaged: %+v, %v; want %+v", i, m, ok, want)
		}
	}
	// A 4 KiB store with its first meta page damaged: the second is found at 4096.
	p4 := filepath.Join(dir, "4k.db")
	b4, err := bolt.Open(p4, 0o644, &bolt.Options{PageSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	b4.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("x")); return err })
	b4.Close()
	raw4, _ := os.ReadFile(p4)
	raw4[metaVersion] = 9
	if m, ok := currentMeta(bytes.NewReader(raw4), int64(len(raw4))); !ok || m.pageSize != 4096 {
		t.Fatalf("4 KiB store, first meta damaged: %+v, %v", m, ok)
	}
	both := bytes.Clone(raw)
	both[metaSum] ^= 1
	both[PageSize+metaSum] ^= 1
	if m, ok := currentMeta(bytes.NewReader(both), size); ok {
		t.Fatalf("both damaged: %+v", m)
	}
}

// TestReadBoltMeta: a meta page is read when its magic, version, checksum and page size
// are right; each wrong is an error, never a meta.
func TestReadBoltMeta(t *testing.T) {
	_, raw := freshFile(t, t.TempDir())
	page := raw[:PageSize]
	m, err := readBoltMeta(bytes.NewReader(page), 0)
	if err != nil || m.pageSize != PageSize || m.txid != 0 || m.root != 3 || m.freelist != 2 || m.pgid != 4 {
		t.Fatalf("a fresh store's first meta page: %+v, %v", m, err)
	}
	set32 := func(off int, v uint32, fix bool) []byte {
		b := bytes.Clone(page)
		binary.LittleEndian.PutUint32(b[off:], v)
		if fix {
			resum(b)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"magic", set32(metaOff, 0xDEADBEEF, true), "not a bbolt meta page"},
		{"version", set32(metaVersion, 3, true), "not a bbolt meta page"},
		{"checksum", set32(metaRoot, 5, false), "checksum mismatch"},
		{"page size not a power of two", set32(metaPSize, 3000, true), "page size 3000"},
		{"page size too small", set32(metaPSize, 256, true), "page size 256"},
		{"page size zero", set32(metaPSize, 0, true), "page size 0"},
		{"short", page[:60], "EOF"},
	} {
		if m, err := readBoltMeta(bytes.NewReader(tc.b), 0); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %+v, %v; want %q", tc.name, m, err, tc.want)
		}
	}
	for _, ps := range []uint32{512, 4096, 1 << 16} {
		if m, err := readBoltMeta(bytes.NewReader(set32(metaPSize, ps, true)), 0); err != nil || m.pageSize != ps {
			t.Errorf("page size %d: %+v, %v", ps, m, err)
		}
	}
}

// FuzzReadBoltMeta: any bytes read as a meta page are an error, or a meta page whose fields
// are the bytes' own, whose checksum holds and whose page size is a power of two from 512:
// writing the fields read back into the bytes and summing them again changes nothing.
func FuzzReadBoltMeta(f *testing.F) {
	_, raw := freshFile(f, f.TempDir())
	f.Add(raw[:80])
	f.Add(raw[PageSize : PageSize+80])
	damaged := bytes.Clone(raw[:80])
	damaged[metaPSize] ^= 0x10
	f.Add(damaged)
	f.Add(make([]byte, 80))
	f.Add([]byte("short"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := readBoltMeta(bytes.NewReader(b), 0)
		if err != nil {
			return
		}
		if len(b) < 80 {
			t.Fatalf("read a meta page of %d bytes", len(b))
		}
		if m.pageSize < 512 || m.pageSize&(m.pageSize-1) != 0 {
			t.Fatalf("page size %d", m.pageSize)
		}
		again := bytes.Clone(b[:80])
		le := binary.LittleEndian
		le.PutUint32(again[metaPSize:], m.pageSize)
		le.PutUint64(again[metaRoot:], m.root)
		le.PutUint64(again[metaFree:], m.freelist)
		le.PutUint64(again[metaPgid:], m.pgid)
		le.PutUint64(again[metaTxid:], m.txid)
		resum(again)
		if !bytes.Equal(again, b[:80]) {
			t.Fatalf("meta %+v does not re-encode to its bytes", m)
		}
	})
}

// FuzzCheckFile: CheckFile of any file is nil or ErrCorrupt, never a panic; a file it
// passes has a meta page whose pages lie inside it.
func FuzzCheckFile(f *testing.F) {
	_, fresh := freshFile(f, f.TempDir())
	f.Add(fresh)
	f.Add(fresh[:PageSize])
	f.Add(fresh[:PageSize+100])
	f.Add([]byte{})
	f.Add([]byte("garbage"))
	cut := bytes.Clone(fresh[:2*PageSize])
	cut[16] ^= 1
	f.Add(cut)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, "f.db")
		writeFile(t, path, b)
		err := CheckFile(path)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		m, ok := currentMeta(bytes.NewReader(b), int64(len(b)))
		if !ok || m.pgid > uint64(len(b))/uint64(m.pageSize) || m.root >= m.pgid {
			t.Fatalf("passed a file whose meta %+v (%v) does not fit its %d bytes", m, ok, len(b))
		}
	})
}

// TestNeverWritten: a store that Open made and nothing was written to (or what is left of
// one cut short in its first pages) provably holds nothing; one written to, a missing
// file, a foreign one, or one whose second meta page is damaged, does not.
func TestNeverWritten(t *testing.T) {
	dir := t.TempDir()
	_, fresh := freshFile(t, dir)
	_, written := storeFile(t, dir)
	p4 := filepath.Join(dir, "4k.db")
	b4, err := bolt.Open(p4, 0o644, &bolt.Options{PageSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	b4.Close()
	raw4, _ := os.ReadFile(p4)
	damaged2 := bytes.Clone(fresh)
	damaged2[PageSize+metaSum] ^= 1
	damaged1 := bytes.Clone(fresh)
	damaged1[metaSum] ^= 1
	otherSize := bytes.Clone(fresh)
	binary.LittleEndian.PutUint32(otherSize[PageSize+metaPSize:], 4096)
	resum(otherSize[PageSize:])
	for _, tc := range []struct {
		name string
		raw  []byte
		want bool
	}{
		{"fresh", fresh, true},
		{"fresh, 4 KiB pages", raw4, true},
		{"cut after the first meta page", fresh[:PageSize], true},
		{"cut in the second meta page", fresh[:PageSize+50], true},
		{"cut before the data pages", fresh[:2*PageSize], true},
		{"written", written, false},
		{"cut in the first meta page", fresh[:50], false},
		{"first meta page damaged", damaged1, false},
		{"second meta page damaged", damaged2, false},
		{"second meta page of another page size", otherSize, false},
		{"foreign", bytes.Repeat([]byte{7}, 3*PageSize), false},
		{"empty", nil, false},
	} {
		p := writeFile(t, filepath.Join(dir, "t.db"), tc.raw)
		if got := NeverWritten(p); got != tc.want {
			t.Errorf("%s: NeverWritten = %v, want %v", tc.name, got, tc.want)
		}
	}
	if NeverWritten(filepath.Join(dir, "missing.db")) {
		t.Error("a missing file was never written")
	}
	// What Open makes of a file NeverWritten accepts: an empty store.
	p := writeFile(t, filepath.Join(dir, "again.db"), fresh)
	db, err := Open(p, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if !db.Empty() {
		t.Fatal("a never-written store is not empty")
	}
	if err := db.CreateCollection("c", 0, nil); err != nil {
		t.Fatal(err)
	}
	if NeverWritten(p) {
		t.Fatal("a store with a collection was never written")
	}
}

// TestEmpty: empty is true of a database with no bucket, false once one is made, and true
// again when it is deleted.
func TestEmpty(t *testing.T) {
	db := openTestDB(t)
	if !empty(db.bolt) {
		t.Fatal("a new store is not empty")
	}
	if err := db.CreateCollection("c", 0, nil); err != nil {
		t.Fatal(err)
	}
	if empty(db.bolt) {
		t.Fatal("a store with a collection is empty")
	}
	if err := db.update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bkCols) }); err != nil {
		t.Fatal(err)
	}
	if !empty(db.bolt) {
		t.Fatal("a store whose buckets were deleted is not empty")
	}
}

// TestCheckFileDeep: a whole bbolt file passes; one CheckFile refuses is refused the same;
// a damaged page that bbolt would panic on is ErrCorrupt naming the file; a file a writer
// holds is ErrLocked, not damage.
func TestCheckFileDeep(t *testing.T) {
	dir := t.TempDir()
	path, raw := storeFile(t, dir)
	if err := CheckFileDeep(path); err != nil {
		t.Fatalf("a whole store: %v", err)
	}
	if err := CheckFileDeep(filepath.Join(dir, "missing.db")); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "is missing") {
		t.Fatalf("missing: %v", err)
	}
	// The root bucket's page, made a page of no known type.
	cur := currentPage(t, raw)
	root := binary.LittleEndian.Uint64(raw[cur+metaRoot:])
	bad := bytes.Clone(raw)
	binary.LittleEndian.PutUint16(bad[root*PageSize+8:], 0x40)
	p := writeFile(t, filepath.Join(dir, "bad.db"), bad)
	if err := CheckFile(p); err != nil {
		t.Fatalf("CheckFile reads only the meta pages: %v", err)
	}
	err := CheckFileDeep(p)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), p) || strings.Contains(err.Error(), "panic:") {
		t.Fatalf("a damaged page: %v", err)
	}
	// A leaf page of the documents, its element count blown up.
	bad = bytes.Clone(raw)
	n := 0
	for off := 4 * PageSize; off+PageSize <= len(bad); off += PageSize {
		if binary.LittleEndian.Uint16(bad[off+8:]) == 0x02 && binary.LittleEndian.Uint16(bad[off+10:]) > 4 {
			binary.LittleEndian.PutUint16(bad[off+10:], 0xfff0)
			n++
		}
	}
	if n == 0 {
		t.Fatal("no leaf page found")
	}
	p = writeFile(t, filepath.Join(dir, "bad2.db"), bad)
	if err := CheckFileDeep(p); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("leaf pages with too many elements: %v", err)
	}
	// Held by a writer: ErrLocked (after CheckFileDeep's one-second wait).
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := CheckFileDeep(path); !errors.Is(err, ErrLocked) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("a store a writer holds: %v", err)
	}
}

// TestWalk: walk reads every bucket, nested ones included, of a healthy store without an
// error.
func TestWalk(t *testing.T) {
	db := openTestDB(t)
	putDocs(t, db, "a", true, "x", "y")
	if err := db.update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("deep"))
		for _, name := range []string{"1", "2", "3"} {
			if err != nil {
				return err
			}
			if err = b.Put([]byte("k"), []byte("v")); err != nil {
				return err
			}
			b, err = b.CreateBucket([]byte(name))
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := walk(db.bolt); err != nil {
		t.Fatal(err)
	}
}

// TestPageLayout: the page size and high water mark of the first meta page; an error for a
// file that is not a store.
func TestPageLayout(t *testing.T) {
	dir := t.TempDir()
	path, raw := storeFile(t, dir)
	ps, pages, err := PageLayout(path)
	if err != nil || ps != PageSize || pages < 4 || int64(pages)*ps > int64(len(raw)) {
		t.Fatalf("PageLayout = %d, %d, %v (file of %d bytes)", ps, pages, err, len(raw))
	}
	fp, _ := freshFile(t, dir)
	if ps, pages, err := PageLayout(fp); err != nil || ps != PageSize || pages != 4 {
		t.Fatalf("a fresh store: %d, %d, %v", ps, pages, err)
	}
	if _, _, err := PageLayout(filepath.Join(dir, "missing.db")); err == nil {
		t.Fatal("a missing file has a layout")
	}
	p := writeFile(t, filepath.Join(dir, "foreign.db"), bytes.Repeat([]byte{1}, 4096))
	if _, _, err := PageLayout(p); err == nil {
		t.Fatal("a foreign file has a layout")
	}
}

// TestCheckFreelist: the freelist page of a healthy store passes; one that is not a
// freelist page, runs past the last page, lists more ids than it has room for, or lists a
// page outside the file, is an error saying so.
func TestCheckFreelist(t *testing.T) {
	dir := t.TempDir()
	path, raw := storeFile(t, dir)
	if err := checkFreelist(path); err != nil {
		t.Fatalf("a healthy store: %v", err)
	}
	cur := currentPage(t, raw)
	le := binary.LittleEndian
	free := int(le.Uint64(raw[cur+metaFree:])) * PageSize
	pgid := le.Uint64(raw[cur+metaPgid:])
	count := le.Uint16(raw[free+10:])
	if count == 0 || count == 0xFFFF {
		t.Fatalf("the test store's freelist lists %d ids", count)
	}
	edit := func(fn func(b []byte)) []byte {
		b := bytes.Clone(raw)
		fn(b)
		return b
	}
	for _, tc := range []struct {
		name string
		raw  []byte
		want string // "": no error
	}{
		{"flags", edit(func(b []byte) { le.PutUint16(b[free+8:], 0x02) }), "is not a freelist page"},
		{"overflow", edit(func(b []byte) { le.PutUint32(b[free+12:], uint32(pgid)) }), "runs past the last page"},
		{"count", edit(func(b []byte) { le.PutUint16(b[free+10:], PageSize/8) }), "room for"},
		{"extended count", edit(func(b []byte) {
			le.PutUint16(b[free+10:], 0xFFFF)
			le.PutUint64(b[free+16:], 1<<40)
		}), "room for"},
		{"id past the end", edit(func(b []byte) { le.PutUint64(b[free+16:], pgid+5) }), "outside the file"},
		{"id of a meta page", edit(func(b []byte) { le.PutUint64(b[free+16:], 1) }), "outside the file"},
		{"not persisted", edit(func(b []byte) {
			le.PutUint64(b[cur+metaFree:], ^uint64(0))
			resum(b[cur:])
		}), ""},
		{"no meta page", bytes.Repeat([]byte{3}, 2*PageSize), "no valid meta page"},
		{"cut before the freelist", raw[:free], "cannot be read"},
	} {
		p := writeFile(t, filepath.Join(dir, "t.db"), tc.raw)
		err := checkFreelist(p)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if err := checkFreelist(filepath.Join(dir, "missing.db")); err == nil {
		t.Error("a missing file has a freelist")
	}
}
