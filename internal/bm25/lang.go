package bm25

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/simple"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/standard"
	"github.com/blevesearch/bleve/v2/analysis/lang/ar"
	"github.com/blevesearch/bleve/v2/analysis/lang/cjk"
	"github.com/blevesearch/bleve/v2/analysis/lang/ckb"
	"github.com/blevesearch/bleve/v2/analysis/lang/da"
	"github.com/blevesearch/bleve/v2/analysis/lang/de"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/lang/es"
	"github.com/blevesearch/bleve/v2/analysis/lang/fa"
	"github.com/blevesearch/bleve/v2/analysis/lang/fi"
	"github.com/blevesearch/bleve/v2/analysis/lang/fr"
	"github.com/blevesearch/bleve/v2/analysis/lang/hi"
	"github.com/blevesearch/bleve/v2/analysis/lang/hr"
	"github.com/blevesearch/bleve/v2/analysis/lang/hu"
	"github.com/blevesearch/bleve/v2/analysis/lang/it"
	"github.com/blevesearch/bleve/v2/analysis/lang/nl"
	"github.com/blevesearch/bleve/v2/analysis/lang/no"
	"github.com/blevesearch/bleve/v2/analysis/lang/pt"
	"github.com/blevesearch/bleve/v2/analysis/lang/ro"
	"github.com/blevesearch/bleve/v2/analysis/lang/ru"
	"github.com/blevesearch/bleve/v2/analysis/lang/sv"
	"github.com/blevesearch/bleve/v2/analysis/lang/tr"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/registry"
)

// The body field is analysed by one of Bleve's analyzers, chosen per index
// (BM25Options.Analyzer) and recorded in the index (analyzerKey). English ("en", the
// default) runs through the cached, one-pass analysis of bm25_stem.go and bm25_analyze.go;
// every other analyzer is Bleve's own, with its Unicode tokenizer (when it has one) replaced
// by asciiTokenizer, which gives the same tokens (TestAnalyzersMatchBleve).

// DefaultAnalyzer is the analyzer of an index that names none: Bleve's English analyzer.
const DefaultAnalyzer = en.AnalyzerName

// LuceneEnglishAnalyzer names the analyzer that gives the terms of Lucene 8's
// EnglishAnalyzer (Anserini's and Pyserini's, the BM25 yardstick): the English analyzer's
// chain (Unicode word segmentation as UAX #29, possessives, lower case, Porter stemming)
// with Lucene's 33 English stop words instead of Bleve's 174. With ScoringLucene it ranks
// as Lucene's BM25 does. (Lucene also cuts a token at 255 characters; this does not.)
const LuceneEnglishAnalyzer = "en_lucene"

// Errors of the analyzer setting.
var (
	// ErrUnknownAnalyzer: BM25Options.Analyzer names no analyzer this build has; the error
	// names the value and the known ones ([Analyzers]).
	ErrUnknownAnalyzer = errors.New("hybrid: unknown analyzer")
	// ErrAnalyzerMismatch: an existing index was built with another analyzer than the one
	// asked for. The index is derived data: rebuild it with the analyzer wanted.
	ErrAnalyzerMismatch = errors.New("hybrid: the index was built with another analyzer")
)

// knownAnalyzers are the analyzers an index may use, sorted: Bleve's language analyzers
// (European ones, CJK bigrams, Arabic, Persian, Hindi, Sorani), "standard" (Unicode words,
// lower case, English stop words, no stemming), "simple" (letter runs, lower case) and
// "keyword" (the whole text as one term).
var knownAnalyzers = func() []string {
	names := []string{
		ar.AnalyzerName, cjk.AnalyzerName, ckb.AnalyzerName, da.AnalyzerName, de.AnalyzerName,
		en.AnalyzerName, es.AnalyzerName, fa.AnalyzerName, fi.AnalyzerName, fr.AnalyzerName,
		hi.AnalyzerName, hr.AnalyzerName, hu.AnalyzerName, it.AnalyzerName, nl.AnalyzerName,
		no.AnalyzerName, pt.AnalyzerName, ro.AnalyzerName, ru.AnalyzerName,
		sv.AnalyzerName, tr.AnalyzerName,
		standard.Name, simple.Name, keyword.Name, LuceneEnglishAnalyzer,
	}
	slices.Sort(names)
	return names
}()

