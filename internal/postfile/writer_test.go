package postfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/agentmem/memory/internal/postings"
)

// checkCorpus reads every term of r and compares it with c: counts, spans,
// chunk geometry, each chunk's postings and frontier, and every length.
func checkCorpus(t *testing.T, r *Reader, c corpus) {
	t.Helper()
	n := uint64(len(c.lengths))
	if r.NumDocs() != len(c.lengths) || r.NumTerms() != len(c.terms) {
		t.Fatalf("NumDocs %d NumTerms %d, want %d %d", r.NumDocs(), r.NumTerms(), len(c.lengths), len(c.terms))
	}
	for d, want := range c.lengths {
		if got := r.Length(uint32(d)); got != want {
			t.Fatalf("Length(%d) = %d, want %d", d, got, want)
		}
	}
	var tm Term
	var l postings.List
	docs, freqs := make([]uint32, postings.BlockSize), make([]uint32, postings.BlockSize)
	for _, p := range c.terms {
		found, err := r.Term(p.term, &tm)
		if err != nil || !found {
			t.Fatalf("Term(%q) = %v, %v", p.term, found, err)
		}
		count := uint64(len(p.docs))
		sp := n / (count/1024 + 1)
		chunks := int((n-1)/sp + 1)
		if tm.Count() != count || tm.Span() != sp || tm.Chunks() != chunks {
			t.Fatalf("%q: count %d span %d chunks %d, want %d %d %d", p.term, tm.Count(), tm.Span(), tm.Chunks(), count, sp, chunks)
		}
		i := 0
		for ch := range chunks {
			j := i
			for j < len(p.docs) && uint64(p.docs[j]) < uint64(ch+1)*sp {
				j++
			}
			if tm.ChunkCount(ch) != j-i {
				t.Fatalf("%q chunk %d: ChunkCount %d, want %d", p.term, ch, tm.ChunkCount(ch), j-i)
			}
			var wantFront []Pair
			if j > i {
				lens := make([]uint32, j-i)
				for k := range lens {
					lens[k] = c.lengths[p.docs[i+k]]
				}
				wantFront = bruteFront(p.freqs[i:j], lens)
			}
			if got := tm.Front(ch); !slices.Equal(got, wantFront) {
				t.Fatalf("%q chunk %d: front %v, want %v", p.term, ch, got, wantFront)
			}
			if err := tm.Chunk(ch, &l); err != nil {
				t.Fatalf("%q chunk %d: %v", p.term, ch, err)
			}
			if l.Len() != j-i {
				t.Fatalf("%q chunk %d: list of %d, want %d", p.term, ch, l.Len(), j-i)
			}
			k := i
			for b := range l.Blocks() {
				m, err := l.DecodeBlock(b, docs, freqs)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(docs[:m], p.docs[k:k+m]) || !slices.Equal(freqs[:m], p.freqs[k:k+m]) {
					t.Fatalf("%q chunk %d block %d differs", p.term, ch, b)
				}
				k += m
			}
			if k != j {
				t.Fatalf("%q chunk %d: decoded to %d, want %d", p.term, ch, k, j)
			}
			i = j
		}
	}
	// Iteration yields exactly the terms, in order.
	it := r.Iterator(nil, nil)
	for k := 0; ; k++ {
		term, ok, err := it.Next(&tm)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if k != len(c.terms) {
				t.Fatalf("iterated %d terms, want %d", k, len(c.terms))
			}
			break
		}
		if k >= len(c.terms) || !bytes.Equal(term, c.terms[k].term) || tm.Count() != uint64(len(c.terms[k].docs)) {
			t.Fatalf("term %d: %q", k, term)
		}
	}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestRoundTrip writes random corpora and reads every term back.
