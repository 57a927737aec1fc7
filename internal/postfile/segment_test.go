package postfile

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/character"
	"github.com/blevesearch/bleve/v2/document"
	index "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
	"github.com/blevesearch/vellum"
	"github.com/blevesearch/vellum/regexp"
	zap "github.com/blevesearch/zapx/v16"
)

// textCorpus is n documents of space-separated Zipf words, with the
// corpus of their postings (length = number of tokens, as bleve counts).
func textCorpus(rng *rand.Rand, n, vocab int) ([]string, corpus) {
	z := rand.NewZipf(rng, 1.1, 2, uint64(vocab-1))
	texts := make([]string, n)
	var c corpus
	c.lengths = make([]uint32, n)
	byTerm := map[string]*tpost{}
	for d := range n {
		k := rng.IntN(40)
		if rng.IntN(20) == 0 {
			k = 0
		}
		words := make([]string, k)
		counts := map[string]uint32{}
		for i := range words {
			words[i] = fmt.Sprintf("w%d", z.Uint64())
			counts[words[i]]++
		}
		texts[d] = strings.Join(words, " ")
		c.lengths[d] = uint32(k)
		for _, w := range slices.Sorted(mapKeys(counts)) {
			p := byTerm[w]
			if p == nil {
				p = &tpost{term: []byte(w)}
				byTerm[w] = p
			}
			p.docs = append(p.docs, uint32(d))
			p.freqs = append(p.freqs, counts[w])
		}
	}
	for _, p := range byTerm {
		c.terms = append(c.terms, *p)
	}
	slices.SortFunc(c.terms, func(a, b tpost) int { return bytes.Compare(a.term, b.term) })
	return texts, c
}

func mapKeys(m map[string]uint32) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// zapDictionary builds a zap v16 segment of texts in field "body",
// split at spaces, and returns its dictionary.
func zapDictionary(t *testing.T, texts []string) segment.TermDictionary {
	t.Helper()
	ana := &analysis.DefaultAnalyzer{Tokenizer: character.NewCharacterTokenizer(func(r rune) bool { return r != ' ' })}
	docs := make([]index.Document, len(texts))
	for i, text := range texts {
		doc := document.NewDocument(fmt.Sprintf("d%d", i))
		doc.AddField(document.NewTextFieldCustom("body", nil, []byte(text), index.IndexField, ana))
		doc.AddIDField()
		for _, f := range doc.Fields {
			f.Analyze()
		}
		docs[i] = doc
	}
	seg, _, err := (&zap.ZapPlugin{}).New(docs)
	if err != nil {
		t.Fatal(err)
	}
	dict, err := seg.Dictionary("body")
	if err != nil {
		t.Fatal(err)
	}
	return dict
}

// normer is a posting with zap v16's NormUint64.
type normer interface{ NormUint64() uint64 }

type rec struct {
	doc, freq, norm uint64
	normF           float64
}

func record(p segment.Posting) rec {
	return rec{p.Number(), p.Frequency(), p.(normer).NormUint64(), p.Norm()}
}

// drain reads an iterator to its end.
func drain(t *testing.T, it segment.PostingsIterator) []rec {
	t.Helper()
	var out []rec
	for {
		p, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if p == nil {
			return out
		}
		out = append(out, record(p))
	}
}

