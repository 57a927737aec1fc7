package memory

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem/memory/hybrid"
	"github.com/agentmem/memory/internal/bm25"
	"github.com/agentmem/memory/internal/docfilter"
	"github.com/agentmem/memory/internal/snippet"
	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/internal/vecmath"
	"github.com/agentmem/memory/rerank"
	"github.com/agentmem/memory/vectorstore"
)

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

// normalise checks the options and fills in the defaults.
func (so *SearchOptions) normalise() error {
	if so.Mode == "" {
		so.Mode = Hybrid
	}
	if !validMode(so.Mode) {
		return fmt.Errorf("%w: mode %s (want hybrid, bm25 or dense)", ErrInvalidOption, store.ShowKey(so.Mode))
	}
	if so.Fusion == nil {
		so.Fusion = hybrid.RRF
	}
	if err := so.normaliseSizes(); err != nil {
		return err
	}
	if err := so.normaliseScores(); err != nil {
		return err
	}
	if err := so.applyWeights(); err != nil {
		return err
	}
	for name, w := range so.Collections {
		if err := validCollectionName(name); err != nil {
			return err
		}
		if err := checkWeight("collection "+strconv.Quote(name), w); err != nil {
			return err
		}
	}
	if len(so.Collections) > 0 && len(so.collectionNames()) == 0 {
		return fmt.Errorf("%w: every collection has weight 0", ErrInvalidOption)
	}
	return nil
}

// normaliseSizes checks TopK, Window and RerankTop and fills in their defaults.
func (so *SearchOptions) normaliseSizes() error {
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
	if so.RerankTop == 0 {
		so.RerankTop = max(so.TopK, 50)
	}
	return nil
}

// normaliseScores checks the RRF constant, MinScore, MinRelevance and the collapse
// threshold.
func (so *SearchOptions) normaliseScores() error {
	if so.RRFK < 0 || math.IsNaN(so.RRFK) || math.IsInf(so.RRFK, 0) {
		return fmt.Errorf("%w: RRF k %v", ErrInvalidOption, so.RRFK)
	}
	if so.RRFK == 0 {
		so.RRFK = hybrid.DefaultRRFK
	}
	if math.IsNaN(so.MinScore) {
		return fmt.Errorf("%w: MinScore NaN", ErrInvalidOption)
	}
	if math.IsNaN(so.MinRelevance) {
		return fmt.Errorf("%w: MinRelevance NaN", ErrInvalidOption)
	}
	if !(so.CollapseThreshold >= 0 && so.CollapseThreshold <= 1) {
		return fmt.Errorf("%w: collapse threshold %v (want 0..1)", ErrInvalidOption, so.CollapseThreshold)
	}
	return nil
}

// checkWeight refuses a negative, NaN or infinite weight, naming it.
func checkWeight(name string, w float64) error {
	if w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
		return fmt.Errorf("%w: %s weight %v (want a finite number >= 0)", ErrInvalidOption, name, w)
	}
	return nil
}

