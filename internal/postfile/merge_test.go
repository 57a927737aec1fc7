package postfile

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// renumber drops each document with probability drop and numbers the
// survivors densely across inputs in order.
func renumber(rng *rand.Rand, cs []corpus, drop float64) [][]uint64 {
	var next uint64
	out := make([][]uint64, len(cs))
	for i, c := range cs {
		out[i] = make([]uint64, len(c.lengths))
		for d := range out[i] {
			if rng.Float64() < drop {
				out[i][d] = Dropped
				continue
			}
			out[i][d] = next
			next++
		}
	}
	return out
}

// mergedCorpus is the corpus Merge must produce, built directly.
func mergedCorpus(cs []corpus, ndn [][]uint64) corpus {
	var m corpus
	for i, c := range cs {
		for d, v := range ndn[i] {
			if v != Dropped {
				m.lengths = append(m.lengths, c.lengths[d])
			}
		}
	}
	byTerm := map[string]*tpost{}
	for i, c := range cs {
		for _, p := range c.terms {
			q := byTerm[string(p.term)]
			if q == nil {
				q = &tpost{term: p.term}
				byTerm[string(p.term)] = q
			}
			for k, d := range p.docs {
				if v := ndn[i][d]; v != Dropped {
					q.docs = append(q.docs, uint32(v))
					q.freqs = append(q.freqs, p.freqs[k])
				}
			}
		}
	}
	for _, q := range byTerm {
		if len(q.docs) > 0 {
			m.terms = append(m.terms, *q)
		}
	}
	slices.SortFunc(m.terms, func(a, b tpost) int { return bytes.Compare(a.term, b.term) })
	return m
}

func openAll(t *testing.T, cs []corpus) []*Reader {
	t.Helper()
	rs := make([]*Reader, len(cs))
	for i, c := range cs {
		r, err := Open(write(t, c))
		if err != nil {
			t.Fatal(err)
		}
		rs[i] = r
	}
	return rs
}

// TestMergeIdentical: Merge writes exactly the bytes a Writer writes for
// the merged postings built directly.
func TestMergeIdentical(t *testing.T) {
	mergeBothWays(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(11, 12))
		rounds := 30
		if testing.Short() {
			rounds = 10
		}
		compared := 0
		for round := range rounds {
			k := 1 + rng.IntN(4)
			cs := make([]corpus, k)
			for i := range cs {
				n := 1 + rng.IntN([]int{10, 300, 5000, 30_000}[rng.IntN(4)])
				cs[i] = genCorpus(rng, genOpts{n: n, perDoc: 1 + rng.IntN(10), vocab: 50 + rng.IntN(5000),
					s: 1.05 + rng.Float64()/2, singletons: rng.IntN(200), everyDoc: rng.IntN(2), extremes: rng.IntN(3) == 0})
			}
			drop := []float64{0, 0.01, 0.3, 0.9, 0.999}[rng.IntN(5)]
			ndn := renumber(rng, cs, drop)
			want := mergedCorpus(cs, ndn)
			name := fmt.Sprintf("round %d (%d inputs, drop %v)", round, k, drop)
			var got bytes.Buffer
			err := Merge(&got, openAll(t, cs), ndn, nil)
			if len(want.lengths) == 0 || len(want.terms) == 0 {
				if !errors.Is(err, ErrInput) {
					t.Fatalf("%s: nothing survives, Merge: %v", name, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if wantBytes := write(t, want); !bytes.Equal(got.Bytes(), wantBytes) {
				t.Fatalf("%s: Merge wrote %d bytes, Writer %d, different", name, got.Len(), len(wantBytes))
			}
			r, err := Open(got.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			checkCorpus(t, r, want)
			compared++
		}
		if compared < rounds*2/3 {
			t.Fatalf("only %d of %d rounds had survivors", compared, rounds)
		}
	})
}

// notifyWriter is a buffered destination that closes ch once more than
// after bytes have been written.
type notifyWriter struct {
	bytes.Buffer
	after int
	ch    chan struct{}
	once  sync.Once
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	if w.Len()+len(p) > w.after {
		w.once.Do(func() { close(w.ch) })
	}
	return w.Buffer.Write(p)
}

// TestMergeClosed: a closed channel stops Merge with ErrClosed, before
// it starts or within a few thousand terms of its closing.
func TestMergeClosed(t *testing.T) {
	mergeBothWays(t, func(t *testing.T) {
		rs, ndn, full := twoInputMerge(t, rand.New(rand.NewPCG(13, 14)))

		ch := make(chan struct{})
		close(ch)
		var out bytes.Buffer
		if err := Merge(&out, rs, ndn, ch); err != ErrClosed {
			t.Fatalf("closed before: %v", err)
		}

		nw := &notifyWriter{after: full.Len() / 4, ch: make(chan struct{})}
		err := Merge(nw, rs, ndn, nw.ch)
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("closed during: %v", err)
		}
		if nw.Len() >= full.Len()*3/4 {
			t.Fatalf("stopped after %d of %d bytes", nw.Len(), full.Len())
		}
	})
}

// TestMergeBadNumbers: renumberings that are not dense and in order give
// ErrInput and write nothing.
func TestMergeBadNumbers(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	cs := []corpus{
		genCorpus(rng, genOpts{n: 5, perDoc: 2, vocab: 10, s: 1.1, everyDoc: 1}),
		genCorpus(rng, genOpts{n: 4, perDoc: 2, vocab: 10, s: 1.1, everyDoc: 1}),
	}
	rs := openAll(t, cs)
	D := uint64(Dropped)
	cases := []struct {
		name string
		ndn  [][]uint64
	}{
		{"too few inputs", [][]uint64{{0, 1, 2, 3, 4}}},
		{"short", [][]uint64{{0, 1, 2, 3}, {4, 5, 6, 7}}},
		{"long", [][]uint64{{0, 1, 2, 3, 4, 5}, {6, 7, 8, 9}}},
		{"gap", [][]uint64{{0, 1, 3, 4, 5}, {6, 7, 8, 9}}},
		{"not from 0", [][]uint64{{1, 2, 3, 4, 5}, {6, 7, 8, 9}}},
		{"swap", [][]uint64{{0, 2, 1, 3, 4}, {5, 6, 7, 8}}},
		{"repeat", [][]uint64{{0, 1, 1, 2, 3}, {4, 5, 6, 7}}},
		{"inputs out of order", [][]uint64{{4, 5, 6, 7, 8}, {0, 1, 2, 3}}},
		{"interleaved", [][]uint64{{0, 2, 4, 6, 8}, {1, 3, 5, 7}}},
	}
	for _, tc := range cases {
		var out bytes.Buffer
		err := Merge(&out, rs, tc.ndn, nil)
		if !errors.Is(err, ErrInput) {
			t.Errorf("%s: %v", tc.name, err)
		}
		if out.Len() != 0 {
			t.Errorf("%s: wrote %d bytes", tc.name, out.Len())
		}
	}
	// Every document dropped: a valid file of no documents and no terms.
	var none bytes.Buffer
	if err := Merge(&none, rs, [][]uint64{{D, D, D, D, D}, {D, D, D, D}}, nil); err != nil {
		t.Fatalf("all dropped: %v", err)
	}
	if r, err := Open(none.Bytes()); err != nil || r.NumDocs() != 0 || r.NumTerms() != 0 || r.Verify() != nil {
		t.Fatalf("all dropped: open %v", err)
	}
	var out bytes.Buffer
	if err := Merge(&out, []*Reader{rs[0], nil}, [][]uint64{{0, 1, 2, 3, 4}, {}}, nil); !errors.Is(err, ErrInput) {
		t.Errorf("nil input: %v", err)
	}
	if err := Merge(&out, []*Reader{rs[0], rs[1]}, [][]uint64{{0, 1, 2, 3, 4}, {D, D, D, D}}, nil); err != nil {
		t.Errorf("an input all dropped: %v", err)
	}
}

// TestMergeCorruptInput: damage met in an input's postings gives
// ErrCorrupt, not a panic.
func TestMergeCorruptInput(t *testing.T) {
	mergeBothWays(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(17, 18))
		c := genCorpus(rng, genOpts{n: 3000, perDoc: 10, vocab: 500, s: 1.1, everyDoc: 1})
		data := write(t, c)
		f := parseFooter(data[len(data)-footerSize:])
		reported := 0
		for k := range 200 {
			bad := slices.Clone(data)
			pos := int(f.entriesOff) + rng.IntN(int(f.entryLen))
			bad[pos] ^= byte(1 + rng.IntN(255))
			r, err := Open(bad)
			if err != nil {
				t.Fatalf("damage to entries fails Open: %v", err)
			}
			ndn := renumber(rng, []corpus{c}, 0.2)
			var out bytes.Buffer
			if err := Merge(&out, []*Reader{r}, ndn, nil); err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("case %d: %v does not wrap ErrCorrupt", k, err)
				}
				reported++
			}
		}
		t.Logf("%d of 200 damaged inputs reported", reported)
		if reported < 150 {
			t.Fatalf("only %d of 200 damaged inputs reported", reported)
		}
	})
}

