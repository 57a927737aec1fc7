package hybrid

import (
	"hash/maphash"
	"sync/atomic"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/document"
	index "github.com/blevesearch/bleve_index_api"
)

// Indexing a document's body through Bleve's analyzer builds a token (a heap object) per
// word, runs four filters over the stream, then counts the terms in a map: a third of
// indexing time at a million passages. The body field below counts the terms in one pass
// instead: ASCII words, segmented as asciiTokenizer segments them, are looked up, lower
// cased, in a table that remembers for each word whether it is a stop word and what its
// stem is; the words around non-ASCII bytes go through the analyzer's own tokenizer and
// filters. The terms, their counts and the field's length are those of Bleve's analyzer
// followed by analysis.TokenFrequency (TestBodyFieldMatchesAnalyzer, FuzzBodyField).

// wordCacheSlots is the size of the word table: direct mapped (a word's hash picks its
// slot; a colliding word replaces it), read without locks.
const wordCacheSlots = 1 << 17

// wordEntry is what the analyzer's filters make of one lower-cased ASCII word.
type wordEntry struct {
	word string // the lower-cased word
	stop bool   // a stop word: no term
	term string // its stem, the term indexed
	tb   []byte // term's bytes (shared: never modified)
}

// wordCache maps lower-cased ASCII words to their entries, safe for concurrent use.
type wordCache struct {
	seed    maphash.Seed
	slots   []atomic.Pointer[wordEntry]
	filters []analysis.TokenFilter // the analyzer's filters after the lower-case one
}

// lookup returns the entry of the lower-cased word w, computing it with the filters when
// the word's slot holds another.
func (c *wordCache) lookup(w []byte) *wordEntry {
	slot := &c.slots[maphash.Bytes(c.seed, w)&(wordCacheSlots-1)]
	if e := slot.Load(); e != nil && e.word == string(w) {
		return e
	}
	e := &wordEntry{word: string(w)}
	ts := analysis.TokenStream{&analysis.Token{Term: []byte(e.word), Type: analysis.AlphaNumeric}}
	for _, f := range c.filters {
		ts = f.Filter(ts)
	}
	if len(ts) == 0 {
		e.stop = true
	} else {
		e.term = string(ts[0].Term)
		e.tb = []byte(e.term)
	}
	slot.Store(e)
	return e
}

// bodyAnalysis is the one-pass analysis of the English analyzer ana (cachedEnglish's
// layout: a tokenizer that is asciiTokenizer, then the possessive, lower-case, stop and
// stemming filters).
type bodyAnalysis struct {
	ana   *analysis.DefaultAnalyzer
	tok   asciiTokenizer
	words *wordCache
}

// newBodyAnalysis returns the one-pass analysis of ana, or nil when ana is not laid out
// as cachedEnglish builds it.
func newBodyAnalysis(ana analysis.Analyzer) *bodyAnalysis {
	da, ok := ana.(*analysis.DefaultAnalyzer)
	if !ok || len(da.CharFilters) > 0 || len(da.TokenFilters) != 4 {
		return nil
	}
	if _, ok := da.TokenFilters[0].(*en.PossessiveFilter); !ok {
		return nil
	}
	if _, ok := da.TokenFilters[1].(*lowercase.LowerCaseFilter); !ok {
		return nil
	}
	if _, ok := da.TokenFilters[3].(cachedPorter); !ok {
		return nil
	}
	tok, ok := da.Tokenizer.(asciiTokenizer)
	if !ok {
		return nil
	}
	return &bodyAnalysis{ana: da, tok: tok, words: &wordCache{
		seed:    maphash.MakeSeed(),
		slots:   make([]atomic.Pointer[wordEntry], wordCacheSlots),
		filters: da.TokenFilters[2:], // stop words, then stems
	}}
}

// counter counts the terms of one field.
type counter struct {
	tf     index.TokenFrequencies
	spare  []index.TokenFreq // where new entries are allocated
	length int
}

func (c *counter) addEntry(e *wordEntry) {
	c.length++
	if f, ok := c.tf[e.term]; ok {
		f.SetFrequency(f.Frequency() + 1)
		return
	}
	c.tf[e.term] = c.newFreq(e.tb)
}

func (c *counter) addTerm(term []byte) {
	c.length++
	if f, ok := c.tf[string(term)]; ok {
		f.SetFrequency(f.Frequency() + 1)
		return
	}
	c.tf[string(term)] = c.newFreq(term)
}

func (c *counter) newFreq(term []byte) *index.TokenFreq {
	if len(c.spare) == cap(c.spare) {
		c.spare = make([]index.TokenFreq, 0, max(16, len(c.tf)))
	}
	c.spare = append(c.spare, index.TokenFreq{Term: term})
	f := &c.spare[len(c.spare)-1]
	f.SetFrequency(1)
	return f
}

