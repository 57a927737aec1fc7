package bm25

import (
	"bytes"
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/registry"
	porterstemmer "github.com/blevesearch/go-porterstemmer"
)

// Porter stemming is an eighth of indexing time, and a corpus says the same words over and
// over: the body analyzer is Bleve's English analyzer with its last filter, the Porter
// stemmer, answering from a bounded cache of the stems it has computed. Its output is the
// same term for term (TestCachedAnalyzerMatchesBleve).

// stemCacheSlots is the size of the stem cache: a direct-mapped table (a term's hash picks
// its slot; a colliding term replaces it), read without locks. Frequent words win their
// slots back at once, so a small table answers most tokens.
const stemCacheSlots = 1 << 17

// stemEntry is one cached term and its stem.
type stemEntry struct {
	term string
	stem []byte
}

// stemCache maps a lower-cased term to its Porter stem, safe for concurrent use.
type stemCache struct {
	seed  maphash.Seed
	slots []atomic.Pointer[stemEntry]
}

func newStemCache() *stemCache {
	return &stemCache{seed: maphash.MakeSeed(), slots: make([]atomic.Pointer[stemEntry], stemCacheSlots)}
}

// stem returns the stem of term; the result is shared: callers must not modify it.
func (c *stemCache) stem(term []byte) []byte {
	slot := &c.slots[maphash.Bytes(c.seed, term)&(stemCacheSlots-1)]
	if e := slot.Load(); e != nil && e.term == string(term) {
		return e.stem
	}
	s := analysis.BuildTermFromRunes(porterstemmer.StemWithoutLowerCasing(bytes.Runes(term)))
	slot.Store(&stemEntry{term: string(term), stem: s})
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
// the cached one and its tokenizer by asciiTokenizer (bm25_tokenize.go); nil when the analyzer cannot be built (then the caller uses Bleve's).
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
	tok := da.Tokenizer
	if _, ok := tok.(*unicode.UnicodeTokenizer); ok {
		tok = asciiTokenizer{fallback: tok} // the same tokens, ASCII segmented directly
	}
	english = &analysis.DefaultAnalyzer{CharFilters: da.CharFilters, Tokenizer: tok, TokenFilters: filters}
	return english
}
