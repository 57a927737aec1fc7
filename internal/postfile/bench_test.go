package postfile

import (
	"bytes"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/agentmem/memory/internal/postings"
	"github.com/agentmem/memory/internal/zipfgen"
)

// realCorpus is the segment of the first n passages of internal/zipfgen's
// synthetic Wikipedia-like corpus (Heaps' and Zipf's laws calibrated on the
// 21M-passage Wikipedia), lower-cased and split at non-alphanumerics: a
// term dictionary and posting-list shape like real text's. Passages are
// built by 4 goroutines.
func realCorpus(tb testing.TB, n int) corpus {
	o := zipfgen.Options{N: n}
	if _, err := os.Stat(zipfgen.DefaultWordsPath); err != nil {
		o.Words = zipfgen.FunctionWords // zipfgen synthesises the rest
	}
	m, err := zipfgen.New(o)
	if err != nil {
		tb.Fatal(err)
	}
	type post struct {
		term string
		doc  uint32
		freq uint32
	}
	const workers = 4
	parts := make([][]post, workers)
	lengths := make([]uint32, n)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			counts := map[string]uint32{}
			for d := w; d < n; d += workers {
				p := m.Passage(d)
				words := strings.FieldsFunc(strings.ToLower(p.Title+" "+p.Text), func(r rune) bool {
					return !unicode.IsLetter(r) && !unicode.IsDigit(r)
				})
				clear(counts)
				for _, w := range words {
					counts[w]++
				}
				lengths[d] = uint32(len(words))
				for t, f := range counts {
					parts[w] = append(parts[w], post{t, uint32(d), f})
				}
			}
		})
	}
	wg.Wait()
	var all []post
	for _, p := range parts {
		all = append(all, p...)
	}
	slices.SortFunc(all, func(a, b post) int {
		if c := strings.Compare(a.term, b.term); c != 0 {
			return c
		}
		return int(a.doc) - int(b.doc)
	})
	c := corpus{lengths: lengths}
	for i := 0; i < len(all); {
		j := i
		p := tpost{term: []byte(all[i].term)}
		for ; j < len(all) && all[j].term == all[i].term; j++ {
			p.docs = append(p.docs, all[j].doc)
			p.freqs = append(p.freqs, all[j].freq)
		}
		c.terms = append(c.terms, p)
		i = j
	}
	return c
}

var benchCorpus = sync.OnceValue(func() corpus { return realCorpus(nil, 100_000) })

// TestSize checks the size on the first 20,000 passages of the realistic
// corpus, everything (lengths, dictionary, chunk headers, frontiers)
// included, against bounds a little above what this format measures
// (2.24 B a posting: a corpus this small has few postings a term, so the
// dictionary weighs 0.5 B a posting; BenchmarkWriterAdd's 100,000
// passages take 1.84), and the entries against the codec alone (one list a
// term, no chunks, no frontiers).
func TestSize(t *testing.T) {
	const n = 20_000
	c := realCorpus(t, n)
	data := write(t, c)
	var lw postings.ListWriter
	var buf []byte
	codec := 0
	for _, p := range c.terms {
		for k := range p.docs {
			if err := lw.Add(p.docs[k], p.freqs[k]); err != nil {
				t.Fatal(err)
			}
		}
		buf = lw.Finish(buf[:0])
		codec += len(buf)
	}
	f := parseFooter(data[len(data)-footerSize:])
	P := float64(c.postings())
	bpp := float64(len(data)) / P
	t.Logf("%d docs, %d terms, %d postings: %.3f B/posting (lengths %.3f, dictionary %.3f, entries %.3f); the codec alone %.3f",
		n, len(c.terms), c.postings(), bpp, float64(f.lensLen)/P, float64(f.dictLen)/P, float64(f.entryLen)/P, float64(codec)/P)
	if bpp >= 2.35 {
		t.Errorf("%.3f bytes a posting, want < 2.35", bpp)
	}
	if ratio := float64(f.entryLen) / float64(codec); ratio >= 1.08 {
		t.Errorf("entries take %.3fx the codec alone, want < 1.08x", ratio)
	}
}

