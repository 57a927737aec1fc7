package hybrid

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/search"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// This file holds the default query path of BM25Index: a term-at-a-time evaluator over
// Bleve's own index data (the scorch snapshot's segments, their zap term dictionaries and
// postings), scored with textbook BM25 as Lucene computes it:
//
//	score(d) = Σ_t count(t, q) · idf(t) · f·(k1+1) / (f + k1·(1 − b + b·dl/avgdl))
//	idf(t)   = ln(1 + (N − n + 0.5)/(n + 0.5))
//
// with f the raw term frequency, dl the document's analysed length (tokens after stop
// words), avgdl the mean dl over live documents, N the live document count and n the live
// document frequency. Doc lengths come from the postings (the sum of a document's term
// frequencies is its analysed length) and are cached per immutable segment, so a new
// snapshot only costs its new segments plus a pass over the document count.
//
// Cost: a segment's lengths take one pass over all its body postings (about 15 µs per
// document). Apply pays it for the segment it creates. For an existing index, OpenBM25
// starts a background prefetch that follows Bleve's merges (prefetchLengths); a search that
// arrives before it is done computes the segments still missing itself (on SciFact: first
// search 57 ms right after opening, 0.26 ms once the prefetch is done).

// termCount is one distinct analysed query term and how often the query holds it.
type termCount struct {
	term  string
	count int
}

// analyzeQuery runs q through the index's English analyzer and returns its distinct terms
// (first-occurrence order) with their multiplicities.
func (b *BM25Index) analyzeQuery(q string) ([]termCount, error) {
	b.anaOnce.Do(func() {
		b.analyzer = b.idx.Mapping().AnalyzerNamed(en.AnalyzerName)
	})
	if b.analyzer == nil {
		return nil, fmt.Errorf("%w: analyzer %q not registered", ErrBM25, en.AnalyzerName)
	}
	toks := b.analyzer.Analyze([]byte(q))
	out := make([]termCount, 0, len(toks))
	for _, t := range toks {
		term := string(t.Term)
		found := false
		for i := range out {
			if out[i].term == term {
				out[i].count++
				found = true
				break
			}
		}
		if !found {
			out = append(out, termCount{term: term, count: 1})
		}
	}
	return out, nil
}

// segLengths caches the analysed body length of every document of one immutable segment.
type segLengths struct {
	lens  []uint32
	total uint64 // Σ lens, deleted documents included
	gen   uint64 // statsCache generation that last used it
}

// snapStats is what scoring needs from one index snapshot.
type snapStats struct {
	snap   *scorch.IndexSnapshot // held so its address cannot be reused while cached
	n      float64               // live documents
	avgdl  float64
	maxDoc int       // global document numbers are < maxDoc
	offs   []uint64  // global number of each segment's first document
	norm   []float32 // per global doc number: k1·(1 − b + b·dl/avgdl)
	k1, b  float64
}

// statsCache keeps per-segment document lengths and the statistics of the latest snapshot
// seen. Lengths are keyed by scorch's segment id, which is unique within an index and kept
// when scorch persists an in-memory segment to a file unchanged (same documents, same
// numbers); merged segments get new ids. An entry is dropped once it has not been used by
// the last two statistics computations, so a search still holding an older snapshot does
// not force its segments to be recomputed.
type statsCache struct {
	mu   sync.Mutex
	gen  uint64
	segs map[uint64]*segLengths
	last *snapStats
}

// segmentLengths computes the analysed length of each document of seg: the sum of its term
// frequencies over the body field (Bleve's field length is the token count after analysis,
// and every token adds one to its term's frequency). It reads every body posting of the
// segment once.
func segmentLengths(ctx context.Context, seg segment.Segment) (*segLengths, error) {
	sl := &segLengths{lens: make([]uint32, seg.Count())}
	dict, err := seg.Dictionary(bodyField)
	if err != nil {
		return nil, err
	}
	it := dict.AutomatonIterator(nil, nil, nil)
	var (
		pl  segment.PostingsList
		pit segment.PostingsIterator
	)
	for terms := 0; ; terms++ {
		if terms%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		de, err := it.Next()
		if err != nil {
			return nil, err
		}
		if de == nil {
			break
		}
		pl, err = dict.PostingsList([]byte(de.Term), nil, pl)
		if err != nil {
			return nil, err
		}
		pit = pl.Iterator(true, false, false, pit)
		for {
			p, err := pit.Next()
			if err != nil {
				return nil, err
			}
			if p == nil {
				break
			}
			if n := p.Number(); n < uint64(len(sl.lens)) {
				f := p.Frequency()
				sl.lens[n] += uint32(f)
				sl.total += f
			}
		}
	}
	return sl, nil
}

