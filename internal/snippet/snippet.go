// Package snippet cuts a search result's snippet: the densest window of a text's words
// that the query's terms match, as the collection's BM25 analyzer makes terms of both, so
// a snippet shows what BM25 matched.
package snippet

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentmem/memory/internal/bm25"
	"github.com/blevesearch/bleve/v2/analysis"
)

// Bytes is the largest snippet, in bytes.
const Bytes = 200

// snippetScan caps how much of a result's text is analysed for its snippet (a document
// stored whole before chunking can be megabytes long).
const snippetScan = 64 << 10

// english is the BM25 index's default analyzer (bm25.Analyzer: Unicode words,
// possessives, lower case, English stop words, Porter stemming), so snippets match what
// BM25 matched: one analyzer, shared with the index.
func english() analysis.Analyzer {
	a, _ := bm25.Analyzer(bm25.DefaultAnalyzer)
	return a
}

// Maker cuts the snippets of one query's results; it caches the words it has analysed, so
// one Maker serves all of them. It is not safe for concurrent use.
type Maker struct{ tm *termMatcher }

// New is the Maker of query's snippets, matching words as the BM25 analyzer named
// analyzer does (the collection's). An unknown analyzer matches no word: each snippet is
// then the start of its text.
func New(query, analyzer string) *Maker {
	a, _ := bm25.Analyzer(analyzer) // nil (no snippet terms) when unknown
	terms := map[string]bool{}
	if a != nil {
		for _, t := range a.Analyze([]byte(query)) {
			terms[string(t.Term)] = true
		}
	}
	return &Maker{tm: newTermMatcherFor(terms, a, analyzer == bm25.DefaultAnalyzer)}
}

// Of is the snippet of text: at most Bytes bytes around its densest cluster of matched
// words, cut on word and UTF-8 boundaries, whitespace runs shown as one space; the start
// of the text when no word matches.
func (mk *Maker) Of(text string) string { return snippet(text, mk.tm, Bytes) }

// termMatcher finds the words of a text that an analyzer (English unless said otherwise)
// turns into query terms.
type termMatcher struct {
	terms    map[string]bool
	ana      analysis.Analyzer
	prefix   bool              // a word's term starts with its first two characters (English)
	prefixes []string          // lower-cased first two characters of each term
	seen     map[string]string // word -> the query term it analyses to ("" none)
}

// newTermMatcher is the English analyzer's termMatcher of terms.
func newTermMatcher(terms map[string]bool) *termMatcher {
	return newTermMatcherFor(terms, english(), true)
}

// newTermMatcherFor is the termMatcher of terms under analyzer ana. prefix says that ana
// keeps the first two characters of a word in its term (Porter stemming does), so words
// that start otherwise need not be analysed; other analyzers (elisions, bigrams, case and
// width folding beyond ASCII) analyse every word, once per distinct word.
func newTermMatcherFor(terms map[string]bool, ana analysis.Analyzer, prefix bool) *termMatcher {
	tm := &termMatcher{terms: terms, ana: ana, prefix: prefix, seen: map[string]string{}}
	for t := range terms {
		tm.prefixes = append(tm.prefixes, lowerPrefix(t))
	}
	return tm
}

// maxSeen bounds the cache of analysed words of one search.
const maxSeen = 1 << 14

// match returns the query term word analyses to, "" when none.
func (tm *termMatcher) match(w string) string {
	if !tm.mayMatch(w) {
		return ""
	}
	term, ok := tm.seen[w]
	if ok {
		return term
	}
	if a := tm.ana; a != nil {
		for _, t := range a.Analyze([]byte(w)) {
			if tm.terms[string(t.Term)] {
				term = string(t.Term)
				break
			}
		}
	}
	if len(tm.seen) < maxSeen {
		tm.seen[w] = term
	}
	return term
}

