package bm25

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"
	segment "github.com/blevesearch/scorch_segment_api/v2"
	zap "github.com/blevesearch/zapx/v16"
)

// This file holds the block-max view of a posting list that the MaxScore evaluator reads.
// Zap stores a term's frequencies and norms (zap v16: the document's field length) in
// chunks: the postings of documents [c·cs, (c+1)·cs) form chunk c, whose bytes can be read
// without the others (cs, the chunk size, depends on the list's length; about 1,024
// postings a chunk). A term's blocks here are those chunks. For each block the evaluator
// keeps its posting count and the Pareto frontier of its (frequency, length) pairs, whose
// best BM25 ratio bounds the score of every posting in the block for any avgdl, k1 and b:
// so a block whose bound cannot lift a document into the top k is never decoded. The
// metadata is computed by one pass over the list the first time a query needs the term in
// the segment, and persisted beside the segment (bm25_sidecar.go); decoded blocks are
// cached within a byte budget (bm25_postings.go).

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
	probed []atomic.Uint32 // per block: chunkChecked, and the postings looked up alone while the cache was not full
	bytes  int             // the metadata's bytes
	ratios atomic.Pointer[blockRatios]
}

// blockRatios is each block's best BM25 ratio under one snapshot's statistics (0 for an
// empty block).
type blockRatios struct {
	avgdl, k1, b float64 // what length normalisation depends on
	lucene       bool
	r            []float64
}

// ratiosFor returns each block's best ratio under st, computed once per statistics.
func (t *termBlocks) ratiosFor(st *snapStats) []float64 {
	if br := t.ratios.Load(); br != nil && br.avgdl == st.avgdl && br.k1 == st.k1 && br.b == st.b && br.lucene == st.lucene {
		return br.r
	}
	r := make([]float64, len(t.count))
	for i := range r {
		r[i] = bestRatio(st, t.blockFront(i))
	}
	t.ratios.Store(&blockRatios{avgdl: st.avgdl, k1: st.k1, b: st.b, lucene: st.lucene, r: r})
	return r
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

// chunkChecked is the bit of termBlocks.probed set once lookupDirect has checked the
// block's chunk (its uvarint ends): the check is a pass over the chunk's bytes, which
// every later lookup in the block would otherwise repeat, query after query.
const chunkChecked = 1 << 31

// makeSlots gives t its per-block cache slots and lookup counts.
func (t *termBlocks) makeSlots() {
	t.slots = make([]atomic.Pointer[postBlock], len(t.count))
	t.probed = make([]atomic.Uint32, len(t.count))
}

func (t *termBlocks) sizeBytes() int {
	// count, fstart, front, slots, probed, and one statistics' ratios (ratiosFor)
	return 4*cap(t.count) + 4*cap(t.fstart) + 8*cap(t.front) + 16*cap(t.slots) + 4*cap(t.probed) + 8*len(t.count) + 96
}

// check validates metadata read from outside (a sidecar): counts add up, every non-empty
// block has a frontier, offsets ascend.
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
type postBlock struct {
	// docs holds the documents, unless d16 does: each document less base, in 16 bits (a
	// narrow block of a list whose blocks span at most 1<<16 documents).
	docs []uint32
	d16  []uint16
	base uint32
	// packed holds f<<16 | dl per posting when every f and dl of the block is below 1<<16;
	// otherwise wide holds f and dl in full.
	packed []uint32
	wide   []fl
	// narrow, when not nil, holds f<<narrowShift | dl per posting instead of packed: a
	// block decoded whole from zap (decodeDirect) whose every f is below narrowFreqs and
	// every dl below narrowLen.
	narrow []uint16
	ref    atomic.Bool // CLOCK reference bit
	bytes  int
	slot   []uint32 // the arena slot holding docs (or d16) and packed (or narrow); nil: on the heap
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
	narrowLen   = 1 << narrowShift        // lengths below 2,048
)

// at returns the frequency and length of posting i.
func (p *postBlock) at(i int) (f, dl uint32) {
	if p.narrow != nil {
		v := uint32(p.narrow[i])
		return v >> narrowShift, v & (narrowLen - 1)
	}
	if p.wide != nil {
		return p.wide[i].f, p.wide[i].dl
	}
	v := p.packed[i]
	return v >> 16, v & 0xffff
}

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
	p.bytes = 4*cap(p.docs) + 2*cap(p.d16) + 4*cap(p.packed) + 2*cap(p.narrow) + 8*cap(p.wide) + 64
}

