// Package corpusgen builds deterministic scale corpora in BEIR layout from the sentences of
// a small BEIR dataset (SciFact by default), for benchmarks at the sizes users run: a
// million passages or more, each a title and about TargetBytes of text.
//
// Passage i is drawn from its own seeded generator (seed, i), so the output depends only on
// the source, the options and N, and any prefix of a larger corpus equals the smaller one.
// A passage takes the title of a source document and then sentences: a run of consecutive
// sentences of that document, then sentences of random documents, until its length target
// (uniform in [TargetBytes/2, 3·TargetBytes/2]) is reached, stopping short of a
// sentence that would overshoot it by more than half its length.
//
// Every passage carries metadata for filter benchmarks, derived from its number alone (so the
// text is what it was before metadata existed): "bucket", the number i mod 10, and "lang",
// one of ten strings chosen by (i/10) mod 10. Each value selects 10 % of the passages.
//
// Output (dir): corpus.jsonl, queries.jsonl (the source's test queries), qrels/test.tsv (a
// query's relevant passages: those whose source document the source qrels judge
// relevant, at most MaxQrels per pair) and batch-queries.jsonl (BatchQueries queries: the
// test queries, then claim-like queries cut from random sentences), the batch the
// throughput benchmarks send.
package corpusgen

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"github.com/agentmem/memory/internal/atomicfile"
	"github.com/agentmem/memory/internal/beir"
)

// Options configure Generate. Zero values select the defaults.
type Options struct {
	N            int    // passages (default 1,000,000)
	Seed         uint64 // default 1
	TargetBytes  int    // mean title+text bytes of a passage (default 760)
	BatchQueries int    // queries in batch-queries.jsonl (default 2,560)
	MaxQrels     int    // relevant passages kept per judged (query, document) pair (default 50)
}

// ErrSource: the source dataset has no usable sentences or queries.
var ErrSource = errors.New("corpusgen: unusable source dataset")

