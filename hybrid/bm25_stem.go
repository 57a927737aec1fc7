package hybrid

import (
	"bytes"
	"hash/maphash"
	"sync"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	"github.com/blevesearch/bleve/v2/registry"
	porterstemmer "github.com/blevesearch/go-porterstemmer"
)

// Porter stemming is an eighth of indexing time, and a corpus says the same words over and
// over: the body analyzer is Bleve's English analyzer with its last filter, the Porter
// stemmer, answering from a bounded cache of the stems it has computed. Its output is the
// same term for term (TestCachedAnalyzerMatchesBleve).

// stemCacheEntries bounds the stem cache (about 64 bytes an entry): past it, stems are
// computed and not kept. Frequent words come early, so the bound costs little.
const stemCacheEntries = 1 << 18

const stemShards = 64

// stemCache maps a lower-cased term to its Porter stem, safe for concurrent use.
type stemCache struct {
	seed   maphash.Seed
	shards [stemShards]struct {
		mu sync.RWMutex
		m  map[string][]byte
	}
}

func newStemCache() *stemCache {
	c := &stemCache{seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].m = map[string][]byte{}
	}
	return c
}

// stem returns the stem of term; the result is shared: callers must not modify it.
func (c *stemCache) stem(term []byte) []byte {
	sh := &c.shards[maphash.Bytes(c.seed, term)%stemShards]
	sh.mu.RLock()
	s, ok := sh.m[string(term)]
	sh.mu.RUnlock()
	if ok {
		return s
	}
	s = analysis.BuildTermFromRunes(porterstemmer.StemWithoutLowerCasing(bytes.Runes(term)))
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if len(sh.m) < stemCacheEntries/stemShards {
		sh.m[string(term)] = s
	}
	return s
}

// cachedPorter is Bleve's Porter stemmer filter with a stem cache.
type cachedPorter struct{ cache *stemCache }

func (f cachedPorter) Filter(input analysis.TokenStream) analysis.TokenStream {
	for _, t := range input {
		if t.KeyWord {
			continue
		}
		// Copied, never shared: the cache keeps its stems. A stem no longer than the
		// term (Porter's never are) overwrites the term's own bytes, as no other token
		// shares them.
		st := f.cache.stem(t.Term)
		if len(st) <= len(t.Term) {
			t.Term = t.Term[:copy(t.Term, st)]
		} else {
			t.Term = bytes.Clone(st)
		}
	}
	return input
}

var (
	stems     = newStemCache()
	englishMu sync.Mutex
	english   analysis.Analyzer
)

// cachedEnglish returns Bleve's English analyzer ("en") with its Porter stemmer replaced by
// the cached one; nil when the analyzer cannot be built (then the caller uses Bleve's).
func cachedEnglish() analysis.Analyzer {
	englishMu.Lock()
	defer englishMu.Unlock()
	if english != nil {
		return english
	}
	a, err := registry.NewCache().AnalyzerNamed(en.AnalyzerName)
	if err != nil {
		return nil
	}
	da, ok := a.(*analysis.DefaultAnalyzer)
	if !ok || len(da.TokenFilters) == 0 {
		return nil
	}
	if _, ok := da.TokenFilters[len(da.TokenFilters)-1].(*porter.PorterStemmer); !ok {
		return nil
	}
	filters := append([]analysis.TokenFilter(nil), da.TokenFilters...)
	filters[len(filters)-1] = cachedPorter{cache: stems}
	english = &analysis.DefaultAnalyzer{CharFilters: da.CharFilters, Tokenizer: da.Tokenizer, TokenFilters: filters}
	return english
}
