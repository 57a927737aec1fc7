package bm25

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	mathbits "math/bits"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/blevesearch/bleve/v2/index/scorch"
	segment "github.com/blevesearch/scorch_segment_api/v2"

	"github.com/agentmem/memory/internal/postfile"
	"github.com/agentmem/memory/internal/postings"
)

// This file holds the default query path of BM25Index: textbook BM25 as Lucene computes it,
// evaluated over Bleve's own index data (the scorch snapshot's segments, their zap term
// dictionaries and postings):
//
//	score(d) = Σ_t count(t, q) · idf(t) · f·(k1+1) / (f + k1·(1 − b + b·dl/avgdl))
//	idf(t)   = ln(1 + (N − n + 0.5)/(n + 0.5))
//
// (ScoringLucene drops the constant k1+1 and scores with dl as Lucene's one-byte norm
// keeps it, as Lucene 8's BM25Similarity does; see snapStats.kOf.)
//
// with f the raw term frequency, dl the document's analysed body length (tokens after stop
// words; zap v16 stores it as each posting's norm), avgdl the mean dl over live documents
// (from the length field, see bm25_stats.go), N the live document count and n the live
// document frequency. Terms are summed in query order, so every evaluator gives bit-equal
// scores.
//
// Two evaluators share that scoring:
//   - MaxScore (the default): document at a time over each segment, with each term's
//     score bound idf·(k1+1)·count (f/(f+K) < 1). Terms are ordered by bound; the longest
//     prefix whose bounds add up to less than the current k-th best score is
//     "non-essential": a document is found only through the essential terms' postings,
//     and the non-essential ones are advanced to it only while the document can still
//     reach the top k. The result is exact: the same top k with the same scores as
//     exhaustive evaluation, ties at the cut broken by external id.
//   - exhaustive term at a time (SetExhaustive, a test knob): every posting of every term, into a score
//     array. The reference for tests and benchmarks.

// termCount is one distinct analysed query term and how often the query holds it.
type termCount struct {
	term  string
	count int
}

// analyzeQuery runs q through the index's analyzer and returns its distinct terms
// (first-occurrence order) with their multiplicities, in time linear in q. It enforces the
// query caps of the index's options.
func (b *Index) analyzeQuery(q string) ([]termCount, error) {
	if len(q) > b.opts.MaxQueryBytes {
		return nil, fmt.Errorf("%w: %d bytes, the cap is %d (BM25Options.MaxQueryBytes)", ErrQueryTooLong, len(q), b.opts.MaxQueryBytes)
	}
	ana := b.bodyAnalyzer()
	if ana == nil {
		return nil, fmt.Errorf("%w: analyzer not registered", ErrBM25)
	}
	toks := ana.Analyze([]byte(q))
	pos := make(map[string]int, min(len(toks), b.opts.MaxQueryTerms))
	out := make([]termCount, 0, min(len(toks), b.opts.MaxQueryTerms))
	for _, t := range toks {
		if i, ok := pos[string(t.Term)]; ok {
			out[i].count++
			continue
		}
		if len(out) == b.opts.MaxQueryTerms {
			return nil, fmt.Errorf("%w: more than %d distinct terms (BM25Options.MaxQueryTerms)", ErrQueryTooManyTerms, b.opts.MaxQueryTerms)
		}
		term := string(t.Term)
		pos[term] = len(out)
		out = append(out, termCount{term: term, count: 1})
	}
	return out, nil
}

// withSnapshot runs fn on the index's current scorch snapshot (after the held writes:
// deferred.go), released afterwards. It returns errNotScorch when the reader is not a
// scorch snapshot.
func (b *Index) withSnapshot(fn func(*scorch.IndexSnapshot) error) error {
	// Every reader of the index comes here (or to Count, Missing, Bleve's search): it sees
	// every write acknowledged before it.
	if err := b.flushHeld(); err != nil {
		return err
	}
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
	defer b.trim.after(snap) // while the reader holds the segments mapped
	return fn(snap)
}

// Warm computes what the first query on the index's current snapshot needs before it
// scores anything (its statistics: each segment's total length, read from the length
// field), so that the first query does not wait for it. Queries compute them anyway;
// Warm only moves the work. It does nothing for an index that is not a scorch snapshot
// (queries then go through Bleve's search).
func (b *Index) Warm(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := b.withSnapshot(func(snap *scorch.IndexSnapshot) error {
		_, err := b.snapStats(snap)
		return err
	})
	if errors.Is(err, errNotScorch) {
		return nil
	}
	return err
}

// snapStats returns the scoring statistics of snap under the index's parameters.
func (b *Index) snapStats(snap *scorch.IndexSnapshot) (*snapStats, error) {
	return b.stats.stats(snap, b.opts.K1, b.opts.B, b.opts.Scoring == ScoringLucene)
}

// Warmed reports whether the statistics of the index's current snapshot are computed
// (Warm, or a query on it); false for an index that is not a scorch snapshot.
func (b *Index) Warmed() bool {
	warm := false
	_ = b.withSnapshot(func(snap *scorch.IndexSnapshot) error {
		b.stats.mu.Lock()
		defer b.stats.mu.Unlock()
		warm = b.stats.last != nil && b.stats.last.snap == snap
		return nil
	})
	return warm
}

