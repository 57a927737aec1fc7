package memory

import (
	"math"

	"github.com/agentmem/memory/hybrid"
	"github.com/agentmem/memory/internal/store"
)

// Relevance (Result.Relevance) is a score in [0, 1] that a caller can threshold: fused
// scores (RRF's 0.016..0.033) and raw BM25 scores say only how results rank. Each
// retriever's score is mapped to [0, 1] by its row's norm (BM25: relative to the best
// score of the search; dense: max(0, cosine)), and the result's Relevance is their mean
// weighted by the fusion weights; a reranked result's is the reranker's probability
// (rerankHead).

// relativeScore is score over best, in [0, 1]: the share of a retriever whose scores
// have no fixed scale (BM25), relative to the best result of its list, as Weaviate's
// relative score fusion does. It is 0 when best is not a positive finite number or score
// is NaN.
func relativeScore(score, best float64) float64 {
	if !(best > 0) || math.IsInf(best, 1) {
		return 0
	}
	return clamp01(score / best)
}

// cosineScore is the share of a retriever whose score is a cosine similarity: the cosine
// clamped to [0, 1] (an opposite or orthogonal vector is as unrelated as it gets). It
// needs no list: a cosine has a scale of its own.
func cosineScore(cos, _ float64) float64 { return clamp01(cos) }

// clamp01 is x within [0, 1]; NaN is 0.
func clamp01(x float64) float64 {
	switch {
	case !(x > 0):
		return 0
	case x > 1:
		return 1
	}
	return x
}

// normOf is r's share of Relevance for a raw score of its list, whose best score is best
// (a retriever without a norm of its own, or none: relativeScore).
func (r *retriever) normOf(score, best float64) float64 {
	if r == nil || r.norm == nil {
		return relativeScore(score, best)
	}
	return r.norm(score, best)
}

// relevanceScorer gives the fused results of one search their Relevance.
type relevanceScorer struct {
	// best is each list's best finite score, by list name; a list that returned no hit is
	// absent: it says nothing about any document and is left out of every mean.
	best map[string]float64
	// qv is the query's embedding (nil: the search did not embed it, so nothing is
	// rescored); tx and col read the stored vectors that rescoring compares it with.
	qv  []float32
	tx  *store.Tx
	col string
	// rescoreAll names the retrievers whose recall scores are not the ones their share
	// takes, so every result is rescored (dense recall over an inner-product index).
	rescoreAll map[string]bool
}

// newRelevanceScorer is the scorer of a search whose retrievers returned lists.
func (m *Memory) newRelevanceScorer(tx *store.Tx, col string, qv []float32, lists []hybrid.List) *relevanceScorer {
	rs := &relevanceScorer{best: make(map[string]float64, len(lists)), qv: qv, tx: tx, col: col}
	for _, l := range lists {
		best, finite := math.Inf(-1), false
		for _, h := range l.Hits {
			if !math.IsNaN(h.Score) && !math.IsInf(h.Score, 0) {
				best, finite = max(best, h.Score), true
			}
		}
		if len(l.Hits) > 0 {
			if !finite {
				best = 0
			}
			rs.best[l.Name] = best
		}
		if r := retrieverNamed(l.Name); r != nil && r.rescoreAll != nil && r.rescoreAll(m) {
			if rs.rescoreAll == nil {
				rs.rescoreAll = map[string]bool{}
			}
			rs.rescoreAll[l.Name] = true
		}
	}
	return rs
}

// score is the Relevance of fused result f shown as unit uid: the mean of its lists'
// normalised scores weighted by their fusion weights (a list that did not return it adds
// 0, unless its retriever rescores the unit). It fills the Norm of ex's stage scores and
// ex.Cosine.
func (rs *relevanceScorer) score(f hybrid.Fused, uid string, ex *Explanation) (float64, error) {
	var mean weightedMean
	for _, c := range f.Contributions {
		best, ran := rs.best[c.List]
		if !ran {
			continue
		}
		w := c.Weight
		if w == 0 {
			w = 1 // a FusionFunc that leaves it unset: a List's weight 0 means 1
		}
		r := retrieverNamed(c.List)
		raw, ok, rescored := c.Score, c.Rank > 0, false
		if r != nil && r.rescore != nil && rs.qv != nil && (!ok || rs.rescoreAll[c.List]) {
			x, got, err := r.rescore(rs.tx, rs.col, uid, rs.qv)
			if err != nil {
				return 0, err
			}
			if got {
				raw, ok, rescored = x, true, true
			}
		}
		norm := 0.0
		if ok {
			norm = r.normOf(raw, best)
			if r != nil && r.cosine && (rescored || !rs.rescoreAll[c.List]) {
				cos := raw
				ex.Cosine = &cos
			}
		}
		if c.Rank > 0 && r != nil && r.explain != nil {
			if st := *r.explain(ex); st != nil {
				st.Norm = norm
			}
		}
		mean.add(w, norm)
	}
	return mean.value(), nil
}

// weightedMean accumulates the weighted mean of shares in [0, 1].
type weightedMean struct{ sum, wsum float64 }

// add counts share (clamped to [0, 1]) with weight w; a weight that is not a positive
// finite number is left out.
func (m *weightedMean) add(w, share float64) {
	if w > 0 && !math.IsInf(w, 1) {
		m.sum += w * clamp01(share)
		m.wsum += w
	}
}

// value is the mean, in [0, 1] (0 when nothing was counted).
func (m weightedMean) value() float64 {
	if m.wsum == 0 {
		return 0
	}
	return clamp01(m.sum / m.wsum)
}
