package vectorstore

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"iter"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"unsafe"

	"github.com/agentmem/memory/internal/topk"
	"github.com/agentmem/memory/internal/vecmath"
)

// The disk index's inverted lists (IndexConfig.Params["nlist"] > 0): k-means centroids
// trained on the first rows written, each row assigned to its nearest centroid (by inner
// product; the centroids are normalised for Cosine), and a quantized search scans only the
// codes of the nprobe lists whose centroids are nearest the query, then rescores as
// usual (binary codes as without lists: the signs of the rows or of their rotation). The
// centroids stay in the rows' own space, rotated codes or not: the rotation preserves
// inner products, so rotating the centroids and the query would probe the same lists at
// the cost of a rotation per centroid. The centroids live in
// ivf-G.bin ("MVIVF001", nlist, dim, nlist x dim float32), each segment's list numbers in
// seg-NNNNNN.ivl (a uint32 a row), both checked like the other files; the lists themselves
// are built in memory on open (4 bytes a row). A list's codes lie scattered over the
// segments in the order rows were added, so the first search that probes a list copies
// them into one block in list order (diskPack; 48 bytes a row for 384-dimension binary
// codes), and later scans of the list read memory in order instead of a cache line (and
// often a page) a row: at 10M rows this made a probe of 16 lists several times faster. The
// copies are dropped whenever the lists change and are capped at diskPackBudget bytes.
const diskIVFMagic = "MVIVF001"

// diskKMeansIters is how many k-means rounds train the centroids.
const diskKMeansIters = 8

// trainCentroids runs k-means (inner-product assignment, normalised means for Cosine) on
// up to 256 x nlist of the count rows, drawn at even steps.
func (x *DiskIndex) trainCentroids(count int, row func(i int) []float32) []float32 {
	d, k := x.dim, x.nlist
	ns := min(count, 256*k)
	sample := make([][]float32, ns)
	for i := range sample {
		sample[i] = row(int(int64(i) * int64(count) / int64(ns)))
	}
	cent := make([]float32, k*d)
	rng := rand.New(rand.NewPCG(uint64(count), uint64(k)))
	for c, i := range rng.Perm(ns)[:min(k, ns)] {
		copy(cent[c*d:(c+1)*d], sample[i])
	}
	assign := make([]int32, ns)
	for range diskKMeansIters {
		x.assignTo(cent, sample, assign)
		sums := make([]float64, k*d)
		cnt := make([]int, k)
		for i, c := range assign {
			cnt[c]++
			s := sums[int(c)*d : int(c+1)*d]
			for j, v := range sample[i] {
				s[j] += float64(v)
			}
		}
		for c := range k {
			if cnt[c] == 0 { // an empty list takes a random row
				copy(cent[c*d:(c+1)*d], sample[rng.IntN(ns)])
				continue
			}
			for j := range d {
				cent[c*d+j] = float32(sums[c*d+j] / float64(cnt[c]))
			}
			if x.metric == Cosine {
				vecmath.NormalizeInto(cent[c*d:(c+1)*d], cent[c*d:(c+1)*d])
			}
		}
	}
	return cent
}

// assignTo sets out[i] to the centroid of cent nearest rows[i] (the flat index's batch
// search with k = 1).
func (x *DiskIndex) assignTo(cent []float32, rows [][]float32, out []int32) {
	d := x.dim
	k := len(cent) / d
	fl := &flatIndex{dim: d, metric: InnerProduct, threads: x.threads, data: cent, ids: make([]string, k)}
	for c := range k {
		fl.ids[c] = fmt.Sprintf("%08d", c) // ties: the lower list
	}
	const chunk = 1 << 14
	for lo := 0; lo < len(rows); lo += chunk {
		hi := min(lo+chunk, len(rows))
		res, err := fl.SearchBatch(context.Background(), rows[lo:hi], 1, nil)
		for i := range hi - lo {
			c := 0
			if err == nil && len(res[i]) == 1 {
				c, _ = strconv.Atoi(res[i][0].ID) // decimal (fmt.Sscan would read "0...": octal)
			}
			out[lo+i] = int32(c)
		}
	}
}

