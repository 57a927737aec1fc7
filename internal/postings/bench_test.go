package postings

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// zipfCorpus builds the postings of a synthetic corpus: docs documents of
// termsPerDoc distinct terms each, drawn from a Zipf distribution with
// exponent s over vocab terms; frequencies are mostly 1-3. The result
// holds one list per term that occurs, in term order.
func zipfCorpus(docs, termsPerDoc, vocab int, s float64) []plist {
	rng := rand.New(rand.NewPCG(42, 43))
	z := rand.NewZipf(rng, s, 1, uint64(vocab-1))
	lists := make([]plist, vocab)
	seen := make(map[uint64]bool, termsPerDoc)
	for d := range docs {
		clear(seen)
		for len(seen) < termsPerDoc {
			term := z.Uint64()
			if seen[term] {
				continue
			}
			seen[term] = true
			var f uint32
			switch r := rng.IntN(100); {
			case r < 60:
				f = 1
			case r < 85:
				f = 2
			case r < 95:
				f = 3
			default:
				f = 4 + rng.Uint32N(6)
			}
			lists[term].docs = append(lists[term].docs, uint32(d))
			lists[term].freqs = append(lists[term].freqs, f)
		}
	}
	out := lists[:0]
	for _, p := range lists {
		if len(p.docs) > 0 {
			out = append(out, p)
		}
	}
	return out
}

// zipfSize encodes every list of the corpus and returns the total encoded
// bytes, the number of postings and the number of lists.
func zipfSize(tb testing.TB, corpus []plist) (bytes, postings int) {
	var w ListWriter
	var buf []byte
	for _, p := range corpus {
		for i := range p.docs {
			if err := w.Add(p.docs[i], p.freqs[i]); err != nil {
				tb.Fatal(err)
			}
		}
		buf = w.Finish(buf[:0])
		bytes += len(buf)
		postings += len(p.docs)
	}
	return bytes, postings
}

// TestZipfSize checks the size target: under 2 bytes a posting on a
// Zipf-distributed synthetic corpus of 10,000 documents x 60 terms.
func TestZipfSize(t *testing.T) {
	corpus := zipfCorpus(10_000, 60, 50_000, 1.07)
	bytes, postings := zipfSize(t, corpus)
	bpp := float64(bytes) / float64(postings)
	t.Logf("%d lists, %d postings, %d bytes: %.3f B/posting", len(corpus), postings, bytes, bpp)
	if bpp >= 2 {
		t.Errorf("%.3f bytes a posting, want < 2", bpp)
	}
}

// BenchmarkZipfSize reports bytes per posting (B/posting) over all lists
// of the Zipf corpus, at a few Zipf exponents, and the encoding time.
func BenchmarkZipfSize(b *testing.B) {
	for _, s := range []float64{1.07, 1.2} {
		corpus := zipfCorpus(10_000, 60, 50_000, s)
		b.Run(fmt.Sprintf("s=%.2f", s), func(b *testing.B) {
			var bytes, postings int
			for b.Loop() {
				bytes, postings = zipfSize(b, corpus)
			}
			b.ReportMetric(float64(bytes)/float64(postings), "B/posting")
			b.ReportMetric(float64(len(corpus)), "lists")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(postings), "ns/posting")
		})
	}
}

var decodeCases = []struct {
	name            string
	maxGap, maxFreq uint32
}{
	{"gap1/freq1", 1, 1},           // doc width 0, freq width 0
	{"gap1-2/freq1-3", 2, 3},       // doc width 1, freq width 2
	{"gap1-8/freq1-3", 8, 3},       // doc width 3
	{"gap1-4096/freq1-3", 4096, 3}, // doc width 12
	{"gap1-65536/freq1-9", 65536, 9},
}

// BenchmarkDecodeBlock decodes full blocks of lists of several densities
// and reports ns/posting.
func BenchmarkDecodeBlock(b *testing.B) {
	for _, c := range decodeCases {
		p := genList(rand.New(rand.NewPCG(1, 1)), 64*BlockSize, 0, c.maxGap, c.maxFreq)
		l, err := OpenList(encode(b, p))
		if err != nil {
			b.Fatal(err)
		}
		name := fmt.Sprintf("%s/dw%d/fw%d", c.name, l.info[1].dw, l.info[1].fw)
		b.Run(name, func(b *testing.B) {
			docs, freqs := make([]uint32, BlockSize), make([]uint32, BlockSize)
			i, postings := 0, 0
			for b.Loop() {
				n, err := l.DecodeBlock(i, docs, freqs)
				if err != nil {
					b.Fatal(err)
				}
				postings += n
				if i++; i == l.Blocks() {
					i = 0
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(postings), "ns/posting")
		})
	}
}

// BenchmarkEncode encodes lists of 10,000 postings and reports ns/posting.
func BenchmarkEncode(b *testing.B) {
	for _, c := range decodeCases[1:4] {
		p := genList(rand.New(rand.NewPCG(1, 1)), 10_000, 0, c.maxGap, c.maxFreq)
		b.Run(c.name, func(b *testing.B) {
			var w ListWriter
			var buf []byte
			for b.Loop() {
				for i, d := range p.docs {
					if err := w.Add(d, p.freqs[i]); err != nil {
						b.Fatal(err)
					}
				}
				buf = w.Finish(buf[:0])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(p.docs)), "ns/posting")
		})
	}
}

// BenchmarkOpenList opens a 10,000-posting list (79 blocks).
func BenchmarkOpenList(b *testing.B) {
	buf := encode(b, genList(rand.New(rand.NewPCG(1, 1)), 10_000, 0, 8, 3))
	var l List
	for b.Loop() {
		if err := l.Reset(buf); err != nil {
			b.Fatal(err)
		}
	}
}
