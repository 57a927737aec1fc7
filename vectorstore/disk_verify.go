package vectorstore

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"runtime"
	"unsafe"
)

// The disk index's block checksums: every diskBlock bytes of a segment file carry a
// checksum (diskBlockSum; sums-G.bin, committed by disk.json), and no byte of a segment
// file is used before its block has matched it. A search checks the blocks it reads the
// first time it reads them (a bit per block, kept while the segment stays mapped, so the
// same block is not checked again); Verify checks every block. A block that fails is an
// error matching ErrCorrupt, never a result.

// checkRange checks the blocks of file k of s that hold its bytes [lo, hi), those not
// checked since s was mapped.
func (x *DiskIndex) checkRange(s *diskSeg, k, lo, hi int) error {
	if hi <= lo {
		return nil
	}
	ok := s.ok[k]
	last := (hi - 1) >> diskBlockShift
	for b := lo >> diskBlockShift; b <= last; {
		w := ok[b>>6].Load()
		if w == ^uint64(0) {
			b = b | 63 + 1
			continue
		}
		if w&(1<<(b&63)) == 0 {
			if err := x.checkBlock(s, k, b); err != nil {
				return err
			}
		}
		b++
	}
	return nil
}

// checked reports whether every block of file k of s that holds its bytes [lo, hi) is
// checked.
func (x *DiskIndex) checked(s *diskSeg, k, lo, hi int) bool {
	if hi <= lo {
		return true
	}
	ok := s.ok[k]
	last := (hi - 1) >> diskBlockShift
	for b := lo >> diskBlockShift; b <= last; {
		w := ok[b>>6].Load()
		if w == ^uint64(0) {
			b = b | 63 + 1
			continue
		}
		if w&(1<<(b&63)) == 0 {
			return false
		}
		b++
	}
	return true
}

// checkBlock checks block b of file k of s against its checksum and marks it checked.
func (x *DiskIndex) checkBlock(s *diskSeg, k, b int) error {
	if err := x.blockSound(s, k, b); err != nil {
		return err
	}
	s.ok[k][b>>6].Or(1 << (b & 63))
	return nil
}

// blockSound reports whether block b of file k of s matches its checksum (an error
// matching errDiskCorrupt when not).
func (x *DiskIndex) blockSound(s *diskSeg, k, b int) error {
	data, fm := s.maps[k], s.file(k)
	lo := b << diskBlockShift
	hi := min(lo+diskBlock, len(data))
	if got := diskBlockSum(data[lo:hi]); got != fm.sums[b] {
		return x.blockCorrupt(fm, b, len(data))
	}
	return nil
}

// blockCorrupt is the error of block b of a file of n bytes that fails its checksum.
func (x *DiskIndex) blockCorrupt(fm *diskFileMeta, b, n int) error {
	lo := b << diskBlockShift
	return x.corrupt("%s: bytes %d-%d fail their checksum", fm.Name, lo, min(lo+diskBlock, n))
}

// checkWhole checks file k of a version 1 segment (no block checksums) against the CRC of
// the whole file, computing its block checksums on the way, and marks every block checked.
func (x *DiskIndex) checkWhole(s *diskSeg, k int) error {
	data, fm := s.maps[k], s.file(k)
	sums := make([]uint64, diskBlocks(fm.Bytes))
	var whole uint32
	for b := range sums {
		p := data[b<<diskBlockShift : min((b+1)<<diskBlockShift, len(data))]
		whole = crc32.Update(whole, diskCastagnoli, p)
		sums[b] = diskBlockSum(p)
	}
	if whole != fm.CRC {
		return x.corrupt("%s fails its checksum", fm.Name)
	}
	fm.sums = sums
	for i := range s.ok[k] {
		s.ok[k][i].Store(^uint64(0))
	}
	return nil
}

// inheritChecks marks the blocks of s, just written as prev's files and more rows (prev
// nil: a new segment), checked where prev had its full blocks checked, and every block
// after them: written by this process from its memory, or (a block prev left part full)
// read back and checked by openAppender before the rows were added.
func (s *diskSeg) inheritChecks(prev *diskSeg) {
	for k := range s.ok {
		fm := s.file(k)
		if fm == nil {
			continue
		}
		full := 0
		if prev != nil && prev.file(k) != nil {
			full = int(prev.file(k).Bytes >> diskBlockShift)
			for b := range full {
				if prev.ok[k][b>>6].Load()&(1<<(b&63)) != 0 {
					s.ok[k][b>>6].Or(1 << (b & 63))
				}
			}
		}
		for b := full; b < diskBlocks(fm.Bytes); b++ {
			s.ok[k][b>>6].Or(1 << (b & 63))
		}
	}
}

// rowAt is the float32 row of ordinal o, its blocks checked.
func (x *DiskIndex) rowAt(o int32) ([]float32, error) {
	if int(o) < x.n0 {
		i, rb := int(o)%x.segRows, 4*x.dim
		if err := x.checkRange(x.segs[int(o)/x.segRows], diskF32, i*rb, (i+1)*rb); err != nil {
			return nil, err
		}
	}
	return x.row(o), nil
}

// codeAt checks the blocks of the code of row j of s in file k (diskB1 or diskI8).
func (x *DiskIndex) codeAt(s *diskSeg, k, j int) error {
	rb := x.dim
	if k == diskB1 {
		rb = 8 * x.codeWords()
	}
	return x.checkRange(s, k, j*rb, (j+1)*rb)
}