// errBlockMeta: a term's block metadata disagrees with its postings (a stale or damaged
// sidecar, or a zap layout this code does not know). The metadata is dropped and the
// query evaluated again from the postings.
var errBlockMeta = errors.New("hybrid: block metadata disagrees with the postings")

// frontAcc accumulates the Pareto frontier of (frequency, length) pairs.
type frontAcc struct {
	minLen []uint32 // minLen[f] = 1 + the smallest length among pairs of frequency f (0: none)
	big    []fl     // pairs with f >= 1<<16 (rare)
}

func (a *frontAcc) add(f, dl uint32) {
	if f >= 1<<16 {
		a.big = append(a.big, fl{f: f, dl: dl})
		return
	}
	if int(f) >= len(a.minLen) {
		a.minLen = append(a.minLen, make([]uint32, int(f)+1-len(a.minLen))...)
	}
	if m := a.minLen[f]; m == 0 || dl+1 < m {
		a.minLen[f] = dl + 1
	}
}

// flush appends the frontier of the pairs added since the last flush to dst (frequency
// descending) and resets a.
func (a *frontAcc) flush(dst []fl) []fl {
	best := uint32(math.MaxUint32)
	slices.SortFunc(a.big, func(x, y fl) int { return cmp.Compare(y.f, x.f)*2 + cmp.Compare(x.dl, y.dl) })
	for _, p := range a.big {
		if p.dl < best {
			dst = append(dst, p)
			best = p.dl
		}
	}
	for f := len(a.minLen) - 1; f >= 0; f-- {
		if m := a.minLen[f]; m != 0 && m-1 < best {
			dst = append(dst, fl{f: uint32(f), dl: m - 1})
			best = m - 1
		}
	}
	clear(a.minLen)
	a.minLen = a.minLen[:0]
	a.big = a.big[:0]
	return dst
}

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

// chunkSizeField is the index of zap's PostingsList.chunkSize (the documents one chunk
// spans), read through reflection since zap does not export it; -1 when this zap has no
// such field (every list is then one block).
var chunkSizeField = func() int {
	f, ok := reflect.TypeOf(zap.PostingsList{}).FieldByName("chunkSize")
	if !ok || f.Type.Kind() != reflect.Uint64 {
		return -1
	}
	return f.Index[0]
}()

// chunkSizeOf returns the documents one chunk of pl spans (0: treat the list as one block).
func chunkSizeOf(pl segment.PostingsList) uint64 {
	zp, ok := pl.(*zap.PostingsList)
	if !ok || zp == nil || chunkSizeField < 0 {
		return 0
	}
	return reflect.ValueOf(zp).Elem().Field(chunkSizeField).Uint()
}

// postingOf reads a posting's document, frequency and length.
func postingOf(p segment.Posting) (doc, f, dl uint32, err error) {
	var num, f64, dl64 uint64
	if zp, ok := p.(*zap.Posting); ok {
		num, f64, dl64 = zp.Number(), zp.Frequency(), zp.NormUint64()
	} else {
		nm, ok := p.(normer)
		if !ok {
			return 0, 0, 0, errNotScorch
		}
		num, f64, dl64 = p.Number(), p.Frequency(), nm.NormUint64()
	}
	if num >= math.MaxUint32 || f64 > math.MaxUint32 || dl64 >= math.MaxUint32 {
		return 0, 0, 0, fmt.Errorf("posting out of range: doc %d freq %d length %d", num, f64, dl64)
	}
	return uint32(num), uint32(f64), uint32(dl64), nil
}

// bytesReader is zap's report of the bytes a postings iterator has read; it changes exactly
// when the iterator loads a chunk.
type bytesReader interface{ BytesRead() uint64 }

// buildBlocks reads every posting of term in the segment of dict (deleted documents
// included) and returns its block metadata, with the decoded blocks (nil where empty) when
// keep is set or the list is one block. It checks that zap's chunks are the blocks it assumes (the iterator
// loads a chunk exactly where the block changes); where they are not, the list is one block.
func buildBlocks(dict segment.TermDictionary, term []byte, src *blockSource, acc *frontAcc, keep bool) (*termBlocks, []*postBlock, error) {
	src.next = -1
	if src.pf != nil {
		tb, err := pfBlocks(src.pf, term)
		return tb, nil, err
	}
	if h := src.have; h != nil {
		if tb, blks, ok := buildBlocksDirect(h, src, acc, keep); ok { // (a plain list only)
			return tb, blks, nil
		}
	}
	pl, err := dict.PostingsList(term, nil, src.pl)
	if err != nil {
		return nil, nil, err
	}
	src.pl = pl
	if tb, blks, ok := buildBlocksDirect(pl, src, acc, keep); ok {
		return tb, blks, nil
	}
	return buildBlocksIter(dict, term, src, acc, keep)
}

