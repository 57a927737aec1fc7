package bm25

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	"github.com/blevesearch/bleve/v2/analysis/token/stop"
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
	english   = map[string]analysis.Analyzer{} // by name: en, en_lucene
)

// cachedEnglish returns Bleve's English analyzer ("en") with its Porter stemmer replaced by
// the cached one and its tokenizer by asciiTokenizer (bm25_tokenize.go); with lucene, its
// stop filter too, by one of Lucene's 33 English stop words (LuceneEnglishAnalyzer). nil
// when the analyzer cannot be built (then the caller uses Bleve's).
func cachedEnglish(lucene bool) analysis.Analyzer {
	name := en.AnalyzerName
	if lucene {
		name = LuceneEnglishAnalyzer
	}
	englishMu.Lock()
	defer englishMu.Unlock()
	if a := english[name]; a != nil {
		return a
	}
	a, err := registry.NewCache().AnalyzerNamed(en.AnalyzerName)
	if err != nil {
		return nil
	}
	da, ok := a.(*analysis.DefaultAnalyzer)
	if !ok || len(da.TokenFilters) != 4 {
		return nil
	}
	if _, ok := da.TokenFilters[len(da.TokenFilters)-1].(*porter.PorterStemmer); !ok {
		return nil
	}
	filters := append([]analysis.TokenFilter(nil), da.TokenFilters...)
	filters[len(filters)-1] = cachedPorter{cache: stems}
	if lucene {
		filters[2] = luceneStop{stop.NewStopTokensFilter(luceneStopWords())}
	}
	tok := da.Tokenizer
	if _, ok := tok.(*unicode.UnicodeTokenizer); ok {
		tok = asciiTokenizer{fallback: tok} // the same tokens, ASCII segmented directly
	}
	built := &analysis.DefaultAnalyzer{CharFilters: da.CharFilters, Tokenizer: tok, TokenFilters: filters}
	english[name] = built
	return built
}

// init registers LuceneEnglishAnalyzer with Bleve, built from Bleve's own parts (the
// reference that cachedEnglish(true) must match, TestAnalyzersMatchBleve): Bleve's English
// analyzer with Lucene's stop words.
func init() {
	err := registry.RegisterAnalyzer(LuceneEnglishAnalyzer, func(config map[string]any, cache *registry.Cache) (analysis.Analyzer, error) {
		a, err := cache.AnalyzerNamed(en.AnalyzerName)
		if err != nil {
			return nil, err
		}
		da, ok := a.(*analysis.DefaultAnalyzer)
		if !ok || len(da.TokenFilters) != 4 {
			return nil, fmt.Errorf("bleve's %q analyzer is not laid out as expected", en.AnalyzerName)
		}
		filters := slices.Clone(da.TokenFilters)
		filters[2] = luceneStop{stop.NewStopTokensFilter(luceneStopWords())}
		return &analysis.DefaultAnalyzer{CharFilters: da.CharFilters, Tokenizer: da.Tokenizer, TokenFilters: filters}, nil
	})
	if err != nil {
		panic(err)
	}
}

// luceneStop is the stop filter of LuceneEnglishAnalyzer: Lucene's stop words go, and so
// do tokens of connector punctuation alone ("_", "__"), which Bleve's segmenter keeps as
// words and Lucene's StandardTokenizer does not (it keeps a word only with a letter or a
// digit in it; TestLuceneEnglishMatchesLucene).
type luceneStop struct{ words *stop.StopTokensFilter }

// Filter drops the stop words and the tokens of underscores alone from input.
func (f luceneStop) Filter(input analysis.TokenStream) analysis.TokenStream {
	input = f.words.Filter(input)
	j := 0
	for _, t := range input {
		if len(strings.Trim(string(t.Term), "_")) == 0 {
			continue
		}
		input[j] = t
		j++
	}
	return input[:j]
}

// luceneStopWords are Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET (Lucene 8): 33 words,
// where Bleve's English analyzer removes 174.
func luceneStopWords() analysis.TokenMap {
	m := analysis.NewTokenMap()
	for _, w := range strings.Fields(`a an and are as at be but by for if in into is it no not of on or
		such that the their then there these they this to was will with`) {
		m.AddToken(w)
	}
	return m
}
