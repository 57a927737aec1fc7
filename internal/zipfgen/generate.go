package zipfgen

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentmem/memory/internal/atomicfile"
	"github.com/agentmem/memory/internal/beir"
	"github.com/agentmem/memory/internal/corpusgen"
)

// Stats describe a generated corpus (stats.json), to compare with real collections.
type Stats struct {
	N                int          `json:"n"`                  // passages
	Seed             uint64       `json:"seed"`               // the generator's seed
	Tokens           int64        `json:"tokens"`             // words in titles and texts
	DistinctTerms    int          `json:"distinct_terms"`     // distinct words (case folded), counted on the output
	Bytes            int64        `json:"bytes"`              // title and text bytes
	CorpusFileBytes  int64        `json:"corpus_file_bytes"`  // size of corpus.jsonl
	MeanPassageBytes float64      `json:"mean_passage_bytes"` // Bytes / N
	TokensPerPassage float64      `json:"tokens_per_passage"` // the model's mean, L
	Checkpoints      []Checkpoint `json:"checkpoints"`        // at 1,000, 10,000, ... passages and N
	// HeapsFit is the least-squares fit of ln V = ln K + β ln n over the checkpoints of
	// 10,000 passages and more (all of them when fewer than two are).
	HeapsFit  Fit         `json:"heaps_fit"`
	Model     ModelStats  `json:"model"`     // the parameters
	Queries   QueryStats  `json:"queries"`   // the query files
	Reference []Reference `json:"reference"` // published figures to compare with
}

// Checkpoint is the corpus after its first Passages passages.
type Checkpoint struct {
	Passages       int     `json:"passages"`        // passages so far
	Tokens         int64   `json:"tokens"`          // their words
	DistinctTerms  int     `json:"distinct_terms"`  // their distinct words
	HeapsPredicted float64 `json:"heaps_predicted"` // K·tokens^β
}

// Fit is a fitted Heaps law V = K·n^β.
type Fit struct {
	K    float64 `json:"k"`    // the constant
	Beta float64 `json:"beta"` // the exponent
}

// ModelStats are the generator's parameters.
type ModelStats struct {
	ZipfExponent    float64 `json:"zipf_exponent"`    // s
	ZipfShift       float64 `json:"zipf_shift"`       // q
	Crossover       int     `json:"crossover_rank"`   // rc, where the law steepens
	TailExponent    float64 `json:"tail_exponent"`    // 1/β, the law's exponent beyond rc
	HeapsK          float64 `json:"heaps_k"`          // K
	HeapsBeta       float64 `json:"heaps_beta"`       // β
	DictionaryWords int     `json:"dictionary_words"` // ranks from FunctionWords and the word list
	Topics          int     `json:"topics"`           // topics
	TopicWords      int     `json:"topic_words"`      // ranks a topic owns
}

// QueryStats count the queries written.
type QueryStats struct {
	Judged int `json:"judged"` // queries.jsonl
	Tune   int `json:"tune"`   // queries-tune.jsonl, qrels/tune.tsv
	Report int `json:"report"` // queries-report.jsonl, qrels/test.tsv
	Batch  int `json:"batch"`  // batch-queries.jsonl
}

// Reference is a published collection's size and vocabulary, for comparison.
type Reference struct {
	Name        string `json:"name"`         // the collection
	Passages    int64  `json:"passages"`     // its documents
	Tokens      int64  `json:"tokens"`       // its terms as published (see Note)
	UniqueTerms int64  `json:"unique_terms"` // its distinct terms
	Note        string `json:"note"`         // what was counted, and how
}

// references are the published figures the Heaps law is calibrated on (package doc).
var references = []Reference{
	{"wikipedia-dpr (Pyserini)", 21_015_324, 1_512_973_270, 5_345_463, "DPR 100-word passages, Dec 2018 enwiki; Lucene English analyzer (stop words removed, Porter): tokens exclude stop words, about 2.10e9 with them"},
	{"beir-v1.0.0-nq (Pyserini)", 2_681_468, 151_249_294, 997_027, "Wikipedia passages of the NQ articles; same analyzer"},
	{"beir-v1.0.0-hotpotqa (Pyserini)", 5_233_329, 172_477_066, 2_644_892, "Wikipedia abstracts; same analyzer"},
}

// Split returns the half a query id belongs to: "tune" when the FNV-1a hash of the id is
// even, "report" when odd.
func Split(id string) string {
	h := fnv.New32a()
	h.Write([]byte(id))
	if h.Sum32()%2 == 0 {
		return "tune"
	}
	return "report"
}

// Passage returns passage i as corpus.jsonl has it.
func (m *Model) Passage(i int) beir.Doc {
	var d draft
	rng := m.rng(i)
	m.draft(i, rng, &d)
	title, text := m.render(&d, rng, nil, nil)
	return beir.Doc{ID: passageID(i), Title: string(title), Text: string(text)}
}

