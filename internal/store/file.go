package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// CheckFile checks, before bbolt maps it, that the store database at path is whole: not
// missing, not empty, with a valid meta page (bbolt keeps two, each with a checksum) whose
// pages all lie inside the file. bbolt itself maps a truncated file and then panics, or
// faults on pages past its end; an empty file it would silently make a new, empty store.
// Every failure is ErrCorrupt naming the file.
func CheckFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s is missing (the manifest says a store is here; restore the file from a backup, or remove the directory to start over)", ErrCorrupt, path)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	if size == 0 {
		return fmt.Errorf("%w: %s is empty", ErrCorrupt, path)
	}
	best, ok := currentMeta(f, size)
	if !ok {
		return fmt.Errorf("%w: %s has no valid bbolt meta page (damaged or not a store database)", ErrCorrupt, path)
	}
	// pgid pages of pageSize bytes must fit in the file (compared by division: their
	// product overflows for a meta page that names 2^50 pages).
	if best.pageSize == 0 || best.pgid > uint64(size)/uint64(best.pageSize) || best.pgid < 2 {
		return fmt.Errorf("%w: %s is truncated: %d bytes, its meta page says %d pages of %d bytes", ErrCorrupt, path, size, best.pgid, best.pageSize)
	}
	if best.root >= best.pgid || (best.freelist >= best.pgid && best.freelist != ^uint64(0)) {
		return fmt.Errorf("%w: %s: meta page points past the end of the data", ErrCorrupt, path)
	}
	return nil
}

// currentMeta returns the newer valid meta page of the bbolt file f (size bytes long), false
// when it has none. The first meta page is at offset 0 and names the page size; the second
// is one page later, looked for at each power of two when the first is damaged (as bbolt
// does: stores are made with PageSize pages, older ones with 4 KiB).
func currentMeta(f io.ReaderAt, size int64) (boltMeta, bool) {
	if m, err := readBoltMeta(f, 0); err == nil {
		if m2, err := readBoltMeta(f, int64(m.pageSize)); err == nil && m2.txid > m.txid {
			return m2, true
		}
		return m, true
	}
	for ps := int64(1024); ps <= 1<<24 && ps < size; ps <<= 1 {
		if m, err := readBoltMeta(f, ps); err == nil && int64(m.pageSize) == ps {
			return m, true
		}
	}
	return boltMeta{}, false
}

// boltMeta is what CheckFile reads of a bbolt meta page.
type boltMeta struct {
	pageSize                   uint32
	root, freelist, pgid, txid uint64
}

// readBoltMeta reads and validates (magic, version, checksum) the bbolt meta page at off.
// The layout is bbolt's (v1.4, format version 2): a 16-byte page header, then magic,
// version, page size, flags (4 bytes each), the root bucket (page id, sequence), the
// freelist page id, the high water mark page id, the transaction id and an FNV-64a
// checksum of everything before it, in the machine's byte order (little-endian on every
// platform bbolt stores are made on here).
func readBoltMeta(r io.ReaderAt, off int64) (boltMeta, error) {
	var b [16 + 64]byte
	if _, err := r.ReadAt(b[:], off); err != nil {
		return boltMeta{}, err
	}
	p := b[16:]
	le := binary.LittleEndian
	const magic, version = 0xED0CDAED, 2
	if le.Uint32(p[0:]) != magic || le.Uint32(p[4:]) != version {
		return boltMeta{}, errors.New("not a bbolt meta page")
	}
	h := fnv.New64a()
	h.Write(p[:56])
	if h.Sum64() != le.Uint64(p[56:]) {
		return boltMeta{}, errors.New("bbolt meta page checksum mismatch")
	}
	m := boltMeta{pageSize: le.Uint32(p[8:]), root: le.Uint64(p[16:]), freelist: le.Uint64(p[32:]), pgid: le.Uint64(p[40:]), txid: le.Uint64(p[48:])}
	if m.pageSize < 512 || m.pageSize&(m.pageSize-1) != 0 {
		return boltMeta{}, fmt.Errorf("bbolt meta page names page size %d", m.pageSize)
	}
	return m, nil
}

