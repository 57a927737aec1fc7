package postfile

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/agentmem/memory/internal/postings"
)

// tpost is one term's postings in a test corpus.
type tpost struct {
	term  []byte
	docs  []uint32
	freqs []uint32
}

// corpus is a segment's content: its documents' lengths and its terms in
// ascending order.
type corpus struct {
	lengths []uint32
	terms   []tpost
}

func (c *corpus) postings() int {
	n := 0
	for _, t := range c.terms {
		n += len(t.docs)
	}
	return n
}

// genOpts shapes a random corpus.
type genOpts struct {
	n          int     // documents
	perDoc     int     // mean distinct Zipf terms a document
	vocab      int     // Zipf vocabulary
	s          float64 // Zipf exponent
	singletons int     // extra terms of one posting each
	everyDoc   int     // terms in every document
	extremes   bool    // a few frequencies and lengths up to 2^32-1
}

// genCorpus builds a random corpus: Zipf-distributed terms, mostly small
// frequencies, some terms in every document, many singletons.
func genCorpus(rng *rand.Rand, o genOpts) corpus {
	n := o.n
	lengths := make([]uint32, n)
	for d := range lengths {
		lengths[d] = uint32(rng.IntN(300))
	}
	if o.extremes && n > 2 {
		lengths[rng.IntN(n)] = math.MaxUint32
		lengths[rng.IntN(n)] = math.MaxUint32 - uint32(rng.IntN(1000))
		lengths[rng.IntN(n)] = 1 << 20
	}
	freq := func() uint32 {
		switch r := rng.IntN(100); {
		case r < 60:
			return 1
		case r < 85:
			return 2
		case r < 95:
			return 3
		case r < 99:
			return 4 + rng.Uint32N(60)
		default:
			return 64 + rng.Uint32N(1000)
		}
	}
	byID := map[uint64]*tpost{}
	var z *rand.Zipf
	if o.vocab > 1 && o.perDoc > 0 {
		z = rand.NewZipf(rng, o.s, 1, uint64(o.vocab-1))
	}
	for d := range n {
		if z == nil {
			break
		}
		k := rng.IntN(2*o.perDoc + 1)
		seen := map[uint64]bool{}
		for range k {
			id := z.Uint64()
			if seen[id] {
				continue
			}
			seen[id] = true
			p := byID[id]
			if p == nil {
				p = &tpost{term: fmt.Appendf(nil, "z%07d", id)}
				byID[id] = p
			}
			p.docs = append(p.docs, uint32(d))
			p.freqs = append(p.freqs, freq())
		}
	}
	var terms []tpost
	for _, p := range byID {
		// Zipf terms are drawn in document order per document, so docs
		// already rise.
		terms = append(terms, *p)
	}
	for i := range o.everyDoc {
		p := tpost{term: fmt.Appendf(nil, "every%d", i)}
		for d := range n {
			p.docs = append(p.docs, uint32(d))
			p.freqs = append(p.freqs, freq())
		}
		terms = append(terms, p)
	}
	for i := range o.singletons {
		term := fmt.Appendf(nil, "s%07d", i)
		if i%7 == 0 {
			term = append(term, byte(rng.IntN(256)), byte(rng.IntN(256)))
		}
		terms = append(terms, tpost{term: term, docs: []uint32{uint32(rng.IntN(n))}, freqs: []uint32{freq()}})
	}
	if o.extremes {
		terms = append(terms,
			tpost{term: []byte("x-maxfreq-single"), docs: []uint32{uint32(n - 1)}, freqs: []uint32{math.MaxUint32}},
			tpost{term: []byte("x-inline-edge"), docs: []uint32{0}, freqs: []uint32{1 << 31}},
			tpost{term: []byte("x-inline-edge2"), docs: []uint32{uint32(n / 2)}, freqs: []uint32{1<<31 + 1}},
		)
		if n >= 3 {
			terms = append(terms, tpost{term: []byte("x-maxfreq"), docs: []uint32{0, uint32(n / 2), uint32(n - 1)},
				freqs: []uint32{math.MaxUint32, 1, math.MaxUint32 - 1}})
		}
		terms = append(terms, tpost{term: []byte{}, docs: []uint32{0}, freqs: []uint32{3}})
	}
	if n >= 5000 {
		// Postings bunched at the start and at the end: empty chunks
		// between, and an empty last chunk.
		head, tail := tpost{term: []byte("bunch-head")}, tpost{term: []byte("bunch-tail")}
		for d := range 3000 {
			head.docs = append(head.docs, uint32(d))
			head.freqs = append(head.freqs, freq())
			tail.docs = append(tail.docs, uint32(n-3000+d))
			tail.freqs = append(tail.freqs, freq())
		}
		terms = append(terms, head, tail)
	}
	// Dedup terms (a singleton may collide with nothing, but be safe).
	slices.SortFunc(terms, func(a, b tpost) int { return bytes.Compare(a.term, b.term) })
	terms = slices.CompactFunc(terms, func(a, b tpost) bool { return bytes.Equal(a.term, b.term) })
	return corpus{lengths: lengths, terms: terms}
}