func passageID(i int) string { return fmt.Sprintf("p%08d", i) }

// Generate writes the corpus of o into dir (created; files replaced) and returns its Stats.
func Generate(ctx context.Context, dir string, o Options) (*Stats, error) {
	m, err := New(o)
	if err != nil {
		return nil, err
	}
	return m.Generate(ctx, dir)
}

// Generate writes the model's corpus into dir (created; files replaced).
func (m *Model) Generate(ctx context.Context, dir string) (*Stats, error) {
	o := m.o
	if err := os.MkdirAll(filepath.Join(dir, "qrels"), 0o755); err != nil {
		return nil, err
	}
	st := &Stats{N: o.N, Seed: o.Seed, TokensPerPassage: m.tokensPer, Reference: references,
		Model: ModelStats{ZipfExponent: o.ZipfExponent, ZipfShift: o.ZipfShift, Crossover: m.law.rc,
			TailExponent: m.law.a, HeapsK: o.HeapsK, HeapsBeta: o.HeapsBeta,
			DictionaryWords: m.voc.size(), Topics: o.Topics, TopicWords: o.TopicWords}}
	if err := writeFile(filepath.Join(dir, "corpus.jsonl"), func(w *bufio.Writer) error {
		return m.writeCorpus(ctx, w, st)
	}); err != nil {
		return nil, err
	}
	if err := m.writeQueries(dir, st); err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "stats.json"), append(data, '\n'), atomicfile.Options{}); err != nil {
		return nil, err
	}
	return st, nil
}

// chunk is a run of passages built by one worker: their corpus.jsonl lines and the ranks
// of their words (for the distinct-term count, made in passage order by the writer).
type chunk struct {
	lines []byte
	ranks []int32
	ends  []int32 // passage k's ranks end at ends[k]
	bytes int64
}

const chunkPassages = 2048

func (m *Model) buildChunk(c int, out *chunk) {
	out.lines, out.ranks, out.ends, out.bytes = out.lines[:0], out.ranks[:0], out.ends[:0], 0
	var d draft
	var title, text []byte
	for i := c * chunkPassages; i < min(m.o.N, (c+1)*chunkPassages); i++ {
		rng := m.rng(i)
		m.draft(i, rng, &d)
		title, text = m.render(&d, rng, title[:0], text[:0])
		out.bytes += int64(len(title) + len(text))
		out.ranks = append(out.ranks, d.title...)
		out.ranks = append(out.ranks, d.body...)
		out.ends = append(out.ends, int32(len(out.ranks)))
		out.lines = append(out.lines, `{"_id":"`...)
		out.lines = append(out.lines, passageID(i)...)
		out.lines = append(out.lines, `","title":`...)
		out.lines = appendJSONString(out.lines, title)
		out.lines = append(out.lines, `,"text":`...)
		out.lines = appendJSONString(out.lines, text)
		out.lines = append(out.lines, `,"metadata":{"bucket":`...)
		out.lines = strconv.AppendInt(out.lines, int64(i%10), 10)
		out.lines = append(out.lines, `,"lang":"`...)
		out.lines = append(out.lines, corpusgen.Langs[(i/10)%10]...)
		out.lines = append(out.lines, "\"}}\n"...)
	}
}

// writeCorpus builds the passages on o.Workers goroutines, chunk by chunk, and writes them
// in order, counting tokens and distinct terms.
func (m *Model) writeCorpus(ctx context.Context, w *bufio.Writer, st *Stats) error {
	o := m.o
	nChunks := (o.N + chunkPassages - 1) / chunkPassages
	done := make(chan struct{})
	defer close(done)
	// The dispatcher hands out the buffers in chunk order, so the chunk the writer waits
	// for always has one: no deadlock, and at most 2·Workers chunks in memory.
	type job struct {
		c   int
		buf *chunk
	}
	jobs := make(chan job)
	results := make([]chan *chunk, nChunks)
	for c := range results {
		results[c] = make(chan *chunk, 1)
	}
	free := make(chan *chunk, 2*o.Workers)
	for k := 0; k < 2*o.Workers; k++ {
		free <- &chunk{}
	}
	go func() {
		defer close(jobs)
		for c := 0; c < nChunks; c++ {
			var buf *chunk
			select {
			case buf = <-free:
			case <-done:
				return
			}
			select {
			case jobs <- job{c, buf}:
			case <-done:
				return
			}
		}
	}()
	for k := 0; k < o.Workers; k++ {
		go func() {
			for j := range jobs {
				m.buildChunk(j.c, j.buf)
				results[j.c] <- j.buf
			}
		}()
	}

	seen := make([]uint64, m.Vocab(o.N)/64+1)
	marks := checkpoints(o.N)
	passage := 0
	var tokens int64
	distinct := 0
	for c := 0; c < nChunks; c++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		var ch *chunk
		select {
		case ch = <-results[c]:
		case <-ctx.Done():
			return ctx.Err()
		}
		if _, err := w.Write(ch.lines); err != nil {
			return err
		}
		st.CorpusFileBytes += int64(len(ch.lines))
		st.Bytes += ch.bytes
		start := int32(0)
		for _, end := range ch.ends {
			for _, r := range ch.ranks[start:end] {
				if int(r)/64 >= len(seen) {
					return fmt.Errorf("zipfgen: rank %d beyond the vocabulary %d", r, m.Vocab(o.N))
				}
				if bit := uint64(1) << (r % 64); seen[r/64]&bit == 0 {
					seen[r/64] |= bit
					distinct++
				}
			}
			tokens += int64(end - start)
			start = end
			passage++
			if len(marks) > 0 && passage == marks[0] {
				marks = marks[1:]
				st.Checkpoints = append(st.Checkpoints, Checkpoint{Passages: passage, Tokens: tokens, DistinctTerms: distinct,
					HeapsPredicted: math.Round(o.HeapsK * math.Pow(float64(tokens), o.HeapsBeta))})
			}
		}
		free <- ch
	}
	st.Tokens, st.DistinctTerms = tokens, distinct
	st.MeanPassageBytes = float64(st.Bytes) / float64(o.N)
	st.HeapsFit = fitHeaps(st.Checkpoints)
	return nil
}