// cached returns the cached lengths of ss's segment, when there is a valid entry (the
// entry is checked against the segment's document count). c.mu must be held.
func (c *statsCache) cached(ss *scorch.SegmentSnapshot) (*segLengths, bool) {
	sl, ok := c.segs[ss.Id()]
	return sl, ok && uint64(len(sl.lens)) == ss.Segment().Count()
}

// stats returns the scoring statistics of snap, computing them when snap (or k1/b) changed.
func (c *statsCache) stats(snap *scorch.IndexSnapshot) (*snapStats, error) {
	k1, bb := search.BM25_k1, search.BM25_b
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.last; l != nil && l.snap == snap && l.k1 == k1 && l.b == bb {
		return l, nil
	}
	segs := snap.Segments()
	if c.segs == nil {
		c.segs = map[uint64]*segLengths{}
	}
	c.gen++
	var (
		maxDoc   uint64
		totalLen uint64
	)
	all := make([]*segLengths, len(segs))
	offs := make([]uint64, len(segs))
	for i, ss := range segs {
		seg := ss.Segment()
		sl, ok := c.cached(ss)
		if !ok {
			var err error
			if sl, err = segmentLengths(context.Background(), seg); err != nil {
				return nil, err
			}
			c.segs[ss.Id()] = sl
		}
		sl.gen = c.gen
		all[i] = sl
		offs[i] = maxDoc
		maxDoc += seg.Count()
		totalLen += sl.total
		if del := ss.Deleted(); del != nil {
			di := del.Iterator()
			for di.HasNext() {
				if d := di.Next(); int(d) < len(sl.lens) {
					totalLen -= uint64(sl.lens[d])
				}
			}
		}
	}
	for id, sl := range c.segs {
		if sl.gen+2 <= c.gen {
			delete(c.segs, id)
		}
	}
	n, err := snap.DocCount()
	if err != nil {
		return nil, err
	}
	st := &snapStats{snap: snap, n: float64(n), maxDoc: int(maxDoc), offs: offs, k1: k1, b: bb}
	if n > 0 {
		st.avgdl = float64(totalLen) / float64(n)
	}
	st.norm = make([]float32, maxDoc)
	pos := 0
	for _, sl := range all {
		for _, l := range sl.lens {
			dlr := 0.0
			if st.avgdl > 0 {
				dlr = float64(l) / st.avgdl
			}
			st.norm[pos] = float32(k1 * (1 - bb + bb*dlr))
			pos++
		}
	}
	c.last = st
	return st, nil
}

// prefetchLengths fills the length cache for every segment of the current snapshot that
// lacks an entry, computing each one outside the cache's lock so that searches meanwhile
// are not held up (a search that needs a missing segment computes it itself). It stops
// when ctx is cancelled. OpenBM25 runs it in the background, so that the first search after
// opening a large index does not pay for a pass over all postings.
//
// Scorch keeps merging segments after an index is opened, and a merged segment needs its
// own lengths, so the prefetch follows the index: it passes over the current snapshot again
// until a pass finds nothing missing (or maxPasses passes are done).
func (b *BM25Index) prefetchLengths(ctx context.Context, maxPasses int) error {
	for pass := 0; pass < maxPasses; pass++ {
		computed, err := b.prefetchPass(ctx)
		if err != nil || computed == 0 {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond): // let a running merge finish
		}
	}
	return nil
}

