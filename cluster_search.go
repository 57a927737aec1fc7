package memory

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/agentmem/memory/hybrid"
	"github.com/agentmem/memory/internal/docfilter"
	"github.com/agentmem/memory/internal/snippet"
	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/internal/vecmath"
	"github.com/agentmem/memory/internal/weaviate"
)

// Search on a cluster. Each retriever runs in Weaviate on its own (BM25: the bm25 operator
// on the text property; dense: nearVector with the query's embedding, computed here), each
// asked for the candidate window, with the Where translated to Weaviate's filter; the
// lists are collapsed to each document's best chunk and fused here by the search's
// FusionFunc (RRF by default) with the same k, weights and window as the embedded store, so
// explanations (Explain) mean the same. Reranking, MinScore, MinRelevance, source dedup and
// snippets run here as in the embedded store.

// search is Collection.Search on a cluster.
func (cs *clusterStore) search(ctx context.Context, m *Memory, col, query string, opts []SearchOption) ([]Result, error) {
	start := time.Now()
	var so SearchOptions
	for _, fn := range opts {
		fn(&so)
	}
	switch {
	case so.Cascade != nil: // each step a search of one collection (cluster_collections.go)
		return searcher{m}.searchCascade(ctx, query, so, opts)
	}
	if err := so.normalise(); err != nil {
		return nil, err
	}
	if _, err := docfilter.CompileDocument(so.WhereDocument); err != nil {
		return nil, err
	}
	sr := searcher{m}
	if err := sr.useQueryVector(&so, query); err != nil {
		return nil, err
	}
	if strings.TrimSpace(query) == "" && so.QueryVector == nil {
		return nil, fmt.Errorf("%w: empty query", ErrInvalidOption)
	}
	if m.closed.Load() {
		return nil, ErrClosed
	}
	if so.Rerank && m.opts.Reranker == nil {
		return nil, ErrNoReranker
	}
	if so.CollapseThreshold > 0 && m.opts.Embedder == nil {
		return nil, fmt.Errorf("%w: collapse compares the results' dense vectors", ErrNoEmbedder)
	}
	st := so.stats
	if st == nil {
		st = &SearchStats{}
	}
	var res []Result
	var err error
	if len(so.Collections) > 0 { // fused as the embedded store fuses them (cluster_collections.go)
		res, err = searcher{m}.searchMany(ctx, query, so, st)
	} else {
		res, err = cs.searchOne(ctx, m, col, query, so, st)
	}
	st.Total = time.Since(start)
	if so.statsFunc != nil {
		so.statsFunc(*st)
	}
	return res, err
}

func (cs *clusterStore) searchOne(ctx context.Context, m *Memory, col, query string, so SearchOptions, st *SearchStats) ([]Result, error) {
	sr := searcher{m}
	if err := validCollectionName(col); err != nil {
		return nil, err
	}
	mode, notes, err := sr.searchMode(&so)
	if err != nil {
		return nil, err
	}
	st.Mode = mode
	qv, err := sr.queryVector(ctx, query, mode, &so, st)
	if err != nil {
		return nil, err
	}
	cc, err := cs.existing(ctx, col)
	if err != nil || cc == nil {
		return nil, err
	}
	tf := time.Now()
	wf, err := cs.filter(ctx, cc, so.Where)
	st.Filter = time.Since(tf)
	if err != nil {
		return nil, err
	}
	st.Allowed = -1
	if wf.none {
		return []Result{}, nil
	}
	ds, err := cs.documentScope(ctx, cc, wf, so.WhereDocument) // where_document (cluster_wheredoc.go)
	st.Filter = time.Since(tf)
	if err != nil {
		return nil, err
	}
	if ds != nil {
		st.Allowed = len(ds.allowed)
		if len(ds.allowed) == 0 {
			return []Result{}, nil
		}
		wf = ds.narrow(wf)
	}
	best := map[string]map[string]string{}
	var rs []hybrid.Retriever[struct{}]
	for _, r := range retrievers {
		if !r.runs(mode) || (r.embeds && so.noEmbed) {
			continue
		}
		w := r.fusionWeight(so.Weights)
		if w == 0 {
			continue
		}
		r := r
		b := map[string]string{}
		best[r.name] = b
		rs = append(rs, hybrid.Retriever[struct{}]{Name: r.name, Weight: w, Search: func(ctx context.Context, _ struct{}, k int) ([]hybrid.Hit, error) {
			t := time.Now()
			defer func() { *r.elapsed(st) += time.Since(t) }()
			return searchUnits(k, math.MaxInt32, so.AllChunks, b, ds.recall(func(k int) ([]hybrid.Hit, error) {
				return cs.recall(ctx, cc, r.name, query, qv, wf, k)
			}))
		}})
	}
	lists, err := retrieveAll(ctx, so.retrieverWindow(mode), rs)
	if err != nil {
		return nil, cs.classErr(err)
	}
	tf = time.Now()
	fused := so.Fusion(lists, hybrid.FusionOptions{K: so.RRFK, Window: so.retrieverWindow(mode)})
	st.Candidates = len(fused)
	fused = fused[:min(len(fused), so.keep())]
	cands, err := cs.candidates(ctx, m, cc, col, fused, best, lists, qv, mode, notes, so)
	st.Fuse = time.Since(tf)
	if err != nil {
		return nil, err
	}
	cands = ds.keep(cands)
	if so.Rerank && len(cands) > 0 {
		t := time.Now()
		if err := sr.rerank(ctx, query, cands, so.RerankTop); err != nil {
			return nil, err
		}
		st.Rerank = time.Since(t)
	}
	if so.CollapseThreshold > 0 {
		if cands, err = sr.collapse(ctx, cands, so.CollapseThreshold); err != nil {
			return nil, err
		}
	}
	if so.SourceDedup {
		cands = dedupeSources(cands, func(c candidate) string { return c.res.Source })
	}
	out := topResults(cands, so.TopK, so.MinScore, so.MinRelevance)
	switch {
	case so.NoText:
		for i := range out {
			out[i].Title, out[i].Text = "", ""
		}
	case so.Snippets:
		mk := snippet.New(query, m.collectionAnalyzer(col))
		for i := range out {
			out[i].Snippet = mk.Of(out[i].Text)
		}
	}
	return out, nil
}