// checkpoints are the passage counts 1,000, 10,000, ... below n, then n.
func checkpoints(n int) []int {
	var out []int
	for c := 1000; c < n; c *= 10 {
		out = append(out, c)
	}
	return append(out, n)
}

// fitHeaps fits ln V = ln K + β ln n by least squares over the checkpoints of 10,000
// passages and more, or over all when fewer than two are.
func fitHeaps(cps []Checkpoint) Fit {
	var use []Checkpoint
	for _, c := range cps {
		if c.Passages >= 10_000 {
			use = append(use, c)
		}
	}
	if len(use) < 2 {
		use = cps
	}
	xs, ys := make([]float64, len(use)), make([]float64, len(use))
	for k, c := range use {
		xs[k], ys[k] = math.Log(float64(c.Tokens)), math.Log(float64(c.DistinctTerms))
	}
	slope, icept := LeastSquares(xs, ys)
	if math.IsNaN(slope) {
		return Fit{}
	}
	return Fit{K: math.Exp(icept), Beta: slope}
}

// LeastSquares fits y = slope·x + intercept; NaN for fewer than two distinct x.
func LeastSquares(xs, ys []float64) (slope, intercept float64) {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for k := range xs {
		sx += xs[k]
		sy += ys[k]
		sxx += xs[k] * xs[k]
		sxy += xs[k] * ys[k]
	}
	den := n*sxx - sx*sx
	if len(xs) < 2 || den == 0 {
		return math.NaN(), math.NaN()
	}
	slope = (n*sxy - sx*sy) / den
	return slope, (sy - slope*sx) / n
}

// Query openings of the question-like queries.
var questionOpenings = [][]string{
	{"what", "is", "the"}, {"how", "does"}, {"which"}, {"why", "did", "the"},
	{"what", "are", "the", "effects", "of"}, {"when", "was", "the"}, {"where", "is"},
	{"who", "was"}, {"how", "many"}, {"what", "role", "did"},
}

// query builds query k from passage src: 1 to 3 of its topic words, 0 to 2 of its other
// content words, a quarter of the time a content word it lacks, in random order; 30 % of
// the queries open like a question and join two words with "and"; 3 to 12 words.
func (m *Model) query(k uint64, src int, d *draft) string {
	rng := rand.New(rand.NewPCG(m.o.Seed, 1<<63|k))
	m.draft(src, m.rng(src), d)
	has := map[int32]bool{}
	var topical, other []int32
	add := func(r int32, top bool) {
		if r <= int32(len(FunctionWords)) || has[r] {
			return
		}
		has[r] = true
		if top {
			topical = append(topical, r)
		} else {
			other = append(other, r)
		}
	}
	for j, r := range d.body {
		add(r, d.topical[j])
	}
	for _, r := range d.title {
		add(r, false)
	}
	pick := func(from []int32, n int) []int32 {
		n = min(n, len(from))
		for j := 0; j < n; j++ {
			x := j + rng.IntN(len(from)-j)
			from[j], from[x] = from[x], from[j]
		}
		return from[:n]
	}
	var ranks []int32
	ranks = append(ranks, pick(topical, 1+rng.IntN(3))...)
	ranks = append(ranks, pick(other, rng.IntN(3))...)
	if rng.Float64() < 0.25 {
		hi := float64(min(m.Vocab(m.o.N), 100_000))
		r := int32(math.Exp(math.Log(float64(len(FunctionWords)+1)) + rng.Float64()*math.Log(hi/float64(len(FunctionWords)+1))))
		if !has[r] && r > int32(len(FunctionWords)) {
			ranks = append(ranks, r)
		}
	}
	for len(ranks) < 3 && len(ranks) < len(d.body) {
		ranks = append(ranks, d.body[rng.IntN(len(d.body))])
	}
	rng.Shuffle(len(ranks), func(a, b int) { ranks[a], ranks[b] = ranks[b], ranks[a] })
	words := make([]string, 0, 12)
	if rng.Float64() < 0.3 {
		words = append(words, questionOpenings[rng.IntN(len(questionOpenings))]...)
		for j, r := range ranks {
			if j > 0 && j == len(ranks)-1 {
				words = append(words, "and")
			}
			words = append(words, m.voc.Word(int(r)))
		}
	} else {
		for _, r := range ranks {
			words = append(words, m.voc.Word(int(r)))
		}
	}
	return strings.Join(words[:min(len(words), 12)], " ")
}

