package memory

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// formatVersion is the on-disk format this build writes and reads.
const formatVersion = 1

const (
	manifestName = "manifest.json"
	dbName       = "store.db"
	bm25Dir      = "bm25"
	vecDir       = "vectors"
)

// manifest identifies a directory as a memory store and records what its data depends on.
type manifest struct {
	Format   int       `json:"format"`
	Created  time.Time `json:"created"`
	Embedder *embInfo  `json:"embedder,omitempty"`
}

type embInfo struct {
	ID  string `json:"id"`
	Dim int    `json:"dim"`
}

// readManifest returns (nil, nil) when dir has no manifest.
func readManifest(dir string) (*manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, manifestName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil || m.Format <= 0 {
		return nil, fmt.Errorf("%w: %s: unreadable manifest", ErrCorrupt, filepath.Join(dir, manifestName))
	}
	if m.Format > formatVersion {
		return nil, fmt.Errorf("%w: %s has format %d, this build reads up to %d",
			ErrFormatVersion, dir, m.Format, formatVersion)
	}
	return &m, nil
}

// writeManifest replaces the manifest atomically: temp file, fsync, rename, fsync dir.
func writeManifest(dir string, m *manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, manifestName), append(b, '\n'))
}

// tempPrefix starts the names of the temp files writeFileAtomic writes before renaming
// them to name; manifestTempPrefix is the manifest's.
func tempPrefix(name string) string { return "." + name + ".tmp" }

var manifestTempPrefix = tempPrefix(manifestName)

// manifestTemps splits dir's entries into writeManifest temp files (full paths) and
// the names of everything else.
func manifestTemps(dir string) (temps, others []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasPrefix(e.Name(), manifestTempPrefix) {
			temps = append(temps, filepath.Join(dir, e.Name()))
		} else {
			others = append(others, e.Name())
		}
	}
	return temps, others, nil
}

// removeFiles deletes paths, ignoring ones already gone.
func removeFiles(paths []string) error {
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), tempPrefix(filepath.Base(path))+"*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// checkStoreFile checks, before bbolt maps it, that the store database at path is whole: not
// missing, not empty, with a valid meta page (bbolt keeps two, each with a checksum) whose
// pages all lie inside the file. bbolt itself maps a truncated file and then panics, or
// faults on pages past its end; an empty file it would silently make a new, empty store.
// Every failure is ErrCorrupt naming the file.
func checkStoreFile(path string) error {
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
	best, ok := boltMeta{}, false
	// The first meta page is at offset 0 and names the page size; the second is one page
	// later (bbolt looks for it at each power of two when the first is damaged).
	if m, err := readBoltMeta(f, 0); err == nil {
		best, ok = m, true
		if m2, err := readBoltMeta(f, int64(m.pageSize)); err == nil && m2.txid > best.txid {
			best = m2
		}
	} else {
		for ps := int64(1024); ps <= 1<<24 && ps < size; ps <<= 1 {
			if m, err := readBoltMeta(f, ps); err == nil && int64(m.pageSize) == ps {
				best, ok = m, true
				break
			}
		}
	}
	if !ok {
		return fmt.Errorf("%w: %s has no valid bbolt meta page (damaged or not a store database)", ErrCorrupt, path)
	}
	if need := int64(best.pgid) * int64(best.pageSize); need > size || best.pgid < 2 {
		return fmt.Errorf("%w: %s is truncated: %d bytes, its meta page says %d pages of %d bytes", ErrCorrupt, path, size, best.pgid, best.pageSize)
	}
	if best.root >= best.pgid || (best.freelist >= best.pgid && best.freelist != ^uint64(0)) {
		return fmt.Errorf("%w: %s: meta page points past the end of the data", ErrCorrupt, path)
	}
	return nil
}

// boltMeta is what checkStoreFile reads of a bbolt meta page.
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

// onlyManifest reports whether a store directory's entries (others, from manifestTemps)
// are its manifest and at most an empty database: a store whose creation, by an older
// version that wrote the manifest first, was killed before anything was stored.
func onlyManifest(others []string, dbPath string) bool {
	for _, name := range others {
		switch name {
		case manifestName:
		case dbName:
			if fi, err := os.Stat(dbPath); err != nil || fi.Size() != 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// emptyBolt reports whether db holds no bucket at all (a database just created).
func emptyBolt(db *bolt.DB) bool {
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

// checkBoltFileDeep is checkStoreFile and then a read of every page the file's buckets
// reach (every key and value of every bucket, nested ones included), on this goroutine,
// read-only and guarded (a damaged page fails bbolt's page assertions or faults). For small
// bbolt files that another library maps unchecked, such as Bleve's root.bolt: a page
// pointer flipped there otherwise panics or faults in Bleve's own goroutines, where nothing
// can recover it. Every failure is ErrCorrupt naming the file.
func checkBoltFileDeep(path string) error {
	if err := checkStoreFile(path); err != nil {
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
	if err := walkBolt(db); err != nil {
		if errors.Is(err, ErrCorrupt) { // a panic or fault: guard named it
			return fmt.Errorf("%s: %w", path, err)
		}
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
	return nil
}

// walkBolt reads every key and value of every bucket of db on the calling goroutine, and
// returns what a damaged page made bbolt panic or fault with (nil when all read).
func walkBolt(db *bolt.DB) error {
	var walk func(b *bolt.Bucket) error
	walk = func(b *bolt.Bucket) error {
		return b.ForEach(func(k, v []byte) error {
			if v == nil {
				if sub := b.Bucket(k); sub != nil {
					return walk(sub)
				}
			}
			return nil
		})
	}
	return guard("reading its pages", func() error {
		return db.View(func(tx *bolt.Tx) error {
			return tx.ForEach(func(_ []byte, b *bolt.Bucket) error { return walk(b) })
		})
	})
}
