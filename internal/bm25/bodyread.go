package bm25

import (
	"fmt"
	"math"

	"github.com/agentmem/memory/internal/postfile"
	"github.com/agentmem/memory/internal/postings"
)

// This file reads the evaluator's blocks from a segment's body postings file (bodyseg.go).
// A block is one of the file's chunks (the documents [c·span, (c+1)·span) of the term's
// list, as zap chunks them, so termBlocks reads the same either way); its count and
// frontier are in the file, written with the list, so a term's metadata costs a dictionary
// lookup and no pass over its postings. A chunk's postings are blocks
// of 128 behind a skip table (package postings): decoding one is a few nanoseconds a
// posting, and a single document is looked up by decoding only the 128 around it.
// Lengths come from the file's per-document table, read when a posting is scored
// (postBlock).

// pfSource is blockSource's state for a body file.
type pfSource struct {
	r     *postfile.Reader
	t     *postfile.Term // the term's entry (termBlocks.pt, shared)
	list  postings.List  // the chunk open (chunk)
	chunk int            // -1: none
	blk   int            // the 128-block of list whose documents are in docs (lookup), -1: none
	n     int            // its postings
	pos   int            // where the last lookup in it stopped
	docs  [postings.BlockSize]uint32
	freqs [postings.BlockSize]uint32
	lens  [postings.BlockSize]uint32 // decode's: the lengths of a wide block's docs
}

// pfBlocks returns term's block metadata from its body file (src.r); errNoPostings when
// the term has no postings there.
func pfBlocks(src *pfSource, term []byte) (*termBlocks, error) {
	t := new(postfile.Term) // (kept with the metadata: not src's to reuse)
	ok, err := src.r.Term(term, t)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	src.chunk = -1
	if !ok {
		return nil, errNoPostings
	}
	src.t = t
	nc := t.Chunks()
	tb := &termBlocks{cs: t.Span(), total: t.Count(), count: make([]uint32, nc), fstart: make([]uint32, 1, nc+1)}
	nf := 0
	for c := range nc {
		nf += len(t.Front(c))
	}
	tb.front = make([]fl, 0, nf)
	for c := range nc {
		tb.count[c] = uint32(t.ChunkCount(c))
		for _, p := range t.Front(c) {
			tb.front = append(tb.front, fl{f: p.Freq, dl: p.Len})
		}
		tb.fstart = append(tb.fstart, uint32(len(tb.front)))
	}
	if tb.cs == 0 {
		return nil, errBlockMeta
	}
	if err := tb.check(); err != nil {
		return nil, err
	}
	tb.makeSlots()
	tb.pt = t
	tb.bytes = tb.sizeBytes() + t.Bytes()
	return tb, nil
}

// open takes the term's entry, read with tb, for this query's reads.
func (s *pfSource) open(tb *termBlocks) error {
	s.chunk = -1
	if tb.pt == nil || tb.pt.Count() != tb.total || tb.pt.Span() != tb.cs || tb.pt.Chunks() != len(tb.count) {
		return errBlockMeta
	}
	s.t = tb.pt
	return nil
}

// openChunk opens chunk i's list (when it is not the one open).
func (s *pfSource) openChunk(tb *termBlocks, i int) error {
	if s.chunk == i {
		return nil
	}
	s.chunk, s.blk = -1, -1
	if err := s.t.Chunk(i, &s.list); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if s.list.Len() != int(tb.count[i]) {
		return errBlockMeta
	}
	s.chunk = i
	return nil
}

