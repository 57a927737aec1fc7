package bm25

// Test knobs: the reference paths the default query path is tested and benchmarked
// against. They are not part of the package's API.

import (
	"sync"

	"github.com/blevesearch/bleve/v2/search"
)

// BM25Params are the BM25 constants of Bleve's own scoring path ([Index.SetBleveScoring]).
// Bleve keeps them in package variables, so they apply to every index of the process that
// uses Bleve's scoring. The default path (MaxScore over textbook BM25) does not read them:
// it takes k1 and b from [Options], per index.
type BM25Params struct{ K1, B float64 }

var bm25Once sync.Mutex

// SetBM25Params sets k1 and b of Bleve's own scoring path for every index of the process
// (values <= 0 keep the current ones). It does not change the default path, whose k1 and b
// are per index ([Options]).
func SetBM25Params(p BM25Params) {
	bm25Once.Lock()
	defer bm25Once.Unlock()
	if p.K1 > 0 {
		search.BM25_k1 = p.K1
	}
	if p.B > 0 {
		search.BM25_b = p.B
	}
}

// SetBleveScoring selects the query path of Search. false (the default) scores with
// textbook BM25 (Lucene's formula) over the index's postings; true runs Bleve's own BM25
// search (which scores sqrt(tf), derives avgdl from the term dictionary size and applies
// coord). Safe to call while searches run.
func (b *Index) SetBleveScoring(on bool) { b.bleveScoring.Store(on) }

// SetExhaustive selects, for the default path, exhaustive term-at-a-time evaluation (every
// posting of every query term is scored) instead of MaxScore dynamic pruning. Both return
// the same hits with the same scores; exhaustive evaluation is the reference the pruned
// one is tested against, and a baseline for benchmarks. Safe to call while searches run.
func (b *Index) SetExhaustive(on bool) { b.exhaustive.Store(on) }