// BenchmarkWriterAdd writes the realistic corpus and reports ns and bytes a
// posting.
func BenchmarkWriterAdd(b *testing.B) {
	c := benchCorpus()
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		w := NewWriter(&buf, c.lengths)
		for _, p := range c.terms {
			if err := w.Add(p.term, p.docs, p.freqs); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(c.postings()), "ns/posting")
	b.ReportMetric(float64(buf.Len())/float64(c.postings()), "B/posting")
	b.ReportMetric(float64(c.postings()), "postings")
}

// BenchmarkMerge merges four files of the Zipf corpus's quarters (10 % of
// documents dropped) and reports ns per input posting.
func BenchmarkMerge(b *testing.B) {
	c := benchCorpus()
	const k = 4
	q := len(c.lengths) / k
	var ins []corpus
	for i := range k {
		var part corpus
		part.lengths = c.lengths[i*q : (i+1)*q]
		for _, p := range c.terms {
			lo, _ := slices.BinarySearch(p.docs, uint32(i*q))
			hi, _ := slices.BinarySearch(p.docs, uint32((i+1)*q))
			if hi > lo {
				docs := slices.Clone(p.docs[lo:hi])
				for j := range docs {
					docs[j] -= uint32(i * q)
				}
				part.terms = append(part.terms, tpost{p.term, docs, p.freqs[lo:hi]})
			}
		}
		ins = append(ins, part)
	}
	rs := make([]*Reader, k)
	postings := 0
	for i, part := range ins {
		r, err := Open(write(b, part))
		if err != nil {
			b.Fatal(err)
		}
		rs[i] = r
		postings += part.postings()
	}
	ndn := renumber(rand.New(rand.NewPCG(1, 1)), ins, 0.1)
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		if err := Merge(&buf, rs, ndn, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(postings), "ns/posting")
}

// BenchmarkTerm looks up random terms of the Zipf corpus.
func BenchmarkTerm(b *testing.B) {
	c := benchCorpus()
	r, err := Open(write(b, c))
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([][]byte, 4096)
	for i := range keys {
		keys[i] = c.terms[rng.IntN(len(c.terms))].term
	}
	var t Term
	i := 0
	for b.Loop() {
		if ok, err := r.Term(keys[i&4095], &t); !ok || err != nil {
			b.Fatal(ok, err)
		}
		i++
	}
}

// BenchmarkChunkDecode opens every chunk of the 1,000 largest terms of
// the realistic corpus (looked up beforehand) and decodes its blocks; ns
// per posting.
func BenchmarkChunkDecode(b *testing.B) {
	c := benchCorpus()
	r, err := Open(write(b, c))
	if err != nil {
		b.Fatal(err)
	}
	top := slices.Clone(c.terms)
	slices.SortFunc(top, func(x, y tpost) int { return len(y.docs) - len(x.docs) })
	top = top[:1000]
	terms := make([]Term, len(top))
	n := 0
	for i, p := range top {
		if _, err := r.Term(p.term, &terms[i]); err != nil {
			b.Fatal(err)
		}
		n += len(p.docs)
	}
	var l postings.List
	docs, freqs := make([]uint32, postings.BlockSize), make([]uint32, postings.BlockSize)
	for b.Loop() {
		for i := range terms {
			t := &terms[i]
			for ch := range t.Chunks() {
				if err := t.Chunk(ch, &l); err != nil {
					b.Fatal(err)
				}
				for blk := range l.Blocks() {
					if _, err := l.DecodeBlock(blk, docs, freqs); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/posting")
}

// BenchmarkIterator walks the Bleve adapter's postings of the corpus's 100
// most frequent terms; ns per posting.
func BenchmarkIterator(b *testing.B) {
	c := benchCorpus()
	r, err := Open(write(b, c))
	if err != nil {
		b.Fatal(err)
	}
	top := slices.Clone(c.terms)
	slices.SortFunc(top, func(x, y tpost) int { return len(y.docs) - len(x.docs) })
	top = top[:100]
	n := 0
	for _, p := range top {
		n += len(p.docs)
	}
	d := r.Dictionary()
	var pl segmentPostingsList
	var it segmentPostingsIterator
	for b.Loop() {
		for _, p := range top {
			pl, err = d.PostingsList(p.term, nil, pl)
			if err != nil {
				b.Fatal(err)
			}
			it = pl.Iterator(true, true, false, it)
			for {
				post, err := it.Next()
				if err != nil {
					b.Fatal(err)
				}
				if post == nil {
					break
				}
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/posting")
}