// writeCentroids writes ivf-G.bin.
func (x *DiskIndex) writeCentroids(m *diskMeta) (*diskFileMeta, error) {
	b := make([]byte, 24, 24+4*len(x.centroids))
	copy(b, diskIVFMagic)
	binary.LittleEndian.PutUint64(b[8:], uint64(x.nlist))
	binary.LittleEndian.PutUint64(b[16:], uint64(x.dim))
	b = append(b, float32Bytes(x.centroids)...)
	fm := &diskFileMeta{Name: fmt.Sprintf("ivf-%d.bin", m.Gen), Bytes: int64(len(b)), CRC: crc32.Checksum(b, diskCastagnoli)}
	path := filepath.Join(x.dir, fm.Name)
	if err := diskWriteAtomic(path, b); err != nil {
		return nil, err
	}
	return fm, stampFile(path, fm)
}

// loadCentroids reads and checks ivf-G.bin.
func (x *DiskIndex) loadCentroids(fm diskFileMeta) error {
	f, err := x.openChecked(fm, true)
	if err != nil {
		return err
	}
	defer f.Close()
	b := make([]byte, fm.Bytes)
	if _, err := io.ReadFull(f, b); err != nil {
		return x.corrupt("%s: %v", fm.Name, err)
	}
	if len(b) != 24+4*x.nlist*x.dim || string(b[:8]) != diskIVFMagic ||
		binary.LittleEndian.Uint64(b[8:]) != uint64(x.nlist) || binary.LittleEndian.Uint64(b[16:]) != uint64(x.dim) {
		return x.corrupt("%s: bad header", fm.Name)
	}
	x.centroids = make([]float32, x.nlist*x.dim)
	copy(float32Bytes(x.centroids), b[24:])
	if err := vecmath.Check(x.centroids, len(x.centroids)); err != nil {
		return x.corrupt("%s: %v", fm.Name, err)
	}
	return nil
}

// diskList is one inverted list's rows, ascending: a run of consecutive ordinals
// [lo, lo+n) (the rows a load found written in list order, OrderLists), then ords (rows
// not in list order, or added after). A run costs nothing to hold: at 21M rows the
// ordinals of every list took 84 MB, and writing them a third of the index's open.
type diskList struct {
	lo, n int32
	ords  []int32
}

// len is the number of rows in l.
func (l *diskList) len() int { return int(l.n) + len(l.ords) }

// all yields l's ordinals in ascending order.
func (l *diskList) all() iter.Seq[int32] {
	return func(yield func(int32) bool) {
		for o := l.lo; o < l.lo+l.n; o++ {
			if !yield(o) {
				return
			}
		}
		for _, o := range l.ords {
			if !yield(o) {
				return
			}
		}
	}
}

// addToLists appends ordinals [lo, hi) (in segments) to their lists (and drops the
// lists' packed codes). It counts each list's new rows first and grows each list once
// (appending row by row copied the lists about twice over as they doubled). Lists made
// here (the first call) are runs when the rows lie in list order (each list's rows
// consecutive: an index written by OrderLists), else they share one array of ordinals,
// each list capped at its own end, so a later append to one moves that list alone.
func (x *DiskIndex) addToLists(lo, hi int) error {
	counts := make([]int, x.nlist)
	ordered, prev := true, uint32(0)
	if err := x.eachListNumbers(lo, hi, func(_ int, cs []uint32, name string) error {
		for _, c := range cs {
			if int(c) >= x.nlist {
				return x.corrupt("%s: list %d of %d", name, c, x.nlist)
			}
			counts[c]++
			ordered = ordered && c >= prev
			prev = c
		}
		return nil
	}); err != nil {
		return err
	}
	x.dropPacks()
	if x.lists == nil {
		x.lists = make([]diskList, x.nlist)
		if ordered && hi-lo <= math.MaxInt32 {
			at := int32(lo)
			for c, k := range counts {
				x.lists[c] = diskList{lo: at, n: int32(k)}
				at += int32(k)
			}
			return nil
		}
		all := make([]int32, hi-lo)
		off := 0
		for c, k := range counts {
			x.lists[c].ords = all[off : off : off+k]
			off += k
		}
	} else {
		for c, k := range counts {
			if k > 0 {
				x.lists[c].ords = slices.Grow(x.lists[c].ords, k)
			}
		}
	}
	return x.eachListNumbers(lo, hi, func(o int, cs []uint32, _ string) error {
		for i, c := range cs {
			x.lists[c].ords = append(x.lists[c].ords, int32(o+i))
		}
		return nil
	})
}

