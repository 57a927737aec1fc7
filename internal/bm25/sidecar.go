package bm25

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"unsafe"

	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// The block metadata of a persisted segment's terms is kept beside the segment file, in
// <segment>.bmx, so that a reopened index does not read whole posting lists again. The file
// names the segment it describes by its size and the CRC-32 of its bytes that zap keeps in
// its footer; every record carries its own CRC-32. A file that names another segment is
// removed, and a damaged record ends what is read (the file is cut there): metadata is
// only ever trusted through both checks, and what is missing is computed from the postings
// again (and each decoded block is checked against it, see blockSource.decode).
//
//	file   = magic "MBMX" | version 1 or 2 | segment size u64 | segment CRC u32 | CRC-32 of the 17 bytes before, u32 | record*
//	record = uvarint payload length | payload | CRC-32 of payload, u32
//	payload = uvarint term length | term | uvarint cs | uvarint total | uvarint blocks | (uvarint count | uvarint pairs | (uvarint f | uvarint dl)*)*
//
// Only lists of more than one block are recorded (a one-block list is decoded whole anyway).
// A version 2 file is complete: written whole by WriteBlockMeta when the segment was, it
// holds every list of at least blockMetaMinPostings postings (smaller ones are computed
// when first queried, which reads a few blocks at most, and appended as in version 1).

const sidecarExt = ".bmx"

var (
	sidecarMagic         = []byte("MBMX\x01")
	sidecarMagicComplete = []byte("MBMX\x02")
)

const sidecarHeader = 5 + 8 + 4 + 4

// persistedSegment is what a zap segment file offers to name itself.
type persistedSegment interface {
	Path() string
	CRC() uint32
}

// segFile is one segment's sidecar.
type segFile struct {
	path  string // the sidecar's path; "" when the segment is not a file or the index is read-only
	head  []byte // the header the sidecar must start with
	data  []byte // the file's bytes when it was read
	index recordIndex
	mu    sync.Mutex
	bad   bool
}

// sidecarHead returns the header naming seg, and the sidecar path; ok false when seg is
// not a segment file.
func sidecarHead(seg segment.Segment) (path string, head []byte, ok bool) {
	return sidecarHeadOf(seg, sidecarMagic)
}

// sidecarHeadOf is sidecarHead with the magic and version magic (sidecarMagicComplete:
// the head of a complete file).
func sidecarHeadOf(seg segment.Segment, magic []byte) (path string, head []byte, ok bool) {
	if _, body := seg.(bodySegment); body {
		return "", nil, false // its body file holds the metadata
	}
	ps, isFile := seg.(persistedSegment)
	if !isFile || ps.Path() == "" {
		return "", nil, false
	}
	fi, err := os.Stat(ps.Path())
	if err != nil {
		return "", nil, false
	}
	head = append([]byte{}, magic...)
	head = binary.BigEndian.AppendUint64(head, uint64(fi.Size()))
	head = binary.BigEndian.AppendUint32(head, ps.CRC())
	head = binary.BigEndian.AppendUint32(head, crc32.ChecksumIEEE(head))
	return ps.Path() + sidecarExt, head, true
}

// completeHead returns head (a version 1 head) as the head of a complete file.
func completeHead(head []byte) []byte {
	h := append([]byte{}, sidecarMagicComplete...)
	h = append(h, head[len(sidecarMagic):sidecarHeader-4]...)
	return binary.BigEndian.AppendUint32(h, crc32.ChecksumIEEE(h))
}

// loadSidecar reads seg's sidecar and indexes its records by term, without parsing them:
// a record is parsed, and its CRC checked, when a query first needs its term (lookup), so
// opening an index costs a scan of the records' lengths, not the decoding of every list's
// metadata. It returns the segFile to look records up in and to append new ones to (path
// "" when nothing may be written). A sidecar naming another segment is removed; one whose
// record lengths run off its end is cut before the damage (unless readOnly).
func loadSidecar(seg segment.Segment, readOnly bool) *segFile {
	path, head, ok := sidecarHead(seg)
	if !ok {
		return &segFile{}
	}
	sf := &segFile{path: path, head: head}
	if readOnly {
		sf.path = ""
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			slog.Warn("hybrid: block metadata sidecar unreadable; recomputing", "path", path, "err", err)
		}
		return sf
	}
	if len(data) < sidecarHeader || (!bytes.Equal(data[:sidecarHeader], head) && !bytes.Equal(data[:sidecarHeader], completeHead(head))) {
		slog.Warn("hybrid: block metadata sidecar names another segment; recomputing", "path", path)
		if !readOnly {
			_ = os.Remove(path)
		}
		return sf
	}
	sf.data = data
	off := sidecarHeader
	var prev []byte
	for off < len(data) {
		term, n := scanSidecarRecord(data[off:])
		if n == 0 {
			sf.cut(off, "its record lengths are damaged")
			break
		}
		sf.index.add(data, term, prev, off)
		prev = term
		off += n
	}
	sf.index.finish(data)
	return sf
}

