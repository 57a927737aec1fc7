package vectorstore

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/agentmem/memory/internal/atomicfile"
)

// Files of a DiskIndex in its directory. disk.json is the commit point: it names the
// segment files with how many rows of each are committed, the id table and the tombstone
// file, each with its CRC-32C, so a crash mid-write leaves the previous state in force
// (bytes past a segment's committed rows are ignored, then overwritten).
//
//	seg-NNNNNN.f32  rows of dim float32 (little endian), for Cosine normalised; none in
//	                an index without rows of its own ("rowless": disk_rows.go)
//	seg-NNNNNN.b1   binary codes, ceil(bits/64) uint64 words a row (bits: dim, or
//	                disk.json's "code_bits"): the signs of each row's components, or of
//	                its rotation (disk.json's "code" and "code_seed"; disk_code.go)
//	seg-NNNNNN.i8   int8 codes, dim bytes a row (value = code x disk.json's scale)
//	ids-G.bin       the id table: "MVIDS001", n, n+1 uint64 offsets, n uint32 ordinals
//	                sorted by id, the id bytes
//	tomb-G.bin      "MVTOMB01", n, ceil(n/64) uint64 words: the dead ordinals
//	sums-G.bin      "MVSUMS01", the block size, the count, then the uint64 checksum
//	                (diskBlockSum) of every block of diskBlock bytes of each segment file,
//	                in disk.json's order (each segment's .f32, .b1, .i8, .ivl), the last
//	                block of a file short
//
// The segment files are too big to read whole on every open (15 GB at 10M x 384), and
// their size and modification time say nothing of bytes damaged in place, so each block is
// checked against its checksum the first time a search reads it, by the exact scan as it
// scores the rows (diskDotsSum), and every block by Verify (memory check calls it). A file
// whose size or modification time is not the one recorded is checked whole on open, as
// are the .ivl list numbers (read whole to build the lists), the id table, the
// tombstones, the centroids and sums-G.bin itself (whole-file CRC-32Cs in disk.json).
// Version 1 indexes (no sums-G.bin) are checked whole on open against their files'
// CRC-32Cs, their block checksums computed on the way, and written as version 2 by the
// next write (the Close of a writable index).
const (
	diskMetaFile      = "disk.json"
	diskMetaVersion   = 2
	diskMetaVersionV1 = 1 // no block checksums: segment files checked whole on open
	diskIDsMagic      = "MVIDS001"
	diskTombMagic     = "MVTOMB01"
	diskSumsMagic     = "MVSUMS01"
)

// diskBlockShift is log2 of diskBlock, the bytes of a segment file each checksum covers:
// small, so that a search that reads a few scattered rows (rescoring, inverted lists)
// checks a few KiB a row; large enough that the sums take 1/1024 of the rows' bytes (1.5
// MB at 1M x 384, read on open) and that folding each block's lanes costs little.
const (
	diskBlockShift = 13
	diskBlock      = 1 << diskBlockShift
)

// The files of a segment, in the order of diskSeg.maps and sums-G.bin.
const (
	diskF32 = iota
	diskB1
	diskI8
	diskIVL
)

var diskCastagnoli = crc32.MakeTable(crc32.Castagnoli)

// diskFileMeta records a file: its name, the bytes committed, their CRC-32C, and the
// file's size and modification time when it was written (a file that still has both is not
// read again to check it).
type diskFileMeta struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
	CRC   uint32 `json:"crc"`
	Size  int64  `json:"size"`
	MTime int64  `json:"mtime"`

	sums []uint64 // a segment file's block checksums (sums-G.bin), ceil(Bytes/diskBlock) of them
}

// diskBlocks is the number of diskBlock blocks of n bytes.
func diskBlocks(n int64) int { return int((n + diskBlock - 1) >> diskBlockShift) }

// diskSegMeta records a segment.
type diskSegMeta struct {
	Num  int           `json:"num"`
	Rows int           `json:"rows"`
	F32  diskFileMeta  `json:"f32,omitzero"` // zero: none (a rowless index)
	B1   *diskFileMeta `json:"b1,omitempty"`
	I8   *diskFileMeta `json:"i8,omitempty"`
	IVL  *diskFileMeta `json:"ivl,omitempty"` // list numbers (inverted lists)
}

// diskMeta is disk.json.
type diskMeta struct {
	Version int           `json:"version"`
	Dim     int           `json:"dim"`
	Metric  Metric        `json:"metric"`
	Quant   int           `json:"quant"`
	SegRows int           `json:"seg_rows"`
	Seq     uint64        `json:"seq"`
	Gen     uint64        `json:"gen"`
	NextSeg int           `json:"next_seg"`
	Rows    int           `json:"rows"`
	Dead    int           `json:"dead"`
	Scale   []float32     `json:"scale,omitempty"`
	NList   int           `json:"nlist,omitempty"`
	IVF     *diskFileMeta `json:"ivf,omitempty"` // the centroids (nil: not trained yet)
	Segs    []diskSegMeta `json:"segs"`
	IDs     diskFileMeta  `json:"ids"`
	Tomb    diskFileMeta  `json:"tomb"`
	Block   int           `json:"block,omitempty"`   // bytes a block checksum covers (version 2)
	Sums    *diskFileMeta `json:"sums,omitempty"`    // the segment files' block checksums (version 2)
	Rowless bool          `json:"rowless,omitempty"` // no .f32 files: rows from IndexConfig.Rows
	// Code names the binary codes (absent or "signs": the vector's own signs, as every
	// index written before codes had names; "rotated": the signs of the rotation of
	// CodeSeed, disk_code.go). Absent for an index without binary codes.
	Code     string `json:"code,omitempty"`
	CodeSeed uint64 `json:"code_seed,omitempty"`
	CodeBits int    `json:"code_bits,omitempty"` // bits of a rotated code, when not dim
	CRC      uint32 `json:"crc"`                 // of this JSON encoded with CRC 0
}

func (m diskMeta) checksum() uint32 {
	m.CRC = 0
	b, _ := json.Marshal(&m)
	return crc32.Checksum(b, diskCastagnoli)
}