// errNotScorch: the index reader is not a scorch snapshot, or its segments do not carry
// document lengths in their norms (not zap v16), so the default path cannot run.
var errNotScorch = errors.New("hybrid: index reader is not a scorch v16 snapshot")

// searchPostings is the default path of Search. ok is false when the index cannot be read
// this way (the caller then uses Bleve's own search).
func (b *Index) searchPostings(ctx context.Context, q string, k int, r restriction) (hits []Hit, ok bool, err error) {
	terms, err := b.analyzeQuery(q)
	if err != nil {
		return nil, true, err
	}
	if len(terms) == 0 {
		return nil, true, nil
	}
	err = b.withSnapshot(func(snap *scorch.IndexSnapshot) error {
		hits, err = b.searchSnapshot(ctx, snap, terms, k, r)
		return err
	})
	if errors.Is(err, errNotScorch) {
		return nil, false, nil
	}
	return hits, true, err
}

// normer is the zap v16 posting's access to the raw norm: the document's field length.
type normer interface{ NormUint64() uint64 }

// segCursor holds one segment's body dictionary and, per query term, reusable postings
// structures. Zap dictionaries are not safe for concurrent use, so each pooled evalState
// has its own.
type segCursor struct {
	dict  segment.TermDictionary
	terms []termCursor
	pf    *postfile.Reader // the segment's body file (nil: the body is in zap)
}

// termCursor is one query term's postings in one segment.
type termCursor struct {
	src  blockSource          // MaxScore's block decoding
	n    uint64               // the term's postings of live documents (its document frequency)
	pl   segment.PostingsList // nil until postings is called
	prev segment.PostingsList // the last one looked up, reused
	it   segment.PostingsIterator
	doc  uint64 // current document, noMore once exhausted
	f    float64
	dl   uint64
}

const noMore = math.MaxUint64

// load reads p (nil: exhausted) into c.
func (c *termCursor) load(p segment.Posting) error {
	if p == nil {
		c.doc = noMore
		return nil
	}
	nm, ok := p.(normer)
	if !ok {
		return errNotScorch
	}
	c.doc, c.f, c.dl = p.Number(), float64(p.Frequency()), nm.NormUint64()
	return nil
}

// evalState is the reusable state of one query's evaluation.
type evalState struct {
	snap    *scorch.IndexSnapshot // the snapshot curs is bound to (held: no address reuse)
	curs    map[segment.Segment]*segCursor
	cur     []*segCursor // per segment of snap, in order
	termBuf []byte

	// exhaustive evaluation
	scores  []float64
	touched []uint32
	allow   []uint64 // bitset over global doc numbers, nil when unrestricted
}

var evalPool = sync.Pool{New: func() any { return new(evalState) }}

// bind points e.cur at the dictionaries of snap's segments, reusing those of segments seen
// before and dropping those of segments no longer live.
func (e *evalState) bind(snap *scorch.IndexSnapshot, segs []*scorch.SegmentSnapshot) error {
	if e.snap == snap {
		return nil
	}
	if e.curs == nil {
		e.curs = map[segment.Segment]*segCursor{}
	}
	live := make(map[segment.Segment]bool, len(segs))
	e.cur = e.cur[:0]
	for _, ss := range segs {
		seg := ss.Segment()
		live[seg] = true
		c := e.curs[seg]
		if c == nil {
			dict, err := seg.Dictionary(bodyField)
			if err != nil {
				e.snap, e.cur = nil, e.cur[:0]
				return err
			}
			c = &segCursor{dict: dict}
			if bs, ok := seg.(bodySegment); ok {
				c.pf = bs.bodyPostings()
			}
			e.curs[seg] = c
		}
		e.cur = append(e.cur, c)
	}
	for seg := range e.curs {
		if !live[seg] {
			delete(e.curs, seg)
		}
	}
	e.snap = snap
	return nil
}

// scoredDoc is a candidate: its score and global document number.
type scoredDoc struct {
	score float64
	doc   uint64
}

// topK keeps the k best documents by score, and every document tied with the k-th (ties
// at the cut are broken by external id once the ids are known).
type topK struct {
	k    int
	h    []scoredDoc // min-heap on score
	ties []scoredDoc // documents scoring exactly h[0].score that are not in h
}

// threshold is the score a document must reach to enter: the k-th best so far, or -Inf
// while fewer than k are held.
func (t *topK) threshold() float64 {
	if len(t.h) < t.k {
		return math.Inf(-1)
	}
	return t.h[0].score
}

func (t *topK) push(s scoredDoc) {
	if len(t.h) < t.k {
		t.h = append(t.h, s)
		for i := len(t.h) - 1; i > 0; {
			p := (i - 1) / 2
			if t.h[p].score <= t.h[i].score {
				break
			}
			t.h[p], t.h[i] = t.h[i], t.h[p]
			i = p
		}
		return
	}
	low := t.h[0].score
	switch {
	case s.score < low:
		return
	case s.score == low:
		t.ties = append(t.ties, s)
		return
	}
	old := t.h[0]
	t.h[0] = s
	t.siftDown(0)
	if t.h[0].score == low {
		t.ties = append(t.ties, old)
	} else {
		t.ties = t.ties[:0]
	}
}