// recordIndex finds a term's record in a sidecar's bytes without a string a term. A
// complete sidecar holds the records queries had computed, then every other list's in the
// dictionary's order: runs of records whose terms ascend are indexed by their offsets
// alone (searched by comparing the terms in place); the records of runs shorter than
// minRun go to a map. At 21M passages (a 20 MB sidecar) a map of every term was half of
// a fresh process's first query.
type recordIndex struct {
	runs [][]int        // runs of at least minRun records, terms strictly ascending
	cur  []int          // the run being read (add)
	tail map[string]int // term -> offset of the records of shorter runs
}

// minRun is the fewest records a run is searched as a run (shorter ones are mapped).
const minRun = 64

// add indexes the record at offset off of data, whose term is term; prev is the term of the
// record before it (nil for the first). finish ends the last run.
func (x *recordIndex) add(data, term, prev []byte, off int) {
	if len(x.cur) > 0 && bytes.Compare(prev, term) >= 0 {
		x.finish(data)
	}
	x.cur = append(x.cur, off)
}

// finish ends the run being read: kept as a run when long enough, else mapped.
func (x *recordIndex) finish(data []byte) {
	if len(x.cur) >= minRun {
		x.runs = append(x.runs, x.cur)
	} else {
		if x.tail == nil && len(x.cur) > 0 {
			x.tail = map[string]int{}
		}
		for _, off := range x.cur { // (in file order: a later record of a term replaces an earlier one)
			t, _ := scanSidecarRecord(data[off:])
			x.tail[string(t)] = off
		}
	}
	x.cur = nil
}

// find returns the offset in data of term's last record (ok false: none): a later record
// of a term replaces an earlier one.
func (x *recordIndex) find(data []byte, term string) (int, bool) {
	best, ok := x.tail[term]
	key := unsafe.Slice(unsafe.StringData(term), len(term))
	for _, run := range x.runs {
		i, found := slices.BinarySearchFunc(run, key, func(off int, key []byte) int {
			t, _ := scanSidecarRecord(data[off:])
			return bytes.Compare(t, key)
		})
		if found && (!ok || run[i] > best) {
			best, ok = run[i], true
		}
	}
	return best, ok
}

// drop forgets the records at offset off of data and after.
func (x *recordIndex) drop(data []byte, off int) {
	x.finish(data)
	runs := x.runs[:0]
	for _, run := range x.runs {
		run = run[:sort.Search(len(run), func(i int) bool { return run[i] >= off })]
		if len(run) > 0 {
			runs = append(runs, run)
		}
	}
	x.runs = runs
	for t, o := range x.tail {
		if o >= off {
			delete(x.tail, t)
		}
	}
}

// scanSidecarRecord returns the term (in b) and length of the record at the start of b
// without checking its payload; n is 0 when its lengths do not fit in b.
func scanSidecarRecord(b []byte) (term []byte, n int) {
	plen, k := binary.Uvarint(b)
	if k <= 0 || plen > uint64(len(b)-k) || uint64(len(b)-k)-plen < 4 {
		return nil, 0
	}
	p := b[k : k+int(plen)]
	tl, j := binary.Uvarint(p)
	if j <= 0 || tl > uint64(len(p)-j) {
		return nil, 0
	}
	return p[j : j+int(tl)], k + int(plen) + 4
}

// lookup returns the metadata the sidecar records for term, parsed and checked now; nil
// when it has none, or when its record is damaged (then the file is cut before it, and the
// records after it are forgotten: computed again when needed, and appended).
func (sf *segFile) lookup(term string) *termBlocks {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	off, ok := sf.index.find(sf.data, term)
	if !ok {
		return nil
	}
	t, tb, n := parseSidecarRecord(sf.data[off:])
	if n == 0 || t != term {
		sf.cut(off, "a record fails its checksum")
		return nil
	}
	return tb
}

// cut forgets the records from offset off of the sidecar's bytes and, on a writable index,
// cuts the file there and marks it incomplete (the writer's next Close completes it
// again); why says what was wrong (sf.mu held, or sf not shared yet).
func (sf *segFile) cut(off int, why string) {
	slog.Warn("hybrid: block metadata sidecar damaged; cutting it", "path", sf.path, "offset", off, "why", why)
	sf.index.drop(sf.data, off)
	if sf.path == "" {
		return
	}
	if err := os.Truncate(sf.path, int64(off)); err == nil && bytes.HasPrefix(sf.data, sidecarMagicComplete) {
		if f, err := os.OpenFile(sf.path, os.O_WRONLY, 0); err == nil {
			_, _ = f.WriteAt(sf.head, 0)
			f.Close()
		}
	}
}