func TestRoundTrip(t *testing.T) {
	big := 200_000
	if testing.Short() {
		big = 30_000
	}
	cases := []genOpts{
		{n: 1, perDoc: 1, vocab: 3, s: 1.1, singletons: 3, everyDoc: 1},
		{n: 2, perDoc: 2, vocab: 5, s: 1.1, singletons: 4, everyDoc: 1, extremes: true},
		{n: 7, perDoc: 3, vocab: 20, s: 1.1, singletons: 10, everyDoc: 2, extremes: true},
		{n: 1025, perDoc: 8, vocab: 200, s: 1.2, singletons: 300, everyDoc: 1, extremes: true},
		{n: 5000, perDoc: 15, vocab: 3000, s: 1.07, singletons: 2000, everyDoc: 2, extremes: true},
		{n: 40_000, perDoc: 6, vocab: 50_000, s: 1.07, singletons: 5000, everyDoc: 1, extremes: true},
		{n: big, perDoc: 3, vocab: 100_000, s: 1.3, singletons: 10_000, everyDoc: 1, extremes: true},
	}
	for i, o := range cases {
		t.Run(fmt.Sprintf("n=%d", o.n), func(t *testing.T) {
			c := genCorpus(rand.New(rand.NewPCG(uint64(i), 7)), o)
			data := write(t, c)
			r, err := Open(data)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Verify(); err != nil {
				t.Fatal(err)
			}
			if r.Size() != len(data) {
				t.Fatalf("Size %d, want %d", r.Size(), len(data))
			}
			checkCorpus(t, r, c)
			var tm Term
			for _, absent := range [][]byte{[]byte("absent"), []byte("z"), []byte("every"), {0xff, 0xff}} {
				if found, err := r.Term(absent, &tm); found || err != nil {
					t.Fatalf("Term(%q) = %v, %v", absent, found, err)
				}
			}
			t.Logf("%d docs, %d terms, %d postings, %d bytes", o.n, len(c.terms), c.postings(), len(data))
		})
	}
}

// TestLengthWidths: the lengths take 1, 2 or 4 bytes each, by the largest.
func TestLengthWidths(t *testing.T) {
	for _, tc := range []struct {
		max   uint32
		width uint8
	}{{0, 1}, {255, 1}, {256, 2}, {65535, 2}, {65536, 4}, {math.MaxUint32, 4}} {
		lengths := []uint32{tc.max, 0, tc.max / 2, 7}
		data := write(t, corpus{lengths: lengths, terms: []tpost{{[]byte("a"), []uint32{1, 3}, []uint32{1, 2}}}})
		r, err := Open(data)
		if err != nil {
			t.Fatal(err)
		}
		if got := parseFooter(data[len(data)-footerSize:]).width; got != tc.width {
			t.Errorf("max %d: width %d, want %d", tc.max, got, tc.width)
		}
		for d, want := range lengths {
			if got := r.Length(uint32(d)); got != want {
				t.Errorf("max %d: Length(%d) = %d, want %d", tc.max, d, got, want)
			}
		}
	}
}

// TestInline: one-posting terms with a frequency up to 2^31 take no entry;
// larger ones do, and both read back, as lists too.
func TestInline(t *testing.T) {
	lengths := []uint32{5, 6, 7}
	terms := []tpost{
		{[]byte("a"), []uint32{2}, []uint32{1}},
		{[]byte("b"), []uint32{1}, []uint32{1 << 31}},
		{[]byte("c"), []uint32{0}, []uint32{1<<31 + 1}},
	}
	data := write(t, corpus{lengths, terms})
	f := parseFooter(data[len(data)-footerSize:])
	r, err := Open(data)
	if err != nil {
		t.Fatal(err)
	}
	// Only "c" has an entry: count 1, then the last chunk's header.
	var tm Term
	if _, err := r.Term([]byte("c"), &tm); err != nil {
		t.Fatal(err)
	}
	if tm.inline || uint64(tm.end) != f.entryLen || tm.entryStart != 0 {
		t.Fatalf("c: inline %v, entry [%d, %d), section %d", tm.inline, tm.entryStart, tm.end, f.entryLen)
	}
	checkCorpus(t, r, corpus{lengths, terms})
}