func (t *topK) siftDown(i int) {
	h := t.h
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h[r].score < h[l].score {
			m = r
		}
		if h[i].score <= h[m].score {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// sharedBound is the best k-th score any segment worker of one query has reached: a lower
// bound of the final k-th score, so every worker may prune against it.
type sharedBound struct{ bits atomic.Uint64 }

func newSharedBound() *sharedBound {
	s := &sharedBound{}
	s.bits.Store(math.Float64bits(math.Inf(-1)))
	return s
}

func (s *sharedBound) load() float64 { return math.Float64frombits(s.bits.Load()) }

func (s *sharedBound) raise(v float64) {
	for {
		old := s.bits.Load()
		if math.Float64frombits(old) >= v || s.bits.CompareAndSwap(old, math.Float64bits(v)) {
			return
		}
	}
}

// searchSnapshot scores the analysed query terms over snap and returns the top k of the
// documents r allows.
func (b *Index) searchSnapshot(ctx context.Context, snap *scorch.IndexSnapshot, terms []termCount, k int, r restriction) ([]Hit, error) {
	st, err := b.snapStats(snap)
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
	e := evalPool.Get().(*evalState)
	defer evalPool.Put(e)
	if err := e.bind(snap, segs); err != nil {
		return nil, fmt.Errorf("%w: segment dictionaries: %v", ErrBM25, err)
	}
	allowBits, none, err := b.restrictBits(ctx, e, snap, st, segs, r)
	if err != nil || none {
		return nil, err
	}
	weights, err := e.termWeights(b.postings, st, segs, terms)
	if err != nil {
		return nil, err
	}
	top := &topK{k: k}
	if b.exhaustive.Load() {
		err = e.exhaustive(ctx, st, segs, terms, weights, allowBits, top)
	} else {
		err = b.maxScore(ctx, e, st, segs, terms, weights, allowBits, top)
		if errors.Is(err, errBlockMeta) {
			// The disagreeing metadata was dropped: it is computed again from the postings.
			top = &topK{k: k}
			err = b.maxScore(ctx, e, st, segs, terms, weights, allowBits, top)
		}
		if errors.Is(err, errBlockMeta) {
			slog.Warn("hybrid: block metadata still disagrees with the postings; scoring every posting", "err", err)
			top = &topK{k: k}
			err = e.exhaustive(ctx, st, segs, terms, weights, allowBits, top)
		}
	}
	if err != nil {
		return nil, err
	}
	return collect(snap, top, k)
}

// restrictBits returns the bitset over global document numbers of the documents r
// allows: nil when r allows every document; none when it allows no live document.
func (b *Index) restrictBits(ctx context.Context, e *evalState, snap *scorch.IndexSnapshot, st *snapStats, segs []*scorch.SegmentSnapshot, r restriction) (bits []uint64, none bool, err error) {
	switch {
	case r.ids != nil:
		bits, err = e.allowBits(st, segs, r.ids)
		return bits, bits == nil, err
	case r.filter != nil:
		fr, err := b.evalFilter(ctx, snap, st, r.filter)
		if err != nil {
			return nil, false, err
		}
		return fr.bits, fr.bits == nil, nil
	}
	return nil, false, nil
}

// termWeights counts every query term's postings of live documents in every segment
// (termCount; kept in e's cursors) and returns each term's weight: its count in the query
// times its idf over the live documents times k1+1 (0 for a term no document holds). With
// ScoringLucene the weight is Lucene 8's: no k1+1 (a constant factor, the same order), idf
// a float32.
func (e *evalState) termWeights(cache *postingsCache, st *snapStats, segs []*scorch.SegmentSnapshot, terms []termCount) ([]float64, error) {
	k1p1 := st.k1 + 1
	weights := make([]float64, len(terms))
	for _, c := range e.cur {
		if cap(c.terms) < len(terms) {
			c.terms = make([]termCursor, len(terms))
		}
		c.terms = c.terms[:len(terms)]
	}
	for ti, tc := range terms {
		var df uint64
		for si, c := range e.cur {
			tcur := &c.terms[ti]
			tcur.pl = nil
			n, err := e.termCount(cache, segs[si], c, tcur, tc.term)
			if err != nil {
				return nil, fmt.Errorf("%w: postings %q: %v", ErrBM25, tc.term, err)
			}
			tcur.n = n
			df += n
		}
		if df > 0 {
			dff := float64(df)
			idf := math.Log(1 + (st.n-dff+0.5)/(dff+0.5))
			if st.lucene {
				weights[ti] = float64(float32(tc.count) * float32(idf))
			} else {
				weights[ti] = float64(tc.count) * idf * k1p1
			}
		}
	}
	return weights, nil
}

// termCount returns the postings of live documents of term in segment ss (cursor c). In
// a segment with a body file and no deletions that is the count in the term's block
// metadata, read from the file (and kept in cache for the evaluation that follows and
// later queries) when it is not cached yet; otherwise the postings list counts.
func (e *evalState) termCount(cache *postingsCache, ss *scorch.SegmentSnapshot, c *segCursor, tcur *termCursor, term string) (uint64, error) {
	if del := ss.Deleted(); c.pf != nil && (del == nil || del.IsEmpty()) {
		if tb := cache.terms(ss, term); tb != nil {
			return tb.total, nil
		}
		tcur.usePF(c.pf)
		e.termBuf = append(e.termBuf[:0], term...)
		tb, err := buildBlocks(&tcur.src, e.termBuf)
		switch {
		case errors.Is(err, errNoPostings):
			return 0, nil
		case err != nil:
			return 0, err
		}
		tb = cache.addTerms(ss, term, tb)
		return tb.total, nil
	}
	pl, err := tcur.postings(c, ss, term, &e.termBuf)
	if err != nil {
		return 0, err
	}
	return pl.Count(), nil
}

// postings returns the term's postings list in segment ss (cursor c), looked up once an
// evaluation.
func (t *termCursor) postings(c *segCursor, ss *scorch.SegmentSnapshot, term string, buf *[]byte) (segment.PostingsList, error) {
	if t.pl != nil {
		return t.pl, nil
	}
	*buf = append((*buf)[:0], term...)
	pl, err := c.dict.PostingsList(*buf, ss.Deleted(), t.prev)
	if err != nil {
		return nil, err
	}
	t.pl, t.prev = pl, pl
	return pl, nil
}

// usePF points t's block source at body file r.
func (t *termCursor) usePF(r *postfile.Reader) {
	t.src.next = -1 // the term is looked up in the body file again in this query
	if t.src.pf == nil || t.src.pf.r != r {
		t.src.pf = &pfSource{r: r, chunk: -1, blk: -1}
	}
}

// allowBits builds the bitset of the allowed ids' live global document numbers; nil when
// none of them is in the index.
func (e *evalState) allowBits(st *snapStats, segs []*scorch.SegmentSnapshot, allow []string) ([]uint64, error) {
	words := (st.maxDoc + 63) / 64
	if cap(e.allow) < words {
		e.allow = make([]uint64, words)
	}
	bits := e.allow[:words]
	clear(bits)
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
				bits[d/64] |= 1 << (d % 64)
				found = true
			}
		}
	}
	if !found {
		return nil, nil
	}
	return bits, nil
}