// prefetchPass caches the lengths of the current snapshot's segments that lack them and
// reports how many it computed.
func (b *BM25Index) prefetchPass(ctx context.Context) (computed int, err error) {
	c := &b.stats
	err = b.withSnapshot(func(snap *scorch.IndexSnapshot) error {
		for _, ss := range snap.Segments() {
			c.mu.Lock()
			_, have := c.cached(ss)
			c.mu.Unlock()
			if have {
				continue
			}
			sl, err := segmentLengths(ctx, ss.Segment())
			if err != nil {
				return err
			}
			computed++
			c.mu.Lock()
			if _, have := c.cached(ss); !have {
				if c.segs == nil {
					c.segs = map[uint64]*segLengths{}
				}
				sl.gen = c.gen
				c.segs[ss.Id()] = sl
			}
			c.mu.Unlock()
		}
		return nil
	})
	return computed, err
}

// withSnapshot runs fn on the index's current scorch snapshot, released afterwards. It
// returns errNotScorch when the reader is not a scorch snapshot.
func (b *BM25Index) withSnapshot(fn func(*scorch.IndexSnapshot) error) error {
	adv, err := b.idx.Advanced()
	if err != nil {
		return fmt.Errorf("%w: advanced index: %v", ErrBM25, err)
	}
	r, err := adv.Reader()
	if err != nil {
		return fmt.Errorf("%w: reader: %v", ErrBM25, err)
	}
	defer r.Close()
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		return errNotScorch
	}
	return fn(snap)
}

// errNotScorch: the index reader is not a scorch snapshot, so the TAAT path cannot run.
var errNotScorch = errors.New("hybrid: index reader is not a scorch snapshot")

// accum is a reusable score accumulator.
type accum struct {
	scores  []float64
	touched []uint32
	allow   []uint64 // bitset over global doc numbers, nil when unrestricted
	heap    []float64

	snap *scorch.IndexSnapshot // the snapshot cur was bound to (held: no address reuse)
	curs map[segment.Segment]*segCursor
	cur  []*segCursor // per segment of snap, in order
}

var accumPool = sync.Pool{New: func() any { return new(accum) }}