// retrieveAll is hybrid.Retrieve with the retrievers run at once (each is a round trip to
// the cluster); the lists come in the retrievers' order, and the first error in that
// order is returned.
func retrieveAll(ctx context.Context, k int, rs []hybrid.Retriever[struct{}]) ([]hybrid.List, error) {
	lists := make([]hybrid.List, len(rs))
	errs := make([]error, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hits, err := r.Search(ctx, struct{}{}, k)
			lists[i], errs[i] = hybrid.List{Name: r.Name, Weight: r.Weight, Hits: hits}, err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return lists, nil
}

// recall runs retriever name in Weaviate for its k best units.
func (cs *clusterStore) recall(ctx context.Context, cc *clusterClass, name, query string, qv []float32, wf clusterFilter, k int) ([]hybrid.Hit, error) {
	// No consistency level: Weaviate ranks on one replica of each shard whatever the level,
	// and at QUORUM or ALL it would then compare every hit (hundreds) with the other
	// replicas. The records of the results are read at the store's level (heads).
	q := weaviate.Query{Class: cc.name, Limit: k, Fields: []string{propChunk}}
	if !wf.all {
		q.Where = wf.f
	}
	var hits []weaviate.Hit
	var err error
	switch name {
	case "bm25":
		q.Text, q.Properties = query, []string{weaviate.PropText}
		hits, err = cs.wc.BM25(ctx, q)
	case "dense":
		q.Vector = qv
		hits, err = cs.wc.NearVector(ctx, q)
	default:
		return nil, unsupported("the retriever " + name)
	}
	if err != nil {
		return nil, err
	}
	out := make([]hybrid.Hit, 0, len(hits))
	for _, h := range hits {
		c, _ := h.Props[propChunk].(float64)
		uid := h.ID
		if c >= 0 {
			uid = store.UnitID(h.ID, int(c))
		}
		out = append(out, hybrid.Hit{ID: uid, Score: h.Score})
	}
	return out, nil
}

// candidates turns fused results into candidates with their records (read from the
// documents' first objects), as the embedded store's candidates does: a result whose
// document is gone, or whose record the Where no longer matches, is left out.
func (cs *clusterStore) candidates(ctx context.Context, m *Memory, cc *clusterClass, col string, fused []hybrid.Fused,
	best map[string]map[string]string, lists []hybrid.List, qv []float32, mode Mode, notes []string, so SearchOptions) ([]candidate, error) {
	uids := make([]string, len(fused))
	parents := make([]string, 0, len(fused))
	seen := map[string]bool{}
	for i, f := range fused {
		uids[i] = f.ID
		if !so.AllChunks {
			uids[i] = bestUnit(f, best)
		}
		p, _ := store.SplitUnit(uids[i])
		if !seen[p] {
			seen[p] = true
			parents = append(parents, p)
		}
	}
	recs, err := cs.heads(ctx, cc, parents, nil)
	if err != nil {
		return nil, err
	}
	var where func(*store.Record) bool
	if len(so.Where) > 0 {
		c, err := docfilter.CompilePred(so.Where)
		if err != nil {
			return nil, err
		}
		where = c
	}
	rel := m.newRelevanceScorer(nil, col, nil, lists)
	vecs, err := cs.missedVectors(ctx, cc, fused, uids, rel, qv)
	if err != nil {
		return nil, err
	}
	cands := make([]candidate, 0, len(fused))
	for i, f := range fused {
		uid := uids[i]
		parent, ci := store.SplitUnit(uid)
		r := recs[parent]
		if r == nil || !r.HasUnit(ci) || (where != nil && !where(r)) {
			continue
		}
		ex, score := explain(f, mode, notes)
		relevance, err := rel.score(f, uid, &ex)
		if err != nil {
			return nil, err
		}
		if vecs != nil {
			relevance = rescoreMissed(f, &ex, rel, qv, vecs[uid])
		}
		res := chunkResult(col, parent, uid, r, ci, score, ex)
		res.Relevance = relevance
		cands = append(cands, candidate{id: uid, rec: r, res: res})
	}
	return cands, nil
}

// missedVectors reads, when dense recall ran with query vector qv, the stored vectors of
// the units it did not return (nil when there are none), by unit id: as the embedded
// store, such a result's dense share of Relevance is its stored vector's cosine.
func (cs *clusterStore) missedVectors(ctx context.Context, cc *clusterClass, fused []hybrid.Fused, uids []string,
	rel *relevanceScorer, qv []float32) (map[string][]float32, error) {
	if _, ran := rel.best["dense"]; !ran || qv == nil {
		return nil, nil
	}
	var parents []string
	seen := map[string]bool{}
	for i, f := range fused {
		for _, c := range f.Contributions {
			if c.List == "dense" && c.Rank == 0 {
				if p, _ := store.SplitUnit(uids[i]); !seen[p] {
					seen[p] = true
					parents = append(parents, p)
				}
			}
		}
	}
	if len(parents) == 0 {
		return nil, nil
	}
	out := map[string][]float32{}
	err := cs.unitVectors(ctx, cc, parents, 10000, func(uid string, v []float32) { out[uid] = v })
	return out, err
}

// unitVectors reads, at the store's consistency level, the stored vector of every unit
// (the document, or each of its chunks) of the documents ids of cc, clusterBatch documents
// a request of at most limit results, and gives each to put by unit id.
func (cs *clusterStore) unitVectors(ctx context.Context, cc *clusterClass, ids []string, limit int, put func(uid string, v []float32)) error {
	for len(ids) > 0 {
		part := ids[:min(len(ids), clusterBatch)]
		ids = ids[len(part):]
		hits, err := cs.wc.Fetch(ctx, weaviate.Query{Class: cc.name, Consistency: cs.level, Limit: limit,
			Where: weaviate.Where(weaviate.PropID, weaviate.ContainsAny, part), Fields: []string{propChunk}, WithVector: true})
		if err != nil {
			return cs.classErr(err)
		}
		for _, h := range hits {
			uid := h.ID
			if c, _ := h.Props[propChunk].(float64); c >= 0 {
				uid = store.UnitID(h.ID, int(c))
			}
			put(uid, h.Vector)
		}
	}
	return nil
}

// rescoreMissed is relevanceScorer.score for a result of a search whose dense recall did
// not return it, given its unit's stored vector (nil: none): the dense share is the
// vector's cosine with the query, which ex.Cosine shows. (The embedded store reads the
// vector from its store of record; the weights, norms and mean are the same.)
func rescoreMissed(f hybrid.Fused, ex *Explanation, rel *relevanceScorer, qv, vec []float32) float64 {
	var mean weightedMean
	for _, c := range f.Contributions {
		best, ran := rel.best[c.List]
		if !ran {
			continue
		}
		w := c.Weight
		if w == 0 {
			w = 1
		}
		r := retrieverNamed(c.List)
		norm := 0.0
		switch {
		case c.Rank > 0 && r != nil:
			norm = r.normOf(c.Score, best)
		case c.List == "dense" && r != nil && len(vec) == len(qv) && len(vec) > 0:
			cos := vecmath.Cosine(qv, vec)
			norm = r.normOf(cos, best)
			ex.Cosine = &cos
		}
		mean.add(w, norm)
	}
	return mean.value()
}

// searchBatch is SearchBatch on a cluster: the searches one after another, each with its
// own vector of WithQueryVectors (checked first, as the embedded store checks them).
func (cs *clusterStore) searchBatch(ctx context.Context, m *Memory, col string, queries []string, opts []SearchOption) ([][]Result, error) {
	if len(queries) > maxBatchQueries {
		return nil, fmt.Errorf("%w: %d queries in one batch, the cap is %d", ErrQueryTooLarge, len(queries), maxBatchQueries)
	}
	var so SearchOptions
	for _, fn := range opts {
		fn(&so)
	}
	if err := m.Collection(col).checkBatchVectors(queries, so); err != nil {
		return nil, err
	}
	out := make([][]Result, len(queries))
	for i, q := range queries {
		qopts := opts
		if vs := so.QueryVectors; vs != nil { // this query's vector alone
			qopts = append(opts[:len(opts):len(opts)], func(s *SearchOptions) { s.QueryVectors, s.QueryVector = nil, vs[i] })
		}
		res, err := cs.search(ctx, m, col, q, qopts)
		if err != nil {
			return nil, fmt.Errorf("query %d: %w", i, err)
		}
		out[i] = res
	}
	return out, nil
}
