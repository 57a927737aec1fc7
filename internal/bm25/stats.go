package bm25

import (
	"encoding/binary"
	"fmt"
	"math"
	mathbits "math/bits"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// This file computes what BM25 needs from an index snapshot — the live document count N,
// the mean analysed body length avgdl and the global document numbering of its segments —
// without reading any body posting. Each segment's total live body length comes from the
// length field (see lenField): Σ over its length terms of length × live postings count.
// That is cached per segment and recomputed only when the segment's deletions change.

// segTotal caches one segment's total live body length.
type segTotal struct {
	count   uint64 // the segment's document count, deleted included (identity check)
	delCard uint64 // deleted documents when total was computed
	total   uint64
	gen     uint64 // statsCache generation that last used it
}

// snapStats is what scoring needs from one index snapshot.
type snapStats struct {
	snap   *scorch.IndexSnapshot // held so its address cannot be reused while cached
	n      float64               // live documents
	avgdl  float64
	maxDoc int      // global document numbers are < maxDoc
	offs   []uint64 // global number of each segment's first document
	k1, b  float64
	lucene bool      // ScoringLucene: lengths quantised to Lucene's norm byte, no k1+1
	ktab   []float64 // kOf for lengths below len(ktab)
}

// ktabSize is the number of document lengths whose length normalisation is tabulated.
const ktabSize = 4096

// kOf is BM25's length normalisation of a document of analysed length dl:
// k1·(1 − b + b·dl/avgdl), rounded to float32 as the scores have always been computed;
// with ScoringLucene, dl is first rounded to what Lucene's one-byte norm keeps (lucenedl)
// and the expression is evaluated in float32 as Lucene's BM25Similarity does.
func (st *snapStats) kOf(dl uint64) float64 {
	if dl < uint64(len(st.ktab)) {
		return st.ktab[dl]
	}
	return st.kSlow(dl)
}

func (st *snapStats) kSlow(dl uint64) float64 {
	if st.lucene {
		k1, b, avgdl := float32(st.k1), float32(st.b), float32(st.avgdl)
		if avgdl == 0 {
			return float64(k1 * (1 - b))
		}
		return float64(k1 * ((1 - b) + b*float32(lucenedl(dl))/avgdl))
	}
	dlr := 0.0
	if st.avgdl > 0 {
		dlr = float64(dl) / st.avgdl
	}
	return float64(float32(st.k1 * (1 - st.b + st.b*dlr)))
}

// statsCache keeps per-segment totals and the statistics of the latest snapshot seen.
// Totals are keyed by scorch's segment id, unique within an index and kept when scorch
// persists an in-memory segment unchanged; merged segments get new ids. An entry unused by
// the last two computations is dropped.
type statsCache struct {
	mu   sync.Mutex
	gen  uint64
	segs map[uint64]*segTotal
	last *snapStats
	// onChange, when set, is told the live segment ids whenever a new snapshot's
	// statistics are computed (the postings cache drops merged-away segments).
	onChange func(live map[uint64]bool)
}

// segmentTotal sums the live body lengths of seg from its length field.
func segmentTotal(seg segment.Segment, del *roaring.Bitmap) (uint64, error) {
	dict, err := seg.Dictionary(lenField)
	if err != nil {
		return 0, err
	}
	it := dict.AutomatonIterator(nil, nil, nil)
	var (
		total uint64
		pl    segment.PostingsList
		term  []byte
	)
	for {
		de, err := it.Next()
		if err != nil {
			return 0, err
		}
		if de == nil {
			return total, nil
		}
		if len(de.Term) != 4 {
			return 0, fmt.Errorf("length term of %d bytes", len(de.Term))
		}
		// (The entry's own Count is not used: zap's dictionary iterator reports 1 for
		// some terms of merged segments that hold several postings.)
		l := uint64(binary.BigEndian.Uint32([]byte(de.Term)))
		term = append(term[:0], de.Term...)
		if pl, err = dict.PostingsList(term, del, pl); err != nil {
			return 0, err
		}
		total += l * pl.Count()
	}
}

// stats returns the scoring statistics of snap for k1, b and the scoring mode (lucene:
// ScoringLucene), computing them when the snapshot or the parameters changed.
func (c *statsCache) stats(snap *scorch.IndexSnapshot, k1, b float64, lucene bool) (*snapStats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.last; l != nil && l.snap == snap && l.k1 == k1 && l.b == b && l.lucene == lucene {
		return l, nil
	}
	segs := snap.Segments()
	if c.segs == nil {
		c.segs = map[uint64]*segTotal{}
	}
	c.gen++
	var maxDoc, totalLen uint64
	offs := make([]uint64, len(segs))
	for i, ss := range segs {
		seg := ss.Segment()
		count := seg.Count()
		var delCard uint64
		del := ss.Deleted()
		if del != nil {
			delCard = del.GetCardinality()
		}
		e := c.segs[ss.Id()]
		if e == nil || e.count != count || e.delCard != delCard {
			t, err := segmentTotal(seg, del)
			if err != nil {
				return nil, fmt.Errorf("segment %d lengths: %w", ss.Id(), err)
			}
			e = &segTotal{count: count, delCard: delCard, total: t}
			c.segs[ss.Id()] = e
		}
		e.gen = c.gen
		offs[i] = maxDoc
		maxDoc += count
		totalLen += e.total
	}
	for id, e := range c.segs {
		if e.gen+2 <= c.gen {
			delete(c.segs, id)
		}
	}
	if c.onChange != nil {
		live := make(map[uint64]bool, len(segs))
		for _, ss := range segs {
			live[ss.Id()] = true
		}
		c.onChange(live)
	}
	n, err := snap.DocCount()
	if err != nil {
		return nil, err
	}
	st := &snapStats{snap: snap, n: float64(n), maxDoc: int(maxDoc), offs: offs, k1: k1, b: b, lucene: lucene}
	if n > 0 {
		st.avgdl = float64(totalLen) / float64(n)
	}
	if lucene {
		st.avgdl = float64(float32(st.avgdl)) // Lucene's avgFieldLength is a float
	}
	st.ktab = make([]float64, ktabSize)
	for dl := range st.ktab {
		st.ktab[dl] = st.kSlow(uint64(dl))
	}
	c.last = st
	return st, nil
}

// lucenedl is the document length Lucene 8's BM25Similarity scores with: the length as its
// one-byte norm keeps it (SmallFloat.intToByte4, decoded by byte4ToInt): exact below 24,
// above that the four most significant bits, rounded down.
func lucenedl(dl uint64) uint64 {
	const free = 24 // 255 − intToByte4's code of the largest int: lengths kept exactly
	if dl < free {
		return dl
	}
	if dl > math.MaxInt32 {
		dl = math.MaxInt32
	}
	v := dl - free
	if v < 8 {
		return dl // a subnormal code: exact
	}
	shift := mathbits.Len64(v) - 4
	return free + (v>>shift)<<shift
}