// TestDictionaryMatchesZap: the adapter's postings, counts, Advance,
// Contains, Cardinality and automaton iteration agree with a zap v16
// segment of the same documents.
func TestDictionaryMatchesZap(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	texts, c := textCorpus(rng, 3000, 3000)
	zd := zapDictionary(t, texts)
	r, err := Open(write(t, c))
	if err != nil {
		t.Fatal(err)
	}
	ours := r.Dictionary()
	if ours.Cardinality() != zd.Cardinality() {
		t.Fatalf("Cardinality %d, zap %d", ours.Cardinality(), zd.Cardinality())
	}
	multi := 0
	excepts := []*roaring.Bitmap{nil, roaring.New(), roaring.BitmapOf(0, 1, 2, 500, 2999, 5000)}
	big := roaring.New()
	for d := range 3000 {
		if rng.IntN(3) == 0 {
			big.Add(uint32(d))
		}
	}
	excepts = append(excepts, big)
	var opl segment.PostingsList
	var oit segment.PostingsIterator
	for _, p := range c.terms {
		var tm Term
		if _, err := r.Term(p.term, &tm); err != nil {
			t.Fatal(err)
		}
		if tm.Chunks() > 1 {
			multi++
		}
		for ei, except := range excepts {
			zpl, err := zd.PostingsList(p.term, except, nil)
			if err != nil {
				t.Fatal(err)
			}
			opl, err = ours.PostingsList(p.term, except, opl)
			if err != nil {
				t.Fatal(err)
			}
			if opl.Count() != zpl.Count() {
				t.Fatalf("%q except %d: Count %d, zap %d", p.term, ei, opl.Count(), zpl.Count())
			}
			want := drain(t, zpl.Iterator(true, true, false, nil))
			oit = opl.Iterator(true, true, false, oit)
			if got := drain(t, oit); !slices.Equal(got, want) {
				t.Fatalf("%q except %d: postings %v, zap %v", p.term, ei, got, want)
			}
			// Advance to random rising targets.
			zit, oit2 := zpl.Iterator(true, true, false, nil), opl.Iterator(true, true, false, nil)
			target := uint64(0)
			for {
				target += uint64(rng.IntN(600))
				zp, err1 := zit.Advance(target)
				op, err2 := oit2.Advance(target)
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				if (zp == nil) != (op == nil) {
					t.Fatalf("%q: Advance(%d): zap %v, ours %v", p.term, target, zp, op)
				}
				if zp == nil {
					break
				}
				if record(zp) != record(op) {
					t.Fatalf("%q: Advance(%d): %v, zap %v", p.term, target, record(op), record(zp))
				}
				target = zp.Number() + 1
				if rng.IntN(2) == 0 { // mix in Next
					zp, _ = zit.Next()
					op, _ = oit2.Next()
					if (zp == nil) != (op == nil) || zp != nil && record(zp) != record(op) {
						t.Fatalf("%q: Next after Advance differs", p.term)
					}
					if zp == nil {
						break
					}
					target = zp.Number() + 1
				}
			}
		}
		if ok, err := ours.Contains(p.term); !ok || err != nil {
			t.Fatalf("Contains(%q) = %v, %v", p.term, ok, err)
		}
	}
	if multi == 0 {
		t.Fatal("no term has several chunks")
	}
	for _, absent := range []string{"", "w", "x", "w99999999"} {
		ok, err := ours.Contains([]byte(absent))
		zok, _ := zd.Contains([]byte(absent))
		if ok != zok || err != nil {
			t.Fatalf("Contains(%q) = %v, %v; zap %v", absent, ok, err, zok)
		}
		pl, err := ours.PostingsList([]byte(absent), nil, nil)
		if err != nil || pl.Count() != 0 {
			t.Fatalf("PostingsList(%q): %v, count %d", absent, err, pl.Count())
		}
		if p, err := pl.Iterator(true, true, false, nil).Next(); p != nil || err != nil {
			t.Fatalf("absent %q iterates: %v, %v", absent, p, err)
		}
		if p, err := pl.Iterator(true, true, false, nil).Advance(3); p != nil || err != nil {
			t.Fatalf("absent %q advances: %v, %v", absent, p, err)
		}
	}
	// Automata: regexps, a prefix, ranges.
	for _, tc := range []struct {
		expr       string
		start, end []byte
	}{
		{"w1.*", nil, nil},
		{"w[0-9]", nil, nil},
		{".*7", []byte("w2"), []byte("w5")},
		{"w.*", []byte("w10"), nil},
		{"nomatch.*", nil, nil},
	} {
		re, err := regexp.New(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		got := dictEntries(t, ours.AutomatonIterator(re, tc.start, tc.end))
		want := dictEntries(t, zd.AutomatonIterator(re, tc.start, tc.end))
		if !slices.Equal(got, want) {
			t.Fatalf("%q [%q, %q): %v, zap %v", tc.expr, tc.start, tc.end, got, want)
		}
		if tc.expr != "nomatch.*" && len(got) == 0 {
			t.Fatalf("%q matched nothing", tc.expr)
		}
	}
	prefix := prefixAutomaton("w12")
	got := dictEntries(t, ours.AutomatonIterator(prefix, nil, nil))
	want := dictEntries(t, zd.AutomatonIterator(prefix, nil, nil))
	if !slices.Equal(got, want) || len(got) == 0 {
		t.Fatalf("prefix: %v, zap %v", got, want)
	}
	all := dictEntries(t, ours.AutomatonIterator(&vellum.AlwaysMatch{}, nil, nil))
	if len(all) != len(c.terms) {
		t.Fatalf("AlwaysMatch: %d terms, want %d", len(all), len(c.terms))
	}
	for i, e := range all {
		if e.Term != string(c.terms[i].term) || e.Count != uint64(len(c.terms[i].docs)) {
			t.Fatalf("entry %d: %v", i, e)
		}
	}
}

func dictEntries(t *testing.T, it segment.DictionaryIterator) []index.DictEntry {
	t.Helper()
	var out []index.DictEntry
	for {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			return out
		}
		out = append(out, *e)
	}
}