// eachListNumbers calls f with the list numbers of ordinals [lo, hi) (in segments), a
// segment's share at a time: cs[i] is ordinal o+i's list, name the segment's file of them.
func (x *DiskIndex) eachListNumbers(lo, hi int, f func(o int, cs []uint32, name string) error) error {
	for o := lo; o < hi; {
		s := x.segs[o/x.segRows]
		start := o % x.segRows
		end := min(len(s.ivl), start+hi-o)
		if end <= start {
			return x.corrupt("%s: %d list numbers, row %d asked for", s.meta.IVL.Name, len(s.ivl), start)
		}
		if err := f(o, s.ivl[start:end], s.meta.IVL.Name); err != nil {
			return err
		}
		o += end - start
	}
	return nil
}

// probeWith returns the lists a search with options o scans for q (probe).
func (x *DiskIndex) probeWith(q []float32, o DiskSearchOptions) []int32 {
	np, cut := x.probeParams(o)
	return x.probe(q, np, cut)
}

// probeParams is the nprobe and ProbeCut of a search with options o: the cut is
// ProbeCut when it is set (the option, else Params["probecut"]), else
// diskProbeCutDefault when nprobe is the index's default (neither the option nor
// Params["nprobe"] sets it: an nprobe asked for is scanned whole).
func (x *DiskIndex) probeParams(o DiskSearchOptions) (nprobe, cut int) {
	np, asked := o.NProbe, o.NProbe > 0
	if !asked {
		np, asked = x.nprobe, x.nprobeSet
	}
	cut = cmp.Or(o.ProbeCut, x.probeCut)
	if cut == 0 && !asked {
		cut = diskProbeCutDefault
	}
	return np, cut
}

// cuts reports whether a search of n lists with ProbeCut cut may scan fewer (probe): a
// Cosine index, cut > 0 and n >= diskProbeCutMin.
func (x *DiskIndex) cuts(n, cut int) bool {
	return cut > 0 && x.metric == Cosine && n >= diskProbeCutMin
}

// probe returns the lists to scan for q, best first: the n = min(nprobe, nlist) whose
// centroids score best against it. For a Cosine index with cut > 0
// (DiskSearchOptions.ProbeCut) and n >= diskProbeCutMin, only the first keep =
// n/diskProbeFloor of them when those stand apart from the rest: when, for some m from 1
// to keep, the angle between q and list m's centroid exceeds list m-1's by at least cut %
// of what the last list's exceeds list m's by. q and the centroids are normalised: an
// angle is acos(score).
func (x *DiskIndex) probe(q []float32, nprobe, cut int) []int32 {
	scores := make([]float32, x.nlist)
	flatDots(q, x.centroids, scores)
	h := topk.New(min(nprobe, x.nlist), func(a, b int32) bool { return a < b })
	for c, s := range scores {
		h.Offer(s, int32(c))
	}
	items := h.Sorted()
	if keep := len(items) / diskProbeFloor; x.cuts(len(items), cut) {
		angle := func(i int) float64 { return math.Acos(max(-1, min(1, float64(items[i].Score)))) }
		last := angle(len(items) - 1)
		for m := 1; m <= keep; m++ {
			if jump := angle(m) - angle(m-1); jump > 0 && jump >= float64(cut)/100*(last-angle(m)) {
				items = items[:keep]
				break
			}
		}
	}
	out := make([]int32, len(items))
	for i, it := range items {
		out[i] = it.Value
	}
	return out
}

// uint32Bytes views v as its bytes.
func uint32Bytes(v []uint32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*4)
}

// diskPackBudget caps the bytes of packed list codes an index keeps (0: none; a variable
// for tests).
var diskPackBudget int64 = 1 << 30

// diskPack is one list's codes in list order, in pieces: one copy of them (packed), or,
// where the list's rows lie in runs of consecutive ordinals (an index written in list
// order, OrderLists), views of the segments' own codes, read in place.
type diskPack struct {
	n      int // the list's rows when it was packed (x.lists[c].len())
	pieces []diskPiece
}

// diskPiece holds the codes of n rows: row i's ordinal is ords[i] (ords nil: base+i).
type diskPiece struct {
	n    int
	base int32
	ords []int32
	b1   []uint64 // binary codes, codeWords() words a row
	i8   []int8   // int8 codes, dim a row
}