// Analyzers returns the names BM25Options.Analyzer accepts, sorted.
func Analyzers() []string { return slices.Clone(knownAnalyzers) }

// CheckAnalyzer returns the analyzer name normalised ("" is DefaultAnalyzer; names are
// case-insensitive), or an error wrapping ErrUnknownAnalyzer naming name and the known ones.
func CheckAnalyzer(name string) (string, error) {
	if name == "" {
		return DefaultAnalyzer, nil
	}
	n := strings.ToLower(strings.TrimSpace(name))
	if _, ok := slices.BinarySearch(knownAnalyzers, n); !ok {
		return "", fmt.Errorf("%w %q (known: %s)", ErrUnknownAnalyzer, name, strings.Join(knownAnalyzers, ", "))
	}
	return n, nil
}

// builtAnalyzer is an analyzer ready for indexing: the analyzer and, for English, its
// one-pass body analysis.
type builtAnalyzer struct {
	ana  analysis.Analyzer
	body *bodyAnalysis
}

var (
	analyzersMu sync.Mutex
	analyzers   = map[string]builtAnalyzer{}
)

// analyzerFor returns the analyzer named name (normalised by CheckAnalyzer), built once per
// process and shared by every index that uses it (Bleve's analyzers are safe for
// concurrent use, and so are the caches of the English one).
func analyzerFor(name string) (builtAnalyzer, error) {
	analyzersMu.Lock()
	defer analyzersMu.Unlock()
	if b, ok := analyzers[name]; ok {
		return b, nil
	}
	var b builtAnalyzer
	if name == en.AnalyzerName || name == LuceneEnglishAnalyzer {
		if b.ana = cachedEnglish(name == LuceneEnglishAnalyzer); b.ana != nil {
			b.body = newBodyAnalysis(b.ana)
		}
	}
	if b.ana == nil && name == LuceneEnglishAnalyzer {
		return b, fmt.Errorf("%w %q: Bleve's English analyzer is not laid out as expected", ErrUnknownAnalyzer, name)
	}
	if b.ana == nil {
		a, err := registry.NewCache().AnalyzerNamed(name)
		if err != nil {
			return b, fmt.Errorf("%w %q: %v", ErrUnknownAnalyzer, name, err)
		}
		b.ana = withASCIITokenizer(a)
	}
	analyzers[name] = b
	return b, nil
}

// withASCIITokenizer returns a with its Unicode tokenizer, if it has one, replaced by
// asciiTokenizer (the same tokens, ASCII text segmented directly); a itself otherwise.
func withASCIITokenizer(a analysis.Analyzer) analysis.Analyzer {
	da, ok := a.(*analysis.DefaultAnalyzer)
	if !ok {
		return a
	}
	if _, ok := da.Tokenizer.(*unicode.UnicodeTokenizer); !ok {
		return a
	}
	return &analysis.DefaultAnalyzer{CharFilters: da.CharFilters, Tokenizer: asciiTokenizer{fallback: da.Tokenizer}, TokenFilters: da.TokenFilters}
}

// Analyzer returns the analyzer an index with BM25Options.Analyzer name analyses bodies and
// queries with (its tokens are those of Bleve's analyzer of that name), for callers that
// must match text the way the index does (snippets). Unknown names fail with
// ErrUnknownAnalyzer.
func Analyzer(name string) (analysis.Analyzer, error) {
	n, err := CheckAnalyzer(name)
	if err != nil {
		return nil, err
	}
	b, err := analyzerFor(n)
	if err != nil {
		return nil, err
	}
	return b.ana, nil
}