// buildBlocksIter is buildBlocks through zap's postings iterator (the reference the
// direct read is tested against, and the path for lists of other kinds).
func buildBlocksIter(dict segment.TermDictionary, term []byte, src *blockSource, acc *frontAcc, keep bool) (*termBlocks, []*postBlock, error) {
	for _, tryChunks := range []bool{true, false} {
		tb, blks, ok, err := buildBlocksOnce(dict, term, src, acc, tryChunks, keep)
		if err != nil || ok {
			return tb, blks, err
		}
	}
	return nil, nil, errBlockMeta // not reached: one block always fits
}

func buildBlocksOnce(dict segment.TermDictionary, term []byte, src *blockSource, acc *frontAcc, tryChunks, keep bool) (_ *termBlocks, _ []*postBlock, ok bool, err error) {
	pl, err := dict.PostingsList(term, nil, src.pl)
	if err != nil {
		return nil, nil, false, err
	}
	src.pl, src.next = pl, -1
	tb := &termBlocks{total: pl.Count(), fstart: []uint32{0}}
	if tryChunks {
		tb.cs = chunkSizeOf(pl)
	}
	it := pl.Iterator(true, true, false, src.it)
	src.it = it
	br, _ := it.(bytesReader)
	if br == nil {
		tb.cs = 0
	}
	var (
		blks []*postBlock // when keep (or the list is one block): the decoded blocks
		blk  *postBlock
	)
	if tb.cs == 0 {
		keep = true
		blk = &postBlock{docs: make([]uint32, 0, tb.total), packed: make([]uint32, 0, tb.total)}
	}
	cur, n := -1, uint32(0)
	var lastRead uint64
	acc.flush(nil)
	for {
		p, err := it.Next()
		if err != nil {
			return nil, nil, false, err
		}
		if p == nil {
			break
		}
		doc, f, dl, err := postingOf(p)
		if err != nil {
			return nil, nil, false, err
		}
		b := 0
		if tb.cs > 0 {
			b = int(uint64(doc) / tb.cs)
		}
		if tb.cs > 0 {
			read := br.BytesRead()
			if (b != cur) != (read != lastRead) {
				return nil, nil, false, nil // zap's chunks are not these blocks
			}
			lastRead = read
		}
		if b != cur {
			if cur >= 0 {
				tb.count = append(tb.count, n)
				tb.front = acc.flush(tb.front)
				tb.fstart = append(tb.fstart, uint32(len(tb.front)))
			}
			for len(tb.count) < b { // empty blocks in between
				tb.count = append(tb.count, 0)
				tb.fstart = append(tb.fstart, uint32(len(tb.front)))
			}
			cur, n = b, 0
			if keep && tb.cs > 0 {
				if blk != nil {
					blk.finish()
				}
				for len(blks) < b {
					blks = append(blks, nil)
				}
				blk = &postBlock{}
				blks = append(blks, blk)
			}
		}
		n++
		acc.add(f, dl)
		if blk != nil {
			blk.add(doc, f, dl)
		}
	}
	if cur < 0 { // no postings (not expected: callers skip empty lists)
		cur = 0
	}
	tb.count = append(tb.count, n)
	tb.front = acc.flush(tb.front)
	tb.fstart = append(tb.fstart, uint32(len(tb.front)))
	tb.makeSlots()
	tb.bytes = tb.sizeBytes()
	if blk != nil {
		blk.finish()
		if tb.cs == 0 {
			blks = []*postBlock{blk}
		}
	}
	if err := tb.check(); err != nil {
		return nil, nil, false, err
	}
	return tb, blks, true, nil
}

// blockSource decodes one term's blocks in one segment for one query, in ascending order:
// a zap iterator over the whole list, moved to a block's first posting by advancing its
// document bitmap to the block's first document (zap then loads that chunk and reads it
// from its start).
type blockSource struct {
	pl   segment.PostingsList
	it   segment.PostingsIterator
	next int // the iterator stands at the start of block next; -1: no iterator yet

	// Blocks are read straight from the segment's bytes when the list allows it
	// (bm25_zapread.go): direct is then set, z describes the list and docs iterates its
	// documents (it stays unused).
	direct bool
	z      zapList
	docs   roaring.IntPeekable
	// scratch holds a chunk's documents while buildBlocksDirect reads its postings.
	scratch []uint32
	// have is the term's list as the query's term lookup read it (nil: none), taken
	// instead of reading it again when it is the whole list (no deletions excepted).
	have segment.PostingsList
	// pf, when not nil, reads the blocks from the segment's body file (bodyread.go)
	// instead of zap.
	pf *pfSource
}