// at is the ordinal of the piece's row i.
func (pc *diskPiece) at(i int) int32 {
	if pc.ords == nil {
		return pc.base + int32(i)
	}
	return pc.ords[i]
}

// diskViewRun is the mean run of consecutive ordinals from which a list's codes are read
// in place rather than copied.
const diskViewRun = 32

// diskPacks holds the packed codes of each list, built on a list's first probe.
type diskPacks struct {
	mode  DiskMode
	lists []atomic.Pointer[diskPack]
	bytes atomic.Int64
}

// dropPacks forgets every packed list (the lists or the segments changed). Under the
// write lock.
func (x *DiskIndex) dropPacks() { x.packs.Store(nil) }

// pack returns list c's codes for mode in list order: views of the segments where its
// rows lie in runs of consecutive ordinals (its run, and its other rows when their runs
// are long), else a copy of its other rows made on first use while the budget allows
// (nil: scan the segments row by row), each code's blocks checked first. Under the read
// lock: concurrent searches may pack the same list twice, and keep either copy.
func (x *DiskIndex) pack(c int32, mode DiskMode) (*diskPack, error) {
	ps := x.packs.Load()
	if ps == nil {
		ps = &diskPacks{mode: mode, lists: make([]atomic.Pointer[diskPack], len(x.lists))}
		if !x.packs.CompareAndSwap(nil, ps) {
			ps = x.packs.Load()
		}
	}
	if ps == nil || ps.mode != mode || len(ps.lists) != len(x.lists) {
		return nil, nil // another mode's packs: this search scans the segments
	}
	l := &x.lists[c]
	if p := ps.lists[c].Load(); p != nil && p.n == l.len() {
		return p, nil
	}
	W, d := x.codeWords(), x.dim
	k, rowBytes := diskB1, 8*W
	if mode == DiskInt8 {
		k, rowBytes = diskI8, d
	}
	// view is a piece reading rows [j0, j1) of segment s in place, the first of them
	// ordinal base (ords nil) or ords.
	view := func(s *diskSeg, j0, j1 int, base int32, ords []int32) (diskPiece, error) {
		if err := x.checkRange(s, k, j0*rowBytes, j1*rowBytes); err != nil {
			return diskPiece{}, err
		}
		pc := diskPiece{n: j1 - j0, base: base, ords: ords}
		if mode == DiskBinary {
			pc.b1 = s.b1[j0*W : j1*W : j1*W]
		} else {
			pc.i8 = s.i8[j0*d : j1*d : j1*d]
		}
		return pc, nil
	}
	p := &diskPack{n: l.len()}
	for o, end := int(l.lo), int(l.lo)+int(l.n); o < end; { // the run, a piece a segment
		s, j0 := x.segs[o/x.segRows], o%x.segRows
		j1 := min(x.segRows, j0+end-o)
		pc, err := view(s, j0, j1, int32(o), nil)
		if err != nil {
			return nil, err
		}
		p.pieces = append(p.pieces, pc)
		o += j1 - j0
	}
	ords := l.ords
	if len(ords) == 0 {
		ps.lists[c].Store(p)
		return p, nil
	}
	if runs := x.ordinalRuns(ords); runs > 0 && len(ords) >= diskViewRun*runs {
		for i := 0; i < len(ords); {
			s, j0 := x.segs[int(ords[i])/x.segRows], int(ords[i])%x.segRows
			e := i + 1
			for e < len(ords) && ords[e] == ords[e-1]+1 && int(ords[e])%x.segRows != 0 {
				e++
			}
			pc, err := view(s, j0, j0+e-i, 0, ords[i:e:e])
			if err != nil {
				return nil, err
			}
			p.pieces = append(p.pieces, pc)
			i = e
		}
		ps.lists[c].Store(p)
		return p, nil
	}
	if diskPackBudget <= 0 {
		return nil, nil
	}
	size := int64(rowBytes) * int64(len(ords))
	if ps.bytes.Add(size) > diskPackBudget {
		ps.bytes.Add(-size)
		return nil, nil
	}
	pc := diskPiece{n: len(ords), ords: ords}
	fail := func(err error) (*diskPack, error) {
		ps.bytes.Add(-size)
		return nil, err
	}
	if mode == DiskBinary {
		pc.b1 = make([]uint64, len(ords)*W)
		for i, o := range ords {
			s, j := x.segs[int(o)/x.segRows], int(o)%x.segRows
			if err := x.codeAt(s, diskB1, j); err != nil {
				return fail(err)
			}
			copy(pc.b1[i*W:(i+1)*W], s.b1[j*W:(j+1)*W])
		}
	} else {
		pc.i8 = make([]int8, len(ords)*d)
		for i, o := range ords {
			s, j := x.segs[int(o)/x.segRows], int(o)%x.segRows
			if err := x.codeAt(s, diskI8, j); err != nil {
				return fail(err)
			}
			copy(pc.i8[i*d:(i+1)*d], s.i8[j*d:(j+1)*d])
		}
	}
	p.pieces = append(p.pieces, pc)
	ps.lists[c].Store(p)
	return p, nil
}

