package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/agentmem/memory/hybrid"
	"github.com/agentmem/memory/vectorstore"
)

// ErrNoReranker: a search asked to rerank and the store has no reranker.
var ErrNoReranker = errors.New("memory: no reranker configured")

// SearchStats receives the timings of one search (see WithStats).
type SearchStats struct {
	Mode       Mode          // the mode actually used
	Filter     time.Duration // evaluating Where / WhereDocument
	BM25       time.Duration
	Embed      time.Duration // embedding the query
	Dense      time.Duration
	Fuse       time.Duration
	Rerank     time.Duration
	Total      time.Duration
	Candidates int // distinct candidates after fusion
	Allowed    int // documents the filter accepted (-1: no filter)
}

// WithStats makes the search fill st with its per-stage timings.
func WithStats(st *SearchStats) SearchOption {
	return func(s *SearchOptions) { s.stats = st }
}

func (so *SearchOptions) normalise() error {
	if so.Mode == "" {
		so.Mode = Hybrid
	}
	switch so.Mode {
	case Hybrid, BM25, Dense:
	default:
		return fmt.Errorf("%w: mode %q (want hybrid, bm25 or dense)", ErrInvalidOption, so.Mode)
	}
	if so.Fusion == "" {
		so.Fusion = RRF
	}
	if so.Fusion != RRF && so.Fusion != WeightedScore {
		return fmt.Errorf("%w: fusion %q (want rrf or weighted)", ErrInvalidOption, so.Fusion)
	}
	if so.TopK < 0 || so.Window < 0 || so.RerankTop < 0 {
		return fmt.Errorf("%w: negative TopK %d, Window %d or RerankTop %d", ErrInvalidOption, so.TopK, so.Window, so.RerankTop)
	}
	if so.TopK == 0 {
		so.TopK = 10
	}
	so.windowSet = so.Window > 0
	if so.Window == 0 {
		so.Window = max(100, so.TopK)
	}
	if so.Window < so.TopK {
		so.Window = so.TopK
	}
	if so.RRFK < 0 || math.IsNaN(so.RRFK) {
		return fmt.Errorf("%w: RRF k %v", ErrInvalidOption, so.RRFK)
	}
	if so.RRFK == 0 {
		so.RRFK = hybrid.DefaultRRFK
	}
	if so.BM25Weight < 0 || so.DenseWeight < 0 {
		return fmt.Errorf("%w: negative weight (bm25 %v, dense %v)", ErrInvalidOption, so.BM25Weight, so.DenseWeight)
	}
	if so.BM25Weight == 0 {
		so.BM25Weight = 1
	}
	if so.DenseWeight == 0 {
		so.DenseWeight = 1
	}
	if so.RerankTop == 0 {
		so.RerankTop = max(so.TopK, 50)
	}
	if so.CollapseThreshold < 0 || so.CollapseThreshold > 1 {
		return fmt.Errorf("%w: collapse threshold %v (want 0..1)", ErrInvalidOption, so.CollapseThreshold)
	}
	for name, w := range so.Collections {
		if err := validCollectionName(name); err != nil {
			return err
		}
		if w < 0 || math.IsNaN(w) {
			return fmt.Errorf("%w: collection %q weight %v", ErrInvalidOption, name, w)
		}
	}
	return nil
}