// TestFrontier compares the frontier with the brute-force one on random
// chunks, large frequencies included.
func TestFrontier(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var fr frontier
	for i := range 3000 {
		n := 1 + rng.IntN(300)
		freqs, lens := make([]uint32, n), make([]uint32, n)
		for k := range n {
			switch i % 3 {
			case 0:
				freqs[k], lens[k] = 1+rng.Uint32N(5), rng.Uint32N(20)
			case 1:
				freqs[k], lens[k] = 1+rng.Uint32N(200), rng.Uint32N(1000)
			default:
				freqs[k], lens[k] = 1+rng.Uint32N(math.MaxUint32), rng.Uint32()
			}
		}
		got := fr.compute(freqs, lens)
		if want := bruteFront(freqs, lens); !slices.Equal(got, want) {
			t.Fatalf("case %d: %v, want %v", i, got, want)
		}
	}
}

// TestWriterBadInput: each contract breach gives ErrInput, the writer
// stays failed, and its output does not open.
func TestWriterBadInput(t *testing.T) {
	lengths := []uint32{1, 2, 3, 4}
	ok := tpost{[]byte("b"), []uint32{0, 2}, []uint32{1, 1}}
	cases := []struct {
		name    string
		lengths []uint32
		terms   []tpost
	}{
		{"no documents", []uint32{}, []tpost{ok}},
		{"equal terms", lengths, []tpost{ok, ok}},
		{"descending terms", lengths, []tpost{ok, {[]byte("a"), []uint32{1}, []uint32{1}}}},
		{"empty postings", lengths, []tpost{{[]byte("a"), nil, nil}}},
		{"length mismatch", lengths, []tpost{{[]byte("a"), []uint32{1, 2}, []uint32{1}}}},
		{"docs not ascending", lengths, []tpost{{[]byte("a"), []uint32{2, 1}, []uint32{1, 1}}}},
		{"docs repeated", lengths, []tpost{{[]byte("a"), []uint32{1, 1}, []uint32{1, 1}}}},
		{"doc >= N", lengths, []tpost{{[]byte("a"), []uint32{1, 4}, []uint32{1, 1}}}},
		{"single doc >= N", lengths, []tpost{{[]byte("a"), []uint32{4}, []uint32{1}}}},
		{"freq 0", lengths, []tpost{{[]byte("a"), []uint32{1, 2}, []uint32{1, 0}}}},
		{"bad term after good", lengths, []tpost{ok, {[]byte("c"), []uint32{3}, []uint32{0}}, {[]byte("d"), []uint32{3}, []uint32{1}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := NewWriter(&buf, tc.lengths)
			var addErr error
			for _, p := range tc.terms {
				if err := w.Add(p.term, p.docs, p.freqs); err != nil && addErr == nil {
					addErr = err
				}
			}
			err := w.Close()
			if err == nil {
				t.Fatal("Close succeeded")
			}
			if !errors.Is(err, ErrInput) || (addErr != nil && !errors.Is(addErr, ErrInput)) {
				t.Fatalf("errors %v, %v do not wrap ErrInput", addErr, err)
			}
			if err := w.Add([]byte("zzz"), []uint32{0}, []uint32{1}); !errors.Is(err, ErrInput) {
				t.Fatalf("Add after failure: %v", err)
			}
			if _, err := Open(buf.Bytes()); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("output opens: %v", err)
			}
		})
	}
}

// errWriter fails after limit bytes.
type errWriter struct{ n, limit int }

var errDisk = errors.New("disk full")

func (w *errWriter) Write(p []byte) (int, error) {
	if w.n+len(p) > w.limit {
		return 0, errDisk
	}
	w.n += len(p)
	return len(p), nil
}