// forget drops every record the sidecar indexes (its file was removed).
func (sf *segFile) forget() {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	sf.data, sf.index = nil, recordIndex{}
}

// parseSidecarRecord parses one record; n is 0 when it is damaged or incomplete.
func parseSidecarRecord(b []byte) (term string, tb *termBlocks, n int) {
	plen, k := binary.Uvarint(b)
	if k <= 0 || plen > uint64(len(b)-k) || uint64(len(b)-k)-plen < 4 {
		return "", nil, 0
	}
	p := b[k : k+int(plen)]
	if crc32.ChecksumIEEE(p) != binary.BigEndian.Uint32(b[k+int(plen):]) {
		return "", nil, 0
	}
	r := uvarintReader{b: p}
	tl := r.next()
	if r.bad || tl > uint64(len(r.b)) {
		return "", nil, 0
	}
	term = string(r.b[:tl])
	r.b = r.b[tl:]
	tb = &termBlocks{cs: r.next(), total: r.next(), fstart: []uint32{0}}
	nb := r.next()
	if r.bad || nb == 0 || nb > uint64(len(r.b)) {
		return "", nil, 0
	}
	tb.count = make([]uint32, 0, nb)
	tb.fstart = make([]uint32, 1, nb+1)
	for range nb {
		c, np := r.next(), r.next()
		if r.bad || c > math32 || np > c || np > uint64(len(r.b)) {
			return "", nil, 0
		}
		tb.count = append(tb.count, uint32(c))
		for range np {
			f, dl := r.next(), r.next()
			if r.bad || f > math32 || dl > math32 {
				return "", nil, 0
			}
			tb.front = append(tb.front, fl{f: uint32(f), dl: uint32(dl)})
		}
		tb.fstart = append(tb.fstart, uint32(len(tb.front)))
	}
	if len(r.b) != 0 || tb.check() != nil {
		return "", nil, 0
	}
	tb.makeSlots()
	tb.bytes = tb.sizeBytes()
	return term, tb, k + int(plen) + 4
}

const math32 = 1<<32 - 1

type uvarintReader struct {
	b   []byte
	bad bool
}

func (r *uvarintReader) next() uint64 {
	v, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[k:]
	return v
}

// sidecarRecord encodes term's metadata as one record.
func sidecarRecord(term string, tb *termBlocks) []byte {
	p := binary.AppendUvarint(nil, uint64(len(term)))
	p = append(p, term...)
	p = binary.AppendUvarint(p, tb.cs)
	p = binary.AppendUvarint(p, tb.total)
	p = binary.AppendUvarint(p, uint64(len(tb.count)))
	for i, c := range tb.count {
		fr := tb.blockFront(i)
		p = binary.AppendUvarint(p, uint64(c))
		p = binary.AppendUvarint(p, uint64(len(fr)))
		for _, x := range fr {
			p = binary.AppendUvarint(p, uint64(x.f))
			p = binary.AppendUvarint(p, uint64(x.dl))
		}
	}
	rec := binary.AppendUvarint(nil, uint64(len(p)))
	rec = append(rec, p...)
	return binary.BigEndian.AppendUint32(rec, crc32.ChecksumIEEE(p))
}

// appendRecord adds term's metadata to the sidecar, creating it (and removing the sidecars
// of segment files that are gone) when missing. Failures are logged, never fatal: the
// metadata is derived and is computed again when missing.
func (sf *segFile) appendRecord(term string, tb *termBlocks) {
	if sf.path == "" {
		return
	}
	sf.mu.Lock()
	defer sf.mu.Unlock()
	if sf.bad {
		return
	}
	f, err := os.OpenFile(sf.path, os.O_WRONLY|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		removeOrphanSidecars(filepath.Dir(sf.path))
		f, err = os.OpenFile(sf.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			_, err = f.Write(sf.head)
		}
	}
	if err == nil {
		_, err = f.Write(sidecarRecord(term, tb))
	}
	if f != nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		sf.bad = true // stop trying for this segment
		slog.Warn("hybrid: cannot write block metadata sidecar", "path", sf.path, "err", err)
	}
}

// removeOrphanSidecars removes the sidecars in dir whose segment file is gone (merged away).
func removeOrphanSidecars(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	have := map[string]bool{}
	for _, e := range ents {
		have[e.Name()] = true
	}
	for _, e := range ents {
		name := e.Name()
		if seg, ok := strings.CutSuffix(name, sidecarExt); ok && strings.HasSuffix(seg, ".zap") && !have[seg] {
			_ = os.Remove(filepath.Join(dir, name))
		}
		if seg, ok := strings.CutSuffix(name, bodyExt); ok && strings.HasSuffix(seg, ".zap") && !have[seg] {
			_ = os.Remove(filepath.Join(dir, name)) // (a merge's, its zap file merged away or never written)
		}
	}
}