// analyze returns the terms of input with their counts, and how many terms it has (stop
// words left out): analysis.TokenFrequency of the analyzer's tokens, and their number.
// input is the field's own copy: the analyzer's filters may rewrite it.
func (a *bodyAnalysis) analyze(input []byte) (index.TokenFrequencies, int) {
	c := counter{tf: make(index.TokenFrequencies, len(input)/12+1)}
	n := len(input)
	var lower []byte
	checked := false
	for pos := 0; pos < n; {
		q := pos
		for q < n && input[q] < 0x80 {
			q++
		}
		if q == n {
			lower = a.ascii(&c, input, pos, n, lower)
			break
		}
		if !checked {
			if !utf8.Valid(input[q:]) { // Bleve's segmenter stops there: all Bleve's
				return a.general(input)
			}
			checked = true
		}
		// The island around the non-ASCII byte, as asciiTokenizer.Tokenize cuts it.
		s := q
		for s > pos && !boundary(input, s) {
			s--
		}
		e := q + 1
		for e < n && !boundary(input, e) {
			e++
		}
		lower = a.ascii(&c, input, pos, s, lower)
		ts := a.tok.fallback.Tokenize(input[s:e])
		for _, f := range a.ana.TokenFilters {
			ts = f.Filter(ts)
		}
		for _, t := range ts {
			c.addTerm(t.Term)
		}
		pos = e
	}
	return c.tf, c.length
}

// general is the analyzer's own path: its tokens counted by analysis.TokenFrequency.
func (a *bodyAnalysis) general(input []byte) (index.TokenFrequencies, int) {
	ts := a.ana.Analyze(input)
	return analysis.TokenFrequency(ts, nil, index.IndexField), len(ts)
}

// ascii counts the terms of the words of input[from:to], all ASCII, which starts and ends
// at breaks (the words of words.ascii). lower is scratch space, returned for reuse.
func (a *bodyAnalysis) ascii(c *counter, input []byte, from, to int, lower []byte) []byte {
	for i := from; i < to; {
		cl := asciiClass[input[i]]
		if cl != clLetter && cl != clDigit && cl != clUnder {
			i++
			continue
		}
		start := i
		prev := cl
		i++
		for i < to {
			cl = asciiClass[input[i]]
			switch cl {
			case clLetter, clDigit, clUnder:
				prev = cl
				i++
				continue
			case clMidL, clMidNumL, clMidNum:
				if i+1 < to {
					next := asciiClass[input[i+1]]
					if (prev == clLetter && next == clLetter && cl != clMidNum) ||
						(prev == clDigit && next == clDigit && cl != clMidL) {
						prev = next
						i += 2
						continue
					}
				}
			}
			break
		}
		w := input[start:i]
		// The possessive filter: a final 's or 'S goes.
		if m := len(w); m >= 2 && (w[m-1] == 's' || w[m-1] == 'S') && w[m-2] == '\'' {
			w = w[:m-2]
		}
		lower = lower[:0]
		for _, b := range w {
			if 'A' <= b && b <= 'Z' {
				b += 'a' - 'A'
			}
			lower = append(lower, b)
		}
		if e := a.words.lookup(lower); !e.stop {
			c.addEntry(e)
		}
	}
	return lower
}

// bodyDocField is the body field of a document analysed by bodyAnalysis (Bleve's
// document.Field, as document.TextField with index.IndexField would be).
type bodyDocField struct {
	value  []byte
	ana    *bodyAnalysis
	tf     index.TokenFrequencies
	length int
	done   bool
}

var _ document.Field = (*bodyDocField)(nil)

func (f *bodyDocField) Name() string                        { return bodyField }
func (f *bodyDocField) ArrayPositions() []uint64            { return nil }
func (f *bodyDocField) Options() index.FieldIndexingOptions { return index.IndexField }
func (f *bodyDocField) Value() []byte                       { return f.value }
func (f *bodyDocField) NumPlainTextBytes() uint64           { return uint64(len(f.value)) }
func (f *bodyDocField) EncodedFieldType() byte              { return 't' }
func (f *bodyDocField) AnalyzedLength() int                 { return f.length }
func (f *bodyDocField) Size() int                           { return 96 + len(f.value) }

func (f *bodyDocField) AnalyzedTokenFrequencies() index.TokenFrequencies { return f.tf }

// Analyze counts the field's terms (once).
func (f *bodyDocField) Analyze() {
	if f.done {
		return
	}
	f.tf, f.length = f.ana.analyze(f.value)
	f.done = true
}