// open reads term's posting list in the segment of dict, checks it against tb, and sets
// the source at the start of its first block.
func (s *blockSource) open(dict segment.TermDictionary, term []byte, tb *termBlocks) error {
	if s.pf != nil {
		if err := s.pf.open(term, tb); err != nil {
			return err
		}
		s.next = 0
		return nil
	}
	if h := s.have; h != nil && tb.cs != 0 && h.Count() == tb.total && chunkSizeOf(h) == tb.cs && zapListOf(h, &s.z) {
		// (zapListOf takes only plain lists: none with deletions excepted.)
		s.direct, s.docs, s.next = true, nil, 0
		if !s.z.docsOK {
			s.docs = s.z.bm.Iterator()
		}
		return nil
	}
	pl, err := dict.PostingsList(term, nil, s.pl)
	if err != nil {
		return err
	}
	s.pl = pl
	if pl.Count() != tb.total || (tb.cs != 0 && chunkSizeOf(pl) != tb.cs) {
		return errBlockMeta
	}
	if s.direct = tb.cs != 0 && zapListOf(pl, &s.z); s.direct {
		if s.docs = nil; !s.z.docsOK { // documents through roaring's iterator
			s.docs = s.z.bm.Iterator()
		}
	} else {
		s.it = pl.Iterator(true, true, false, s.it)
	}
	s.next = 0
	return nil
}

// canLookup reports whether single postings of term can be read straight from the
// segment (lookupDirect), opening its list first when it is not open.
func (s *blockSource) canLookup(dict segment.TermDictionary, term []byte, tb *termBlocks) (bool, error) {
	if s.next < 0 {
		if err := s.open(dict, term, tb); err != nil {
			return false, err
		}
	}
	return s.pf != nil || (s.direct && s.z.docsOK), nil
}

// decode reads block i of tb (term in the segment of dict) and checks it against the
// metadata: its count, its documents within the block's span, every posting covered by
// the block's frontier. A disagreement is errBlockMeta.
func (s *blockSource) decode(dict segment.TermDictionary, term []byte, tb *termBlocks, i int) (*postBlock, error) {
	if s.pf != nil {
		if s.next < 0 {
			if err := s.open(dict, term, tb); err != nil {
				return nil, err
			}
		}
		return s.pf.decode(tb, i)
	}
	if s.next < 0 || i < s.next {
		if err := s.open(dict, term, tb); err != nil {
			return nil, err
		}
	}
	if s.direct {
		blk, err := decodeDirect(&s.z, s.docs, tb, i)
		if err != nil {
			s.next = -1 // start again from the list at the next decode
			return nil, err
		}
		s.next = i + 1
		return blk, nil
	}
	lo, hi := tb.span(i)
	if i > s.next {
		zi, ok := s.it.(*zap.PostingsIterator)
		if !ok || zi.Actual == nil || zi.ActualBM == nil || lo > math.MaxUint32 {
			return nil, errBlockMeta
		}
		zi.Actual.AdvanceIfNeeded(uint32(lo))
		s.next = i
	}
	n := int(tb.count[i])
	blk := newBlock(n, false)
	ok := false
	defer func() {
		if !ok {
			dropBlock(blk)
		}
	}()
	front := tb.blockFront(i)
	zi, _ := s.it.(*zap.PostingsIterator)
	for range n {
		var p segment.Posting
		var err error
		if zi != nil {
			p, err = zi.Next() // (a direct call: this loop is the decoder's hot path)
		} else {
			p, err = s.it.Next()
		}
		if err != nil {
			return nil, err
		}
		if p == nil {
			return nil, errBlockMeta
		}
		doc, f, dl, err := postingOf(p)
		if err != nil {
			return nil, err
		}
		if uint64(doc) < lo || uint64(doc) >= hi || !dominated(front, f, dl) {
			return nil, errBlockMeta
		}
		blk.add(doc, f, dl)
	}
	s.next = i + 1
	blk.finish()
	ok = true
	return blk, nil
}
