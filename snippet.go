package memory

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
)

// SnippetBytes is the largest Result.Snippet, in bytes.
const SnippetBytes = 200

// snippetScan caps how much of a result's text is analysed for its snippet (a document
// stored whole before chunking can be megabytes long).
const snippetScan = 64 << 10

var (
	enOnce     sync.Once
	enAnalyzer analysis.Analyzer
)

// english is the analyzer of the BM25 index (Unicode tokenizer, possessives, lower case,
// English stop words, Porter stemming), so snippets match what BM25 matched.
func english() analysis.Analyzer {
	enOnce.Do(func() {
		enAnalyzer = bleve.NewIndexMapping().AnalyzerNamed(en.AnalyzerName)
	})
	return enAnalyzer
}

// addSnippets fills each result's Snippet.
func addSnippets(query string, res []Result) {
	if len(res) == 0 {
		return
	}
	terms := map[string]bool{}
	if a := english(); a != nil {
		for _, t := range a.Analyze([]byte(query)) {
			terms[string(t.Term)] = true
		}
	}
	for i := range res {
		res[i].Snippet = snippet(res[i].Text, terms, SnippetBytes)
	}
}

// snippet returns at most size bytes of text around the densest cluster of query terms
// (most distinct terms, then most occurrences, in a window of size bytes), cut on word and
// UTF-8 boundaries, with whitespace runs replaced by one space. Without a match it is the
// start of text.
func snippet(text string, terms map[string]bool, size int) string {
	scan := text
	if len(scan) > snippetScan {
		end := snippetScan
		for end > 0 && !utf8.RuneStart(scan[end]) {
			end--
		}
		scan = scan[:end]
	}
	type hit struct {
		start, end int
		term       string
	}
	var hits []hit
	if a := english(); a != nil && len(terms) > 0 {
		for _, t := range a.Analyze([]byte(scan)) {
			if terms[string(t.Term)] {
				hits = append(hits, hit{t.Start, t.End, string(t.Term)})
			}
		}
	}
	lo, hi := 0, 0 // the chosen cluster of hits: [hits[lo].start, hits[hi-1].end)
	if len(hits) > 0 {
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
	}
	var from, to int
	if hi > lo {
		first, last := hits[lo].start, hits[hi-1].end
		// Show some context before the first hit: a third of what is left over.
		from = max(0, first-(size-(last-first))/3)
		to = min(len(text), from+size)
		// Do not cut a word in two at either end, unless that would drop a hit.
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

func isSpaceByte(b byte) bool {
	return b == ' ' || b == '\n' || b == '\t' || b == '\r' || b == '\f' || b == '\v'
}