// collect resolves the external ids of top's documents and returns the best k, ties
// broken by id.
func collect(snap *scorch.IndexSnapshot, top *topK, k int) ([]Hit, error) {
	cands := append(top.h, top.ties...)
	if len(cands) == 0 {
		return nil, nil
	}
	hits := make([]Hit, 0, len(cands))
	for _, c := range cands {
		var iid [8]byte
		binary.BigEndian.PutUint64(iid[:], c.doc)
		ext, err := snap.ExternalID(iid[:])
		if err != nil {
			return nil, fmt.Errorf("%w: external id of %d: %v", ErrBM25, c.doc, err)
		}
		hits = append(hits, Hit{ID: ext, Score: c.score})
	}
	sortHits(hits)
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits, nil
}

// sortHits orders hits by score, best first, ties by id.
func sortHits(hits []Hit) {
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].ID < hits[j].ID
	})
}

// exhaustive scores every posting of every term, term at a time, into a score array, and
// offers every scored document to top.
func (e *evalState) exhaustive(ctx context.Context, st *snapStats, segs []*scorch.SegmentSnapshot, terms []termCount, weights []float64, allowBits []uint64, top *topK) error {
	if cap(e.scores) < st.maxDoc {
		e.scores = make([]float64, st.maxDoc)
	}
	scores := e.scores[:st.maxDoc]
	touched := e.touched[:0]
	defer func() {
		for _, d := range touched {
			scores[d] = 0
		}
		e.touched = touched[:0]
	}()
	for ti, w := range weights {
		if w == 0 {
			continue
		}
		for si, c := range e.cur {
			tc := &c.terms[ti]
			if tc.n == 0 {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			pl, err := tc.postings(c, segs[si], terms[ti].term, &e.termBuf)
			if err != nil {
				return fmt.Errorf("%w: postings %q: %v", ErrBM25, terms[ti].term, err)
			}
			off := st.offs[si]
			tc.it = pl.Iterator(true, true, false, tc.it)
			for {
				p, err := tc.it.Next()
				if err != nil {
					return fmt.Errorf("%w: postings: %v", ErrBM25, err)
				}
				if err := tc.load(p); err != nil {
					return err
				}
				if tc.doc == noMore {
					break
				}
				d := off + tc.doc
				if d >= uint64(st.maxDoc) || (allowBits != nil && allowBits[d/64]&(1<<(d%64)) == 0) {
					continue
				}
				if scores[d] == 0 {
					touched = append(touched, uint32(d))
				}
				scores[d] += w * tc.f / (tc.f + st.kOf(tc.dl))
			}
		}
	}
	for _, d := range touched {
		top.push(scoredDoc{score: scores[d], doc: uint64(d)})
	}
	return nil
}

// pruneSlack keeps pruning decisions safe against rounding: partial sums are added in a
// different order than the final score, so a document is dropped only when its bound is
// below the threshold by more than any rounding difference.
const pruneSlack = 1 - 1e-9

// maxScore runs MaxScore over every segment, largest first, on up to
// opts.SegmentWorkers goroutines.
func (b *Index) maxScore(ctx context.Context, e *evalState, st *snapStats, segs []*scorch.SegmentSnapshot, terms []termCount, weights []float64, allowBits []uint64, top *topK) error {
	order := make([]int, 0, len(segs))
	for si, c := range e.cur {
		for ti := range weights {
			if weights[ti] > 0 && c.terms[ti].n > 0 {
				order = append(order, si)
				break
			}
		}
	}
	slices.SortFunc(order, func(a, b int) int {
		ca, cb := segs[a].Count(), segs[b].Count()
		switch {
		case ca > cb:
			return -1
		case ca < cb:
			return 1
		}
		return a - b
	})
	job := func(sc *segScorer, si int, top *topK, bound *sharedBound) error {
		return sc.run(ctx, b.postings, segs[si], e.cur[si], st, st.offs[si], terms, weights, allowBits, top, bound)
	}
	workers := min(b.opts.SegmentWorkers, len(order))
	if workers <= 1 {
		var sc segScorer
		for _, si := range order {
			if err := job(&sc, si, top, nil); err != nil {
				return err
			}
		}
		return nil
	}
	bound := newSharedBound()
	tops := make([]*topK, workers)
	errs := make([]error, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		tops[w] = &topK{k: top.k}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer recoverCorrupt(&errs[w], "segment worker")
			var sc segScorer
			for {
				i := int(next.Add(1)) - 1
				if i >= len(order) || ctx.Err() != nil {
					return
				}
				if err := job(&sc, order[i], tops[w], bound); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, t := range tops {
		for _, d := range t.h {
			top.push(d)
		}
		for _, d := range t.ties {
			top.push(d)
		}
	}
	return nil
}

// blockCursor walks one term's blocks in one segment, decoding a block only when a
// document in it must be scored.
type blockCursor struct {
	tb     *termBlocks
	src    *blockSource
	term   string
	w      float64
	ti     int     // index in the query's term order
	blk    int     // current block (len(tb.count): past the last)
	end    uint64  // first document after the current block
	bub    float64 // w · the current block's best ratio: its score bound
	cur    *postBlock
	pos    int
	doc    uint32    // cur.docs[pos]; noDoc when the block is exhausted or not loaded
	ratios []float64 // each block's best BM25 ratio under the query's statistics
	top    []float64 // the largest of them, descending (blockRatios.top)
	probes int       // documents of the current block looked up without decoding it
}

// directProbes is how many documents of a block not decoded yet are looked up alone
// (blockCursor.lookup) before the block is decoded: a lookup decodes the 128 postings
// around the document and reads one length, a block's decode about 1,024 postings and as
// many lengths (read at random from the body file's table: at 21M documents most miss
// the caches), and a block probed this often is usually probed many times more (then
// each probe after the decode is a step through decoded documents). 64, chosen on the
// 21M tuning queries' first rounds (p50 3.4–3.8 ms against 3.8–4.4 ms with 16, 4.6–4.7
// with 4; 256 no better and slower warm; BENCHMARKS.md §0zn).
const directProbes = 64

// warmProbes is how many documents of a block are looked up alone, over all queries,
// before the block is decoded and cached, while the cache has room (postingsCache.full is
// not set): a block that queries keep probing is cheaper decoded once and kept, but a
// query that probes a long list in a few places, as first-seen queries do, reads those
// postings alone rather than decoding whole blocks for them.
const warmProbes = directProbes

const noDoc = math.MaxUint32

// moveTo makes the block holding document d current (not decoded yet).
func (c *blockCursor) moveTo(st *snapStats, d, segDocs uint64) {
	c.blk = c.tb.blockOf(d)
	c.cur, c.doc = nil, noDoc
	c.probes = 0
	if c.blk >= len(c.tb.count) {
		c.end, c.bub = noMore, 0
		return
	}
	_, hi := c.tb.span(c.blk)
	c.end = min(hi, segDocs)
	c.bub = c.w * c.ratios[c.blk]
}

// load positions c at its current block's first posting at or after d, decoding the
// block (or taking it from the cache) when it is not loaded yet. An essential list's
// block (lens) has every posting's length read, in one pass (postBlock): each of its
// postings is a candidate to score. A non-essential list's block is decoded without
// them: only the candidates' documents are looked up in it, whose lengths the scorer has.
func (c *blockCursor) load(sc *segScorer, d uint32, lens bool) error {
	if c.cur == nil {
		if c.blk >= len(c.tb.count) || c.tb.count[c.blk] == 0 {
			return nil
		}
		p := sc.cache.block(c.tb, c.blk)
		if p != nil {
			sc.hits++
		} else {
			sc.misses++
			var err error
			if p, err = c.src.decode(c.tb, c.blk, lens); err != nil {
				return err
			}
			sc.cache.decoded.Add(uint64(p.count()))
			p = sc.cache.putBlock(c.tb, c.blk, p)
		}
		c.cur = p
		c.pos = 0
		if lens && !p.lensRead.Load() {
			if err := sc.readLens(c); err != nil {
				c.cur = nil
				return err
			}
		}
		if p.count() > 0 && p.doc(0) < d {
			c.pos = p.search(0, d)
		}
		c.setDoc()
		return nil
	}
	if lens && !c.cur.lensRead.Load() {
		if err := sc.readLens(c); err != nil {
			return err
		}
	}
	if c.doc < d && c.doc != noDoc {
		c.advance(d)
	}
	return nil
}

// lookup gives the term's BM25 contribution for document d, read alone from the current
// block, which is neither decoded nor cached. used is false when the caller must load the
// block instead: the block is cached, was looked up directProbes times already in this
// pass, or, while the cache has never been full (postingsCache.full), warmProbes times
// over all queries, or cannot be read so (damage: decode then reports it).
func (c *blockCursor) lookup(sc *segScorer, st *snapStats, d, dl uint32) (v float64, present, used bool, err error) {
	if c.probes >= directProbes || c.blk >= len(c.tb.count) || c.tb.count[c.blk] == 0 ||
		sc.cache.block(c.tb, c.blk) != nil {
		return 0, false, false, nil
	}
	if !sc.cache.full.Load() {
		if c.tb.probed[c.blk].Load() >= warmProbes {
			return 0, false, false, nil
		}
		c.tb.probed[c.blk].Add(1) // (queries racing here may count a few past warmProbes: a hint)
	}
	c.probes++
	fi, present, err := c.src.lookup(c.tb, c.blk, d, dl)
	if err != nil {
		c.probes = directProbes // (the decode reads the block, or reports the damage)
		return 0, false, false, nil
	}
	sc.lookups++
	if !present {
		return 0, false, true, nil
	}
	f := float64(fi)
	return c.w * f / (f + st.kOf(uint64(dl))), true, true, nil
}

func (c *blockCursor) setDoc() {
	if c.pos < c.cur.count() {
		c.doc = c.cur.doc(c.pos)
	} else {
		c.doc = noDoc
	}
}

// next moves to the block's next posting.
func (c *blockCursor) next() {
	c.pos++
	c.setDoc()
}

// score is the term's BM25 contribution for the current posting, for a document of
// length dl, computed exactly as exhaustive evaluation computes it. A posting whose
// block does not hold its length yet is checked against the block's frontier, and dl
// recorded.
func (c *blockCursor) score(st *snapStats, dl uint32) (float64, error) {
	fi, known := c.cur.at(c.pos)
	if known == 0 {
		if !dominatedOrdered(c.tb.blockFront(c.blk), fi, dl) {
			return 0, errBlockMeta
		}
		c.cur.setLen(c.pos, dl)
	}
	f := float64(fi)
	return c.w * f / (f + st.kOf(uint64(dl))), nil
}

// advance moves to the first posting of the block at or after d (galloping, then binary
// search).
func (c *blockCursor) advance(d uint32) {
	if c.doc >= d {
		return
	}
	c.pos = c.cur.search(c.pos, d)
	c.setDoc()
}

// segScorer is the reusable scratch of MaxScore over one segment.
type segScorer struct {
	cache   *postingsCache
	dict    segment.TermDictionary
	curs    []blockCursor
	cs      []*blockCursor
	prefix  []float64 // prefix[i] = Σ block bounds of cs[:i]
	contrib []float64 // per query term index: the current document's contribution
	present []int     // query term indexes with a contribution for the current document
	lens    *postfile.Reader
	docs    [postings.BlockSize]uint32 // readLens's scratch
	dls     [postings.BlockSize]uint32
	termBuf []byte
	hits    uint64 // block cache hits and misses of the current run
	misses  uint64
	lookups uint64 // postings read alone (blockCursor.lookup) in the current run
}

// run scores segment ss (cursor c, global numbers from off) into top. bound, when not
// nil, is shared with other workers of the same query.
//
// The segment's documents are visited in windows: a window ends where the first of the
// query terms' current blocks ends, so within it every term has one block and one block
// bound. A window whose bounds add up to less than the k-th best score so far is skipped
// without decoding anything; otherwise MaxScore runs within it over the block bounds:
// the longest prefix of the terms ordered by bound whose bounds add up to less than the
// k-th best score is non-essential (its blocks are decoded only for a document that can
// still enter the top k), the others are decoded and give the candidates.
func (sc *segScorer) run(ctx context.Context, cache *postingsCache, ss *scorch.SegmentSnapshot, c *segCursor, st *snapStats, off uint64, terms []termCount, weights []float64, allowBits []uint64, top *topK, bound *sharedBound) error {
	sc.cache, sc.dict, sc.lens = cache, c.dict, c.pf
	sc.hits, sc.misses, sc.lookups = 0, 0, 0
	pin := cache.pin() // the blocks this pass takes from the cache stay valid until unpin
	defer func() {
		for i := range sc.curs {
			sc.curs[i].cur = nil
		}
		cache.unpin(pin)
		sc.dict, sc.lens = nil, nil
		cache.hits.Add(sc.hits)
		cache.misses.Add(sc.misses)
		cache.lookups.Add(sc.lookups)
	}()
	if err := sc.openCursors(cache, ss, c, st, terms, weights); err != nil || len(sc.curs) == 0 {
		return err
	}
	err := sc.score(ctx, ss, st, off, weights, allowBits, top, bound)
	if errors.Is(err, errBlockMeta) {
		for i := range sc.curs {
			cache.dropTerms(ss, sc.curs[i].term)
		}
	}
	return err
}

func (sc *segScorer) score(ctx context.Context, ss *scorch.SegmentSnapshot, st *snapStats, off uint64, weights []float64, allowBits []uint64, top *topK, bound *sharedBound) error {
	cs := sc.cs[:0]
	for i := range sc.curs {
		cs = append(cs, &sc.curs[i])
	}
	sc.cs = cs
	if cap(sc.contrib) < len(weights) {
		sc.contrib = make([]float64, len(weights))
	}
	contrib := sc.contrib[:len(weights)]
	del := ss.Deleted()
	if del != nil && del.IsEmpty() {
		del = nil
	}
	segDocs := ss.Segment().Count()
	maxDoc := uint64(st.maxDoc)
	segDocs = min(segDocs, maxDoc-min(off, maxDoc))
	for _, tc := range cs {
		tc.end = 0 // every cursor moves to its first block
	}

	theta := top.threshold()
	if useFloor && del == nil && allowBits == nil && segDocs == ss.Segment().Count() {
		if f := thresholdFloor(cs, top.k); f > 0 && f > theta {
			sc.cache.floors.Add(1)
			theta = f
			if bound != nil {
				bound.raise(f)
			}
		}
	}
	n := 0
	for ws := uint64(0); ws < segDocs; {
		if err := ctx.Err(); err != nil {
			return err
		}
		if bound != nil {
			theta = max(theta, bound.load())
		}
		if allowBits != nil {
			na := nextSet(allowBits, off+ws)
			if na >= off+segDocs {
				return nil
			}
			ws = na - off
		}
		we := segDocs
		for _, tc := range cs {
			if ws >= tc.end {
				tc.moveTo(st, ws, segDocs)
			}
			we = min(we, tc.end)
		}
		// order by block bound (insertion sort: the order changes little between windows)
		for i := 1; i < len(cs); i++ {
			for j := i; j > 0 && cs[j].bub < cs[j-1].bub; j-- {
				cs[j], cs[j-1] = cs[j-1], cs[j]
			}
		}
		prefix := append(sc.prefix[:0], 0)
		for _, tc := range cs {
			prefix = append(prefix, prefix[len(prefix)-1]+tc.bub)
		}
		sc.prefix = prefix
		if prefix[len(cs)] < theta*pruneSlack {
			ws = we
			continue
		}
		ne := essentialFrom(prefix, theta)
		for _, tc := range cs[ne:] {
			if err := tc.load(sc, uint32(ws), true); err != nil {
				return err
			}
		}
		for {
			n++
			if n&4095 == 4095 {
				if err := ctx.Err(); err != nil {
					return err
				}
				if bound != nil {
					if t := bound.load(); t > theta {
						theta = t
						ne = max(ne, essentialFrom(prefix, theta))
					}
				}
			}
			d := uint32(noDoc)
			for _, tc := range cs[ne:] {
				d = min(d, tc.doc)
			}
			if uint64(d) >= we {
				break
			}
			gd := off + uint64(d)
			if allowBits != nil && allowBits[gd/64]&(1<<(gd%64)) == 0 {
				next := uint32(we) // the documents of a block past the window stay
				if na := nextSet(allowBits, gd+1); na < off+we {
					next = uint32(na - off)
				}
				for _, tc := range cs[ne:] {
					if tc.doc < next {
						tc.advance(next)
					}
				}
				continue
			}
			skip := del != nil && del.Contains(d)
			s := 0.0
			dl := uint32(0) // the document's length: from its postings' blocks
			present := sc.present[:0]
			for _, tc := range cs[ne:] {
				if tc.doc != d {
					continue
				}
				if !skip {
					if dl == 0 {
						if _, dl = tc.cur.at(tc.pos); dl == 0 {
							dl = sc.lens.Length(d) // (too long for its block to hold)
						}
					}
					v, err := tc.score(st, dl)
					if err != nil {
						return err
					}
					contrib[tc.ti] = v
					present = append(present, tc.ti)
					s += v
				}
				tc.next()
			}
			if skip {
				continue
			}
			pruned := false
			for i := ne - 1; i >= 0; i-- {
				if s+prefix[i+1] < theta*pruneSlack {
					pruned = true
					break
				}
				tc := cs[i]
				if tc.cur == nil {
					v, found, used, err := tc.lookup(sc, st, d, dl)
					if err != nil {
						return err
					}
					if used {
						if found {
							contrib[tc.ti] = v
							present = append(present, tc.ti)
							s += v
						}
						continue
					}
				}
				if tc.cur != nil {
					if tc.doc < d {
						tc.advance(d)
					}
				} else if err := tc.load(sc, d, false); err != nil {
					return err
				}
				if tc.doc == d {
					v, err := tc.score(st, dl)
					if err != nil {
						return err
					}
					contrib[tc.ti] = v
					present = append(present, tc.ti)
					s += v
				}
			}
			if !pruned {
				// The score as exhaustive evaluation adds it: in query term order.
				slices.Sort(present)
				score := 0.0
				for _, ti := range present {
					score += contrib[ti]
				}
				if score >= theta {
					top.push(scoredDoc{score: score, doc: gd})
					if t := top.threshold(); t > theta {
						theta = t
						if bound != nil {
							bound.raise(t)
							theta = max(theta, bound.load())
						}
						ne = max(ne, essentialFrom(prefix, theta))
					}
				}
			}
			sc.present = present
		}
		ws = we
	}
	return nil
}

// floorSlack keeps thresholdFloor under the score it stands for: a block's bound (weight
// times ratio) and a posting's score (weight times frequency, over frequency plus the
// length's term) round apart by an ulp or two.
const floorSlack = 1 - 1e-7

// useFloor turns thresholdFloor on (tests compare passes without it).
var useFloor = true

// thresholdFloor returns a score the k-th best document of the whole query reaches at
// least, known before any is scored (0 when none is): for each term, the k-th largest of
// its blocks' bounds in this segment. Each block's bound is the score of one of its
// postings (a frontier's pairs are postings), so k blocks give k distinct documents the
// term alone scores that high, and the other terms only add. Pruning from it at once
// spares a first query the start of a segment where, with theta still low, every list is
// essential and its blocks decoded with their lengths. It holds only where every posting
// of the segment is a live document the query may return: the caller checks that no
// document is deleted, no filter applies and the segment is wholly in the snapshot.
func thresholdFloor(cs []*blockCursor, k int) float64 {
	best := 0.0
	for _, tc := range cs {
		if k > 0 && k <= len(tc.top) {
			best = max(best, tc.w*tc.top[k-1])
		}
	}
	return best * floorSlack
}

// readLens records the length of every posting of c's current block, read in batches
// from the body file's table (a batch's reads miss the caches together rather than one
// after another), each checked against the block's frontier.
func (sc *segScorer) readLens(c *blockCursor) error {
	p, front := c.cur, c.tb.blockFront(c.blk)
	n := p.count()
	for at := 0; at < n; at += len(sc.docs) {
		m := min(n-at, len(sc.docs))
		docs := sc.docs[:m]
		for k := range docs {
			docs[k] = p.doc(at + k)
		}
		sc.lens.Lengths(docs, sc.dls[:])
		for k, dl := range sc.dls[:m] {
			f, known := p.at(at + k)
			if known != 0 {
				continue
			}
			if !dominatedOrdered(front, f, dl) {
				return errBlockMeta
			}
			p.setLen(at+k, dl)
		}
	}
	p.lensRead.Store(true)
	return nil
}

// openCursors sets sc.curs to a cursor over the blocks of each weighted query term present
// in the segment, reading (or computing once) the term's block metadata.
func (sc *segScorer) openCursors(cache *postingsCache, ss *scorch.SegmentSnapshot, c *segCursor, st *snapStats, terms []termCount, weights []float64) error {
	sc.curs = sc.curs[:0]
	for ti, w := range weights {
		tc := &c.terms[ti]
		if w == 0 || tc.n == 0 {
			continue
		}
		tc.src.next = -1 // the term is looked up in the body file again in this query
		if c.pf != nil {
			tc.usePF(c.pf)
		}
		term := terms[ti].term
		tb := cache.terms(ss, term)
		if tb == nil {
			sc.termBuf = append(sc.termBuf[:0], term...)
			var err error
			if tb, err = buildBlocks(&tc.src, sc.termBuf); err != nil {
				if errors.Is(err, errNotScorch) {
					return err
				}
				return fmt.Errorf("%w: postings %q: %v", ErrBM25, term, err)
			}
			tb = cache.addTerms(ss, term, tb)
		}
		br := tb.ratiosFor(st)
		sc.curs = append(sc.curs, blockCursor{tb: tb, src: &tc.src, term: term, w: w, ti: ti, ratios: br.r, top: br.top})
	}
	return nil
}

// nextSet returns the first set bit of bits at or after i (noMore: none).
func nextSet(bits []uint64, i uint64) uint64 {
	w := i / 64
	if w >= uint64(len(bits)) {
		return noMore
	}
	if x := bits[w] >> (i % 64); x != 0 {
		return i + uint64(mathbits.TrailingZeros64(x))
	}
	for w++; w < uint64(len(bits)); w++ {
		if bits[w] != 0 {
			return w*64 + uint64(mathbits.TrailingZeros64(bits[w]))
		}
	}
	return noMore
}

// essentialFrom returns the number of non-essential terms: the longest prefix of the
// bound-ordered terms whose bounds add up to less than theta.
func essentialFrom(prefix []float64, theta float64) int {
	p := 0
	for p+1 < len(prefix) && prefix[p+1] < theta*pruneSlack {
		p++
	}
	return p
}