// decode reads block (chunk) i of tb whole, checking it against its metadata (count,
// documents within the block's span, no frequency above the frontier's). With lens the
// documents' lengths are read too, in batches, each posting checked against the frontier
// (postBlock.lensRead); a block with a frequency of 1<<16 or more, kept wide, always has
// them. A block whose frontier bounds its frequencies under narrowFreqs is kept narrow
// (frequency and length in 16 bits: 6 bytes a posting in the cache, or 4, not 8).
func (s *pfSource) decode(tb *termBlocks, i int, lens bool) (_ *postBlock, err error) {
	if err := s.openChunk(tb, i); err != nil {
		return nil, err
	}
	s.blk = -1 // (docs is the decode's scratch now)
	front := tb.blockFront(i)
	n := int(tb.count[i])
	if (len(front) == 0) != (n == 0) || !frontOrdered(front) {
		return nil, errBlockMeta
	}
	lo, hi := tb.span(i)
	if lo > math.MaxUint32 {
		return nil, errBlockMeta
	}
	maxF := uint32(0)
	if n > 0 {
		maxF = front[0].f
	}
	var blk *postBlock
	switch {
	case maxF < narrowFreqs:
		blk = newNarrowBlock(n, hi-lo <= 1<<16)
	case maxF < 1<<16:
		blk = newBlock(n, true)
	default:
		blk = newBlock(n, true)
		blk.packed, blk.wide = nil, make([]fl, n)
		lens = true
	}
	defer func() {
		if err != nil {
			dropBlock(blk)
		}
	}()
	if blk.d16 != nil {
		blk.base = uint32(lo)
	}
	var minDL [smallFreqs]uint32
	if lens {
		minDL = smallFront(front)
	}
	var bad uint32
	at := 0
	for j := range s.list.Blocks() {
		m, err := s.list.DecodeBlock(j, s.docs[:], s.freqs[:])
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		if at+m > n {
			return nil, errBlockMeta
		}
		if uint64(s.docs[0]) < lo || uint64(s.docs[m-1]) >= hi {
			return nil, errBlockMeta // (the documents rise: DecodeBlock checks)
		}
		docs, freqs, dls := s.docs[:m], s.freqs[:m], s.lens[:m]
		if lens {
			// The lengths first, in a loop of independent loads (they miss the caches
			// at random), then each posting checked against the frontier.
			s.r.Lengths(docs, dls)
			for k, f := range freqs {
				dl := dls[k]
				if f < smallFreqs {
					bad |= b2u(dl < minDL[f])
				} else if !dominatedOrdered(front, f, dl) {
					return nil, errBlockMeta
				}
			}
		} else {
			clear(dls)
			for _, f := range freqs {
				bad |= b2u(f > maxF)
			}
		}
		switch {
		case blk.narrow != nil:
			for k, f := range freqs {
				v := f<<narrowShift | dls[k]&-b2u(dls[k] < narrowLen)
				if q := at + k; q&1 == 0 {
					blk.narrow[q>>1] = v
				} else {
					blk.narrow[q>>1] |= v << 16
				}
			}
		case blk.wide != nil:
			for k, f := range freqs {
				blk.wide[at+k] = fl{f: f, dl: dls[k]}
			}
		default:
			for k, f := range freqs {
				blk.packed[at+k] = f<<16 | dls[k]&-b2u(dls[k] < 1<<16)
			}
		}
		if blk.d16 != nil {
			for k, d := range docs {
				blk.d16[at+k] = uint16(d - uint32(lo))
			}
		} else {
			copy(blk.docs[at:], docs)
		}
		at += m
	}
	if at != n || bad != 0 {
		return nil, errBlockMeta
	}
	blk.lensRead.Store(lens)
	blk.finish()
	return blk, nil
}

// lookup reads the frequency of document d, of length dl, in block (chunk) i of tb
// without decoding the block: the skip table finds the 128 postings that may hold d, and
// only their documents are decoded (kept for the next lookup, which a query makes in
// rising order), then d's frequency alone when d is there.
func (s *pfSource) lookup(tb *termBlocks, i int, d, dl uint32) (f uint32, present bool, err error) {
	if lo, hi := tb.span(i); uint64(d) < lo || uint64(d) >= hi {
		return 0, false, nil
	}
	if err := s.openChunk(tb, i); err != nil {
		return 0, false, err
	}
	j := s.list.Seek(d)
	if j >= s.list.Blocks() {
		return 0, false, nil
	}
	if j != s.blk {
		s.blk = -1
		m, err := s.list.DecodeDocs(j, s.docs[:])
		if err != nil {
			return 0, false, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		s.blk, s.n, s.pos = j, m, 0
	}
	var k int
	if s.pos >= s.n || s.docs[s.pos] > d || s.pos == 0 {
		k = lowerBound(s.docs[:s.n], d) // (a block just decoded: its first lookup)
	} else {
		k = gallop(s.docs[:s.n], s.pos, d)
	}
	s.pos = k
	if k >= s.n || s.docs[k] != d {
		return 0, false, nil
	}
	if f, err = s.list.Freq(j, k); err != nil {
		return 0, false, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if !dominated(tb.blockFront(i), f, dl) {
		return 0, false, errBlockMeta
	}
	return f, true, nil
}

// lowerBound returns the first index of docs (rising) whose value is at least d
// (len(docs) when none), by a binary search without a branch on the documents read: a
// lookup's search in a block just decoded has nothing to gallop from, and the branches of
// gallop's search mispredict about every other step.
func lowerBound(docs []uint32, d uint32) int {
	n := len(docs)
	if n == 0 {
		return 0
	}
	base := 0
	for n > 1 {
		half := n >> 1
		lt := (uint64(docs[base+half]) - uint64(d)) >> 63 // 1 when docs[base+half] < d
		base += half * int(lt)
		n -= half
	}
	if docs[base] < d {
		base++
	}
	return base
}