// prefixAutomaton accepts the keys that start with its prefix. States:
// i < len(p) matched i bytes; len(p) matched all; -1 dead.
type prefixAutomaton string

func (p prefixAutomaton) Start() int                 { return 0 }
func (p prefixAutomaton) IsMatch(s int) bool         { return s == len(p) }
func (p prefixAutomaton) CanMatch(s int) bool        { return s >= 0 }
func (p prefixAutomaton) WillAlwaysMatch(s int) bool { return s == len(p) }
func (p prefixAutomaton) Accept(s int, b byte) int {
	switch {
	case s < 0:
		return -1
	case s == len(p):
		return s
	case p[s] == b:
		return s + 1
	}
	return -1
}

// TestIteratorModel checks the adapter against the corpus itself on a
// larger segment (many chunks, empty chunks, extremes): Next, Advance
// over except bitmaps, and Count.
func TestIteratorModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	c := genCorpus(rng, genOpts{n: 40_000, perDoc: 6, vocab: 3000, s: 1.2, singletons: 50, everyDoc: 1, extremes: true})
	r, err := Open(write(t, c))
	if err != nil {
		t.Fatal(err)
	}
	d := r.Dictionary()
	var pl segment.PostingsList
	var it segment.PostingsIterator
	for ti, p := range c.terms {
		if ti%5 != 0 && len(p.docs) < 1000 {
			continue
		}
		except := roaring.New()
		if ti%2 == 0 {
			for range rng.IntN(len(p.docs)/10 + 3) {
				except.Add(p.docs[rng.IntN(len(p.docs))])
				except.Add(rng.Uint32N(50_000))
			}
		} else {
			for _, doc := range p.docs {
				if rng.IntN(2) == 0 {
					except.Add(doc)
				}
			}
		}
		var want []int // indices of postings not excepted
		for k, doc := range p.docs {
			if !except.Contains(doc) {
				want = append(want, k)
			}
		}
		pl, err = d.PostingsList(p.term, except, pl)
		if err != nil {
			t.Fatal(err)
		}
		if pl.Count() != uint64(len(want)) {
			t.Fatalf("%q: Count %d, want %d", p.term, pl.Count(), len(want))
		}
		// Advance to each target; the answer is the first kept posting at or
		// after it.
		it = pl.Iterator(true, true, false, it)
		pos := 0
		target := uint64(0)
		for {
			target += uint64(rng.IntN(3 * len(c.lengths) / len(p.docs)))
			for pos < len(want) && uint64(p.docs[want[pos]]) < target {
				pos++
			}
			got, err := it.Advance(target)
			if err != nil {
				t.Fatal(err)
			}
			if pos == len(want) {
				if got != nil {
					t.Fatalf("%q: Advance(%d) = %d past the end", p.term, target, got.Number())
				}
				break
			}
			k := want[pos]
			if got == nil || got.Number() != uint64(p.docs[k]) || got.Frequency() != uint64(p.freqs[k]) ||
				got.(normer).NormUint64() != uint64(c.lengths[p.docs[k]]) {
				t.Fatalf("%q: Advance(%d) = %v, want doc %d", p.term, target, got, p.docs[k])
			}
			pos++
			target = got.Number() + 1
		}
	}
}

// walkSegment reads every term of r through the adapter; errors must wrap
// ErrCorrupt.
func walkSegment(r *Reader) error {
	d := r.Dictionary()
	di := d.AutomatonIterator(&vellum.AlwaysMatch{}, nil, nil)
	except := roaring.BitmapOf(1, 5, 100)
	var pl segment.PostingsList
	var it segment.PostingsIterator
	for n := 0; n <= r.NumTerms(); n++ {
		e, err := di.Next()
		if err != nil {
			return err
		}
		if e == nil {
			return nil
		}
		pl, err = d.PostingsList([]byte(e.Term), except, pl)
		if err != nil {
			return err
		}
		_ = pl.Count()
		it = pl.Iterator(true, true, false, it)
		for k := 0; ; k++ {
			var p segment.Posting
			if k%3 == 2 {
				p, err = it.Advance(uint64(k * 10))
			} else {
				p, err = it.Next()
			}
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					return fmt.Errorf("term %q: %w", e.Term, err)
				}
				break
			}
			if p == nil {
				break
			}
			_ = p.Norm()
		}
	}
	return nil
}

type (
	segmentPostingsList     = segment.PostingsList
	segmentPostingsIterator = segment.PostingsIterator
)