// mergeBothWays runs f as a subtest with merges in one goroutine, then with every merge
// in two (runPipelined).
func mergeBothWays(t *testing.T, f func(t *testing.T)) {
	old := pipelineMinDocs
	t.Cleanup(func() { pipelineMinDocs = old })
	for _, way := range []struct {
		name string
		min  uint64
	}{{"serial", math.MaxUint64}, {"pipelined", 0}} {
		pipelineMinDocs = way.min
		t.Run(way.name, f)
	}
}

// TestMergeWriteError: a destination failing anywhere in a merge fails it with the
// destination's error, in both ways (a pipelined merge stops its walk of the inputs).
func TestMergeWriteError(t *testing.T) {
	mergeBothWays(t, func(t *testing.T) {
		rs, ndn, full := twoInputMerge(t, rand.New(rand.NewPCG(19, 20)))
		for _, limit := range []int{0, 1000, full.Len() / 3, full.Len() - 1} {
			if err := Merge(&errWriter{limit: limit}, rs, ndn, nil); !errors.Is(err, errDisk) {
				t.Fatalf("limit %d of %d: %v", limit, full.Len(), err)
			}
		}
	})
}

// twoInputMerge makes two inputs of 20,000 documents with a large vocabulary, renumbers
// them dropping a tenth, and merges them: the inputs, the renumbering and the file.
func twoInputMerge(t *testing.T, rng *rand.Rand) ([]*Reader, [][]uint64, bytes.Buffer) {
	t.Helper()
	cs := []corpus{
		genCorpus(rng, genOpts{n: 20_000, perDoc: 5, vocab: 50_000, s: 1.05, singletons: 20_000}),
		genCorpus(rng, genOpts{n: 20_000, perDoc: 5, vocab: 50_000, s: 1.05, singletons: 20_000}),
	}
	rs := openAll(t, cs)
	ndn := renumber(rng, cs, 0.1)
	var full bytes.Buffer
	if err := Merge(&full, rs, ndn, nil); err != nil {
		t.Fatal(err)
	}
	return rs, ndn, full
}