// diskSeg is a mapped segment. ok has a bit per block of each file, set once the block
// matched its checksum (atomically: concurrent searches check blocks under the read lock,
// a block at most a few times, usually once).
type diskSeg struct {
	meta diskSegMeta
	rows int
	f32  []float32
	b1   []uint64
	i8   []int8
	ivl  []uint32
	maps [4][]byte
	ok   [4][]atomic.Uint64
}

// file is the record of file k (diskF32...) of s (nil: the segment keeps none).
func (s *diskSeg) file(k int) *diskFileMeta {
	switch k {
	case diskF32:
		if s.meta.F32.Name == "" {
			return nil // a rowless index
		}
		return &s.meta.F32
	case diskB1:
		return s.meta.B1
	case diskI8:
		return s.meta.I8
	}
	return s.meta.IVL
}

// dropResident drops the pages of s's mappings from the process's resident set
// (diskDropResident): a pass over every row reads each once.
func (s *diskSeg) dropResident() {
	for _, m := range s.maps {
		diskDropResident(m)
	}
}

// diskDropEvery is how many ids of the old id table OrderLists and a compaction read
// (in the copy's order, a page here and a page there) between two drops of its pages from
// the resident set (copiedID).
var diskDropEvery = 1 << 17 // (a variable for tests)

func (s *diskSeg) unmap() {
	for i, m := range s.maps {
		if err := diskUnmap(m); err != nil {
			slog.Warn("vectorstore: disk: munmap", "err", err)
		}
		s.maps[i] = nil
	}
	s.f32, s.b1, s.i8, s.ivl = nil, nil, nil, nil
}

// diskIDs is a mapped id table.
type diskIDs struct {
	n       int
	offs    []uint64
	perm    []uint32
	data    []byte
	mapping []byte
}

func (t *diskIDs) unmap() {
	if err := diskUnmap(t.mapping); err != nil {
		slog.Warn("vectorstore: disk: munmap", "err", err)
	}
	*t = diskIDs{}
}

// at views the id of ordinal o (valid while mapped).
func (t *diskIDs) at(o int) string {
	b := t.data[t.offs[o]:t.offs[o+1]]
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// find returns the ordinals holding id (a binary search of the sorted ordinals).
func (t *diskIDs) find(id string) []int32 {
	if t.n == 0 {
		return nil
	}
	i := sort.Search(t.n, func(i int) bool { return t.at(int(t.perm[i])) >= id })
	var out []int32
	for ; i < t.n && t.at(int(t.perm[i])) == id; i++ {
		out = append(out, int32(t.perm[i]))
	}
	return out
}

// corrupt wraps a problem of the files as errDiskCorrupt.
func (x *DiskIndex) corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", errDiskCorrupt, x.dir, fmt.Sprintf(format, args...))
}