func (o *Options) defaults() {
	if o.N <= 0 {
		o.N = 1_000_000
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.TargetBytes <= 0 {
		o.TargetBytes = 760
	}
	if o.BatchQueries <= 0 {
		o.BatchQueries = 2560
	}
	if o.MaxQrels <= 0 {
		o.MaxQrels = 50
	}
}

// Langs are the values of the "lang" metadata key, one tenth of the passages each.
var Langs = [10]string{"en", "de", "fr", "es", "it", "nl", "pt", "sv", "pl", "fi"}

// Metadata returns the metadata of passage i: "bucket" (i mod 10, a number) and "lang"
// (Langs[(i/10) mod 10]).
func Metadata(i int) map[string]any {
	return map[string]any{"bucket": float64(i % 10), "lang": Langs[(i/10)%10]}
}

// corpusDoc is one line of corpus.jsonl: a BEIR document with its metadata.
type corpusDoc struct {
	beir.Doc
	Metadata map[string]any `json:"metadata"`
}

// source is the sentence pool of a dataset.
type source struct {
	docs      []beir.Doc
	sentences [][]string // per document
	flat      []string   // every sentence
}

// Sentences splits text after '.', '!' or '?' followed by a space and an upper-case
// letter or a digit: good enough for abstracts.
func Sentences(text string) []string {
	var out []string
	start := 0
	rs := []rune(text)
	for i := 0; i < len(rs)-2; i++ {
		if (rs[i] == '.' || rs[i] == '!' || rs[i] == '?') && rs[i+1] == ' ' && (unicode.IsUpper(rs[i+2]) || unicode.IsDigit(rs[i+2])) {
			if s := strings.TrimSpace(string(rs[start : i+1])); s != "" {
				out = append(out, s)
			}
			start = i + 2
		}
	}
	if s := strings.TrimSpace(string(rs[start:])); s != "" {
		out = append(out, s)
	}
	return out
}

func newSource(ds *beir.Dataset) (*source, error) {
	s := &source{}
	for _, d := range ds.Corpus {
		ss := Sentences(d.Text)
		if len(ss) == 0 || d.Title == "" {
			continue
		}
		s.docs = append(s.docs, d)
		s.sentences = append(s.sentences, ss)
		s.flat = append(s.flat, ss...)
	}
	if len(s.docs) == 0 || len(ds.Queries) == 0 {
		return nil, fmt.Errorf("%w: %d documents with sentences, %d queries", ErrSource, len(s.docs), len(ds.Queries))
	}
	return s, nil
}

// passage builds passage i; it returns the passage and the index of its source document.
func (s *source) passage(o Options, i int) (beir.Doc, int) {
	rng := rand.New(rand.NewPCG(o.Seed, uint64(i)))
	di := rng.IntN(len(s.docs))
	target := o.TargetBytes/2 + rng.IntN(o.TargetBytes+1)
	var b strings.Builder
	own := s.sentences[di]
	j := rng.IntN(len(own))
	run := 1 + rng.IntN(len(own))
	for b.Len()+len(s.docs[di].Title) < target {
		var sent string
		if run > 0 && j < len(own) {
			sent = own[j]
			j++
			run--
		} else {
			sent = s.flat[rng.IntN(len(s.flat))]
		}
		// stop short rather than overshoot by more than half a sentence
		if b.Len() > 0 && b.Len()+len(s.docs[di].Title)+len(sent)/2 > target {
			break
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(sent)
	}
	return beir.Doc{ID: fmt.Sprintf("p%08d", i), Title: s.docs[di].Title, Text: b.String()}, di
}

// Passage returns passage i of the corpus Generate writes for ds and o (o's defaults
// applied), for tests and tools that need it without the files.
func Passage(ds *beir.Dataset, o Options, i int) (beir.Doc, error) {
	o.defaults()
	s, err := newSource(ds)
	if err != nil {
		return beir.Doc{}, err
	}
	d, _ := s.passage(o, i)
	return d, nil
}

// Generate writes the corpus of ds with options o into dir (created; files replaced).
func Generate(ctx context.Context, ds *beir.Dataset, dir string, o Options) error {
	o.defaults()
	s, err := newSource(ds)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "qrels"), 0o755); err != nil {
		return err
	}
	docIdx := make(map[string]int, len(s.docs))
	for i, d := range s.docs {
		docIdx[d.ID] = i
	}
	// passages of each source document (for qrels), at most MaxQrels each
	bySource := make([][]string, len(s.docs))
	err = writeJSONL(filepath.Join(dir, "corpus.jsonl"), func(w *json.Encoder) error {
		for i := 0; i < o.N; i++ {
			if i%65536 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			p, di := s.passage(o, i)
			if len(bySource[di]) < o.MaxQrels {
				bySource[di] = append(bySource[di], p.ID)
			}
			if err := w.Encode(corpusDoc{Doc: p, Metadata: Metadata(i)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := writeJSONL(filepath.Join(dir, "queries.jsonl"), func(w *json.Encoder) error {
		for _, q := range ds.Queries {
			if err := w.Encode(q); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := writeQrels(filepath.Join(dir, "qrels", "test.tsv"), ds, docIdx, bySource); err != nil {
		return err
	}
	return writeJSONL(filepath.Join(dir, "batch-queries.jsonl"), func(w *json.Encoder) error {
		for _, q := range BatchQueries(ds, o) {
			if err := w.Encode(q); err != nil {
				return err
			}
		}
		return nil
	})
}

// BatchQueries returns the o.BatchQueries queries of batch-queries.jsonl: ds's test
// queries, then claim-like queries (the first 6 to 14 words of random sentences).
func BatchQueries(ds *beir.Dataset, o Options) []beir.Query {
	o.defaults()
	s, err := newSource(ds)
	if err != nil {
		return nil
	}
	out := make([]beir.Query, 0, o.BatchQueries)
	for _, q := range ds.Queries {
		if len(out) == o.BatchQueries {
			return out
		}
		out = append(out, q)
	}
	rng := rand.New(rand.NewPCG(o.Seed, 1<<62))
	for i := 0; len(out) < o.BatchQueries; i++ {
		words := strings.Fields(s.flat[rng.IntN(len(s.flat))])
		words = words[:min(len(words), 6+rng.IntN(9))]
		out = append(out, beir.Query{ID: fmt.Sprintf("b%05d", i), Text: strings.Join(words, " ")})
	}
	return out
}

func writeQrels(path string, ds *beir.Dataset, docIdx map[string]int, bySource [][]string) error {
	qids := make([]string, 0, len(ds.Qrels))
	for q := range ds.Qrels {
		qids = append(qids, q)
	}
	sort.Strings(qids)
	return writeFile(path, func(w *bufio.Writer) error {
		fmt.Fprintln(w, "query-id\tcorpus-id\tscore")
		for _, q := range qids {
			docs := make([]string, 0, len(ds.Qrels[q]))
			for d := range ds.Qrels[q] {
				docs = append(docs, d)
			}
			sort.Strings(docs)
			for _, d := range docs {
				grade := ds.Qrels[q][d]
				di, ok := docIdx[d]
				if !ok || grade <= 0 {
					continue
				}
				for _, p := range bySource[di] {
					fmt.Fprintf(w, "%s\t%s\t%d\n", q, p, grade)
				}
			}
		}
		return nil
	})
}

func writeJSONL(path string, fn func(*json.Encoder) error) error {
	return writeFile(path, func(w *bufio.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		return fn(enc)
	})
}

// writeFile replaces path whole (internal/atomicfile) with what fn writes.
func writeFile(path string, fn func(*bufio.Writer) error) error {
	return atomicfile.Write(path, atomicfile.Options{}, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 64<<10)
		if err := fn(bw); err != nil {
			return err
		}
		return bw.Flush()
	})
}
