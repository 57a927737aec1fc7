package vectorstore

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
)

// A disk index opened with IndexConfig.Rows (and a Dir) keeps no float32 rows of its own
// on disk: its segments hold the codes (binary sign codes, or int8 codes), the list
// numbers when it has inverted lists, and the id table and tombstones as always, and
// disk.json records "rowless": true (such files opened without a RowSource, or rowful ones
// with one, are ErrRowSource). The rows added since the last write stay in memory, as in
// any disk index. Its searches scan the codes and rescore the best k x oversample
// candidates with their vectors read from the RowSource in one call (normalised there
// for Cosine, as Add normalises the rows it keeps), so its hits are a rowful index's hits
// for the same vectors, scores bit for bit; its default scan is the codes whatever its
// size (DiskQuantAuto: binary). DiskExact reads every live row through the RowSource (a
// chunk at a time: slow, for ground truth), Vector one. Compaction copies the live rows'
// codes and list numbers, checked first, into new segments.

// diskFetchRows is how many rows a read from the RowSource asks for at most (the
// candidates of one search fit: k x oversample).
const diskFetchRows = 8192

// fetchRows reads the rows of segment ordinals ords from the row source into dst, each
// normalised for Cosine as the index keeps its own rows.
func (x *DiskIndex) fetchRows(ctx context.Context, ords []int32, dst [][]float32) error {
	ids := make([]string, len(ords))
	for i, o := range ords {
		ids[i] = strings.Clone(x.idView(o))
	}
	if err := x.rows.Rows(ctx, ids, dst); err != nil {
		return fmt.Errorf("vectorstore: disk: reading %d rows from the row source: %w", len(ids), err)
	}
	if x.metric == Cosine {
		for _, r := range dst {
			unitRow(r)
		}
	}
	return nil
}

// unitRow scales r, a row read from the row source, to unit length (a row of zeros stays
// as it is), as vecmath.NormalizeInto does, its sum of squares in four float64 sums
// instead of one: a single sum is a chain of 768 dependent additions at 768 dimensions,
// about 1 µs a row, 9 % of a 2,560-query batch's CPU at 10M x 768 (BENCHMARKS §0zz6).
// Its result can differ from NormalizeInto's in the last bit of a value.
func unitRow(r []float32) {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(r); i += 4 {
		a, b, c, d := float64(r[i]), float64(r[i+1]), float64(r[i+2]), float64(r[i+3])
		s0 += a * a
		s1 += b * b
		s2 += c * c
		s3 += d * d
	}
	for ; i < len(r); i++ {
		s0 += float64(r[i]) * float64(r[i])
	}
	ss := (s0 + s1) + (s2 + s3)
	if ss == 0 {
		return
	}
	inv := 1 / math.Sqrt(ss)
	for i, v := range r {
		r[i] = float32(float64(v) * inv)
	}
}

// scoreOrdinals scores q against the rows of ords (live, accepted) and offers them to h:
// rows in memory as they are, the others from their segment files or, without rows of
// their own, read from the row source, diskFetchRows of them a call.
func (x *DiskIndex) scoreOrdinals(ctx context.Context, q []float32, ords []int32, h *flatHeap) error {
	var one [1]float32
	if x.rows == nil {
		for _, o := range ords {
			row, err := x.rowAt(o)
			if err != nil {
				return err
			}
			flatDots(q, row, one[:])
			h.Offer(one[0], o)
		}
		return nil
	}
	d := x.dim
	var seg []int32
	for _, o := range ords {
		if int(o) >= x.n0 {
			flatDots(q, x.row(o), one[:])
			h.Offer(one[0], o)
			continue
		}
		seg = append(seg, o)
	}
	if len(seg) == 0 {
		return nil
	}
	n := min(len(seg), diskFetchRows)
	buf, dst, release := x.rowRoom(n)
	defer release()
	scores := make([]float32, n)
	for lo := 0; lo < len(seg); lo += n {
		part := seg[lo:min(lo+n, len(seg))]
		if err := x.fetchRows(ctx, part, dst[:len(part)]); err != nil {
			return err
		}
		flatDots(q, buf[:len(part)*d], scores[:len(part)])
		for i, o := range part {
			h.Offer(scores[i], o)
		}
	}
	return nil
}

// rowRoom returns room for n rows read from the row source, from diskRowBufs: buf, and
// dst[i] its row i; release gives it back (after which neither may be used).
func (x *DiskIndex) rowRoom(n int) (buf []float32, dst [][]float32, release func()) {
	d := x.dim
	bp := diskRowBufs.Get().(*[]float32)
	buf = slices.Grow((*bp)[:0], n*d)[:n*d]
	*bp = buf
	dst = make([][]float32, n)
	for i := range dst {
		dst[i] = buf[i*d : (i+1)*d : (i+1)*d]
	}
	return buf, dst, func() { diskRowBufs.Put(bp) }
}

// diskRowBufs recycles scoreOrdinals' room for the rows it reads (*[]float32): a query's
// 560 rows of 768 dimensions are 1.7 MB, allocated afresh for each query of a batch 4.4
// GB of short-lived heap at 2,560 queries, whose pages the runtime hands back to the
// system between collections and takes again, each a page fault (10-60 µs on a VM).
var diskRowBufs = sync.Pool{New: func() any { return new([]float32) }}

