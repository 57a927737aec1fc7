package hybrid

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
	"strings"
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

// segmentFiles lists the zap segment files of the index at path with their identities.
func segmentFiles(path string) (map[string]fileID, error) {
	entries, err := os.ReadDir(filepath.Join(path, "store"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]fileID{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".zap") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			return nil, err
		}
		out[e.Name()] = idOf(fi)
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

// VerifySegments checks the CRC-32 of each zap segment file of the on-disk index at path
// that is not recorded as checked, and returns how many it read. A mismatch, or a file too
// short to hold the footer, is an error wrapping ErrCorrupt that names the file.
func VerifySegments(path string) (checked int, err error) {
	files, err := segmentFiles(path)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrBM25, err)
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

// RecordSegments records every current segment file of the index at path as checked: the
// caller verified them with VerifySegments or wrote them itself (on Close).
func RecordSegments(path string) error {
	files, err := segmentFiles(path)
	if err != nil || files == nil {
		return err
	}
	b, err := json.Marshal(files)
	if err != nil {
		return err
	}
	tmp := filepath.Join(path, verifiedName+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(path, verifiedName))
}

// checkSegment compares a zap file's trailing CRC-32 with that of its other bytes.
func checkSegment(file string) error {
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