// TestWriterWriteError: a failing destination's error comes back.
func TestWriterWriteError(t *testing.T) {
	c := genCorpus(rand.New(rand.NewPCG(1, 1)), genOpts{n: 3000, perDoc: 10, vocab: 2000, s: 1.1, everyDoc: 1})
	full := write(t, c)
	for _, limit := range []int{0, 100, len(full) / 2, len(full) - 1} {
		w := NewWriter(&errWriter{limit: limit}, c.lengths)
		var err error
		for _, p := range c.terms {
			if err = w.Add(p.term, p.docs, p.freqs); err != nil {
				break
			}
		}
		if cerr := w.Close(); !errors.Is(cerr, errDisk) || (err != nil && !errors.Is(err, errDisk)) {
			t.Fatalf("limit %d: %v, %v", limit, err, cerr)
		}
	}
}

// TestWriterBuffered: a buffered destination is written directly; the
// bytes are the same.
func TestWriterBuffered(t *testing.T) {
	c := genCorpus(rand.New(rand.NewPCG(1, 2)), genOpts{n: 3000, perDoc: 10, vocab: 2000, s: 1.1, everyDoc: 1})
	want := write(t, c)
	var out bytes.Buffer
	w := NewWriter(struct{ io.Writer }{&out}, c.lengths) // hides AvailableBuffer
	if w.bw == nil {
		t.Fatal("unbuffered destination not buffered")
	}
	for _, p := range c.terms {
		if err := w.Add(p.term, p.docs, p.freqs); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatal("bytes differ")
	}
}