// mayMatch reports whether w starts like a query term (Porter stemming keeps a word's first
// two letters), without allocating for ASCII words.
func (tm *termMatcher) mayMatch(w string) bool {
	if !tm.prefix {
		return true
	}
	if len(w) >= 2 && w[0] < utf8.RuneSelf && w[1] < utf8.RuneSelf {
		a, b := lowerASCII(w[0]), lowerASCII(w[1])
		for _, p := range tm.prefixes {
			if len(p) == 2 && p[0] == a && p[1] == b {
				return true
			}
		}
		return false
	}
	lp := lowerPrefix(w)
	for _, p := range tm.prefixes {
		if p == lp {
			return true
		}
	}
	return false
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// snippet returns at most size bytes of text around the densest cluster of query terms
// (most distinct terms, then most occurrences, in a window of size bytes), cut on word and
// UTF-8 boundaries, with whitespace runs replaced by one space. Without a match it is the
// start of text.
func snippet(text string, tm *termMatcher, size int) string {
	scan := text
	if len(scan) > snippetScan {
		end := snippetScan
		for end > 0 && !utf8.RuneStart(scan[end]) {
			end--
		}
		scan = scan[:end]
	}
	hits := snippetHits(scan, tm)
	lo, hi := densestCluster(hits, size)
	var from, to int
	if hi > lo {
		from, to = aroundHits(text, hits[lo].start, hits[hi-1].end, size)
	} else {
		to = min(len(text), size)
		if to < len(text) && !isSpaceByte(text[to]) {
			if k := strings.LastIndexFunc(text[:to], unicode.IsSpace); k > 0 {
				to = k
			}
		}
	}
	for from < to && !utf8.RuneStart(text[from]) {
		from++
	}
	for to > from && to < len(text) && !utf8.RuneStart(text[to]) {
		to--
	}
	return strings.Join(strings.Fields(text[from:to]), " ")
}

// densestCluster picks the hits [lo, hi) that fit in a window of size bytes with the most
// distinct terms, then the most hits (lo == hi when there are none).
func densestCluster(hits []hit, size int) (lo, hi int) {
	count := map[string]int{}
	bestDistinct, bestN := 0, 0
	j, distinct := 0, 0
	for i := range hits {
		for j < len(hits) && hits[j].end-hits[i].start <= size {
			if count[hits[j].term] == 0 {
				distinct++
			}
			count[hits[j].term]++
			j++
		}
		if j > i && (distinct > bestDistinct || (distinct == bestDistinct && j-i > bestN)) {
			bestDistinct, bestN, lo, hi = distinct, j-i, i, j
		}
		if j > i {
			count[hits[i].term]--
			if count[hits[i].term] == 0 {
				distinct--
			}
		} else {
			j = i + 1 // a single hit longer than the window: skip it
		}
	}
	return lo, hi
}

// aroundHits is the window [from, to) of at most size bytes of text that holds the hits
// spanning [first, last), with a third of the room left before them, not cutting a word in
// two at either end unless that would drop a hit.
func aroundHits(text string, first, last, size int) (from, to int) {
	from = max(0, first-(size-(last-first))/3)
	if from > 0 && !isSpaceByte(text[from-1]) {
		if k := strings.IndexFunc(text[from:first], unicode.IsSpace); k >= 0 {
			from += k + 1
		}
	}
	to = min(len(text), from+size)
	if to < len(text) && !isSpaceByte(text[to]) {
		if k := strings.LastIndexFunc(text[last:to], unicode.IsSpace); k >= 0 {
			to = last + k
		}
	}
	return from, to
}

func isSpaceByte(b byte) bool {
	return b == ' ' || b == '\n' || b == '\t' || b == '\r' || b == '\f' || b == '\v'
}

// hit is a word of a text that analyses to a query term.
type hit struct {
	start, end int
	term       string
}

// snippetHits returns the words of scan that the English analyzer turns into a query term.
func snippetHits(scan string, tm *termMatcher) []hit {
	// Running the analyzer over the whole text costs more than the search; instead, split
	// the text into words and analyse only the words that could stem to a query term.
	var hits []hit
	if len(tm.terms) == 0 {
		return nil
	}
	forEachWord(scan, func(start, end int) {
		if term := tm.match(scan[start:end]); term != "" {
			hits = append(hits, hit{start, end, term})
		}
	})
	return hits
}

// lowerPrefix is the lower-cased first two characters of w (one when it has one).
func lowerPrefix(w string) string {
	if len(w) >= 2 && w[0] < utf8.RuneSelf && w[1] < utf8.RuneSelf {
		a, b := w[0], w[1]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a == w[0] && b == w[1] {
			return w[:2]
		}
		return string([]byte{a, b})
	}
	n := 0
	for i := range w {
		if n == 2 {
			return strings.ToLower(w[:i])
		}
		n++
	}
	return strings.ToLower(w)
}

// forEachWord calls fn with the byte span of every word of s: a run of letters, digits and
// marks, with apostrophes inside it (the possessive and contractions the analyzer handles).
func forEachWord(s string, fn func(start, end int)) {
	start := -1
	for i := 0; i < len(s); {
		c := s[i]
		var r rune
		size := 1
		if c < utf8.RuneSelf {
			r = rune(c)
		} else {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		word := ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')
		if !word && r >= utf8.RuneSelf {
			word = unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
		}
		if !word && start >= 0 && (r == '\'' || r == '’') && i+size < len(s) {
			// An apostrophe between letters stays in the word.
			n, _ := utf8.DecodeRuneInString(s[i+size:])
			word = unicode.IsLetter(n)
		}
		switch {
		case word && start < 0:
			start = i
		case !word && start >= 0:
			fn(start, i)
			start = -1
		}
		i += size
	}
	if start >= 0 {
		fn(start, len(s))
	}
}