// write encodes c with a Writer.
func write(tb testing.TB, c corpus) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, c.lengths)
	for _, p := range c.terms {
		if err := w.Add(p.term, p.docs, p.freqs); err != nil {
			tb.Fatalf("Add %q: %v", p.term, err)
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	if int64(buf.Len()) != w.Size() {
		tb.Fatalf("Size %d, wrote %d", w.Size(), buf.Len())
	}
	return buf.Bytes()
}

// bruteFront is the Pareto frontier by definition: the distinct pairs no
// other pair dominates, sorted by falling frequency.
func bruteFront(freqs, lens []uint32) []Pair {
	var ps []Pair
	for k := range freqs {
		ps = append(ps, Pair{freqs[k], lens[k]})
	}
	slices.SortFunc(ps, func(a, b Pair) int {
		if c := cmp.Compare(a.Freq, b.Freq); c != 0 {
			return c
		}
		return cmp.Compare(a.Len, b.Len)
	})
	ps = slices.Compact(ps)
	var out []Pair
	if len(ps) <= 400 {
		for _, p := range ps {
			dominated := false
			for _, q := range ps {
				if q != p && q.Freq >= p.Freq && q.Len <= p.Len {
					dominated = true
					break
				}
			}
			if !dominated {
				out = append(out, p)
			}
		}
	} else {
		// By length: a pair survives if its frequency beats every pair of a
		// smaller length and it is the largest frequency of its length.
		slices.SortFunc(ps, func(a, b Pair) int {
			if c := cmp.Compare(a.Len, b.Len); c != 0 {
				return c
			}
			return cmp.Compare(b.Freq, a.Freq)
		})
		best := int64(-1)
		for i, p := range ps {
			if i > 0 && ps[i-1].Len == p.Len {
				continue
			}
			if int64(p.Freq) > best {
				out = append(out, p)
				best = int64(p.Freq)
			}
		}
	}
	slices.SortFunc(out, func(a, b Pair) int { return cmp.Compare(b.Freq, a.Freq) })
	return out
}

// walk reads everything in r through the public API: every term by
// iteration and by lookup, every chunk's count, frontier and list, every
// block, every length. It returns the first error; errors must wrap
// ErrCorrupt. It never trusts r to be valid.
func walk(r *Reader) error {
	for d := range r.NumDocs() {
		_ = r.Length(uint32(d))
	}
	var t, t2 Term
	var l postings.List
	docs, freqs := make([]uint32, postings.BlockSize), make([]uint32, postings.BlockSize)
	it := r.Iterator(nil, nil)
	var firstErr error
	note := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	terms := 0
	for terms <= r.NumTerms() {
		term, ok, err := it.Next(&t)
		if err != nil {
			note(err)
			break
		}
		if !ok {
			break
		}
		terms++
		if found, err := r.Term(term, &t2); err != nil || !found {
			note(err)
			if !found && err == nil {
				note(fmt.Errorf("%w: term %q iterated but not found", ErrCorrupt, term))
			}
		}
		_, _ = t.Count(), t.Span()
		for c := range t.Chunks() {
			_ = t.ChunkCount(c)
			front := t.Front(c)
			for k := 1; k < len(front); k++ {
				if front[k].Freq >= front[k-1].Freq || front[k].Len >= front[k-1].Len {
					return fmt.Errorf("frontier not falling: %v", front)
				}
			}
			if err := t.Chunk(c, &l); err != nil {
				note(err)
				continue
			}
			for b := range l.Blocks() {
				n, err := l.DecodeBlock(b, docs, freqs)
				if err != nil {
					if !errors.Is(err, postings.ErrCorrupt) {
						return err
					}
					note(fmt.Errorf("%w: %w", ErrCorrupt, err))
					continue
				}
				for _, d := range docs[:n] {
					_ = r.Length(d) // Chunk bounds every document by N
				}
			}
		}
	}
	note(r.checkStructure())
	return firstErr
}

// openChecked opens data and checks the whole file (Reader.Check), failing tb on an error.
func openChecked(tb testing.TB, data []byte) *Reader {
	tb.Helper()
	r, err := Open(data)
	if err != nil {
		tb.Fatal(err)
	}
	if err := r.Check(); err != nil {
		tb.Fatal(err)
	}
	return r
}