// Search finds the documents of the collection that best match query. By default it fuses
// BM25 and dense recall with RRF (k 60) over the top 100 of each and returns the top 10; see
// the SearchOption functions. Filters restrict the candidates before ranking. Each result
// carries its explanation.
func (c *Collection) Search(ctx context.Context, query string, opts ...SearchOption) ([]Result, error) {
	start := time.Now()
	var so SearchOptions
	for _, fn := range opts {
		fn(&so)
	}
	if err := so.normalise(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(query) == "" {
		return nil, fmt.Errorf("%w: empty query", ErrInvalidOption)
	}
	if c.m.closed.Load() {
		return nil, ErrClosed
	}
	if so.Rerank && c.m.opts.Reranker == nil {
		return nil, ErrNoReranker
	}
	st := so.stats
	if st == nil {
		st = &SearchStats{}
	}
	var (
		res []Result
		err error
	)
	if len(so.Collections) > 0 {
		res, err = c.m.searchMany(ctx, query, so, st)
	} else {
		res, err = c.m.searchOne(ctx, c.name, query, so, st)
	}
	st.Total = time.Since(start)
	return res, err
}

// retrieve runs the retrievers and fusion of one collection and returns the candidates with
// their records. It holds the collection's read lock, and one read transaction of the store
// of record serves the filter and the results' records: a result always matches the filter.
// The transaction begins under the lock (a writer commits before it takes the lock).
func (m *Memory) retrieve(ctx context.Context, s *colState, col, query string, qv []float32, mode Mode, notes []string,
	where, whereDoc docPred, so SearchOptions, st *SearchStats) ([]candidate, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.bm25 == nil { // deleted since it was looked up
		return nil, fmt.Errorf("%w: %q", ErrCollectionNotFound, col)
	}
	tx, err := m.db.Begin(false)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	// Filter: one evaluation serves every retriever, before ranking. The filters see
	// documents (read from the store of record); the indexes hold their chunks.
	t := time.Now()
	var allow []string
	var allowSet map[string]bool
	st.Allowed = -1
	if where != nil || whereDoc != nil {
		allow = make([]string, 0)
		allowSet = map[string]bool{}
		docs := 0
		decode := decodeRecord
		if whereDoc == nil {
			decode = decodeMeta // a Where reads metadata only
		}
		if err := eachRecord(docsBucket(tx, col), decode, func(id string, r *record) {
			if (where == nil || where(r)) && (whereDoc == nil || whereDoc(r)) {
				for _, u := range r.unitIDs(id) {
					allow = append(allow, u)
					allowSet[u] = true
				}
				docs++
			}
		}); err != nil {
			return nil, err
		}
		sort.Strings(allow)
		st.Allowed = docs
	}
	units := s.units
	if allow != nil {
		units = len(allow)
	}
	bestBM25, bestDense := map[string]string{}, map[string]string{}
	st.Filter = time.Since(t)

	// A single retriever without rerank or collapse needs no fusion window: asking for
	// exactly k is cheaper (BM25's top-k collection is a large share of its cost).
	window := so.retrieverWindow(mode)
	var lists []hybrid.List
	if mode != Dense {
		t := time.Now()
		hits, err := searchUnits(window, units, so.AllChunks, bestBM25, func(k int) ([]hybrid.Hit, error) {
			return s.bm25.Search(ctx, query, k, allow)
		})
		st.BM25 = time.Since(t)
		if err != nil {
			return nil, bm25Error(err)
		}
		lists = append(lists, hybrid.List{Name: "bm25", Weight: so.BM25Weight, Hits: hits})
	}
	if mode != BM25 {
		t := time.Now()
		var f vectorstore.Filter
		if allowSet != nil {
			f = func(id string) bool { return allowSet[id] }
		}
		hits, err := searchUnits(window, units, so.AllChunks, bestDense, func(k int) ([]hybrid.Hit, error) {
			if d := so.dense; d != nil && f == nil && k <= d.k { // answered with its batch
				return denseHits(d.hits[:min(k, len(d.hits))]), nil
			}
			vh, err := s.vec.Search(ctx, qv, k, f)
			hits := make([]hybrid.Hit, len(vh))
			for i, h := range vh {
				hits[i] = hybrid.Hit{ID: h.ID, Score: float64(h.Score)}
			}
			return hits, err
		})
		st.Dense = time.Since(t)
		if err != nil {
			return nil, err
		}
		lists = append(lists, hybrid.List{Name: "dense", Weight: so.DenseWeight, Hits: hits})
	}

	t = time.Now()
	fopt := hybrid.FusionOptions{K: so.RRFK, Window: window}
	var fused []hybrid.Fused
	if so.Fusion == WeightedScore {
		fused = hybrid.WeightedScore(lists, fopt)
	} else {
		fused = hybrid.RRF(lists, fopt)
	}
	st.Candidates = len(fused)
	// Keep what later stages can use: the rerank window or the top k.
	keep := so.TopK
	if so.Rerank {
		keep = max(keep, so.RerankTop)
	}
	if so.CollapseThreshold > 0 {
		keep = min(len(fused), keep*2+10) // room for dropped near-duplicates
	}
	if len(fused) > keep {
		fused = fused[:keep]
	}
	// The results' records, from the transaction the filter saw. A document deleted or
	// shortened since the index answered is left out.
	uids := make([]string, len(fused))
	recs := make([]*record, len(fused))
	var byParent map[string]*record
	if err := func() error {
		db := docsBucket(tx, col)
		for i, f := range fused {
			uid := f.ID
			if !so.AllChunks {
				uid = bestUnit(f, bestBM25, bestDense)
			}
			uids[i] = uid
			parent, ci := splitUnit(uid)
			if ci >= 0 { // chunks of one document share its record
				if byParent == nil {
					byParent = map[string]*record{}
				}
				if r, ok := byParent[parent]; ok {
					recs[i] = r
					continue
				}
			}
			r, err := getRecord(db, parent)
			if err != nil {
				return err
			}
			recs[i] = r
			if ci >= 0 {
				byParent[parent] = r
			}
		}
		return nil
	}(); err != nil {
		return nil, err
	}
	cands := make([]candidate, 0, len(fused))
	for i, f := range fused {
		uid, r := uids[i], recs[i]
		parent, ci := splitUnit(uid)
		if r == nil || !r.hasUnit(ci) {
			continue
		}
		ex := Explanation{Mode: mode, Fused: f.Score, Notes: notes}
		var raw float64
		for _, c := range f.Contributions {
			if c.Rank == 0 {
				continue
			}
			ss := &StageScore{Rank: c.Rank, Score: c.Score}
			switch c.List {
			case "bm25":
				ex.BM25 = ss
			case "dense":
				ex.Dense = ss
			}
			raw = c.Score
		}
		score := f.Score
		if mode != Hybrid {
			score = raw // one retriever: its own score is the most useful
		}
		cands = append(cands, candidate{id: uid, rec: r, res: chunkResult(col, parent, uid, r, ci, score, ex)})
	}
	st.Fuse = time.Since(t)
	return cands, nil
}

// candidate is a fused result before it becomes a Result.
type candidate struct {
	id  string // index id of the chunk
	rec *record
	res Result
}

func (m *Memory) searchOne(ctx context.Context, col, query string, so SearchOptions, st *SearchStats) ([]Result, error) {
	where, err := compileWhere(so.Where)
	if err != nil {
		return nil, err
	}
	whereDoc, err := compileWhereDocument(so.WhereDocument)
	if err != nil {
		return nil, err
	}
	mode := so.Mode
	var notes []string
	if m.opts.Embedder == nil && m.man.Embedder != nil && mode != BM25 {
		return nil, m.embedderNeeded(string(mode) + " search")
	}
	if m.opts.Embedder == nil {
		switch mode {
		case Dense:
			return nil, fmt.Errorf("%w: dense search needs one", ErrNoEmbedder)
		case Hybrid:
			mode = BM25
			notes = append(notes, "hybrid search degraded to bm25: no embedder configured")
		}
	}
	st.Mode = mode

	// Embed the query before taking any lock.
	var qv []float32
	if mode != BM25 && so.dense != nil {
		qv = so.dense.vec // embedded with the rest of its batch
	} else if mode != BM25 {
		t := time.Now()
		qv, err = m.embedQuery(ctx, query)
		st.Embed = time.Since(t)
		if err != nil {
			return nil, err
		}
	}

	s, err := m.Collection(col).state(false)
	if err != nil {
		return nil, err
	}
	if s == nil {
		if col != DefaultCollection {
			return nil, fmt.Errorf("%w: %q", ErrCollectionNotFound, col)
		}
		return nil, nil
	}
	cands, err := m.retrieve(ctx, s, col, query, qv, mode, notes, where, whereDoc, so, st)
	if err != nil {
		return nil, err
	}

	if so.Rerank && len(cands) > 0 {
		t := time.Now()
		if err := m.rerank(ctx, query, cands, so.RerankTop); err != nil {
			return nil, err
		}
		st.Rerank = time.Since(t)
	}
	if so.CollapseThreshold > 0 {
		if cands, err = m.collapse(col, cands, so.CollapseThreshold); err != nil {
			return nil, err
		}
	}
	out := make([]Result, 0, min(len(cands), so.TopK))
	for _, c := range cands {
		if len(out) == so.TopK {
			break
		}
		if so.MinScore != 0 && c.res.Score < so.MinScore {
			continue
		}
		out = append(out, c.res)
	}
	if so.Snippets {
		addSnippets(query, out)
	}
	return out, nil
}

func (m *Memory) embedQuery(ctx context.Context, q string) ([]float32, error) {
	e := m.opts.Embedder
	if qe, ok := e.(vectorstore.QueryEmbedder); ok {
		v, err := qe.EmbedQuery(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("memory: embed query: %w", err)
		}
		return v, checkVec(v, e.Dim())
	}
	vs, err := m.embed(ctx, []string{q})
	if err != nil {
		return nil, err
	}
	return vs[0], nil
}

// rerank scores the first top candidates with the cross-encoder and sorts them by logit;
// the others keep their fused order after them.
func (m *Memory) rerank(ctx context.Context, query string, cands []candidate, top int) error {
	n := min(top, len(cands))
	passages := make([]string, n)
	for i := 0; i < n; i++ {
		passages[i] = embedText(cands[i].rec.Title, cands[i].res.Text)
	}
	logits, err := m.opts.Reranker.Score(ctx, query, passages)
	if err != nil {
		return fmt.Errorf("memory: rerank: %w", err)
	}
	if len(logits) != n {
		return fmt.Errorf("memory: rerank: %d scores for %d passages", len(logits), n)
	}
	head := cands[:n]
	for i := range head {
		l := float64(logits[i])
		head[i].res.Explain.Rerank = &RerankScore{Logit: l, Prob: sigmoid(l)}
		head[i].res.Score = sigmoid(l)
	}
	sort.SliceStable(head, func(i, j int) bool {
		return head[i].res.Explain.Rerank.Logit > head[j].res.Explain.Rerank.Logit
	})
	for i := range head {
		head[i].res.Explain.Rerank.Rank = i + 1
	}
	return nil
}

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// collapse drops a candidate whose stored vector has cosine >= threshold with a better one.
func (m *Memory) collapse(col string, cands []candidate, threshold float64) ([]candidate, error) {
	if m.opts.Embedder == nil {
		return cands, nil
	}
	var kept []candidate
	var keptVecs [][]float32
	for _, c := range cands {
		col := c.res.Collection
		v, err := m.vector(col, c.id)
		if err != nil {
			return nil, err
		}
		dup := false
		for _, kv := range keptVecs {
			if v != nil && kv != nil && cosine(v, kv) >= threshold {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		kept = append(kept, c)
		keptVecs = append(keptVecs, v)
	}
	return kept, nil
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// searchMany searches several collections and fuses their result lists with weighted RRF,
// so a collection with a higher weight ranks its results higher.
func (m *Memory) searchMany(ctx context.Context, query string, so SearchOptions, st *SearchStats) ([]Result, error) {
	names := make([]string, 0, len(so.Collections))
	for n := range so.Collections {
		names = append(names, n)
	}
	sort.Strings(names)
	sub := so
	sub.Collections = nil
	sub.TopK = max(so.TopK, min(so.Window, 100))
	byKey := map[string]Result{}
	var lists []hybrid.List
	for _, n := range names {
		var one SearchStats
		res, err := m.searchOne(ctx, n, query, sub, &one)
		if err != nil {
			return nil, fmt.Errorf("collection %q: %w", n, err)
		}
		st.Mode = one.Mode
		st.BM25 += one.BM25
		st.Dense += one.Dense
		st.Embed += one.Embed
		st.Rerank += one.Rerank
		st.Fuse += one.Fuse
		st.Filter += one.Filter
		w := so.Collections[n]
		if w == 0 {
			w = 1
		}
		hits := make([]hybrid.Hit, len(res))
		for i, r := range res {
			key := n + "\x00" + r.unit
			r.Explain.CollectionWeight = w
			byKey[key] = r
			hits[i] = hybrid.Hit{ID: key, Score: r.Score}
		}
		lists = append(lists, hybrid.List{Name: n, Weight: w, Hits: hits})
	}
	fused := hybrid.RRF(lists, hybrid.FusionOptions{K: so.RRFK})
	st.Candidates = len(fused)
	seenID := map[string]bool{}
	var cands []candidate
	for _, f := range fused {
		r := byKey[f.ID]
		if so.CollapseThreshold > 0 && seenID[r.ID] {
			continue // the same id from a lower-ranked collection
		}
		seenID[r.ID] = true
		r.Score = f.Score
		cands = append(cands, candidate{id: r.unit, res: r})
	}
	if so.CollapseThreshold > 0 {
		var err error
		if cands, err = m.collapse("", cands, so.CollapseThreshold); err != nil {
			return nil, err
		}
	}
	out := make([]Result, 0, so.TopK)
	for _, c := range cands {
		if len(out) == so.TopK {
			break
		}
		if so.MinScore != 0 && c.res.Score < so.MinScore {
			continue
		}
		out = append(out, c.res)
	}
	return out, nil
}
