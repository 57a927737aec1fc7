package bm25

import (
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"

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
// slot; a colliding word replaces it), read without locks. 8 MiB of slots: text whose
// vocabulary grows as real text's does (bench/zipfgen) missed a table of 1<<17 slots on
// 43 % of the words it was asked for, and each miss runs the stop and stemming filters.
// (1<<22 slots loaded 1M passages of it no faster, and would keep up to four times the
// entries on the heap, each marked by every collection.)
const wordCacheSlots = 1 << 20

// wordEntry is what the analyzer's filters make of one lower-cased ASCII word.
type wordEntry struct {
	// The fields a lookup reads come first, in the entry's first 64 bytes.
	k [3]uint64 // word's first 24 bytes, packed as bodyAnalysis.ascii packs them
	// local holds the id of the term in the last two local tables (localWords) that
	// counted the word through this entry, one a lane (localWords.lane), as the table's
	// tag<<localIDBits | id: the next count from such a table skips its term map.
	local [2]atomic.Uint64
	tb    []byte // the term indexed, the word's stem (shared: never modified); nil for a stop word
	word  string // the lower-cased word
}

// wordCache maps lower-cased ASCII words to their entries, safe for concurrent use.
type wordCache struct {
	seed    maphash.Seed
	slots   []atomic.Pointer[wordEntry]
	filters []analysis.TokenFilter // the analyzer's filters after the lower-case one
}

// lookup returns the entry of the lower-cased word w (k: its first 24 bytes packed),
// computing it with the filters when the word's slot holds another. A word of up to 24
// bytes is compared by k and its length, which the entry holds: no load of its bytes.
func (c *wordCache) lookup(w []byte, k [3]uint64) *wordEntry {
	slot := c.slot(w)
	if e := slot.Load(); e != nil && e.k == k && len(e.word) == len(w) && (len(w) <= 24 || e.word == string(w)) {
		return e
	}
	e := &wordEntry{k: k, word: string(w)}
	ts := analysis.TokenStream{&analysis.Token{Term: []byte(e.word), Type: analysis.AlphaNumeric}}
	for _, f := range c.filters {
		ts = f.Filter(ts)
	}
	if len(ts) > 0 {
		e.tb = append(make([]byte, 0, max(len(ts[0].Term), 1)), ts[0].Term...) // (not nil)
	}
	slot.Store(e)
	return e
}

// slot returns the slot of the lower-cased word w.
func (c *wordCache) slot(w []byte) *atomic.Pointer[wordEntry] {
	return &c.slots[maphash.Bytes(c.seed, w)&(wordCacheSlots-1)]
}

// bodyAnalysis is the one-pass analysis of the English analyzer ana (cachedEnglish's
// layout: a tokenizer that is asciiTokenizer, then the possessive, lower-case, stop and
// stemming filters).
type bodyAnalysis struct {
	ana   *analysis.DefaultAnalyzer
	tok   asciiTokenizer
	words *wordCache
	local *sync.Pool // of *localWords
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
	return &bodyAnalysis{ana: da, tok: tok, local: &sync.Pool{New: newLocalWords}, words: &wordCache{
		seed:    maphash.MakeSeed(),
		slots:   make([]atomic.Pointer[wordEntry], wordCacheSlots),
		filters: da.TokenFilters[2:], // stop words, then stems
	}}
}

// A table shared by all goroutines costs a trip to memory or two a word (its slot, then
// the entry the slot points to): most of the analysis. Each analysis therefore borrows a
// localWords, a table of its own (one per core, through a sync.Pool) whose slots hold
// short words inline and the id of their term, and counts terms by id; the shared
// wordCache answers what the local table has not seen.

// Sizes of the local word table: localSlots slots (32 bytes each: 8 MiB), of which
// localMaxWords are filled at most (words longer than 24 bytes are not kept), and the terms
// it numbers, forgotten between two documents past localMaxTerms. On bench/zipfgen's text
// (200,000 passages, one goroutine) these sizes and the shared table's analyse in 4.6–5.0 s
// against 7.3–7.9 s with a quarter of each (3.55 million words went to the shared table,
// 0.93 million with these); a whole 1M load gains less (BENCHMARKS.md §0zo).
const (
	localSlots    = 1 << 18
	localMaxWords = localSlots / 2
	localIDBits   = 20 // bits of a term id in wordEntry.local (ids past them are not kept there)
)

// localTags numbers the local tables and their refills: a table takes a new tag when it is
// made and each time it forgets its terms (reset), so an id recorded in a wordEntry under
// an older tag is not used.
var localTags atomic.Uint64

// localLanes deals the local tables their lanes in wordEntry.local, in turn: the two
// tables of two goroutines analysing at once keep their ids apart.
var localLanes atomic.Uint32

var localMaxTerms = 1 << 19 // a variable for tests

// wordSlot is one word of a local table: its lower-cased bytes packed little-endian in k
// (zero padded), its length n and ref: 0 empty, 1 a stop word, 2+id the term id.
type wordSlot struct {
	k   [3]uint64
	ref uint32
	n   uint8
}

// localWords is one goroutine's word table and the term counts of the document it is
// analysing.
type localWords struct {
	slots   []wordSlot
	words   int
	terms   []localTerm      // by id
	ids     map[string]int32 // term → id
	counts  []int32          // by id: occurrences in the current document
	touched []int32          // ids counted in the current document
	length  int              // terms counted in the current document (with repeats)
	tag     uint64           // this table's tag while its ids last (localTags)
	lane    int              // the slot of wordEntry.local this table uses

	// The words of the text being analysed, lower cased, wait in a batch (countBatch).
	lower []byte      // their bytes
	batch []batchWord // the words, in order
	pend  []int32     // the batch's words the table has no slot for
	sink  uint64      // what countBatch's loads read (kept so that they are made)
}

// batchWord is a word of localWords.batch: its bytes are lower[off:end], the first 24
// packed in k, and h is its hash in the table (words of up to 24 bytes).
type batchWord struct {
	off, end int
	k        [3]uint64
	h        uint64
}

// wordBatch is the most words a batch holds.
const wordBatch = 256

// localTerm is a term of a local table: its key in a document's term map and its bytes.
type localTerm struct {
	key string
	tb  []byte
}

// newLocalWords makes an empty local table (a bodyAnalysis's pool's New: each analysis
// has its own tables, since what a word makes, a stop word or which term, depends on the
// analyzer's filters).
func newLocalWords() any {
	return &localWords{slots: make([]wordSlot, localSlots), ids: map[string]int32{}, tag: localTags.Add(1), lane: int(localLanes.Add(1) & 1)}
}

// reset empties the table (between documents).
func (l *localWords) reset() {
	clear(l.slots)
	clear(l.ids)
	l.words, l.terms, l.counts = 0, l.terms[:0], l.counts[:0]
	l.tag = localTags.Add(1)
}

// id returns the id of term, adding it (a copy) when new.
func (l *localWords) id(term []byte) int32 {
	if id, ok := l.ids[string(term)]; ok {
		return id
	}
	key := string(term)
	return l.add(key, unsafe.Slice(unsafe.StringData(key), len(key)))
}

// sharedID is id for the bytes of a term that are never modified (a wordEntry's): they
// are kept, not copied, so that the segment builder sees the same bytes (addShared) for
// the term whichever goroutine counted it.
func (l *localWords) sharedID(tb []byte) int32 {
	key := unsafe.String(unsafe.SliceData(tb), len(tb))
	if id, ok := l.ids[key]; ok {
		return id
	}
	return l.add(key, tb)
}

// add numbers a new term, key as a string and tb as bytes (the same bytes, never modified).
func (l *localWords) add(key string, tb []byte) int32 {
	id := int32(len(l.terms))
	l.terms = append(l.terms, localTerm{key: key, tb: tb})
	l.counts = append(l.counts, 0)
	l.ids[key] = id
	return id
}

// entryID returns the id of e's term (a word that is no stop word): from e when this
// table recorded it there, else from the term map (and recorded). Words the local table
// has no slot for reach here for each occurrence; the entry is one load away, the map
// a few more.
func (l *localWords) entryID(e *wordEntry) int32 {
	local := &e.local[l.lane]
	if v := local.Load(); v>>localIDBits == l.tag {
		return int32(v & (1<<localIDBits - 1))
	}
	id := l.sharedID(e.tb)
	if id < 1<<localIDBits {
		local.Store(l.tag<<localIDBits | uint64(id))
	}
	return id
}

// count counts one occurrence of term id.
func (l *localWords) count(id int32) {
	if l.counts[id] == 0 {
		l.touched = append(l.touched, id)
	}
	l.counts[id]++
	l.length++
}

// countBatch counts the words of the batch, in order, and empties it.
//
// Most of a word's cost is the wait for memory: its slot in this table (8 MiB, larger than
// the processor's caches), and for a word the table does not hold, its slot in the shared
// table and the entry it points to. Counted one after the other, each word waits for its
// loads in turn. So the batch's loads are made first, in loops whose loads do not depend
// on each other, which the processor overlaps: the slots of all its words, then the
// shared slots of the words found to have none here, then their entries. The counting
// pass then finds them in the caches.
func (l *localWords) countBatch(shared *wordCache) {
	if len(l.batch) == 0 {
		return
	}
	shift := 64 - bits.TrailingZeros(uint(len(l.slots)))
	var sink uint64
	for i := range l.batch {
		b := &l.batch[i]
		if n := b.end - b.off; n <= 24 && n > 0 {
			b.h = wordHash(b.k, n)
			sink += uint64(l.slots[b.h>>shift].ref)
		}
	}
	pend := l.pend[:0]
	for i := range l.batch {
		if b := &l.batch[i]; !l.holds(b) {
			pend = append(pend, int32(i))
		}
	}
	if len(pend) > 0 {
		var entries [wordBatch]*wordEntry
		for j, i := range pend {
			b := &l.batch[i]
			entries[j] = shared.slot(l.lower[b.off:b.end]).Load()
		}
		for _, e := range entries[:len(pend)] {
			if e != nil {
				sink += e.k[0] + uint64(cap(e.tb))
			}
		}
	}
	l.sink += sink
	for i := range l.batch {
		b := &l.batch[i]
		l.word(shared, l.lower[b.off:b.end], b.k, b.h)
	}
	l.batch, l.lower, l.pend = l.batch[:0], l.lower[:0], pend[:0]
	if cap(l.lower) > maxLowerKept {
		l.lower = nil // (a text's one long word: not kept with the pooled table)
	}
}

// maxLowerKept is the most bytes of localWords.lower kept between batches.
const maxLowerKept = 64 << 10

// wordHash is the hash of a word of n bytes (1 to 24) packed in k.
func wordHash(k [3]uint64, n int) uint64 {
	return (bits.RotateLeft64(k[0]*0x9E3779B97F4A7C15, 31) ^ bits.RotateLeft64(k[1]*0x94D049BB133111EB, 17) ^ k[2] ^ uint64(n)) * 0xC2B2AE3D27D4EB4F
}

// holds reports whether the table has a slot for b (a word of up to 24 bytes). word probes
// for the slot again, finding it in the caches: sharing one probe function between the two,
// or folding countBatch's loops into fewer, analysed 5–8 % slower (session 45).
func (l *localWords) holds(b *batchWord) bool {
	n := b.end - b.off
	if n > 24 || n == 0 {
		return false
	}
	shift := 64 - bits.TrailingZeros(uint(len(l.slots)))
	mask := uint64(len(l.slots) - 1)
	for i := b.h >> shift; ; i = (i + 1) & mask {
		s := &l.slots[i]
		if s.ref == 0 {
			return false
		}
		if s.k == b.k && s.n == uint8(n) {
			return true
		}
	}
}

// word counts the lower-cased ASCII word w (k: its first 24 bytes packed, h: its hash
// when it is 1 to 24 bytes long): through its slot when the table holds it, else through
// the shared table (and a new slot while the table has room: the words seen first, the
// frequent ones, keep theirs).
func (l *localWords) word(shared *wordCache, w []byte, k [3]uint64, h uint64) {
	if len(w) <= 24 && len(w) > 0 {
		shift := 64 - bits.TrailingZeros(uint(len(l.slots)))
		mask := uint64(len(l.slots) - 1)
		for i := h >> shift; ; i = (i + 1) & mask {
			s := &l.slots[i]
			if s.ref == 0 {
				if l.words >= localMaxWords {
					break // full: the shared table answers
				}
				var ref uint32 = 1
				if e := shared.lookup(w, k); e.tb != nil {
					ref = 2 + uint32(l.entryID(e))
				}
				*s = wordSlot{k: k, n: uint8(len(w)), ref: ref}
				l.words++
			} else if s.k != k || s.n != uint8(len(w)) {
				continue
			}
			if s.ref >= 2 {
				l.count(int32(s.ref - 2))
			}
			return
		}
	}
	if e := shared.lookup(w, k); e.tb != nil {
		l.count(l.entryID(e))
	}
}

// frequencies returns the counted terms and their number, and readies the table for the
// next document.
func (l *localWords) frequencies() ([]fieldTerm, int) {
	tc := make([]fieldTerm, len(l.touched))
	for i, id := range l.touched {
		tc[i] = fieldTerm{term: l.terms[id].tb, n: int(l.counts[id])}
		l.counts[id] = 0
	}
	n := l.length
	l.touched, l.length = l.touched[:0], 0
	return tc, n
}

// fieldTerm is one distinct term of an analysed field and its number of occurrences.
type fieldTerm struct {
	term []byte // shared: never modified
	n    int
}

// tokenFrequencies is terms as Bleve's term map (no locations).
func tokenFrequencies(terms []fieldTerm) index.TokenFrequencies {
	tf := make(index.TokenFrequencies, len(terms))
	fs := make([]index.TokenFreq, len(terms))
	for i, t := range terms {
		fs[i].Term = t.term
		fs[i].SetFrequency(t.n)
		tf[string(t.term)] = &fs[i]
	}
	return tf
}

// analyze returns the distinct terms of input with their counts, and how many terms it has
// (stop words left out): analysis.TokenFrequency of the analyzer's tokens, and their
// number. input is the field's own copy: the analyzer's filters may rewrite it.
func (a *bodyAnalysis) analyze(input []byte) ([]fieldTerm, int) {
	n := len(input)
	for pos := 0; pos < n; pos++ {
		if input[pos] >= 0x80 && !utf8.Valid(input[pos:]) {
			return a.general(input) // Bleve's segmenter stops there: all Bleve's
		}
		if input[pos] >= 0x80 {
			break
		}
	}
	l := a.local.Get().(*localWords)
	defer a.local.Put(l)
	if len(l.terms) >= localMaxTerms {
		l.reset()
	}
	for pos := 0; pos < n; {
		q := pos
		for q < n && input[q] < 0x80 {
			q++
		}
		if q == n {
			a.ascii(l, input, pos, n)
			break
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
		a.ascii(l, input, pos, s)
		ts := a.tok.fallback.Tokenize(input[s:e])
		for _, f := range a.ana.TokenFilters {
			ts = f.Filter(ts)
		}
		for _, t := range ts {
			l.count(l.id(t.Term))
		}
		pos = e
	}
	return l.frequencies()
}

// general is the analyzer's own path: its tokens counted by analysis.TokenFrequency.
func (a *bodyAnalysis) general(input []byte) ([]fieldTerm, int) {
	ts := a.ana.Analyze(input)
	tf := analysis.TokenFrequency(ts, nil, index.IndexField)
	tc := make([]fieldTerm, 0, len(tf))
	for _, f := range tf {
		tc = append(tc, fieldTerm{term: f.Term, n: f.Frequency()})
	}
	return tc, len(ts)
}

// ascii counts the terms of the words of input[from:to], all ASCII, which starts and ends
// at breaks (the words of words.ascii).
func (a *bodyAnalysis) ascii(l *localWords, input []byte, from, to int) {
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
		var k [3]uint64
		off := len(l.lower)
		for j, b := range w {
			if 'A' <= b && b <= 'Z' {
				b += 'a' - 'A'
			}
			l.lower = append(l.lower, b)
			if j < 24 {
				k[j>>3] |= uint64(b) << (8 * (j & 7))
			}
		}
		l.batch = append(l.batch, batchWord{off: off, end: len(l.lower), k: k})
		if len(l.batch) == wordBatch {
			l.countBatch(a.words)
		}
	}
	l.countBatch(a.words)
}

// bodyDocField is the body field of a document analysed by bodyAnalysis (Bleve's
// document.Field, as document.TextField with index.IndexField would be).
type bodyDocField struct {
	value  []byte
	ana    *bodyAnalysis
	terms  []fieldTerm            // the distinct terms (segment building reads these)
	tf     index.TokenFrequencies // terms as Bleve's map, built when first asked for
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

// AnalyzedTokenFrequencies returns the terms as Bleve's map, built on the first call (the
// segment builder of bm25_segment.go reads the terms without it). Not safe for concurrent
// first calls: Bleve reads a document's fields on one goroutine.
func (f *bodyDocField) AnalyzedTokenFrequencies() index.TokenFrequencies {
	if f.tf == nil && f.done {
		f.tf = tokenFrequencies(f.terms)
	}
	return f.tf
}

// Analyze counts the field's terms (once).
func (f *bodyDocField) Analyze() {
	if f.done {
		return
	}
	f.terms, f.length = f.ana.analyze(f.value)
	f.done = true
}