// TestTermNoAlloc: looking a term up allocates nothing once the Term has
// grown.
func TestTermNoAlloc(t *testing.T) {
	c := genCorpus(rand.New(rand.NewPCG(5, 6)), genOpts{n: 20_000, perDoc: 10, vocab: 5000, s: 1.1, singletons: 100, everyDoc: 1})
	r, err := Open(write(t, c))
	if err != nil {
		t.Fatal(err)
	}
	var tm Term
	var l postings.List
	for _, p := range c.terms {
		if _, err := r.Term(p.term, &tm); err != nil {
			t.Fatal(err)
		}
		for ch := range tm.Chunks() {
			if err := tm.Chunk(ch, &l); err != nil {
				t.Fatal(err)
			}
		}
	}
	k := 0
	allocs := testing.AllocsPerRun(1000, func() {
		p := c.terms[k%len(c.terms)]
		k += 7
		if _, err := r.Term(p.term, &tm); err != nil {
			t.Fatal(err)
		}
		if err := tm.Chunk(0, &l); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations a lookup", allocs)
	}
}

// TestWriterEmpty: files of no terms (every body empty) and of no documents are valid:
// they open, verify and look nothing up.
func TestWriterEmpty(t *testing.T) {
	for _, lengths := range [][]uint32{{0, 0, 3}, {}} {
		var buf bytes.Buffer
		w := NewWriter(&buf, lengths)
		if err := w.Close(); err != nil {
			t.Fatalf("%d documents, no terms: %v", len(lengths), err)
		}
		r := openChecked(t, buf.Bytes())
		var tm Term
		if ok, err := r.Term([]byte("a"), &tm); ok || err != nil {
			t.Fatalf("lookup in an empty file: %v, %v", ok, err)
		}
		if r.NumDocs() != len(lengths) || r.NumTerms() != 0 {
			t.Fatalf("%d docs, %d terms", r.NumDocs(), r.NumTerms())
		}
		for d, l := range lengths {
			if r.Length(uint32(d)) != l {
				t.Fatalf("length of %d: %d, want %d", d, r.Length(uint32(d)), l)
			}
		}
	}
}

// TestFixedSpan: with Options.FixedSpan every term's chunks span that many documents,
// however few postings it has; the span is recorded in the file (a reader needs no
// option) and carried over by Merge, which refuses inputs of different spans.
func TestFixedSpan(t *testing.T) {
	lengths := make([]uint32, 100)
	for i := range lengths {
		lengths[i] = uint32(i%7 + 1)
	}
	build := func(o Options) *Reader {
		var buf bytes.Buffer
		w := NewWriterOptions(&buf, lengths, o)
		if err := w.Add([]byte("a"), []uint32{1, 5, 40, 41, 99}, []uint32{1, 2, 3, 1, 1}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := Open(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := build(Options{FixedSpan: 4})
	var tm Term
	if ok, err := r.Term([]byte("a"), &tm); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if tm.Span() != 4 || tm.Chunks() != 25 || tm.ChunkCount(0) != 1 || tm.ChunkCount(1) != 1 || tm.ChunkCount(10) != 2 || tm.ChunkCount(24) != 1 {
		t.Fatalf("span %d, %d chunks, counts %d %d %d %d", tm.Span(), tm.Chunks(), tm.ChunkCount(0), tm.ChunkCount(1), tm.ChunkCount(10), tm.ChunkCount(24))
	}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	if d := build(Options{}); func() bool { d.Term([]byte("a"), &tm); return tm.Chunks() != 1 }() {
		t.Fatalf("default: %d chunks, want 1", tm.Chunks())
	}
	ndn := func() []uint64 {
		n := make([]uint64, len(lengths))
		for i := range n {
			n[i] = uint64(i)
		}
		return n
	}
	var out bytes.Buffer
	if err := Merge(&out, []*Reader{r}, [][]uint64{ndn()}, nil); err != nil {
		t.Fatal(err)
	}
	m, err := Open(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if m.Term([]byte("a"), &tm); tm.Span() != 4 {
		t.Fatalf("merged: span %d, want 4", tm.Span())
	}
	second := make([]uint64, len(lengths))
	for i := range second {
		second[i] = uint64(len(lengths) + i)
	}
	if err := Merge(&out, []*Reader{r, build(Options{FixedSpan: 8})}, [][]uint64{ndn(), second}, nil); !errors.Is(err, ErrInput) {
		t.Fatalf("inputs of two spans: %v, want ErrInput", err)
	}
}

// TestLengthsBatch: Lengths reads what Length reads, for every width.
func TestLengthsBatch(t *testing.T) {
	for _, top := range []uint32{200, 60000, 1 << 30} {
		lengths := make([]uint32, 1000)
		for i := range lengths {
			lengths[i] = uint32(i*7919) % (top + 1)
		}
		var buf bytes.Buffer
		if err := NewWriter(&buf, lengths).Close(); err != nil {
			t.Fatal(err)
		}
		r, err := Open(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		docs := []uint32{0, 1, 500, 998, 999, 3, 3}
		got := make([]uint32, len(docs))
		r.Lengths(docs, got)
		for i, d := range docs {
			if got[i] != lengths[d] || r.Length(d) != lengths[d] {
				t.Fatalf("max %d, doc %d: Lengths %d, Length %d, want %d", top, d, got[i], r.Length(d), lengths[d])
			}
		}
	}
}

// TestManyTermsSmallDictionary: a version 2 dictionary (an FST) whose terms share most of
// their bytes holds more terms than it has bytes (10,000 numbered terms); such a file opens
// and reads.
func TestManyTermsSmallDictionary(t *testing.T) {
	lengths := make([]uint32, 10000)
	var buf bytes.Buffer
	w := NewWriter(&buf, lengths)
	for i := range 10000 {
		if err := w.Add(fmt.Appendf(nil, "b%05d", i), []uint32{7}, []uint32{1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data := toVersion2(t, buf.Bytes())
	if f := parseFooter(data[len(data)-footerSize:]); f.dictLen >= f.numTerms {
		t.Fatalf("dictionary of %d bytes for %d terms: not the case under test", f.dictLen, f.numTerms)
	}
	r := openChecked(t, data)
	var tm Term
	if ok, err := r.Term([]byte("b04321"), &tm); !ok || err != nil || tm.Count() != 1 {
		t.Fatalf("b04321: %v %v %d", ok, err, tm.Count())
	}
	t.Logf("%d terms, file %d bytes", r.NumTerms(), r.Size())
}