// checkAllRows checks every block of the float32 rows not checked yet.
func (x *DiskIndex) checkAllRows() error {
	for _, s := range x.segs {
		if err := x.checkRange(s, diskF32, 0, len(s.maps[diskF32])); err != nil {
			return err
		}
		s.dropResident() // (a pass over every segment: none stays resident for it)
	}
	return nil
}

// loadSums reads and checks sums-G.bin and hands each file of segs its block checksums
// (views of one buffer: the file is read straight into it).
func (x *DiskIndex) loadSums(fm diskFileMeta, segs []diskSegMeta) error {
	f, _, err := x.openFile(fm)
	if err != nil {
		return err
	}
	defer f.Close()
	want := 0
	for i := range segs {
		for _, f := range segs[i].files() {
			if f.Bytes < 0 {
				return x.corrupt("%s records %d bytes", f.Name, f.Bytes)
			}
			want += diskBlocks(f.Bytes)
		}
	}
	if fm.Bytes != int64(24+8*want) {
		return x.corrupt("%s records %d bytes, want %d", fm.Name, fm.Bytes, 24+8*want)
	}
	buf := make([]uint64, 3+want)
	b := unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), 8*len(buf))
	if _, err := f.ReadAt(b, 0); err != nil {
		return x.corrupt("%s: %v", fm.Name, err)
	}
	if crc32.Checksum(b, diskCastagnoli) != fm.CRC {
		return x.corrupt("%s fails its checksum", fm.Name)
	}
	if string(b[:8]) != diskSumsMagic || buf[1] != diskBlock || buf[2] != uint64(want) {
		return x.corrupt("%s: bad header", fm.Name)
	}
	all := buf[3:]
	for i := range segs {
		for _, f := range segs[i].files() {
			n := diskBlocks(f.Bytes)
			f.sums, all = all[:n:n], all[n:]
		}
	}
	return nil
}

// files are the records of sm's files, in diskF32... order (those it keeps).
func (sm *diskSegMeta) files() []*diskFileMeta {
	var out []*diskFileMeta
	for _, f := range []*diskFileMeta{sm.f32File(), sm.B1, sm.I8, sm.IVL} {
		if f != nil {
			out = append(out, f)
		}
	}
	return out
}

// writeSums writes sums-G.bin: the block checksums of m's segment files.
func (x *DiskIndex) writeSums(m *diskMeta) (diskFileMeta, error) {
	var all []uint64
	for i := range m.Segs {
		for _, f := range m.Segs[i].files() {
			if len(f.sums) != diskBlocks(f.Bytes) {
				return diskFileMeta{}, fmt.Errorf("vectorstore: disk: %s has %d block checksums, want %d", f.Name, len(f.sums), diskBlocks(f.Bytes))
			}
			all = append(all, f.sums...)
		}
	}
	b := make([]byte, 24, 24+8*len(all))
	copy(b, diskSumsMagic)
	binary.LittleEndian.PutUint64(b[8:], diskBlock)
	binary.LittleEndian.PutUint64(b[16:], uint64(len(all)))
	for _, v := range all {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	fm := diskFileMeta{Name: fmt.Sprintf("sums-%d.bin", m.Gen), Bytes: int64(len(b)), CRC: crc32.Checksum(b, diskCastagnoli)}
	path := filepath.Join(x.dir, fm.Name)
	if err := diskWriteAtomic(path, b); err != nil {
		return fm, err
	}
	return fm, stampFile(path, &fm)
}

// diskVerifyBlocks is how many blocks a worker of Verify checks at a time (4 MiB).
const diskVerifyBlocks = 1024

// Verify reads back every row and code of the index's files and checks each block against
// its checksum, whether a search has checked it already or not, and the id table, the
// tombstones, the centroids and the checksums against their CRC-32Cs: memory check calls
// it to read every vector. Damage is an error matching ErrCorrupt that names the file and bytes; an
// index in memory has nothing to verify. It runs on all cores, searches going on.
func (x *DiskIndex) Verify(ctx context.Context) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.failed != nil {
		return x.failed
	}
	if x.dir == "" {
		return nil
	}
	type job struct {
		s      *diskSeg
		k      int
		lo, hi int // blocks
	}
	var jobs []job
	for _, s := range x.segs {
		for k := range s.maps {
			if s.file(k) == nil {
				continue
			}
			n := diskBlocks(int64(len(s.maps[k])))
			for lo := 0; lo < n; lo += diskVerifyBlocks {
				jobs = append(jobs, job{s, k, lo, min(lo+diskVerifyBlocks, n)})
			}
		}
	}
	if err := diskEach(ctx, cmp.Or(x.threads, runtime.GOMAXPROCS(0)), len(jobs), func(_, i int) error {
		j := jobs[i]
		for b := j.lo; b < j.hi; b++ {
			if err := x.blockSound(j.s, j.k, b); err != nil {
				return err
			}
			j.s.ok[j.k][b>>6].Or(1 << (b & 63))
		}
		return nil
	}); err != nil {
		return err
	}
	if x.n0 > 0 && crc32.Checksum(x.ids.mapping, diskCastagnoli) != x.meta.IDs.CRC {
		return x.corrupt("%s fails its checksum", x.meta.IDs.Name)
	}
	for _, fm := range []*diskFileMeta{&x.meta.Tomb, x.meta.IVF, x.meta.Sums} {
		if fm == nil || fm.Name == "" {
			continue
		}
		f, err := x.openChecked(*fm, true)
		if err != nil {
			return err
		}
		f.Close()
	}
	return nil
}
