package bm25

import (
	"errors"
	"math"
	"slices"
	"sync/atomic"

	"github.com/agentmem/memory/internal/postfile"
)

// This file holds the block-max view of a posting list that the MaxScore evaluator reads.
// A term's postings in a segment's body file are cut into chunks: the postings of
// documents [c·cs, (c+1)·cs) form chunk c, whose bytes can be read without the others (cs,
// the chunk size, depends on the list's length; about 1,024 postings a chunk, as zap v16
// chunks). A term's blocks here are those chunks. For each block the evaluator keeps its
// posting count and the Pareto frontier of its (frequency, length) pairs, whose best BM25
// ratio bounds the score of every posting in the block for any avgdl, k1 and b: so a block
// whose bound cannot lift a document into the top k is never decoded. The file holds the
// metadata beside the lists (bodyread.go); decoded blocks are cached within a byte budget
// (postings.go).

// fl is a (frequency, length) pair.
type fl struct{ f, dl uint32 }

// bestRatio is the largest BM25 ratio f/(f+K(dl)) over pairs, for st's length normalisation.
func bestRatio(st *snapStats, pairs []fl) float64 {
	best := 0.0
	for _, p := range pairs {
		f := float64(p.f)
		if r := f / (f + st.kOf(uint64(p.dl))); r > best {
			best = r
		}
	}
	return best
}

// termBlocks is one term's postings in one segment as blocks (deleted documents included).
type termBlocks struct {
	cs     uint64   // documents a block spans (zap's chunk size); 0: one block spans the segment
	total  uint64   // postings in all
	count  []uint32 // postings of each block
	fstart []uint32 // block i's frontier is front[fstart[i]:fstart[i+1]]
	front  []fl     // per block: no other posting of the block has f >= and dl <= (one strictly)
	slots  []atomic.Pointer[postBlock]
	probed []atomic.Uint32 // per block: the postings looked up alone while the cache was not full
	bytes  int             // the metadata's bytes
	ratios atomic.Pointer[blockRatios]
	// pt is the term's entry in the segment's body file, read once with the metadata and
	// shared (read only) by the queries that open its chunks.
	pt *postfile.Term
}

// blockRatios is each block's best BM25 ratio under one snapshot's statistics (0 for an
// empty block).
type blockRatios struct {
	avgdl, k1, b float64 // what length normalisation depends on
	lucene       bool
	r            []float64
	// top holds the largest non-zero ratios of r, up to maxTopRatios, descending: the j-th
	// is reached by a posting of a block other than the first j-1's (a frontier's pairs
	// are postings), so the term alone scores at least top[k-1]·w in k distinct documents
	// (thresholdFloor).
	top []float64
}

// maxTopRatios is the most ratios blockRatios.top keeps: queries with k above it get no
// threshold floor.
const maxTopRatios = 128

// ratiosFor returns each block's best ratio under st, computed once per statistics.
func (t *termBlocks) ratiosFor(st *snapStats) *blockRatios {
	if br := t.ratios.Load(); br != nil && br.avgdl == st.avgdl && br.k1 == st.k1 && br.b == st.b && br.lucene == st.lucene {
		return br
	}
	r := make([]float64, len(t.count))
	for i := range r {
		r[i] = bestRatio(st, t.blockFront(i))
	}
	br := &blockRatios{avgdl: st.avgdl, k1: st.k1, b: st.b, lucene: st.lucene, r: r, top: largest(r, maxTopRatios)}
	t.ratios.Store(br)
	return br
}

