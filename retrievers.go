package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentmem/memory/hybrid"
	"github.com/agentmem/memory/internal/store"
)

// Retrievers as data: each recall path of a search is a row of the table retrievers, and
// hybrid search, the weights and their checks, batches and explanations loop over it.
// Adding a retriever is one file (retriever_NAME.go) with its row, which its init adds
// to the table; a mode that runs it alone is a Mode constant, and a weight or an explanation of
// its own a field of Weights or Explanation (a row may leave either out).

// retriever is one recall path of a search.
type retriever struct {
	// name is its fusion list's name, and its name in notes and errors.
	name string
	// mode runs it alone; Hybrid runs every retriever of weight above 0.
	mode Mode
	// order places it in the table: fusion lists go in this order, which breaks ties.
	order int
	// weight is its fusion weight in w (nil: 1).
	weight func(w *Weights) float64
	// search returns its k best units for q among those q.scope allows, best first.
	search func(ctx context.Context, s *colState, q *retrieval, k int) ([]hybrid.Hit, error)
	// elapsed is where its time goes in the search's stats; shared, when set, is the time
	// of its batch's work that this search's share stands for.
	elapsed func(st *SearchStats) *time.Duration
	shared  func(so *SearchOptions) time.Duration
	// explain is its field in a result's explanation (nil: none).
	explain func(ex *Explanation) **StageScore
	// norm maps a score of its list to [0, 1], its share of Result.Relevance, given the
	// best score of the list (nil: relativeScore, score over best).
	norm func(score, best float64) float64
	// cosine: its scores (recall's, or rescore's when every result is rescored) are the
	// cosine of the query's and the unit's vectors, shown as Explanation.Cosine.
	cosine bool
	// rescore, when set, scores a unit it did not return, read in tx, so that its share
	// of Relevance is the unit's own score and not 0 (ok false: it cannot, and adds 0).
	// rescoreAll, when set, reports that its recall scores are not the ones its share
	// takes, in the store m: every result is rescored then.
	rescore    func(tx *store.Tx, col, uid string, qv []float32) (score float64, ok bool, err error)
	rescoreAll func(m *Memory) bool
	// embeds: it searches with the query's embedding, so it needs the store's embedder.
	embeds bool
	// filterIDs: when the Where runs in the BM25 index's metadata terms, it takes the
	// filter as the list of units it allows (searchScope.allowIDs).
	filterIDs bool
	// plan, when set, is a note on how it will search s (ok: the note applies), for
	// example that recall is approximate.
	plan func(s *colState) (note string, ok bool)
	// batch, when set, does the retriever's work for a batch of queries at once and
	// returns each query's option that hands its share to search (nil: nothing to share).
	batch func(ctx context.Context, c *Collection, queries []string, so SearchOptions) ([]SearchOption, error)
}

// retrieval is what a retriever is asked for.
type retrieval struct {
	query string
	vec   []float32    // the query's embedding (nil when no retriever of the search needs it)
	scope *searchScope // what the filter allows
	so    *SearchOptions
	st    *SearchStats
}

// retrievers is the table, in fusion order (which breaks ties): each row's file adds it
// in its init (addRetriever), as the rows' functions refer to the table.
var retrievers []*retriever

// addRetriever puts r in the table by its order.
func addRetriever(r *retriever) {
	i, _ := slices.BinarySearchFunc(retrievers, r.order, func(x *retriever, o int) int { return x.order - o })
	retrievers = slices.Insert(retrievers, i, r)
}

// runs reports whether a search in mode runs r.
func (r *retriever) runs(mode Mode) bool { return mode == Hybrid || mode == r.mode }

// fusionWeight is r's weight under w (nil: every retriever 1).
func (r *retriever) fusionWeight(w *Weights) float64 {
	if w == nil || r.weight == nil {
		return 1
	}
	return r.weight(w)
}

// modeRetrievers are the retrievers a search in mode runs.
func modeRetrievers(mode Mode) []*retriever {
	var out []*retriever
	for _, r := range retrievers {
		if r.runs(mode) {
			out = append(out, r)
		}
	}
	return out
}