// load maps the state in x.dir (none: an empty index).
func (x *DiskIndex) load() error {
	raw, err := os.ReadFile(filepath.Join(x.dir, diskMetaFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return x.corrupt("%v", err)
	}
	var m diskMeta
	if err := json.Unmarshal(raw, &m); err != nil {
		return x.corrupt("%s: %v", diskMetaFile, err)
	}
	if m.checksum() != m.CRC {
		return x.corrupt("%s fails its checksum", diskMetaFile)
	}
	if (m.Version != diskMetaVersion && m.Version != diskMetaVersionV1) || m.Dim != x.dim || m.Metric != x.metric || m.Quant != x.quant || m.NList != x.nlist {
		return fmt.Errorf("%w: %s holds v%d dim %d %s quant %d nlist %d, want v%d dim %d %s quant %d nlist %d", errDiskConfig, x.dir,
			m.Version, m.Dim, m.Metric, m.Quant, m.NList, diskMetaVersion, x.dim, x.metric, x.quant, x.nlist)
	}
	if m.Rowless != (x.rows != nil) {
		if m.Rowless {
			return fmt.Errorf("%w: %s keeps no rows of its own (written with IndexConfig.Rows); opened without a row source", ErrRowSource, x.dir)
		}
		return fmt.Errorf("%w: %s keeps its own rows; opened with a row source (IndexConfig.Rows)", ErrRowSource, x.dir)
	}
	if err := x.loadCode(&m); err != nil {
		return err
	}
	v1 := m.Version == diskMetaVersionV1
	if !v1 && len(m.Segs) > 0 {
		if m.Block != diskBlock || m.Sums == nil {
			return x.corrupt("%s: block checksums of %d bytes in %v, want %d", diskMetaFile, m.Block, m.Sums, diskBlock)
		}
		if err := x.loadSums(*m.Sums, m.Segs); err != nil {
			return err
		}
	}
	if m.IVF != nil {
		if err := x.loadCentroids(*m.IVF); err != nil {
			return err
		}
	}
	if m.SegRows <= 0 || m.Rows < 0 || m.Dead < 0 || m.Dead > m.Rows || (x.keepsInt8() && m.Rows > 0 && len(m.Scale) != x.dim) {
		return x.corrupt("%s: bad counts", diskMetaFile)
	}
	x.segRows = m.SegRows
	total := 0
	for i, sm := range m.Segs {
		if sm.Rows <= 0 || sm.Rows > m.SegRows || (i < len(m.Segs)-1 && sm.Rows != m.SegRows) {
			return x.corrupt("segment %d holds %d rows", sm.Num, sm.Rows)
		}
		if x.keepsBinary() != (sm.B1 != nil) || x.keepsInt8() != (sm.I8 != nil) || (m.IVF != nil) != (sm.IVL != nil) || m.Rowless != (sm.F32.Name == "") {
			return x.corrupt("segment %d lacks its codes", sm.Num)
		}
		s, stale, err := x.mapSeg(sm)
		if s != nil {
			x.segs = append(x.segs, s)
		}
		if err != nil {
			return err
		}
		for k := range s.maps {
			switch fm := s.file(k); {
			case fm == nil:
			case v1:
				if err := x.checkWhole(s, k); err != nil {
					return err
				}
			case stale[k] || k == diskIVL:
				// A file changed since its write (copied, restored), or the list numbers,
				// read whole below: every block checked now.
				if err := x.checkRange(s, k, 0, len(s.maps[k])); err != nil {
					return err
				}
			}
		}
		total += sm.Rows
	}
	x.upgrade = v1 && len(m.Segs) > 0 && !x.readOnly
	if total != m.Rows {
		return x.corrupt("segments hold %d rows, %s says %d", total, diskMetaFile, m.Rows)
	}
	x.n0 = total
	if m.IVF != nil {
		if err := x.addToLists(0, total); err != nil {
			return err
		}
	}
	if err := x.loadIDs(m.IDs, total); err != nil {
		return err
	}
	if err := x.loadTomb(m.Tomb, total, m.Dead); err != nil {
		return err
	}
	x.scale, x.seq, x.savedSeq, x.meta = m.Scale, m.Seq, m.Seq, m
	return nil
}

// openFile opens a file recorded by fm, at least fm.Bytes long; stale: its size or
// modification time is not the one recorded at its write.
func (x *DiskIndex) openFile(fm diskFileMeta) (f *os.File, stale bool, err error) {
	if fm.Name == "" || strings.ContainsAny(fm.Name, `/\`) || fm.Bytes < 0 {
		return nil, false, x.corrupt("bad file name %q", fm.Name)
	}
	f, err = os.Open(filepath.Join(x.dir, fm.Name))
	if err != nil {
		return nil, false, x.corrupt("%v", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false, x.corrupt("%v", err)
	}
	if fi.Size() < fm.Bytes {
		f.Close()
		return nil, false, x.corrupt("%s holds %d bytes, want %d", fm.Name, fi.Size(), fm.Bytes)
	}
	return f, fi.Size() != fm.Size || fi.ModTime().UnixNano() != fm.MTime, nil
}

// openChecked opens a file recorded by fm and checks it: at least fm.Bytes long, and the
// CRC of those bytes (with always false: only when its size or modification time is not
// the one recorded).
func (x *DiskIndex) openChecked(fm diskFileMeta, always bool) (*os.File, error) {
	f, stale, err := x.openFile(fm)
	if err != nil {
		return nil, err
	}
	if always || stale {
		h := crc32.New(diskCastagnoli)
		if _, err := io.Copy(h, bufio.NewReaderSize(io.NewSectionReader(f, 0, fm.Bytes), 1<<20)); err != nil {
			f.Close()
			return nil, x.corrupt("%s: %v", fm.Name, err)
		}
		if h.Sum32() != fm.CRC {
			f.Close()
			return nil, x.corrupt("%s fails its checksum", fm.Name)
		}
	}
	return f, nil
}

// mapOne maps a file of a segment, fm.Bytes long, unchecked (its blocks are checked when
// read: checkRange); stale as openFile's.
func (x *DiskIndex) mapOne(fm diskFileMeta, want int64) ([]byte, bool, error) {
	if fm.Bytes != want {
		return nil, false, x.corrupt("%s records %d bytes, want %d", fm.Name, fm.Bytes, want)
	}
	f, stale, err := x.openFile(fm)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	b, err := diskMapFile(f, int(fm.Bytes))
	if err != nil {
		return nil, false, x.corrupt("map %s: %v", fm.Name, err)
	}
	return b, stale, nil
}

// mapSeg maps a segment's files, none of their blocks checked yet; stale[k]: file k's size
// or modification time is not the one recorded.
func (x *DiskIndex) mapSeg(sm diskSegMeta) (*diskSeg, [4]bool, error) {
	var stale [4]bool
	s := &diskSeg{meta: sm, rows: sm.Rows}
	want := [4]int64{int64(x.dim) * 4, int64(x.codeWords()) * 8, int64(x.dim), 4}
	for k := range s.maps {
		fm := s.file(k)
		if fm == nil {
			continue
		}
		if fm.sums != nil && len(fm.sums) != diskBlocks(fm.Bytes) {
			return s, stale, x.corrupt("%s has %d block checksums, want %d", fm.Name, len(fm.sums), diskBlocks(fm.Bytes))
		}
		b, st, err := x.mapOne(*fm, int64(sm.Rows)*want[k])
		if err != nil {
			return s, stale, err
		}
		stale[k] = st
		s.maps[k] = b
		s.ok[k] = make([]atomic.Uint64, (diskBlocks(fm.Bytes)+63)/64)
		p := unsafe.Pointer(unsafe.SliceData(b))
		switch k {
		case diskF32:
			s.f32 = unsafe.Slice((*float32)(p), len(b)/4)
		case diskB1:
			s.b1 = unsafe.Slice((*uint64)(p), len(b)/8)
		case diskI8:
			s.i8 = unsafe.Slice((*int8)(p), len(b))
		case diskIVL:
			s.ivl = unsafe.Slice((*uint32)(p), len(b)/4)
		}
	}
	return s, stale, nil
}

// loadIDs maps and checks the id table of n ordinals.
func (x *DiskIndex) loadIDs(fm diskFileMeta, n int) error {
	if n == 0 && fm.Name == "" {
		return nil
	}
	f, err := x.openChecked(fm, true)
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := diskMapFile(f, int(fm.Bytes))
	if err != nil {
		return x.corrupt("map %s: %v", fm.Name, err)
	}
	x.ids.mapping = b
	head := 16 + 8*(n+1) + 4*n
	if len(b) < head || string(b[:8]) != diskIDsMagic || binary.LittleEndian.Uint64(b[8:]) != uint64(n) {
		return x.corrupt("%s: bad header", fm.Name)
	}
	t := &x.ids
	t.n = n
	t.offs = unsafe.Slice((*uint64)(unsafe.Pointer(&b[16])), n+1)
	if n > 0 {
		t.perm = unsafe.Slice((*uint32)(unsafe.Pointer(&b[16+8*(n+1)])), n)
	}
	t.data = b[head:]
	if t.offs[0] != 0 || t.offs[n] != uint64(len(t.data)) {
		return x.corrupt("%s: bad offsets", fm.Name)
	}
	for i := range n {
		if t.offs[i] > t.offs[i+1] {
			return x.corrupt("%s: bad offsets", fm.Name)
		}
	}
	seen := make([]uint64, (n+63)/64)
	for _, o := range t.perm {
		if int(o) >= n || seen[o>>6]&(1<<(o&63)) != 0 {
			return x.corrupt("%s: bad ordinal table", fm.Name)
		}
		seen[o>>6] |= 1 << (o & 63)
	}
	return nil
}

// loadTomb reads and checks the tombstones of n ordinals, dead of them set.
func (x *DiskIndex) loadTomb(fm diskFileMeta, n, dead int) error {
	x.tomb = make([]uint64, (n+63)/64)
	if fm.Name == "" {
		if dead != 0 {
			return x.corrupt("no tombstone file for %d dead rows", dead)
		}
		return nil
	}
	f, err := x.openChecked(fm, true)
	if err != nil {
		return err
	}
	defer f.Close()
	b := make([]byte, fm.Bytes)
	if _, err := io.ReadFull(f, b); err != nil {
		return x.corrupt("%s: %v", fm.Name, err)
	}
	if len(b) != 16+8*len(x.tomb) || string(b[:8]) != diskTombMagic || binary.LittleEndian.Uint64(b[8:]) != uint64(n) {
		return x.corrupt("%s: bad header", fm.Name)
	}
	cnt := 0
	for i := range x.tomb {
		x.tomb[i] = binary.LittleEndian.Uint64(b[16+8*i:])
		cnt += bits.OnesCount64(x.tomb[i])
	}
	if n%64 != 0 && len(x.tomb) > 0 && x.tomb[len(x.tomb)-1]>>(n%64) != 0 {
		return x.corrupt("%s: bits past the rows", fm.Name)
	}
	if cnt != dead {
		return x.corrupt("%s holds %d dead rows, %s says %d", fm.Name, cnt, diskMetaFile, dead)
	}
	x.dead = cnt
	return nil
}

// persistLocked writes the rows in memory to the segments (or, with more than a quarter
// of the rows dead, every live row to new segments), the id table and tombstones, then
// disk.json. A failure leaves the index unusable (errDiskClosed) and the files at the
// previous commit.
func (x *DiskIndex) persistLocked() error {
	if err := x.persistFiles(); err != nil {
		x.failed = fmt.Errorf("%w: %w", errDiskClosed, err)
		return err
	}
	return nil
}

func (x *DiskIndex) persistFiles() error {
	if err := os.MkdirAll(x.dir, 0o755); err != nil {
		return fmt.Errorf("vectorstore: disk: %w", err)
	}
	m := x.meta
	m.Version, m.Dim, m.Metric, m.Quant, m.SegRows, m.NList = diskMetaVersion, x.dim, x.metric, x.quant, x.segRows, x.nlist
	m.Rowless = x.rows != nil
	m.Code, m.CodeSeed, m.CodeBits = "", 0, 0
	if x.keepsBinary() && x.rot != nil {
		m.Code, m.CodeSeed = diskCodeName(x.code), x.codeSeed
		if x.codeBits != x.dim {
			m.CodeBits = x.codeBits
		}
	}
	m.Gen++
	n := x.n()
	compact := x.dead > 0 && x.dead*4 > n && n >= 64
	byList := x.byList && x.centroids != nil && x.n0 > 0
	var order []int32 // compaction: the live ordinals, in order
	if compact || byList {
		// The live rows are copied into new segments with new checksums: each is checked
		// first, so that a damaged row is not written out as a sound one (without rows of
		// its own, the codes and list numbers it copies).
		check := x.checkAllRows
		if x.rows != nil {
			check = x.checkAllCodes
		}
		if err := check(); err != nil {
			return err
		}
		order = make([]int32, 0, n-x.dead)
		for o := range int32(n) {
			if !x.isDead(o) {
				order = append(order, o)
			}
		}
		if byList {
			order = x.listOrder(order)
		}
		row := func(i int) []float32 { return x.row(order[i]) }
		if x.rows != nil {
			row = func(i int) []float32 {
				if int(order[i]) < x.n0 {
					return nil // its codes are copied
				}
				return x.row(order[i])
			}
		}
		segs, err := x.writeRowsFrom(&m, nil, len(order), row, func(i int) int32 { return order[i] })
		if err != nil {
			return err
		}
		sorted, rest := x.copiedPerm(order)
		idsFile, err := x.writeIDs(&m, len(order), x.copiedID(order), sorted, rest)
		if err != nil {
			closeSegs(segs)
			return err
		}
		tomb := make([]uint64, (len(order)+63)/64)
		tombFile, err := x.writeTomb(&m, len(order), tomb)
		if err != nil {
			closeSegs(segs)
			idsFile.unmap()
			return err
		}
		m.Segs, m.IDs, m.Tomb, m.Rows, m.Dead = segMetas(segs), idsFile.meta, tombFile, len(order), 0
		if err := x.writeMeta(&m); err != nil {
			closeSegs(segs)
			idsFile.unmap()
			return err
		}
		x.dropPacks() // (their views of the old segments)
		closeSegs(x.segs)
		x.ids.unmap()
		x.segs, x.ids, x.n0, x.tomb, x.dead = segs, idsFile.t, len(order), tomb, 0
		x.lists = nil
		if x.centroids != nil {
			if err := x.addToLists(0, x.n0); err != nil {
				return err
			}
		}
	} else {
		t := len(x.tailIDs)
		segs := x.segs
		if t > 0 {
			var err error
			if segs, err = x.writeRows(&m, slices.Clone(x.segs), t, func(i int) []float32 { return x.tailVecs[i*x.dim : (i+1)*x.dim] }); err != nil {
				return err
			}
		}
		ids := x.meta.IDs
		var idsFile *diskIDsFile
		if t > 0 || (n > 0 && ids.Name == "") {
			var err error
			if idsFile, err = x.writeIDs(&m, n, x.idView, x.ids.perm, nil); err != nil {
				x.dropNewSegs(segs)
				return err
			}
			ids = idsFile.meta
		}
		tombFile, err := x.writeTomb(&m, n, x.tomb)
		if err != nil {
			x.dropNewSegs(segs)
			if idsFile != nil {
				idsFile.unmap()
			}
			return err
		}
		m.Segs, m.IDs, m.Tomb, m.Rows, m.Dead = segMetas(segs), ids, tombFile, n, x.dead
		if err := x.writeMeta(&m); err != nil {
			x.dropNewSegs(segs)
			if idsFile != nil {
				idsFile.unmap()
			}
			return err
		}
		for i, s := range x.segs {
			if segs[i] != s {
				x.dropPacks() // (their views of the old segments)
				s.unmap()
			}
		}
		old := x.n0
		x.segs, x.n0 = segs, n
		if x.centroids != nil {
			if err := x.addToLists(old, n); err != nil {
				return err
			}
		}
		if idsFile != nil {
			x.ids.unmap()
			x.ids = idsFile.t
		}
	}
	// The rows are on disk now. Their buffers are kept, emptied, for the next rows: a bulk
	// ingest that fills the tail again would otherwise allocate, zero and copy it afresh
	// while it doubles (about 1.5x its size), and collect the old one; Close releases them.
	clear(x.tailIDs)
	clear(x.tailSlot)
	x.tailVecs, x.tailIDs = x.tailVecs[:0], x.tailIDs[:0]
	x.meta, x.savedSeq, x.dirty, x.upgrade = m, m.Seq, false, false
	x.removeStale()
	return nil
}

// dropNewSegs unmaps the segments of segs that are not x.segs's.
func (x *DiskIndex) dropNewSegs(segs []*diskSeg) {
	for i, s := range segs {
		if i >= len(x.segs) || x.segs[i] != s {
			s.unmap()
		}
	}
}

func closeSegs(segs []*diskSeg) {
	for _, s := range segs {
		s.unmap()
	}
}

func segMetas(segs []*diskSeg) []diskSegMeta {
	out := make([]diskSegMeta, len(segs))
	for i, s := range segs {
		out[i] = s.meta
	}
	return out
}

// writeMeta writes sums-G.bin for m's segments, then disk.json for m (seq, CRC)
// atomically.
func (x *DiskIndex) writeMeta(m *diskMeta) error {
	m.Seq, m.Scale = x.seq, x.scale
	m.Block, m.Sums = 0, nil
	if len(m.Segs) > 0 {
		fm, err := x.writeSums(m)
		if err != nil {
			return err
		}
		m.Block, m.Sums = diskBlock, &fm
	}
	m.CRC = 0
	m.CRC = m.checksum()
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return diskWriteAtomic(filepath.Join(x.dir, diskMetaFile), b)
}

// diskWriteAtomic writes b to path atomically (see writeFileAtomic).
func diskWriteAtomic(path string, b []byte) error {
	return writeFileAtomic(path, "disk", func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// stampFile fills fm's size and modification time from the file.
func stampFile(path string, fm *diskFileMeta) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	fm.Size, fm.MTime = fi.Size(), fi.ModTime().UnixNano()
	return nil
}

// diskAppender appends rows to one file of a segment, keeping its CRC and its blocks'
// checksums.
type diskAppender struct {
	f   *os.File
	w   *bufio.Writer
	fm  *diskFileMeta
	blk []byte // the file's last block so far (fm.sums's last: its checksum once it is full)
}

// write appends b.
func (a *diskAppender) write(b []byte) error {
	a.fm.CRC = crc32.Update(a.fm.CRC, diskCastagnoli, b)
	for p := b; len(p) > 0; {
		if len(a.blk) == 0 {
			a.fm.sums = append(a.fm.sums, 0)
		}
		n := min(len(p), diskBlock-len(a.blk))
		a.blk = append(a.blk, p[:n]...)
		a.fm.Bytes += int64(n)
		p = p[n:]
		if len(a.blk) == diskBlock {
			a.fm.sums[len(a.fm.sums)-1] = diskBlockSum(a.blk)
			a.blk = a.blk[:0]
		}
	}
	_, err := a.w.Write(b)
	return err
}

// openAppender opens a segment file for appending after its fm.Bytes committed bytes
// (new: created empty). fm's block checksums become its own copy (the segment's record,
// still in force until the write commits, keeps the old ones); the bytes of a last block
// that is not full are read back and checked first (a damaged one is not written on as if
// it were sound).
func (x *DiskIndex) openAppender(fm *diskFileMeta) (*diskAppender, error) {
	if len(fm.sums) != diskBlocks(fm.Bytes) {
		return nil, x.corrupt("%s has %d block checksums, want %d", fm.Name, len(fm.sums), diskBlocks(fm.Bytes))
	}
	fm.sums = slices.Clone(fm.sums)
	f, err := os.OpenFile(filepath.Join(x.dir, fm.Name), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("vectorstore: disk: %w", err)
	}
	a := &diskAppender{f: f, fm: fm, blk: make([]byte, fm.Bytes&(diskBlock-1), diskBlock)}
	if len(a.blk) > 0 {
		last := len(fm.sums) - 1
		if _, err := f.ReadAt(a.blk, fm.Bytes&^(diskBlock-1)); err != nil {
			f.Close()
			return nil, x.corrupt("%s: %v", fm.Name, err)
		}
		if diskBlockSum(a.blk) != fm.sums[last] {
			f.Close()
			return nil, x.blockCorrupt(fm, last, int(fm.Bytes))
		}
	}
	if err = f.Truncate(fm.Bytes); err == nil {
		_, err = f.Seek(fm.Bytes, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("vectorstore: disk: %w", err)
	}
	a.w = bufio.NewWriterSize(f, 1<<20)
	return a, nil
}

func (a *diskAppender) finish(dir string) error {
	if len(a.blk) > 0 {
		a.fm.sums[len(a.fm.sums)-1] = diskBlockSum(a.blk)
	}
	err := a.w.Flush()
	if err == nil {
		err = a.f.Sync()
	}
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = stampFile(filepath.Join(dir, a.fm.Name), a.fm)
	}
	if err != nil {
		return fmt.Errorf("vectorstore: disk: %s: %w", a.fm.Name, err)
	}
	return nil
}

// writeRows appends count rows (row(i), as stored) to segs: the last one while it has
// room, then new segments numbered from m.NextSeg. It returns the new list with every
// segment it wrote mapped again (new diskSeg values; the caller unmaps the old ones).
func (x *DiskIndex) writeRows(m *diskMeta, segs []*diskSeg, count int, row func(i int) []float32) ([]*diskSeg, error) {
	return x.writeRowsFrom(m, segs, count, row, nil)
}

// writeRowsFrom is writeRows where row(i) may be nil (an index without rows of its own,
// compacting): row i's codes and list number are then copied from those of ordinal
// from(i) of x.segs.
func (x *DiskIndex) writeRowsFrom(m *diskMeta, segs []*diskSeg, count int, row func(i int) []float32, from func(i int) int32) ([]*diskSeg, error) {
	train, tc := row, count
	if from != nil && ((x.keepsInt8() && x.scale == nil) || (x.nlist > 0 && x.centroids == nil && count > 0)) {
		var err error
		if train, tc, err = x.trainingSample(count, row, from); err != nil {
			return nil, err
		}
	}
	if x.keepsInt8() && x.scale == nil {
		x.scale = trainScale(x.dim, min(tc, 1<<16), train)
	}
	if x.nlist > 0 && x.centroids == nil && count > 0 {
		x.centroids = x.trainCentroids(tc, train)
		fm, err := x.writeCentroids(m)
		if err != nil {
			x.centroids = nil
			return nil, err
		}
		m.IVF = fm
	}
	var assign []int32
	var batch [][]float32
	W, d := x.codeWords(), x.dim
	code := make([]uint64, W)
	rtmp := x.rotScratch()
	i8 := make([]int8, d)
	var fresh []*diskSeg
	fail := func(err error) ([]*diskSeg, error) {
		closeSegs(fresh)
		return nil, err
	}
	var src *diskCopySource
	if from != nil {
		src = &diskCopySource{x: x}
		defer src.close()
	}
	for i := 0; i < count; {
		var sm diskSegMeta
		var prev *diskSeg // the segment appended to (nil: a new one)
		if len(segs) > 0 && segs[len(segs)-1].rows < x.segRows {
			prev = segs[len(segs)-1]
			sm = prev.meta
			segs = segs[:len(segs)-1]
		} else {
			sm = diskSegMeta{Num: m.NextSeg}
			m.NextSeg++
			base := fmt.Sprintf("seg-%06d", sm.Num)
			if x.rows == nil {
				sm.F32 = diskFileMeta{Name: base + ".f32"}
			}
			if x.keepsBinary() {
				sm.B1 = &diskFileMeta{Name: base + ".b1"}
			}
			if x.keepsInt8() {
				sm.I8 = &diskFileMeta{Name: base + ".i8"}
			}
			if x.centroids != nil {
				sm.IVL = &diskFileMeta{Name: base + ".ivl"}
			}
		}
		if sm.B1 != nil {
			c := *sm.B1
			sm.B1 = &c
		}
		if sm.I8 != nil {
			c := *sm.I8
			sm.I8 = &c
		}
		if sm.IVL != nil {
			c := *sm.IVL
			sm.IVL = &c
		}
		var apps []*diskAppender
		var f32, b1, ci8, ivl *diskAppender // the appenders of the files sm keeps
		for k, fm := range []*diskFileMeta{sm.f32File(), sm.B1, sm.I8, sm.IVL} {
			if fm == nil {
				continue
			}
			a, err := x.openAppender(fm)
			if err != nil {
				for _, a := range apps {
					a.f.Close()
				}
				return fail(err)
			}
			apps = append(apps, a)
			*[]**diskAppender{&f32, &b1, &ci8, &ivl}[k] = a
		}
		take := min(count-i, x.segRows-sm.Rows)
		if sm.IVL != nil {
			batch = batch[:0]
			at := assign[:0]
			for j := i; j < i+take; j++ {
				if r := row(j); r != nil {
					batch = append(batch, r)
				}
			}
			assign = slices.Grow(at, len(batch))[:len(batch)]
			x.assignTo(x.centroids, batch, assign)
		}
		var err error
		for j, a := i, 0; j < i+take && err == nil; j++ {
			r := row(j)
			if r == nil { // copied: its codes and list number as they are
				o := from(j)
				si, oj := int(o)/x.segRows, int64(int(o)%x.segRows)
				if b1 != nil {
					err = src.copyTo(b1, si, diskB1, oj*int64(8*W), 8*W)
				}
				if err == nil && ci8 != nil {
					err = src.copyTo(ci8, si, diskI8, oj*int64(d), d)
				}
				if err == nil && ivl != nil {
					err = src.copyTo(ivl, si, diskIVL, oj*4, 4)
				}
				continue
			}
			if f32 != nil {
				err = f32.write(float32Bytes(r))
			}
			if err == nil && b1 != nil {
				x.encodeBinary(r, code, rtmp)
				err = b1.write(unsafe.Slice((*byte)(unsafe.Pointer(&code[0])), 8*W))
			}
			if err == nil && ci8 != nil {
				int8Code(r, x.scale, i8)
				err = ci8.write(unsafe.Slice((*byte)(unsafe.Pointer(&i8[0])), d))
			}
			if err == nil && ivl != nil {
				c := [1]uint32{uint32(assign[a])}
				a++
				err = ivl.write(uint32Bytes(c[:]))
			}
		}
		for _, a := range apps {
			if ferr := a.finish(x.dir); err == nil {
				err = ferr
			}
		}
		if err != nil {
			return fail(fmt.Errorf("vectorstore: disk: %w", err))
		}
		sm.Rows += take
		i += take
		s, _, err := x.mapSeg(sm)
		if err != nil {
			if s != nil {
				s.unmap()
			}
			return fail(err)
		}
		s.inheritChecks(prev)
		fresh = append(fresh, s)
		segs = append(segs, s)
	}
	return segs, nil
}

// diskCopySource reads the codes and list numbers of x.segs' rows for a copy of them in
// another order (OrderLists, a compaction) with pread, not through the mappings: a row
// read through a mapping leaves its page in the process's resident set, and the kernel
// maps the faulting page's cached neighbours with it (fault-around, 64 KiB), so a copy in
// list order kept up to 2.4 GB of 21M rows' codes resident. Read this way they stay in
// the page cache only.
type diskCopySource struct {
	x     *DiskIndex
	files map[[2]int]*os.File // by segment and file kind
	buf   []byte
}

// copyTo appends n bytes at off of file k of segment si to a.
func (c *diskCopySource) copyTo(a *diskAppender, si, k int, off int64, n int) error {
	if si >= len(c.x.segs) {
		return c.x.corrupt("a copy reads segment %d of %d", si, len(c.x.segs))
	}
	fm := c.x.segs[si].file(k)
	if fm == nil {
		return c.x.corrupt("segment %d keeps no file of kind %d", si, k)
	}
	if off+int64(n) > fm.Bytes {
		return c.x.corrupt("%s: a copy reads bytes %d..%d of %d", fm.Name, off, off+int64(n), fm.Bytes)
	}
	key := [2]int{si, k}
	f := c.files[key]
	if f == nil {
		var err error
		if f, _, err = c.x.openFile(*fm); err != nil {
			return err
		}
		if c.files == nil {
			c.files = map[[2]int]*os.File{}
		}
		c.files[key] = f
	}
	if cap(c.buf) < n {
		c.buf = make([]byte, n)
	}
	b := c.buf[:n]
	if _, err := f.ReadAt(b, off); err != nil {
		return c.x.corrupt("%s: %v", fm.Name, err)
	}
	return a.write(b)
}

// close closes the files c opened.
func (c *diskCopySource) close() {
	for _, f := range c.files {
		f.Close()
	}
}

// trainScale is the per-dimension int8 scale of the first n rows: the largest magnitude
// of each dimension over 127 (1/127 for a dimension that is always 0).
func trainScale(d, n int, row func(i int) []float32) []float32 {
	sc := make([]float32, d)
	for i := range n {
		for j, v := range row(i) {
			sc[j] = max(sc[j], float32(math.Abs(float64(v))))
		}
	}
	for j := range sc {
		sc[j] = cmp.Or(sc[j], 1) / 127
	}
	return sc
}

// copiedPerm splits the new ordinals of a copy (order[i]: the old ordinal of new ordinal
// i) for writeIDs: sorted, those of rows from the id table, in its sorted order
// (x.ids.perm, the dead rows left out); rest, those of the rows in memory. writeIDs sorts
// only rest, instead of sorting every id again through the old table's mapping, a page
// here and a page there.
func (x *DiskIndex) copiedPerm(order []int32) (sorted, rest []uint32) {
	to := make([]int32, x.n0) // new ordinal + 1 (0: not copied)
	rest = []uint32{}
	for i, o := range order {
		if int(o) < x.n0 {
			to[o] = int32(i) + 1
		} else {
			rest = append(rest, uint32(i))
		}
	}
	sorted = make([]uint32, 0, len(order)-len(rest))
	for _, o := range x.ids.perm {
		if v := to[o]; v > 0 {
			sorted = append(sorted, uint32(v-1))
		}
	}
	return sorted, rest
}

// copiedID is the id of new ordinal i of a copy (order[i]: its old ordinal). Its calls
// read the old id table in the copy's order, a page here and a page there: every
// diskDropEvery of them it drops that table's pages from the resident set.
func (x *DiskIndex) copiedID(order []int32) func(int32) string {
	calls := 0
	return func(i int32) string {
		if calls++; calls%diskDropEvery == 0 {
			diskDropResident(x.ids.mapping)
		}
		return x.idView(order[i])
	}
}

// diskIDsFile is a written, mapped id table.
type diskIDsFile struct {
	t    diskIDs
	meta diskFileMeta
}

func (f *diskIDsFile) unmap() { f.t.unmap() }

// writeIDs writes the id table of n ordinals (id(o)), sorted by id: prefix holds ordinals
// already sorted by id (an earlier table's order), rest the others, sorted here and merged
// with them; rest nil: the ordinals from len(prefix) on (prefix the table of the first
// len(prefix) ordinals, or nil).
func (x *DiskIndex) writeIDs(m *diskMeta, n int, id func(int32) string, prefix, rest []uint32) (*diskIDsFile, error) {
	if rest == nil {
		rest = make([]uint32, 0, n-len(prefix))
		for o := len(prefix); o < n; o++ {
			rest = append(rest, uint32(o))
		}
	}
	byID := func(a, b uint32) int {
		return cmp.Or(strings.Compare(id(int32(a)), id(int32(b))), cmp.Compare(a, b))
	}
	slices.SortFunc(rest, byID)
	perm := make([]uint32, 0, n)
	i, j := 0, 0
	for i < len(prefix) && j < len(rest) {
		if byID(prefix[i], rest[j]) <= 0 {
			perm = append(perm, prefix[i])
			i++
		} else {
			perm = append(perm, rest[j])
			j++
		}
	}
	perm = append(append(perm, prefix[i:]...), rest[j:]...)

	// Streamed to the file (through atomicfile's buffer), its CRC and size counted on the
	// way: at 21M ids the table is about 440 MB, which a buffer in memory would hold twice
	// over while it grows, on top of the heap the load already has.
	name := fmt.Sprintf("ids-%d.bin", m.Gen)
	fm := diskFileMeta{Name: name}
	path := filepath.Join(x.dir, name)
	err := writeFileAtomic(path, "disk", func(w io.Writer) error {
		cw := &diskCRCWriter{w: w}
		var u [8]byte
		cw.Write([]byte(diskIDsMagic))
		binary.LittleEndian.PutUint64(u[:], uint64(n))
		cw.Write(u[:])
		var off uint64
		for o := range n + 1 {
			binary.LittleEndian.PutUint64(u[:], off)
			cw.Write(u[:])
			if o < n {
				off += uint64(len(id(int32(o))))
			}
		}
		for _, p := range perm {
			binary.LittleEndian.PutUint32(u[:4], p)
			cw.Write(u[:4])
		}
		for o := range n {
			cw.WriteString(id(int32(o)))
		}
		fm.Bytes, fm.CRC = cw.n, cw.crc
		return cw.err
	})
	if err != nil {
		return nil, err
	}
	if err := stampFile(path, &fm); err != nil {
		return nil, err
	}
	// Map it through a scratch index (the same checks as an open).
	y := &DiskIndex{dir: x.dir}
	if err := y.loadIDs(fm, n); err != nil {
		y.ids.unmap()
		return nil, err
	}
	// The check read every page of it: they need not stay resident (at 21M ids, 440 MB
	// of a load's peak, rewritten at every flush); lookups fault back the ones they read.
	diskDropResident(y.ids.mapping)
	return &diskIDsFile{t: y.ids, meta: fm}, nil
}

// diskCRCWriter writes to w, counting the bytes and their Castagnoli CRC; the first error
// sticks (err), and later writes do nothing.
type diskCRCWriter struct {
	w   io.Writer
	n   int64
	crc uint32
	err error
	tmp []byte
}

// Write writes b, counting it.
func (c *diskCRCWriter) Write(b []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	k, err := c.w.Write(b)
	c.crc = crc32.Update(c.crc, diskCastagnoli, b[:k])
	c.n += int64(k)
	c.err = err
	return k, err
}

// WriteString writes s through a scratch buffer that is reused (no allocation an id).
func (c *diskCRCWriter) WriteString(s string) (int, error) {
	c.tmp = append(c.tmp[:0], s...)
	return c.Write(c.tmp)
}

// writeTomb writes the tombstones of n ordinals.
func (x *DiskIndex) writeTomb(m *diskMeta, n int, tomb []uint64) (diskFileMeta, error) {
	b := make([]byte, 16+8*((n+63)/64))
	copy(b, diskTombMagic)
	binary.LittleEndian.PutUint64(b[8:], uint64(n))
	for i := range (n + 63) / 64 {
		binary.LittleEndian.PutUint64(b[16+8*i:], tomb[i])
	}
	name := fmt.Sprintf("tomb-%d.bin", m.Gen)
	fm := diskFileMeta{Name: name, Bytes: int64(len(b)), CRC: crc32.Checksum(b, diskCastagnoli)}
	path := filepath.Join(x.dir, name)
	if err := diskWriteAtomic(path, b); err != nil {
		return fm, err
	}
	return fm, stampFile(path, &fm)
}

// removeStale deletes the files of x.dir that disk.json does not name.
func (x *DiskIndex) removeStale() {
	keep := map[string]bool{diskMetaFile: true, x.meta.IDs.Name: true, x.meta.Tomb.Name: true}
	if x.meta.IVF != nil {
		keep[x.meta.IVF.Name] = true
	}
	if x.meta.Sums != nil {
		keep[x.meta.Sums.Name] = true
	}
	for _, s := range x.meta.Segs {
		keep[s.F32.Name] = true
		if s.B1 != nil {
			keep[s.B1.Name] = true
		}
		if s.I8 != nil {
			keep[s.I8.Name] = true
		}
		if s.IVL != nil {
			keep[s.IVL.Name] = true
		}
	}
	ents, err := os.ReadDir(x.dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		n := e.Name()
		if keep[n] || !(strings.HasPrefix(n, "seg-") || strings.HasPrefix(n, "ids-") || strings.HasPrefix(n, "tomb-") || strings.HasPrefix(n, "ivf-") || strings.HasPrefix(n, "sums-") || strings.HasSuffix(n, ".tmp") || atomicfile.IsTemp(n)) {
			continue
		}
		if err := os.Remove(filepath.Join(x.dir, n)); err != nil {
			slog.Warn("vectorstore: disk: cannot remove a stale file", "file", n, "err", err)
		}
	}
}

// uint64Bytes views v as its bytes.
func uint64Bytes(v []uint64) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*8)
}

// trainingSample is the rows a first write trains its int8 scale or its lists on when
// some of its rows are not in memory (row nil: an index without rows of its own,
// compacting): up to max(65536, 256 x nlist) of the count rows at even steps, those not in
// memory read from the row source, as a row function over the sample and its size. Under
// the write lock. A first write trains on the rows in memory, so this reads only when it
// has none (an index whose disk.json records codes and no scale or lists is refused on
// open before).
func (x *DiskIndex) trainingSample(count int, row func(i int) []float32, from func(i int) int32) (func(i int) []float32, int, error) {
	ns := min(count, max(1<<16, 256*x.nlist))
	sample := make([][]float32, ns)
	var need []int32
	var at []int
	for s := range ns {
		i := int(int64(s) * int64(count) / int64(ns))
		if sample[s] = row(i); sample[s] == nil {
			need, at = append(need, from(i)), append(at, s)
		}
	}
	for lo := 0; lo < len(need); lo += diskFetchRows {
		hi := min(lo+diskFetchRows, len(need))
		dst := make([][]float32, hi-lo)
		for i := range dst {
			dst[i] = make([]float32, x.dim)
		}
		if err := x.fetchRows(context.Background(), need[lo:hi], dst); err != nil {
			return nil, 0, err
		}
		for i, v := range dst {
			sample[at[lo+i]] = v
		}
	}
	return func(i int) []float32 { return sample[i] }, ns, nil
}

// f32File is the record of the segment's .f32 file (nil: none, a rowless index).
func (sm *diskSegMeta) f32File() *diskFileMeta {
	if sm.F32.Name == "" {
		return nil
	}
	return &sm.F32
}