// judgedQuery is one query with its source passage.
type judgedQuery struct {
	q   beir.Query
	src int
}

// Queries returns the judged queries (ids q00000, ...) with the passage each was built
// from, its relevant document; then the unjudged ones (b00000, ...) that fill
// batch-queries.jsonl. Sources are distinct passages while N allows.
func (m *Model) Queries() (judged, extra []beir.Query, sources []int) {
	o := m.o
	total := o.Queries + max(0, o.BatchQueries-o.Queries)
	rng := rand.New(rand.NewPCG(o.Seed, 1<<62))
	used := map[int]bool{}
	var d draft
	for k := 0; k < total; k++ {
		src := rng.IntN(o.N)
		for len(used) < o.N && used[src] {
			src = rng.IntN(o.N)
		}
		used[src] = true
		if k < o.Queries {
			judged = append(judged, beir.Query{ID: fmt.Sprintf("q%05d", k), Text: m.query(uint64(k), src, &d)})
			sources = append(sources, src)
		} else {
			extra = append(extra, beir.Query{ID: fmt.Sprintf("b%05d", k-o.Queries), Text: m.query(uint64(k), src, &d)})
		}
	}
	return judged, extra, sources
}

func (m *Model) writeQueries(dir string, st *Stats) error {
	judged, extra, sources := m.Queries()
	halves := map[string][]judgedQuery{}
	for k, q := range judged {
		halves[Split(q.ID)] = append(halves[Split(q.ID)], judgedQuery{q, sources[k]})
	}
	writeQs := func(name string, qs []beir.Query) error {
		return writeFile(filepath.Join(dir, name), func(w *bufio.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetEscapeHTML(false)
			for _, q := range qs {
				if err := enc.Encode(q); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := writeQs("queries.jsonl", judged); err != nil {
		return err
	}
	for _, h := range []struct{ half, queries, qrels string }{
		{"tune", "queries-tune.jsonl", "tune.tsv"}, {"report", "queries-report.jsonl", "test.tsv"},
	} {
		qs := make([]beir.Query, 0, len(halves[h.half]))
		for _, jq := range halves[h.half] {
			qs = append(qs, jq.q)
		}
		if err := writeQs(h.queries, qs); err != nil {
			return err
		}
		if err := writeFile(filepath.Join(dir, "qrels", h.qrels), func(w *bufio.Writer) error {
			fmt.Fprintln(w, "query-id\tcorpus-id\tscore")
			for _, jq := range halves[h.half] {
				fmt.Fprintf(w, "%s\t%s\t1\n", jq.q.ID, passageID(jq.src))
			}
			return nil
		}); err != nil {
			return err
		}
	}
	batch := make([]beir.Query, 0, m.o.BatchQueries)
	batch = append(batch, judged[:min(len(judged), m.o.BatchQueries)]...)
	batch = append(batch, extra[:min(len(extra), m.o.BatchQueries-len(batch))]...)
	if err := writeQs("batch-queries.jsonl", batch); err != nil {
		return err
	}
	st.Queries = QueryStats{Judged: len(judged), Tune: len(halves["tune"]), Report: len(halves["report"]), Batch: len(batch)}
	return nil
}

// appendJSONString appends s as a JSON string, escaped as encoding/json does with HTML
// escaping off (the generator's text is ASCII without quotes, so this copies it).
func appendJSONString(dst, s []byte) []byte {
	dst = append(dst, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, `\u00`...)
			dst = append(dst, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// writeFile replaces path whole (internal/atomicfile) with what fn writes.
func writeFile(path string, fn func(*bufio.Writer) error) error {
	return atomicfile.Write(path, atomicfile.Options{}, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		if err := fn(bw); err != nil {
			return err
		}
		return bw.Flush()
	})
}