// anyRetriever reports whether a retriever of mode satisfies ok.
func anyRetriever(mode Mode, ok func(r *retriever) bool) bool {
	for _, r := range retrievers {
		if r.runs(mode) && ok(r) {
			return true
		}
	}
	return false
}

// validMode reports whether mode is Hybrid or a retriever's mode.
func validMode(mode Mode) bool {
	return mode == Hybrid || slices.ContainsFunc(retrievers, func(r *retriever) bool { return r.mode == mode })
}

// embeds reports whether r needs the query's embedding.
func embeds(r *retriever) bool { return r.embeds }

// retrieverNamed is the row of the named retriever (nil: none).
func retrieverNamed(name string) *retriever {
	i := slices.IndexFunc(retrievers, func(r *retriever) bool { return r.name == name })
	if i < 0 {
		return nil
	}
	return retrievers[i]
}

// runRetrievers runs the retrievers of mode and returns their lists, each with its fusion
// weight. A single retriever without rerank or collapse needs no fusion window: asking for
// exactly k is cheaper (BM25's top-k collection is a large share of its cost).
func (s *colState) runRetrievers(ctx context.Context, q *retrieval, mode Mode) ([]hybrid.List, error) {
	rs := make([]hybrid.Retriever[*retrieval], 0, len(retrievers))
	for _, r := range retrievers {
		if !r.runs(mode) || (r.embeds && q.so.noEmbed) {
			continue
		}
		w := r.fusionWeight(q.so.Weights)
		if w == 0 {
			continue
		}
		rs = append(rs, hybrid.Retriever[*retrieval]{Name: r.name, Weight: w, Search: func(ctx context.Context, q *retrieval, k int) ([]hybrid.Hit, error) {
			t := time.Now()
			best := map[string]string{}
			q.scope.best[r.name] = best
			hits, err := searchUnits(k, q.scope.units, q.so.AllChunks, best, func(k int) ([]hybrid.Hit, error) {
				return r.search(ctx, s, q, k)
			})
			*r.elapsed(q.st) += time.Since(t)
			if r.shared != nil {
				*r.elapsed(q.st) += r.shared(q.so)
			}
			return hits, err
		}})
	}
	return hybrid.Retrieve(ctx, q, q.so.retrieverWindow(mode), rs...)
}

// applyWeights checks Weights and applies a weight of 0: the search runs without that
// retriever (a hybrid search left with one retriever runs in its mode, with a note).
func (so *SearchOptions) applyWeights() error {
	w := so.Weights
	if w == nil {
		return nil
	}
	var on, off []*retriever
	for _, r := range retrievers {
		x := r.fusionWeight(w)
		if err := checkWeight(r.name, x); err != nil {
			return err
		}
		if x > 0 {
			on = append(on, r)
		} else {
			off = append(off, r)
		}
	}
	switch {
	case len(on) == 0:
		names := make([]string, len(off))
		for i, r := range off {
			names[i] = r.name
		}
		all := "all"
		if len(names) == 2 {
			all = "both"
		}
		return fmt.Errorf("%w: %s weights %s 0 leave nothing to search", ErrInvalidOption, strings.Join(names, " and "), all)
	case so.Mode != Hybrid && !slices.ContainsFunc(on, func(r *retriever) bool { return r.mode == so.Mode }):
		return fmt.Errorf("%w: a %s search with %s weight 0 leaves nothing to search", ErrInvalidOption, so.Mode, so.Mode)
	case so.Mode == Hybrid && len(on) == 1:
		so.Mode = on[0].mode
		so.notes = append(so.notes[:len(so.notes):len(so.notes)], fmt.Sprintf("hybrid search ran as %s: %s weight 0", on[0].name, off[0].name))
	}
	return nil
}

// batchOptions runs the batch work of every retriever that has some, and returns each
// query's options that hand it its share (nil: none).
func (c *Collection) batchOptions(ctx context.Context, queries []string, so SearchOptions) ([][]SearchOption, error) {
	var out [][]SearchOption
	for _, r := range retrievers {
		if r.batch == nil {
			continue
		}
		opts, err := r.batch(ctx, c, queries, so)
		if err != nil || opts == nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		if out == nil {
			out = make([][]SearchOption, len(queries))
		}
		for i, o := range opts {
			out[i] = append(out[i], o)
		}
	}
	return out, nil
}