// exactRowless scores every live row acc accepts (DiskExact without rows of its own):
// those of the segments read from the row source, a chunk at a time.
func (x *DiskIndex) exactRowless(ctx context.Context, q []float32, acc diskAccept, h *flatHeap) error {
	chunk := make([]int32, 0, diskFetchRows)
	flush := func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := x.scoreOrdinals(ctx, q, chunk, h)
		chunk = chunk[:0]
		return err
	}
	offer := func(o int32) error {
		if x.isDead(o) || (acc.f != nil && !acc.f(x.idView(o))) {
			return nil
		}
		chunk = append(chunk, o)
		if len(chunk) == cap(chunk) {
			return flush()
		}
		return nil
	}
	if acc.allow != nil {
		it := acc.allow.Iterator()
		for it.HasNext() {
			if err := offer(int32(it.Next())); err != nil {
				return err
			}
		}
	} else {
		for o := range int32(x.n()) {
			if err := offer(o); err != nil {
				return err
			}
		}
	}
	return flush()
}

// checkAllCodes checks every block of the codes and list numbers not checked yet (a
// compaction without rows of its own copies them).
func (x *DiskIndex) checkAllCodes() error {
	for _, s := range x.segs {
		for _, k := range []int{diskB1, diskI8, diskIVL} {
			if s.file(k) != nil {
				if err := x.checkRange(s, k, 0, len(s.maps[k])); err != nil {
					return err
				}
			}
		}
		s.dropResident() // (a pass over every segment: none stays resident for it)
	}
	return nil
}

// diskBatchFetch is how many rows rescoreBatch asks the RowSource for a call (a variable
// for tests).
var diskBatchFetch = diskFetchRows

// rowWant is a row that rescoreBatch reads: its ordinal, the first 8 bytes of its id
// (big-endian, zero-padded: ids compare as these do, or as the whole ids where these are
// equal) and where its (ordinal, query) pairs start.
type rowWant struct {
	pre uint64
	o   int32
	at  int
}

// rescoreBatch scores the candidates of a batch's queries (cands[i] the ordinals of
// cqs[i]'s, from the codes' scan) against their rows, and returns each query's heap of
// its k best (tail rows not yet offered: finishTail). Rows in memory are scored as
// scoreOrdinals scores them. The others are read from the RowSource once for the batch,
// however many queries share a row, and in the order of their ids, diskBatchFetch a call
// on workers goroutines: the row source's keys are the ids, so a call reads rows that lie
// close together, in order, where one query's few hundred rows lie anywhere (a 2,560-query
// batch at 10M x 768 reads 1.4M rows; BENCHMARKS §0zz7). Each score is the one
// scoreOrdinals computes for the same query and row, and ties rank by id in any order of
// offers, so the hits are the ones each query finds alone.
func (x *DiskIndex) rescoreBatch(ctx context.Context, workers, k int, cqs []*codeQuery, cands [][]int32) ([]flatHeap, error) {
	finals := make([]flatHeap, len(cqs))
	total := 0
	for _, c := range cands {
		total += len(c)
	}
	pairs := make([]uint64, 0, total) // ordinal << 32 | query
	var one [1]float32
	for qi, ords := range cands {
		finals[qi] = x.newHeap(k)
		for _, o := range ords {
			if int(o) >= x.n0 {
				flatDots(cqs[qi].q, x.row(o), one[:])
				finals[qi].Offer(one[0], o)
				continue
			}
			pairs = append(pairs, uint64(o)<<32|uint64(qi))
		}
	}
	if len(pairs) == 0 {
		return finals, nil
	}
	slices.Sort(pairs)
	var wants []rowWant
	for i, p := range pairs {
		if o := int32(p >> 32); i == 0 || o != int32(pairs[i-1]>>32) {
			var b [8]byte
			copy(b[:], x.idView(o))
			wants = append(wants, rowWant{pre: binary.BigEndian.Uint64(b[:]), o: o, at: i})
		}
	}
	slices.SortFunc(wants, func(a, b rowWant) int {
		if c := cmp.Compare(a.pre, b.pre); c != 0 {
			return c
		}
		return strings.Compare(x.idView(a.o), x.idView(b.o))
	})
	per := max(1, diskBatchFetch)
	heaps := make([][]flatHeap, workers) // a worker's, by query (each made when first offered to)
	err := diskEach(ctx, workers, (len(wants)+per-1)/per, func(w, c int) error {
		if heaps[w] == nil {
			heaps[w] = make([]flatHeap, len(cqs))
		}
		hw := heaps[w]
		part := wants[c*per : min((c+1)*per, len(wants))]
		ords := make([]int32, len(part))
		for i, r := range part {
			ords[i] = r.o
		}
		_, dst, release := x.rowRoom(len(part))
		defer release()
		if err := x.fetchRows(ctx, ords, dst); err != nil {
			return err
		}
		var one [1]float32
		for i, r := range part {
			for p := r.at; p < len(pairs) && int32(pairs[p]>>32) == r.o; p++ {
				qi := int(uint32(pairs[p]))
				h := &hw[qi]
				if h.K() == 0 {
					*h = x.newHeap(k)
				}
				flatDots(cqs[qi].q, dst[i], one[:])
				h.Offer(one[0], r.o)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, hw := range heaps {
		for qi := range hw {
			if hw[qi].K() > 0 {
				finals[qi].Merge(&hw[qi])
			}
		}
	}
	return finals, nil
}