// collectionNames are the collections of a multi-collection search with a weight above 0,
// sorted.
func (so *SearchOptions) collectionNames() []string {
	names := make([]string, 0, len(so.Collections))
	for n, w := range so.Collections {
		if w > 0 {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// Search finds the documents of the collection that best match query. By default it fuses
// BM25 and dense recall with RRF (k 60) over the top 100 of each and returns the top 10; see
// the SearchOption functions. Filters restrict the candidates before ranking. Each result
// carries its explanation. With WithQueryVector dense recall searches the caller's vector
// instead of an embedding of query, which may then be empty.
func (c *Collection) Search(ctx context.Context, query string, opts ...SearchOption) ([]Result, error) {
	if c.m.cluster != nil {
		return c.m.cluster.search(ctx, c.m, c.name, query, opts)
	}
	start := time.Now()
	var so SearchOptions
	for _, fn := range opts {
		fn(&so)
	}
	if so.Cascade != nil { // each step a search of its own (through the writer for a reader)
		return searcher{c.m}.searchCascade(ctx, query, so, opts)
	}
	if c.m.remote != nil {
		if so.QueryVector != nil || so.QueryVectors != nil {
			return nil, errRemoteVector
		}
		return c.remoteSearch(ctx, query, opts)
	}
	if err := so.normalise(); err != nil {
		return nil, err
	}
	if err := (searcher{c.m}).useQueryVector(&so, query); err != nil {
		return nil, err
	}
	if strings.TrimSpace(query) == "" && so.QueryVector == nil {
		return nil, fmt.Errorf("%w: empty query", ErrInvalidOption)
	}
	if c.m.closed.Load() {
		return nil, ErrClosed
	}
	if so.Rerank && c.m.opts.Reranker == nil {
		return nil, ErrNoReranker
	}
	if so.CollapseThreshold > 0 && c.m.opts.Embedder == nil {
		return nil, fmt.Errorf("%w: collapse compares the results' dense vectors", ErrNoEmbedder)
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
		res, err = searcher{c.m}.searchMany(ctx, query, so, st)
	} else {
		err = c.m.dx.retryRepaired(c.name, func() error {
			return store.Guard("search", func() (err error) {
				res, err = searcher{c.m}.searchOne(ctx, c.name, query, so, st)
				return err
			})
		})
	}
	st.Total = time.Since(start)
	if so.statsFunc != nil {
		so.statsFunc(*st)
	}
	return res, err
}

// retrieve runs the retrievers and fusion of one collection and returns the candidates with
// their records. It holds the collection's read lock, and one read transaction of the store
// of record serves the filter and the results' records: a result always matches the filter.
// The transaction begins under the lock (a writer commits before it takes the lock).
func (sr searcher) retrieve(ctx context.Context, s *colState, col, query string, qv []float32, mode Mode, notes []string,
	where docfilter.Compiled, whereDoc docfilter.Pred, so SearchOptions, st *SearchStats) ([]candidate, error) {
	m := sr.m
	// ErrCollectionNotFound when deleted since it was looked up
	unlock, err := m.reg.rlockOpenOf(s, searchKinds(mode, so, where.Pred != nil || whereDoc != nil))
	if err != nil {
		return nil, err
	}
	defer unlock()
	if so.QueryVector != nil && qv != nil && s.vec == nil {
		return nil, sr.noDenseIndex() // the caller's vector, and no index to search it in
	}
	tx, err := m.db.Begin()
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	t := time.Now()
	sc, err := sr.filterScope(ctx, tx, s, col, mode, where, whereDoc, st)
	if err != nil {
		return nil, err
	}
	st.Filter = time.Since(t)
	// The retrievers run in turn on this goroutine: a row-less vector index reads the
	// vectors it rescores in tx (withStoreTx), not in a second read transaction.
	lists, err := s.runRetrievers(withStoreTx(ctx, tx), &retrieval{query: query, vec: qv, scope: sc, so: &so, st: st}, mode)
	if err != nil {
		return nil, err
	}
	tf := time.Now()
	fused := so.Fusion(lists, hybrid.FusionOptions{K: so.RRFK, Window: so.retrieverWindow(mode)})
	st.Candidates = len(fused)
	fused = fused[:min(len(fused), so.keep())]
	for _, r := range retrievers {
		if !r.runs(mode) || r.plan == nil || (r.embeds && so.noEmbed) {
			continue
		}
		if note, ok := r.plan(s); ok { // for example: recall is approximate
			notes = append(notes[:len(notes):len(notes)], note)
			if _, focused := s.vec.(vectorstore.FocusSearcher); focused && r == &denseRetriever {
				k := so.retrieverWindow(mode)
				if f := so.denseFocus(k); f < k {
					notes = append(notes, fmt.Sprintf("dense: candidates picked for the top %d of its %d hits (WithFullDenseWindow: all)", f, k))
				}
			}
		}
	}
	rel := m.newRelevanceScorer(tx, col, qv, lists)
	cands, err := candidates(tx, col, fused, mode, notes, so.AllChunks, so.NoText && !so.Rerank, sc, rel)
	prec := string(m.em.precision())
	for i := range cands {
		if d := cands[i].res.Explain.Dense; d != nil {
			d.Precision = prec
		}
	}
	st.Fuse = time.Since(tf)
	return cands, err
}

// searchKinds are the derived indexes a search in mode needs open (nil: all): a BM25
// search without a query vector needs the BM25 index alone, and leaves the vector index
// closed (at 21M x 768 its load was most of a BM25 search's open, 1.1 of 1.3 s); a dense
// search without filters (filtered: a Where or WhereDocument, which the BM25 index's terms
// or the store's records answer) needs the vector index alone.
func searchKinds(mode Mode, so SearchOptions, filtered bool) func(store.Kind) bool {
	switch {
	case mode == BM25 && so.QueryVector == nil:
		return func(k store.Kind) bool { return k.Name == bm25Dir }
	case mode == Dense && !filtered:
		return func(k store.Kind) bool { return k.Name == vecDir }
	}
	return nil
}

// filterScope evaluates the filters once for every retriever, before ranking. A Where
// alone runs in the BM25 index's metadata terms (bitmaps per segment, no record read);
// with a WhereDocument the filters see documents (read from the store of record in tx).
// Either way the indexes hold chunks, which carry their document's metadata.
func (sr searcher) filterScope(ctx context.Context, tx *store.Tx, s *colState, col string, mode Mode,
	where docfilter.Compiled, whereDoc docfilter.Pred, st *SearchStats) (*searchScope, error) {
	sc := &searchScope{units: s.Units, best: map[string]map[string]string{}}
	st.Allowed = -1
	switch {
	case where.Pred != nil && whereDoc == nil && !filterScan.Load():
		mf := where.Meta
		n, docs, err := s.bm25.FilterCount(ctx, mf)
		if err != nil {
			return nil, bm25Error(err)
		}
		sc.meta, sc.indexed, sc.units, st.Allowed = mf, true, n, docs
		sc.where = where.Pred
		if mf != nil && anyRetriever(mode, func(r *retriever) bool { return r.filterIDs }) {
			ids, err := s.bm25.FilterIDs(ctx, mf)
			if err != nil {
				return nil, bm25Error(err)
			}
			sc.allowIDs = ids
			if _, ok := s.vec.(vectorstore.AllowSearcher); !ok {
				sc.allowSet = make(map[string]bool, len(ids))
				for _, id := range ids {
					sc.allowSet[id] = true
				}
			}
		}
	case where.Pred != nil || whereDoc != nil:
		sc.allow = make([]string, 0)
		sc.allowSet = map[string]bool{}
		docs := 0
		metaOnly := whereDoc == nil // a Where reads metadata only
		if err := tx.EachRecord(col, metaOnly, func(id string, r *store.Record) error {
			if (where.Pred == nil || where.Pred(r)) && (whereDoc == nil || whereDoc(r)) {
				for _, u := range r.UnitIDs(id) {
					sc.allow = append(sc.allow, u)
					sc.allowSet[u] = true
				}
				docs++
			}
			return nil
		}); err != nil {
			return nil, err
		}
		sort.Strings(sc.allow)
		sc.allowIDs = sc.allow
		st.Allowed = docs
		sc.units = len(sc.allow)
	}
	return sc, nil
}

// searchScope is what the filter leaves the retrievers: the units they may return and
// where they note each document's best chunk.
type searchScope struct {
	allow    []string                     // the unit ids the filter accepts, sorted (nil: no filter)
	allowSet map[string]bool              // the same as a set (nil: no filter, or a vector index that takes allowIDs)
	allowIDs []string                     // the units dense recall may return (nil: no filter)
	units    int                          // how many units may match
	best     map[string]map[string]string // per retriever: each document's best unit

	// indexed: the Where runs in the BM25 index, as meta (allow is nil; allowSet is the
	// filter's units when dense recall runs).
	indexed bool
	meta    *bm25.MetaFilter
	// where is checked again on each result's record when the filter ran in the index:
	// a write commits its records before it updates the index, so for a moment the index
	// may hold a document's previous metadata.
	where docfilter.Pred
}

// keep is how many fused candidates later stages can use: the rerank window or the top k,
// with room for near-duplicates that collapse drops.
func (so *SearchOptions) keep() int {
	keep := so.TopK
	if so.Rerank {
		keep = max(keep, so.RerankTop)
	}
	if so.CollapseThreshold > 0 {
		keep = keep*2 + 10
	}
	if so.SourceDedup {
		keep = max(keep, 2*so.Window) // every candidate: one source may hold many of them
	}
	return keep
}

// candidates turns fused results into candidates with their records, read in tx (the
// transaction the filter saw); with noText, what the records hold besides their title and
// text only (a compressed record is not unpacked). A document deleted or shortened since
// the index answered is left out. rel gives each its Relevance.
func candidates(tx *store.Tx, col string, fused []hybrid.Fused, mode Mode, notes []string, allChunks, noText bool,
	sc *searchScope, rel *relevanceScorer) ([]candidate, error) {
	uids := make([]string, len(fused))
	for i, f := range fused {
		uids[i] = f.ID
		if !allChunks {
			uids[i] = bestUnit(f, sc.best)
		}
	}
	recs, err := unitRecords(tx, col, uids, noText)
	if err != nil {
		return nil, err
	}
	cands := make([]candidate, 0, len(fused))
	for i, f := range fused {
		uid, r := uids[i], recs[i]
		parent, ci := store.SplitUnit(uid)
		if r == nil || !r.HasUnit(ci) || (sc.where != nil && !sc.where(r)) {
			continue
		}
		ex, score := explain(f, mode, notes)
		relevance, err := rel.score(f, uid, &ex)
		if err != nil {
			return nil, err
		}
		res := chunkResult(col, parent, uid, r, ci, score, ex)
		res.Relevance = relevance
		if noText {
			res.Title, res.Text = "", ""
		}
		cands = append(cands, candidate{id: uid, rec: r, res: res})
	}
	return cands, nil
}

// unitRecords reads the record of each unit's document (nil where it is gone); the chunks
// of one document share its record. With noText the records hold their metadata and
// chunks only (Tx.RecordMeta).
func unitRecords(tx *store.Tx, col string, uids []string, noText bool) ([]*store.Record, error) {
	recs := make([]*store.Record, len(uids))
	var byParent map[string]*store.Record
	for i, uid := range uids {
		parent, ci := store.SplitUnit(uid)
		if ci >= 0 {
			if byParent == nil {
				byParent = map[string]*store.Record{}
			}
			if r, ok := byParent[parent]; ok {
				recs[i] = r
				continue
			}
		}
		var r *store.Record
		var err error
		if noText {
			r, err = tx.RecordMeta(col, parent)
		} else {
			r, err = tx.Record(col, parent)
		}
		if err != nil {
			return nil, err
		}
		recs[i] = r
		if ci >= 0 {
			byParent[parent] = r
		}
	}
	return recs, nil
}

// explain is a fused result's explanation and its score: the fused score, or in a
// single-retriever search that retriever's own score (the most useful one).
func explain(f hybrid.Fused, mode Mode, notes []string) (Explanation, float64) {
	ex := Explanation{Mode: mode, Fused: f.Score, Notes: notes}
	var raw float64
	for _, c := range f.Contributions {
		if c.Rank == 0 {
			continue
		}
		if r := retrieverNamed(c.List); r != nil && r.explain != nil {
			*r.explain(&ex) = &StageScore{Rank: c.Rank, Score: c.Score}
		}
		raw = c.Score
	}
	if mode != Hybrid {
		return ex, raw
	}
	return ex, f.Score
}

// candidate is a fused result before it becomes a Result.
type candidate struct {
	id  string // index id of the chunk
	rec *store.Record
	res Result
}

// searchOne searches one collection: its retrievers and fusion, then rerank, collapse,
// MinScore and the top k.
func (sr searcher) searchOne(ctx context.Context, col, query string, so SearchOptions, st *SearchStats) ([]Result, error) {
	m := sr.m
	var where docfilter.Compiled
	var err error
	if where, err = docfilter.Compile(so.Where); err != nil {
		return nil, err
	}
	whereDoc, err := docfilter.CompileDocument(so.WhereDocument)
	if err != nil {
		return nil, err
	}
	mode, notes, err := sr.searchMode(&so)
	if err != nil {
		return nil, err
	}
	st.Mode = mode
	// Embed the query before taking any lock.
	qv, err := sr.queryVector(ctx, query, mode, &so, st)
	if err != nil {
		return nil, err
	}
	s, err := m.Collection(col).state(false)
	if err != nil {
		return nil, err
	}
	if s == nil {
		if col != DefaultCollection {
			return nil, fmt.Errorf("%w: %s", ErrCollectionNotFound, store.ShowKey(col))
		}
		return nil, nil
	}
	cands, err := sr.retrieve(ctx, s, col, query, qv, mode, notes, where, whereDoc, so, st)
	if err != nil {
		return nil, err
	}
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
		for i := range out { // read for a reranker
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

// searchMode is the mode a search runs in and the notes that say why when it is not the
// one asked for: a hybrid search degrades to BM25 without an embedder.
func (sr searcher) searchMode(so *SearchOptions) (Mode, []string, error) {
	m := sr.m
	mode, notes := so.Mode, so.notes
	if !anyRetriever(mode, embeds) || so.QueryVector != nil { // the caller's vector needs no embedder
		return mode, notes, nil
	}
	unresolved := !m.em.queryModel() && m.man.Embedder != nil
	if unresolved && mode != Hybrid {
		return "", nil, m.em.embedderNeeded(string(mode) + " search")
	}
	if unresolved {
		rest := slices.DeleteFunc(modeRetrievers(Hybrid), embeds)
		why := "the store's embedder " + m.em.recordedName() + " is not loaded: " + m.em.unresolvedWhy()
		if len(rest) == 1 {
			return rest[0].mode, append(notes[:len(notes):len(notes)], "hybrid search degraded to "+rest[0].name+": "+why), nil
		}
		so.noEmbed = true
		return mode, append(notes[:len(notes):len(notes)], "hybrid search ran without the retrievers that embed: "+why), nil
	}
	if m.opts.Embedder == nil {
		if mode != Hybrid {
			return "", nil, fmt.Errorf("%w: %s search needs one", ErrNoEmbedder, mode)
		}
		// A hybrid search runs without the retrievers that embed: as the one left, or as a
		// hybrid of those left.
		rest := slices.DeleteFunc(modeRetrievers(Hybrid), embeds)
		if len(rest) == 1 {
			mode = rest[0].mode
			notes = append(notes[:len(notes):len(notes)], "hybrid search degraded to "+rest[0].name+": no embedder configured")
		} else {
			so.noEmbed = true
			notes = append(notes[:len(notes):len(notes)], "hybrid search ran without the retrievers that embed: no embedder configured")
		}
	}
	return mode, notes, nil
}

// queryVector is the query's embedding (nil for a BM25 search): the caller's
// (WithQueryVector), from its batch, or made now.
func (sr searcher) queryVector(ctx context.Context, query string, mode Mode, so *SearchOptions, st *SearchStats) ([]float32, error) {
	if so.noEmbed || !anyRetriever(mode, embeds) {
		return nil, nil
	}
	if so.QueryVector != nil {
		return so.QueryVector, nil // the caller's: nothing to embed
	}
	batch := so.dense
	if batch != nil {
		st.Embed = batch.embedShare
		return batch.vec, nil // embedded with the rest of its batch
	}
	t := time.Now()
	qv, err := sr.embedQuery(ctx, query)
	st.Embed = time.Since(t)
	return qv, err
}

// topResults are the first k candidates' results that score at least minScore and whose
// Relevance is at least minRelevance (0: no cut-off).
func topResults(cands []candidate, k int, minScore, minRelevance float64) []Result {
	return topOf(cands, func(c *candidate) *Result { return &c.res }, k, minScore, minRelevance)
}

// topOf is topResults over any items holding a result (res gives it).
func topOf[T any](items []T, res func(*T) *Result, k int, minScore, minRelevance float64) []Result {
	out := make([]Result, 0, min(len(items), k))
	for i := range items {
		if len(out) == k {
			break
		}
		r := res(&items[i])
		if minScore != 0 && r.Score < minScore || minRelevance != 0 && r.Relevance < minRelevance {
			continue
		}
		out = append(out, *r)
	}
	return out
}

func (sr searcher) embedQuery(ctx context.Context, q string) ([]float32, error) {
	m := sr.m
	e := m.opts.Embedder
	if qe, ok := e.(vectorstore.QueryEmbedder); ok {
		v, err := qe.EmbedQuery(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("memory: embed query: %w", err)
		}
		return v, checkVec(v, e.Dim())
	}
	vs, err := m.em.embed(ctx, []string{q})
	if err != nil {
		return nil, err
	}
	return vs[0], nil
}

// rerank scores the first top candidates with the cross-encoder and sorts them by logit;
// the others keep their fused order after them.
func (sr searcher) rerank(ctx context.Context, query string, cands []candidate, top int) error {
	m := sr.m
	n := min(top, len(cands))
	passages := make([]string, n)
	for i := 0; i < n; i++ {
		passages[i] = embedText(cands[i].rec.Title, cands[i].res.Text)
	}
	return rerankHead(ctx, m.opts.Reranker, query, passages, cands[:n], func(c *candidate) *Result { return &c.res })
}

// rerankHead scores passages (those of head, in order) with r, gives each result of head
// its RerankScore, score and Relevance (the probability), and sorts head by logit, stably.
func rerankHead[T any](ctx context.Context, r rerank.Reranker, query string, passages []string, head []T, res func(*T) *Result) error {
	logits, err := r.Score(ctx, query, passages)
	if err != nil {
		return fmt.Errorf("memory: rerank: %w", err)
	}
	if len(logits) != len(head) {
		return fmt.Errorf("memory: rerank: %d scores for %d passages", len(logits), len(head))
	}
	for i := range head {
		l := float64(logits[i])
		x := res(&head[i])
		x.Explain.Rerank = &RerankScore{Logit: l, Prob: vecmath.Sigmoid(l)}
		x.Score = vecmath.Sigmoid(l)
		x.Relevance = x.Score // a probability: already in [0, 1]
	}
	sort.SliceStable(head, func(i, j int) bool {
		return res(&head[i]).Explain.Rerank.Logit > res(&head[j]).Explain.Rerank.Logit
	})
	for i := range head {
		res(&head[i]).Explain.Rerank.Rank = i + 1
	}
	return nil
}

// collapse drops a candidate whose stored vector has cosine >= threshold with a better one.
// Search refuses a collapse without an embedder before it gets here. (On a cluster the
// vectors are read from it, all at once: cluster_collections.go.)
func (sr searcher) collapse(ctx context.Context, cands []candidate, threshold float64) ([]candidate, error) {
	m := sr.m
	vector := func(c candidate) ([]float32, error) { return m.db.Vector(c.res.Collection, c.id) }
	if cs := m.cluster; cs != nil {
		var err error
		if vector, err = cs.candidateVectors(ctx, cands); err != nil {
			return nil, err
		}
	}
	var kept []candidate
	var keptVecs [][]float32
	for _, c := range cands {
		v, err := vector(c)
		if err != nil {
			return nil, err
		}
		dup := false
		for _, kv := range keptVecs {
			if v != nil && kv != nil && vecmath.Cosine(v, kv) >= threshold {
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

// searchMany searches several collections and fuses their result lists with weighted RRF,
// so a collection with a higher weight ranks its results higher. A collection of weight 0
// is not searched.
func (sr searcher) searchMany(ctx context.Context, query string, so SearchOptions, st *SearchStats) ([]Result, error) {
	byKey, lists, err := sr.searchEach(ctx, query, so, st)
	if err != nil {
		return nil, err
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
		if cands, err = sr.collapse(ctx, cands, so.CollapseThreshold); err != nil {
			return nil, err
		}
	}
	if so.SourceDedup {
		cands = dedupeSources(cands, func(c candidate) string { return c.res.Source })
	}
	return topResults(cands, so.TopK, so.MinScore, so.MinRelevance), nil
}

// searchEach searches each collection of a multi-collection search on its own and returns
// its results as a fusion list, weighted by the collection's weight, whose hit ids are the
// keys of byKey ("collection\x00unit"). It adds each search's timings to st.
func (sr searcher) searchEach(ctx context.Context, query string, so SearchOptions, st *SearchStats) (byKey map[string]Result, lists []hybrid.List, err error) {
	sub := so
	sub.Collections = nil
	sub.TopK = max(so.TopK, min(so.Window, 100))
	byKey = map[string]Result{}
	for _, n := range so.collectionNames() {
		var one SearchStats
		res, err := sr.searchCollection(ctx, n, query, sub, &one)
		if err != nil {
			return nil, nil, fmt.Errorf("collection %s: %w", store.ShowKey(n), err)
		}
		st.Mode = one.Mode
		st.BM25 += one.BM25
		st.Dense += one.Dense
		st.Embed += one.Embed
		st.Rerank += one.Rerank
		st.Fuse += one.Fuse
		st.Filter += one.Filter
		w := so.Collections[n]
		hits := make([]hybrid.Hit, len(res))
		for i, r := range res {
			key := n + "\x00" + r.unit
			r.Explain.CollectionWeight = w
			byKey[key] = r
			hits[i] = hybrid.Hit{ID: key, Score: r.Score}
		}
		lists = append(lists, hybrid.List{Name: n, Weight: w, Hits: hits})
	}
	return byKey, lists, nil
}

// searcher runs the searches of the store m: one collection's retrievers, fusion,
// rerank and collapse (searchOne), several collections (searchMany), a cascade
// (cascade.go), and a reader's share of a search its writer ran (remote.go).
type searcher struct{ m *Memory }
