package bm25

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/agentmem/memory/internal/atomicfile"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/agentmem/memory/internal/postfile"
)

// Zap checks nothing when it opens a segment, and a flipped byte in a postings list can
// give a silently wrong score rather than an error. Every zap segment ends with the CRC-32
// (IEEE) of all its other bytes, so the index can be checked; reading every segment at
// every open would cost seconds at a million documents, so the segment files that have
// been checked (or that this library wrote) are remembered in verifiedName, each by its
// name, size, modification and change times and inode. A file rewritten in place changes
// its change time, which no user-space tool can set back.

// verifiedName is the file, in an index's directory, naming its checked segment files.
const verifiedName = "memory-verified.json"

// fileID identifies one version of a file.
type fileID struct {
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime"`
	Ctime int64  `json:"ctime"`
	Ino   uint64 `json:"ino"`
}

func idOf(fi fs.FileInfo) fileID {
	id := fileID{Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
	id.Ctime, id.Ino = changeTimeInode(fi) // where the system gives them (fileid_*.go)
	return id
}

// Only the segment files that the index's newest snapshot in root.bolt names are read:
// Bleve opens those and no others. A process killed while writing a segment leaves a file
// that no snapshot names (often empty); it holds nothing the index answers from, so it is
// ignored here, and Bleve removes every file no snapshot names when it next opens the index
// for writing (a writer: the store's lock keeps readers away meanwhile).

// rootBolt is the file of an index's directory holding Bleve's snapshots.
const rootBolt = "root.bolt"

// Bleve's layout of root.bolt (index/scorch/persister.go, util/keys.go): bucket "s" holds
// one bucket per snapshot, keyed by its epoch in an order-preserving encoding, so the last
// key is the newest; inside one, bucket "m" is its metadata, bucket "i" its internal
// values, and every other bucket a segment, whose key "p" is the segment's file name
// relative to the store directory.
var (
	boltSnapshots = []byte{'s'}
	boltPath      = []byte{'p'}
)

const (
	boltInternal = 'i'
	boltMeta     = 'm'
)

// snapshotSegments reads root.bolt of the index at path and returns the segment files that
// its newest snapshot names (nil when it has none: no root.bolt, or no snapshot yet). The
// snapshot chosen is the one Bleve opens: the newest that has its metadata bucket. A
// damaged root.bolt is an error wrapping ErrCorrupt (callers that must not fault on one
// check its pages first, as the root package does); a writer of another process holding
// its lock is ErrBM25.
func snapshotSegments(path string) (names []string, err error) {
	file := filepath.Join(path, "store", rootBolt)
	if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // a damaged page: a panic, not a crash
	defer func() {
		if r := recover(); r != nil {
			names, err = nil, fmt.Errorf("%w: %s: panic: %v", ErrCorrupt, file, r)
		}
	}()
	db, err := bolt.Open(file, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s is locked by a writer", ErrBM25, file)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, file, err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		snaps := tx.Bucket(boltSnapshots)
		if snaps == nil {
			return nil
		}
		c := snaps.Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			snap := snaps.Bucket(k)
			if v != nil || snap == nil || snap.Bucket([]byte{boltMeta}) == nil {
				continue // Bleve skips these too, and opens the snapshot before
			}
			sc := snap.Cursor()
			for sk, sv := sc.First(); sk != nil; sk, sv = sc.Next() {
				if sv != nil || sk[0] == boltInternal || sk[0] == boltMeta {
					continue
				}
				seg := snap.Bucket(sk)
				if seg == nil {
					continue
				}
				p := seg.Get(boltPath)
				if p == nil {
					return fmt.Errorf("%w: %s: snapshot %x: segment %x names no file", ErrCorrupt, file, k, sk)
				}
				name := string(p)
				if name == "" || filepath.Base(name) != name || name == "." || name == ".." {
					return fmt.Errorf("%w: %s: snapshot %x names segment file %q", ErrCorrupt, file, k, name)
				}
				names = append(names, name)
			}
			return nil
		}
		return nil
	})
	return names, err
}