// NeverWritten reports whether the bbolt file at path provably holds nothing: its first
// meta page is whole and valid and still the one bbolt's initialisation wrote (transaction
// 0: root bucket on page 3, freelist on page 2, 4 pages), and its second is either cut off
// or the initial one too (transaction 1). bbolt's first commit rewrites the first meta page
// (transaction 2), so no transaction was ever committed to such a file: it is what a
// creation cut short (a full disk during bbolt's first write) leaves, whatever else is
// missing from it.
func NeverWritten(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	initial := func(m boltMeta, txid uint64) bool {
		return m.txid == txid && m.root == 3 && m.freelist == 2 && m.pgid == 4
	}
	m0, err := readBoltMeta(f, 0)
	if err != nil || !initial(m0, 0) {
		return false
	}
	m1, err := readBoltMeta(f, int64(m0.pageSize))
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true // cut off before the second meta page ends
	}
	return err == nil && initial(m1, 1) && m1.pageSize == m0.pageSize
}

// empty reports whether db holds no bucket at all (a database just created).
func empty(db *bolt.DB) bool {
	empty := true
	db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func([]byte, *bolt.Bucket) error {
			empty = false
			return errStop
		})
	})
	return empty
}

// errStop ends a bbolt iteration early.
var errStop = errors.New("stop")

// CheckFileDeep is CheckFile, then a check of every page the file's root bucket reaches
// and of the freelist (pageCheck: read without bbolt, so that no damaged page can crash
// it, and whatever damage leaves a page's layout wrong is found), then a read of every key
// and value of every bucket, nested ones included, on this goroutine, read-only and
// guarded. For bbolt files that another library maps unchecked, such as Bleve's
// root.bolt: a page pointer flipped there otherwise panics, faults or recurses until the
// stack overflows in Bleve's own goroutines, where nothing can recover it; and for a
// restored backup's store.db. Every failure is ErrCorrupt naming the file.
func CheckFileDeep(path string) error {
	if err := CheckFile(path); err != nil {
		return err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if errors.Is(err, berrors.ErrTimeout) {
		return fmt.Errorf("%w: %s", ErrLocked, path) // held by a writer: not damage
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
	defer db.Close()
	// Under bbolt's shared lock: no writer changes the pages meanwhile.
	found, _, err := pageCheck(path, 1)
	if errors.Is(err, ErrCorrupt) {
		return err
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
	if len(found) > 0 {
		return fmt.Errorf("%w: %s: %s", ErrCorrupt, path, found[0])
	}
	if err := walk(db); err != nil {
		if errors.Is(err, ErrCorrupt) { // a panic or fault: guard named it
			return fmt.Errorf("%s: %w", path, err)
		}
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
	return nil
}

// walk reads every key and value of every bucket of db on the calling goroutine, and
// returns what a damaged page made bbolt panic or fault with (nil when all read).
func walk(db *bolt.DB) error {
	var each func(b *bolt.Bucket) error
	each = func(b *bolt.Bucket) error {
		return b.ForEach(func(k, v []byte) error {
			if v == nil {
				if sub := b.Bucket(k); sub != nil {
					return each(sub)
				}
			}
			return nil
		})
	}
	return Guard("reading its pages", func() error {
		return db.View(func(tx *bolt.Tx) error {
			return tx.ForEach(func(_ []byte, b *bolt.Bucket) error { return each(b) })
		})
	})
}

// PageLayout returns the page size and the number of pages in use (the high water mark)
// that the first meta page of the bbolt file at path names; tests damage stores with it.
func PageLayout(path string) (pageSize int64, pages uint64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	m, err := readBoltMeta(f, 0)
	if err != nil {
		return 0, 0, err
	}
	return int64(m.pageSize), m.pgid, nil
}

// checkFreelist reads the freelist page that the current meta page of the bbolt file at
// path names and checks that bbolt can read it (freelistIDs). bbolt reads the freelist on a
// goroutine of its own when it checks a file, where a damaged one would crash the process
// rather than be reported.
func checkFreelist(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	m, ok := currentMeta(f, fi.Size())
	if !ok {
		return errors.New("no valid meta page")
	}
	_, err = freelistIDs(f, m)
	return err
}