// ordinalRuns is the number of runs of consecutive ordinals, each within one segment,
// that ords (ascending) falls into.
func (x *DiskIndex) ordinalRuns(ords []int32) int {
	runs := 0
	for i, o := range ords {
		if i == 0 || o != ords[i-1]+1 || int(o)%x.segRows == 0 {
			runs++
		}
	}
	return runs
}

// listOrder is the live ordinals order (ascending) sorted by their list, stably (ascending
// within a list): a row in a segment by the list it was written with, a row in memory by
// its nearest centroid, as writing it will assign it.
func (x *DiskIndex) listOrder(order []int32) []int32 {
	var tail [][]float32
	for _, o := range order {
		if int(o) >= x.n0 {
			tail = append(tail, x.row(o))
		}
	}
	tailList := make([]int32, len(tail))
	x.assignTo(x.centroids, tail, tailList)
	lists := make([]int32, len(order))
	t := 0
	start := make([]int, x.nlist+1)
	for i, o := range order {
		if int(o) >= x.n0 {
			lists[i] = tailList[t]
			t++
		} else {
			lists[i] = int32(x.segs[int(o)/x.segRows].ivl[int(o)%x.segRows])
		}
		start[lists[i]+1]++
	}
	for c := range x.nlist {
		start[c+1] += start[c]
	}
	out := make([]int32, len(order))
	for i, o := range order {
		c := lists[i]
		out[start[c]] = o
		start[c]++
	}
	return out
}

// listsInOrder reports whether every list's rows lie in runs of consecutive ordinals: at
// most one run a list and a segment boundary.
func (x *DiskIndex) listsInOrder() bool {
	runs := 0
	for _, l := range x.lists {
		if l.n > 0 {
			runs++
		}
		runs += x.ordinalRuns(l.ords)
	}
	return runs <= len(x.lists)+len(x.segs)
}

// ListOrderer is an optional ability of an Index with inverted lists: OrderLists writes
// each list's rows together (DiskIndex.OrderLists).
type ListOrderer interface {
	OrderLists(ctx context.Context) error
}

var _ ListOrderer = (*DiskIndex)(nil)

// OrderLists writes the index again with each inverted list's rows in consecutive
// ordinals, the dead rows dropped and the rows in memory written: a search then reads a
// probed list's codes in place, in order, from the page cache (no copy in memory, no
// budget: diskPack), where rows added one batch after another leave every list scattered
// over every segment, a row a cache line apart. It copies the codes and list numbers (a
// pass over the codes, checked first, and a new id table), and commits at the sequence
// number of the last Commit (an index never written is written first, which trains its
// lists). Nothing to do (nil) without lists, in a read-only or in-memory index, or when
// the lists are in order already. Collection.Compact calls it.
func (x *DiskIndex) OrderLists(ctx context.Context) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.failed != nil {
		return x.failed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if x.dir == "" || x.readOnly || x.nlist == 0 {
		return nil
	}
	if x.centroids == nil || x.n0 == 0 {
		if len(x.tailIDs) == 0 {
			return nil
		}
		if err := x.persistLocked(); err != nil { // trains the lists on these rows first
			return err
		}
	}
	if x.listsInOrder() && len(x.tailIDs) == 0 && x.dead == 0 {
		return nil
	}
	x.byList = true
	defer func() { x.byList = false }()
	return x.persistLocked()
}