// segmentFiles lists the segment files that the newest snapshot of the index at path names,
// with their identities. A named file that is missing is an error wrapping ErrCorrupt.
func segmentFiles(path string) (map[string]fileID, error) {
	names, err := snapshotSegments(path)
	if err != nil {
		return nil, err
	}
	out := make(map[string]fileID, len(names))
	for _, name := range names {
		file := filepath.Join(path, "store", name)
		fi, err := os.Stat(file)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s: a segment of the index's snapshot is missing", ErrCorrupt, file)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBM25, err)
		}
		out[name] = idOf(fi)
		if fi, err := os.Stat(file + bodyExt); err == nil {
			out[name+bodyExt] = idOf(fi)
		}
	}
	// The segments of an index either all have body files or none has (the earlier
	// layout): one missing among others is damage. (An index of one segment whose body
	// file is missing fails its open instead: its zap file has no body field.)
	if bodies := len(out) - len(names); bodies > 0 && bodies < len(names) {
		for _, name := range names {
			if _, ok := out[name+bodyExt]; !ok {
				return nil, fmt.Errorf("%w: %s: a segment's body postings file is missing", ErrCorrupt, filepath.Join(path, "store", name+bodyExt))
			}
		}
	}
	return out, nil
}

func readVerified(path string) map[string]fileID {
	b, err := os.ReadFile(filepath.Join(path, verifiedName))
	if err != nil {
		return nil
	}
	var m map[string]fileID
	if json.Unmarshal(b, &m) != nil {
		return nil // a damaged list only costs a check of every segment
	}
	return m
}

// VerifySegments checks the CRC-32 of each zap segment file that the newest snapshot of
// the on-disk index at path names and that is not recorded as checked, and returns how many
// it read. Files no snapshot names (left by a process killed while writing one) are not
// read. A mismatch, a file too short to hold the footer, a named file that is missing, or
// an unreadable root.bolt is an error wrapping ErrCorrupt that names the file.
func VerifySegments(path string) (checked int, err error) {
	files, err := segmentFiles(path)
	if err != nil {
		return 0, err
	}
	known := readVerified(path)
	for name, id := range files {
		if k, ok := known[name]; ok && k == id {
			continue
		}
		if err := checkSegment(filepath.Join(path, "store", name)); err != nil {
			return checked, err
		}
		checked++
	}
	return checked, nil
}

// RecordSegments records the segment files that the newest snapshot of the index at path
// names as checked: the caller verified them with VerifySegments or wrote them itself (on
// Close).
func RecordSegments(path string) error {
	files, err := segmentFiles(path)
	if err != nil || files == nil {
		return err
	}
	b, err := json.Marshal(files)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(path, verifiedName), b, atomicfile.Options{})
}

// checkSegment compares a zap file's trailing CRC-32 with that of its other bytes, or
// checks a body postings file whole (postfile's Verify).
func checkSegment(file string) error {
	if strings.HasSuffix(file, bodyExt) {
		return checkBodyFile(file)
	}
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, file, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, file, err)
	}
	if fi.Size() < 44 { // zap's footer
		return fmt.Errorf("%w: %s: %d bytes, shorter than a segment footer", ErrCorrupt, file, fi.Size())
	}
	h := crc32.NewIEEE()
	if _, err := io.CopyN(h, f, fi.Size()-4); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, file, err)
	}
	var tail [4]byte
	if _, err := io.ReadFull(f, tail[:]); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, file, err)
	}
	if want := binary.BigEndian.Uint32(tail[:]); h.Sum32() != want {
		return fmt.Errorf("%w: %s: checksum %08x, the file says %08x", ErrCorrupt, file, h.Sum32(), want)
	}
	return nil
}

// checkBodyFile checks a segment's body postings file (its checksum and structure).
func checkBodyFile(file string) error {
	mem, err := mapFile(file)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, file, err)
	}
	defer unmapFile(mem)
	r, err := postfile.Open(mem)
	if err == nil {
		err = r.Verify()
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, file, err)
	}
	return nil
}