// largest returns the n largest positive values of r, descending (fewer when r has fewer).
func largest(r []float64, n int) []float64 {
	h := make([]float64, 0, min(n, len(r))) // a min-heap while it fills, then kept full
	for _, v := range r {
		if v <= 0 {
			continue
		}
		if len(h) < n {
			h = append(h, v)
			for i := len(h) - 1; i > 0; {
				p := (i - 1) / 2
				if h[p] <= h[i] {
					break
				}
				h[p], h[i] = h[i], h[p]
				i = p
			}
			continue
		}
		if v <= h[0] {
			continue
		}
		h[0] = v
		for i := 0; ; {
			l := 2*i + 1
			if l >= len(h) {
				break
			}
			m := l
			if l+1 < len(h) && h[l+1] < h[l] {
				m = l + 1
			}
			if h[i] <= h[m] {
				break
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	slices.Sort(h)
	slices.Reverse(h)
	return h
}

// blockFront returns block i's frontier (f descending, dl ascending).
func (t *termBlocks) blockFront(i int) []fl { return t.front[t.fstart[i]:t.fstart[i+1]] }

// span returns the documents block i may hold: [lo, hi).
func (t *termBlocks) span(i int) (lo, hi uint64) {
	if t.cs == 0 {
		return 0, math.MaxUint64
	}
	return uint64(i) * t.cs, uint64(i+1) * t.cs
}

// blockOf returns the block holding document d (len(count) when past the last block).
func (t *termBlocks) blockOf(d uint64) int {
	if t.cs == 0 {
		return 0
	}
	return int(min(d/t.cs, uint64(len(t.count))))
}

// makeSlots gives t its per-block cache slots and lookup counts.
func (t *termBlocks) makeSlots() {
	t.slots = make([]atomic.Pointer[postBlock], len(t.count))
	t.probed = make([]atomic.Uint32, len(t.count))
}

func (t *termBlocks) sizeBytes() int {
	// count, fstart, front, slots, probed, and one statistics' ratios (ratiosFor)
	return 4*cap(t.count) + 4*cap(t.fstart) + 8*cap(t.front) + 16*cap(t.slots) + 4*cap(t.probed) + 8*len(t.count) +
		8*min(len(t.count), maxTopRatios) + 120
}

// check validates metadata read from a file: counts add up, every non-empty block has a
// frontier, offsets ascend.
func (t *termBlocks) check() error {
	if len(t.count) == 0 || len(t.fstart) != len(t.count)+1 || t.fstart[0] != 0 || int(t.fstart[len(t.count)]) != len(t.front) {
		return errBlockMeta
	}
	if t.cs == 0 && len(t.count) != 1 {
		return errBlockMeta
	}
	var sum uint64
	for i, n := range t.count {
		sum += uint64(n)
		if t.fstart[i+1] < t.fstart[i] || (n == 0) != (t.fstart[i+1] == t.fstart[i]) || t.fstart[i+1]-t.fstart[i] > n {
			return errBlockMeta
		}
	}
	if sum != t.total {
		return errBlockMeta
	}
	return nil
}

// postBlock is one decoded block: ascending document numbers, frequencies and lengths.
//
// The documents' lengths sit in the body file's per-document table, read at random (at
// millions of documents most of those reads miss the caches). A block that an essential
// list of a query enumerates has all of them read, in batches (lensRead); one decoded for
// a non-essential list has none, and a query records those of the documents it looks up
// in it (setLen), so later queries find them. An unknown length reads as 0 (a document
// holding a term is at least one token long); a length too long for the block's form
// stays unknown and is read from the table each time. Lengths are recorded while other
// queries read the block: packed and narrow are read and filled with atomic operations
// once the block is shown to anyone (putBlock).
type postBlock struct {
	// docs holds the documents, unless d16 does: each document less base, in 16 bits (a
	// narrow block of a list whose blocks span at most 1<<16 documents).
	docs []uint32
	d16  []uint16
	base uint32
	// packed holds f<<16 | dl per posting when every f of the block is below 1<<16 (dl
	// 0 while unknown, and lengths of 1<<16 or more never stored); otherwise wide holds
	// f and dl in full (its lengths read when it is decoded).
	packed []uint32
	wide   []fl
	// narrow, when not nil, holds f<<narrowShift | dl per posting in 16 bits, two
	// postings a word (posting i in bits 16·(i&1) of word i/2), instead of packed: a
	// block whose every f is below narrowFreqs; lengths of narrowLen or more are not
	// stored.
	narrow   []uint32
	lensRead atomic.Bool // every length the block's form holds is recorded
	ref      atomic.Bool // CLOCK reference bit
	bytes    int
	slot     []uint32 // the arena slot holding docs (or d16) and packed (or narrow); nil: on the heap
}

// count returns the block's postings.
func (p *postBlock) count() int {
	if p.d16 != nil {
		return len(p.d16)
	}
	return len(p.docs)
}

// doc returns posting i's document.
func (p *postBlock) doc(i int) uint32 {
	if p.d16 != nil {
		return p.base + uint32(p.d16[i])
	}
	return p.docs[i]
}

// search returns the first posting at or after from whose document is at least d
// (p.count() when none), galloping from from, then by binary search.
func (p *postBlock) search(from int, d uint32) int {
	if p.d16 != nil {
		if d <= p.base {
			return from
		}
		if d-p.base > 0xffff {
			return len(p.d16)
		}
		return gallop(p.d16, from, uint16(d-p.base))
	}
	return gallop(p.docs, from, d)
}

// gallop returns the first index at or after lo of docs (rising) whose value is at least d.
func gallop[T uint16 | uint32](docs []T, lo int, d T) int {
	if lo >= len(docs) || docs[lo] >= d {
		return lo
	}
	step := 1
	hi := lo + 1
	for hi < len(docs) && docs[hi] < d {
		lo = hi
		step <<= 1
		hi = lo + step
	}
	hi = min(hi, len(docs))
	// docs[lo] < d; the answer is in (lo, hi]
	for lo+1 < hi {
		m := int(uint(lo+hi) >> 1)
		if docs[m] < d {
			lo = m
		} else {
			hi = m
		}
	}
	return hi
}

// The narrow form of a block's frequencies and lengths (postBlock.narrow).
const (
	narrowShift = 11
	narrowFreqs = 1 << (16 - narrowShift) // frequencies below 32
	narrowLen   = 1 << narrowShift        // lengths below 2,048 are stored
)

// at returns the frequency and length of posting i (dl 0: not known yet, see setLen).
func (p *postBlock) at(i int) (f, dl uint32) {
	if p.narrow != nil {
		v := atomic.LoadUint32(&p.narrow[i>>1]) >> (16 * (i & 1)) & 0xffff
		return v >> narrowShift, v & (narrowLen - 1)
	}
	if p.wide != nil {
		return p.wide[i].f, p.wide[i].dl
	}
	v := atomic.LoadUint32(&p.packed[i])
	return v >> 16, v & 0xffff
}

// setLen records dl (> 0) as posting i's length, read from the body file's table, when
// the block's form can hold it. Queries sharing the block may record the same length at
// once: each sets the same bits.
func (p *postBlock) setLen(i int, dl uint32) {
	switch {
	case p.narrow != nil:
		if dl < narrowLen {
			atomic.OrUint32(&p.narrow[i>>1], dl<<(16*(i&1)))
		}
	case p.wide != nil:
	case dl < 1<<16:
		atomic.OrUint32(&p.packed[i], dl)
	}
}

// add appends a posting to a block being built (not shown to anyone yet).
func (p *postBlock) add(doc, f, dl uint32) {
	p.docs = append(p.docs, doc)
	if p.wide == nil && (f >= 1<<16 || dl >= 1<<16) {
		p.wide = make([]fl, len(p.packed), cap(p.packed))
		for i, v := range p.packed {
			p.wide[i] = fl{f: v >> 16, dl: v & 0xffff}
		}
		p.packed = nil
	}
	if p.wide != nil {
		p.wide = append(p.wide, fl{f: f, dl: dl})
	} else {
		p.packed = append(p.packed, f<<16|dl)
	}
}

func (p *postBlock) finish() {
	p.bytes = 4*cap(p.docs) + 2*cap(p.d16) + 4*cap(p.packed) + 4*cap(p.narrow) + 8*cap(p.wide) + 64
}

// errBlockMeta: a term's block metadata disagrees with its postings (a damaged body file
// whose damage its checksums did not show). The metadata is dropped and the query
// evaluated again; a second disagreement is reported as damage.
var errBlockMeta = errors.New("hybrid: block metadata disagrees with the postings")

// errNoPostings: a term has no postings in a segment's body file.
var errNoPostings = errors.New("hybrid: no postings")

// dominated reports whether (f, dl) is covered by a pair of front: one with f' >= f and
// dl' <= dl, so its BM25 ratio bounds that of (f, dl).
func dominated(front []fl, f, dl uint32) bool {
	for _, p := range front {
		if p.f >= f && p.dl <= dl {
			return true
		}
	}
	return false
}

// frontOrdered reports whether front is in the order the body file keeps it in:
// frequencies and lengths both strictly falling. dominatedOrdered relies on it.
func frontOrdered(front []fl) bool {
	for i := 1; i < len(front); i++ {
		if front[i].f >= front[i-1].f || front[i].dl >= front[i-1].dl {
			return false
		}
	}
	return true
}

// smallFreqs bounds the frequencies smallFront tabulates: nearly every posting's.
const smallFreqs = 64

// smallFront tabulates an ordered front (frontOrdered) for the frequencies under
// smallFreqs: minDL[f] is the least length a posting of frequency f may have and still be
// covered by the front (math.MaxUint32: none is). Checking that every decoded posting is
// covered by the front branches on each posting's frequency; a table lookup does not.
func smallFront(front []fl) (minDL [smallFreqs]uint32) {
	j := len(front) - 1 // the pair of the smallest frequency >= f, scanning f upwards
	for f := range uint32(smallFreqs) {
		for j >= 0 && front[j].f < f {
			j--
		}
		if j < 0 {
			minDL[f] = math.MaxUint32
		} else {
			minDL[f] = front[j].dl
		}
	}
	return minDL
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// dominatedOrdered is dominated for an ordered front (frontOrdered): the pairs with a
// frequency >= f are a prefix of it, whose last pair has the smallest length, so that
// pair alone decides. A posting of frequency 1, most of them, costs one comparison.
func dominatedOrdered(front []fl, f, dl uint32) bool {
	j := len(front) - 1
	for j >= 0 && front[j].f < f {
		j--
	}
	return j >= 0 && front[j].dl <= dl
}

// blockSource reads one term's blocks in one segment for one query from the segment's
// body postings file (bodyread.go).
type blockSource struct {
	pf   *pfSource
	next int // -1: the term is not looked up in the file yet in this query
}

// buildBlocks returns term's block metadata in the segment of src: read from the body
// file, no pass over the postings.
func buildBlocks(src *blockSource, term []byte) (*termBlocks, error) {
	src.next = -1
	if src.pf == nil {
		return nil, errNotScorch // (a segment of the earlier layout: Bleve's search reads it)
	}
	tb, err := pfBlocks(src.pf, term)
	if err == nil {
		src.next = 0 // (pfBlocks looked the term up)
	}
	return tb, err
}

// open takes tb's entry in the body file and checks it against tb (once a query).
func (s *blockSource) open(tb *termBlocks) error {
	if s.pf == nil {
		return errNotScorch
	}
	if s.next >= 0 {
		return nil
	}
	if err := s.pf.open(tb); err != nil {
		return err
	}
	s.next = 0
	return nil
}

// decode reads block i of tb and checks it against the metadata:
// its count, its documents within the block's span, no frequency above the frontier's (a
// posting's length is checked against the frontier when it is read: postBlock). A
// disagreement is errBlockMeta.
func (s *blockSource) decode(tb *termBlocks, i int, lens bool) (*postBlock, error) {
	if err := s.open(tb); err != nil {
		return nil, err
	}
	return s.pf.decode(tb, i, lens)
}

// lookup reads the frequency of document d, of length dl, in block i of tb alone
// (present false: d is not in the list).
func (s *blockSource) lookup(tb *termBlocks, i int, d, dl uint32) (f uint32, present bool, err error) {
	if err := s.open(tb); err != nil {
		return 0, false, err
	}
	return s.pf.lookup(tb, i, d, dl)
}