// siftDown restores the min-heap property of h below i.
func siftDown(h []float64, i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h[r] < h[l] {
			m = r
		}
		if h[i] <= h[m] {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// segCursor holds one segment's body dictionary and reusable postings structures. Zap
// dictionaries are not safe for concurrent use, so each pooled accumulator has its own.
type segCursor struct {
	dict segment.TermDictionary
	pl   segment.PostingsList
	it   segment.PostingsIterator
}

// bind points a.cur at the dictionaries of snap's segments, reusing those of segments seen
// before and dropping those of segments no longer live.
func (a *accum) bind(snap *scorch.IndexSnapshot, segs []*scorch.SegmentSnapshot) error {
	if a.snap == snap {
		return nil
	}
	if a.curs == nil {
		a.curs = map[segment.Segment]*segCursor{}
	}
	live := make(map[segment.Segment]bool, len(segs))
	a.cur = a.cur[:0]
	for _, ss := range segs {
		seg := ss.Segment()
		live[seg] = true
		c := a.curs[seg]
		if c == nil {
			dict, err := seg.Dictionary(bodyField)
			if err != nil {
				a.snap, a.cur = nil, a.cur[:0]
				return err
			}
			c = &segCursor{dict: dict}
			a.curs[seg] = c
		}
		a.cur = append(a.cur, c)
	}
	for seg := range a.curs {
		if !live[seg] {
			delete(a.curs, seg)
		}
	}
	a.snap = snap
	return nil
}

// searchTAAT is the term-at-a-time path of Search. ok is false when the index reader is not
// a scorch snapshot (the caller then uses Bleve's own search).
func (b *BM25Index) searchTAAT(ctx context.Context, q string, k int, allow []string) (hits []Hit, ok bool, err error) {
	terms, err := b.analyzeQuery(q)
	if err != nil {
		return nil, true, err
	}
	if len(terms) == 0 {
		return nil, true, nil
	}
	err = b.withSnapshot(func(snap *scorch.IndexSnapshot) error {
		hits, err = b.searchSnapshot(ctx, snap, terms, k, allow)
		return err
	})
	if errors.Is(err, errNotScorch) {
		return nil, false, nil
	}
	return hits, true, err
}

// searchSnapshot scores the analysed query terms over snap and returns the top k.
func (b *BM25Index) searchSnapshot(ctx context.Context, snap *scorch.IndexSnapshot, terms []termCount, k int, allow []string) ([]Hit, error) {
	st, err := b.stats.stats(snap)
	if err != nil {
		return nil, fmt.Errorf("%w: bm25 statistics: %v", ErrBM25, err)
	}
	if st.n == 0 {
		return nil, nil
	}
	segs := snap.Segments()
	if len(segs) != len(st.offs) {
		return nil, fmt.Errorf("%w: snapshot has %d segments, statistics %d", ErrBM25, len(segs), len(st.offs))
	}

	a := accumPool.Get().(*accum)
	defer accumPool.Put(a)
	if cap(a.scores) < st.maxDoc {
		a.scores = make([]float64, st.maxDoc)
	}
	scores := a.scores[:st.maxDoc]
	touched := a.touched[:0]
	defer func() {
		for _, d := range touched {
			scores[d] = 0
		}
		a.touched = touched[:0]
	}()

	var allowBits []uint64
	if allow != nil {
		words := (st.maxDoc + 63) / 64
		if cap(a.allow) < words {
			a.allow = make([]uint64, words)
		}
		allowBits = a.allow[:words]
		clear(allowBits)
		found := false
		for i, ss := range segs {
			nums, err := ss.DocNumbers(allow) // live documents only
			if err != nil {
				return nil, fmt.Errorf("%w: allowed ids: %v", ErrBM25, err)
			}
			off := st.offs[i]
			ni := nums.Iterator()
			for ni.HasNext() {
				if d := off + uint64(ni.Next()); d < uint64(st.maxDoc) {
					allowBits[d/64] |= 1 << (d % 64)
					found = true
				}
			}
		}
		if !found {
			return nil, nil
		}
	}

	k1p1 := st.k1 + 1
	norm := st.norm
	if err := a.bind(snap, segs); err != nil {
		return nil, fmt.Errorf("%w: segment dictionaries: %v", ErrBM25, err)
	}
	for _, tc := range terms {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		term := []byte(tc.term)
		var df uint64
		for i, c := range a.cur {
			pl, err := c.dict.PostingsList(term, segs[i].Deleted(), c.pl)
			if err != nil {
				return nil, fmt.Errorf("%w: postings %q: %v", ErrBM25, tc.term, err)
			}
			c.pl = pl
			df += pl.Count()
		}
		if df == 0 {
			continue
		}
		dff := float64(df)
		w := float64(tc.count) * math.Log(1+(st.n-dff+0.5)/(dff+0.5)) * k1p1
		for i, c := range a.cur {
			if c.pl.Count() == 0 {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			off := st.offs[i]
			c.it = c.pl.Iterator(true, false, false, c.it)
			for {
				p, err := c.it.Next()
				if err != nil {
					return nil, fmt.Errorf("%w: postings %q: %v", ErrBM25, tc.term, err)
				}
				if p == nil {
					break
				}
				d := off + p.Number()
				if d >= uint64(st.maxDoc) {
					continue
				}
				if allowBits != nil && allowBits[d/64]&(1<<(d%64)) == 0 {
					continue
				}
				f := float64(p.Frequency())
				if scores[d] == 0 {
					touched = append(touched, uint32(d))
				}
				scores[d] += w * f / (f + float64(norm[d]))
			}
		}
	}
	if len(touched) == 0 {
		return nil, nil
	}

	// k-th best score, then every document at or above it (ties at the cut are broken by
	// external id below).
	h := a.heap[:0]
	for _, d := range touched {
		s := scores[d]
		if len(h) < k {
			h = append(h, s)
			if len(h) == k {
				for i := k/2 - 1; i >= 0; i-- {
					siftDown(h, i)
				}
			}
		} else if s > h[0] {
			h[0] = s
			siftDown(h, 0)
		}
	}
	cut := math.Inf(-1)
	if len(h) == k {
		cut = h[0]
	}
	a.heap = h[:0]
	hits := make([]Hit, 0, min(k, len(touched)))
	for _, d := range touched {
		if s := scores[d]; s >= cut {
			var iid [8]byte
			binary.BigEndian.PutUint64(iid[:], uint64(d))
			ext, err := snap.ExternalID(iid[:])
			if err != nil {
				return nil, fmt.Errorf("%w: external id of %d: %v", ErrBM25, d, err)
			}
			hits = append(hits, Hit{ID: ext, Score: s})
		}
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].ID < hits[j].ID
	})
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits, nil
}
