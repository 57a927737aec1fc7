package zipfgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/memory/internal/beir"
	"github.com/agentmem/memory/internal/corpusgen"
)

// testdata/words.txt: every 26th line of Debian's wamerican /usr/share/dict/words and its
// apostrophe forms (4,090 entries, possessives included, which the filter drops).
var testWords = sync.OnceValue(func() []string {
	w, err := ReadWords(filepath.Join("testdata", "words.txt"))
	if err != nil {
		panic(err)
	}
	return w
})

func testOptions(n int) Options {
	return Options{N: n, Words: testWords(), Queries: 80, BatchQueries: 120}
}

func gen(t *testing.T, o Options) (string, *Stats) {
	t.Helper()
	dir := t.TempDir()
	st, err := Generate(context.Background(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return dir, st
}

func read(t *testing.T, dir, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

var outputFiles = []string{"corpus.jsonl", "queries.jsonl", "queries-tune.jsonl", "queries-report.jsonl",
	"qrels/test.tsv", "qrels/tune.tsv", "batch-queries.jsonl", "stats.json"}

// TestDeterministic: the same options give the same bytes whatever the parallelism; another
// seed gives another corpus; a smaller N is a prefix of a larger one.
func TestDeterministic(t *testing.T) {
	base := testOptions(3000)
	ref, _ := gen(t, base)
	for _, tc := range []struct {
		name string
		edit func(*Options)
		same bool
	}{
		{"same seed", func(o *Options) {}, true},
		{"one worker", func(o *Options) { o.Workers = 1 }, true},
		{"five workers", func(o *Options) { o.Workers = 5 }, true},
		{"other seed", func(o *Options) { o.Seed = 2 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base
			tc.edit(&o)
			dir, _ := gen(t, o)
			for _, f := range outputFiles {
				if eq := bytes.Equal(read(t, ref, f), read(t, dir, f)); eq != tc.same {
					t.Errorf("%s: equal = %v, want %v", f, eq, tc.same)
				}
			}
		})
	}
	small, _ := gen(t, testOptions(1200))
	if !bytes.HasPrefix(read(t, ref, "corpus.jsonl"), read(t, small, "corpus.jsonl")) {
		t.Error("1,200 passages are not a prefix of 3,000")
	}
}

// TestLayout: the folder is a BEIR collection internal/beir loads; corpus lines are
// corpusgen's layout byte for byte; the query halves are disjoint, cover the judged
// queries and follow Split; every judged passage exists and holds the query's words.
func TestLayout(t *testing.T) {
	o := testOptions(3000)
	dir, st := gen(t, o)
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}

	type corpusDoc struct {
		beir.Doc
		Metadata map[string]any `json:"metadata"`
	}
	docs := map[string]string{}
	var total int
	for i, line := range bytes.Split(bytes.TrimSpace(read(t, dir, "corpus.jsonl")), []byte("\n")) {
		var d corpusDoc
		if err := json.Unmarshal(line, &d); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		re, _ := json.Marshal(corpusDoc{Doc: d.Doc, Metadata: corpusgen.Metadata(i)})
		if !bytes.Equal(re, line) {
			t.Fatalf("line %d is not corpusgen's layout:\n%s\n%s", i, line, re)
		}
		if d.Title == "" || d.Text == "" || d.ID != passageID(i) {
			t.Fatalf("line %d: %+v", i, d)
		}
		if p := m.Passage(i); p != d.Doc {
			t.Fatalf("Passage(%d) = %+v, file has %+v", i, p, d.Doc)
		}
		docs[d.ID] = d.Title + " " + d.Text
		total += len(d.Title) + len(d.Text)
	}
	if len(docs) != o.N || st.Bytes != int64(total) {
		t.Fatalf("%d passages, %d bytes; stats say %d", len(docs), total, st.Bytes)
	}
	if mean := float64(total) / float64(o.N); math.Abs(mean-760)/760 > 0.05 {
		t.Errorf("mean passage %.1f bytes, target 760", mean)
	}

	all, _, err := beir.LoadQueries(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	var judged []beir.Query
	for _, line := range bytes.Split(bytes.TrimSpace(read(t, dir, "queries.jsonl")), []byte("\n")) {
		var q beir.Query
		if err := json.Unmarshal(line, &q); err != nil {
			t.Fatal(err)
		}
		judged = append(judged, q)
	}
	if len(judged) != o.Queries || len(all) == 0 {
		t.Fatalf("%d judged queries, %d in the test split", len(judged), len(all))
	}
	seen := map[string]string{}
	for _, h := range []struct{ split, half, file string }{{"test", "report", "queries-report.jsonl"}, {"tune", "tune", "queries-tune.jsonl"}} {
		ds, err := beir.Load(dir, h.split)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds.Corpus) != o.N {
			t.Fatalf("%s: %d passages", h.split, len(ds.Corpus))
		}
		n := bytes.Count(read(t, dir, h.file), []byte("\n"))
		if n != len(ds.Queries) || n != len(ds.Qrels) || n < o.Queries*3/10 {
			t.Errorf("%s: %d queries in %s, %d loaded, %d judged", h.split, n, h.file, len(ds.Queries), len(ds.Qrels))
		}
		for _, q := range ds.Queries {
			if prev, dup := seen[q.ID]; dup {
				t.Errorf("%s in both %s and %s", q.ID, prev, h.half)
			}
			seen[q.ID] = h.half
			if Split(q.ID) != h.half {
				t.Errorf("%s in %s, Split says %s", q.ID, h.half, Split(q.ID))
			}
			words := strings.Fields(q.Text)
			if len(words) < 3 || len(words) > 12 {
				t.Errorf("%s: %d words: %q", q.ID, len(words), q.Text)
			}
			for p := range ds.Qrels[q.ID] {
				text, ok := docs[p]
				if !ok {
					t.Fatalf("%s judges %s, not in the corpus", q.ID, p)
				}
				have := map[string]bool{}
				for _, w := range terms(text) {
					have[w] = true
				}
				hits := 0
				for _, w := range terms(q.Text) {
					if have[w] {
						hits++
					}
				}
				if hits < 2 {
					t.Errorf("%s %q: %d words in its passage %s", q.ID, q.Text, hits, p)
				}
			}
		}
	}
	if len(seen) != len(judged) {
		t.Errorf("the halves hold %d of %d queries", len(seen), len(judged))
	}
	if n := bytes.Count(read(t, dir, "batch-queries.jsonl"), []byte("\n")); n != o.BatchQueries {
		t.Errorf("batch has %d queries, want %d", n, o.BatchQueries)
	}
	if st.Queries != (QueryStats{Judged: o.Queries, Tune: st.Queries.Tune, Report: len(all), Batch: o.BatchQueries}) || st.Queries.Tune+st.Queries.Report != o.Queries {
		t.Errorf("query stats %+v", st.Queries)
	}
}

// terms splits text into words as the English analyzer does for this generator's text:
// letters, digits and inner apostrophes; lower-cased; a trailing "'s" dropped.
func terms(text string) []string {
	f := strings.FieldsFunc(text, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '\'')
	})
	for k, w := range f {
		f[k] = strings.TrimSuffix(strings.ToLower(w), "'s")
	}
	return f
}

// TestZipfHeaps generates 20,000 passages and measures, on the text as written: the
// frequency-rank slope of the head (ranks 10 to 1,000, against rank+q) and of the tail
// (beyond three times the crossover), and the Heaps exponent and constant of the distinct
// words over the passages.
func TestZipfHeaps(t *testing.T) {
	if testing.Short() {
		t.Skip("generates 2 × 20,000 passages")
	}
	for _, tc := range []struct {
		name       string
		s, k, beta float64
	}{
		{"defaults", 0, 0, 0},
		{"steeper", 1.1, 60, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(20_000)
			o.ZipfExponent, o.HeapsK, o.HeapsBeta = tc.s, tc.k, tc.beta
			dir, st := gen(t, o)
			m, _ := New(o)
			o = m.Options()

			count := map[string]int{}
			var tokens int64
			var ns, vs []float64
			f, err := os.Open(filepath.Join(dir, "corpus.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<20)
			for i := 1; sc.Scan(); i++ {
				var d beir.Doc
				if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
					t.Fatal(err)
				}
				for _, w := range terms(d.Title + " " + d.Text) {
					count[w]++
					tokens++
				}
				if i%2000 == 0 {
					ns, vs = append(ns, math.Log(float64(tokens))), append(vs, math.Log(float64(len(count))))
				}
			}
			if tokens != st.Tokens || len(count) != st.DistinctTerms {
				t.Fatalf("text has %d tokens, %d distinct; stats say %d, %d", tokens, len(count), st.Tokens, st.DistinctTerms)
			}

			beta, lnK := LeastSquares(ns[1:], vs[1:]) // from 4,000 passages: past the start cap
			if math.Abs(beta-o.HeapsBeta) > 0.02 || math.Abs(math.Exp(lnK)-o.HeapsK)/o.HeapsK > 0.15 {
				t.Errorf("Heaps fit K=%.1f β=%.3f, configured K=%g β=%g", math.Exp(lnK), beta, o.HeapsK, o.HeapsBeta)
			}
			if math.Abs(st.HeapsFit.Beta-o.HeapsBeta) > 0.02 {
				t.Errorf("stats.json Heaps β %.3f", st.HeapsFit.Beta)
			}

			freq := make([]int, 0, len(count))
			for _, c := range count {
				freq = append(freq, c)
			}
			sort.Sort(sort.Reverse(sort.IntSlice(freq)))
			slope := func(lo, hi int) float64 {
				var xs, ys []float64
				for r := lo; r <= hi; r++ {
					xs, ys = append(xs, math.Log(float64(r)+o.ZipfShift)), append(ys, math.Log(float64(freq[r-1])))
				}
				s, _ := LeastSquares(xs, ys)
				return -s
			}
			if s := slope(10, 1000); math.Abs(s-o.ZipfExponent) > 0.04 {
				t.Errorf("head slope %.3f, configured %g", s, o.ZipfExponent)
			}
			a := 1 / o.HeapsBeta
			if lo, hi := 3*m.Crossover(), len(freq)/3; lo < hi {
				if s := slope(lo, hi); s < a-0.3 || s > a+0.15 {
					t.Errorf("tail slope %.3f over ranks %d..%d, configured %.3f", s, lo, hi, a)
				}
			}
		})
	}
}

// TestWordsDistinct: every rank has its own surface form, one analyzer token, and its own
// Porter stem (so its own index term), across the word list and the synthetic families.
func TestWordsDistinct(t *testing.T) {
	for _, tc := range []struct {
		name  string
		words []string
	}{
		{"test list", testWords()},
		{"no list", []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(Options{Words: tc.words, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			if m.DictionaryWords() < len(FunctionWords) || m.Word(1) != "the" {
				t.Fatalf("%d dictionary words, rank 1 %q", m.DictionaryWords(), m.Word(1))
			}
			ranks := make([]int, 0, 400_000)
			for r := 1; r <= 300_000; r++ {
				ranks = append(ranks, r)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for k := 0; k < 100_000; k++ {
				ranks = append(ranks, 300_001+rng.IntN(80_000_000))
			}
			surface, stems := map[string]int{}, map[string]int{}
			for _, r := range ranks {
				w := m.Word(r)
				lw := strings.ToLower(w)
				if toks := terms(w); len(toks) != 1 || toks[0] != lw || strings.HasPrefix(w, "'") {
					t.Fatalf("rank %d: %q is not one token", r, w)
				}
				if prev, dup := surface[lw]; dup && prev != r {
					t.Fatalf("ranks %d and %d are both %q", prev, r, w)
				}
				surface[lw] = r
				st := stemKey(lw)
				if r > m.DictionaryWords() && st != lw {
					t.Fatalf("synthetic rank %d %q stems to %q", r, w, st)
				}
				if prev, dup := stems[st]; dup && prev != r {
					t.Fatalf("ranks %d %q and %d %q share the stem %q", prev, m.Word(prev), r, w, st)
				}
				stems[st] = r
			}
		})
	}
}

func TestKeepWord(t *testing.T) {
	for _, tc := range []struct {
		w    string
		keep bool
	}{
		{"cat", true}, {"Boston", true}, {"o'clock", true}, {"O'Brien", true}, {"my", true},
		{"cat's", false}, {"it's", false}, {"mm", false}, {"Bk", false}, {"thr", false},
		{"well-known", false}, {"naïve", false}, {"McDonald", false}, {"a", false}, {"'tis", false},
		{"rock'n'roll", false}, {"x'", false},
	} {
		if got := keepWord(tc.w); got != tc.keep {
			t.Errorf("keepWord(%q) = %v", tc.w, got)
		}
	}
}

// TestRankLaw: draws follow the law, whole and truncated, head and tail.
func TestRankLaw(t *testing.T) {
	m, err := New(Options{Words: testWords()})
	if err != nil {
		t.Fatal(err)
	}
	l := m.law
	rng := rand.New(rand.NewPCG(7, 7))
	for _, v := range []int{50, 5000, 200_000, 50_000_000} {
		tl := l.upTo(v)
		const n = 2_000_000
		var r1, r2, mid, tail int
		for k := 0; k < n; k++ {
			r := tl.draw(rng)
			if r < 1 || r > v {
				t.Fatalf("v=%d: drew %d", v, r)
			}
			switch {
			case r == 1:
				r1++
			case r == 2:
				r2++
			}
			if r > 1000 && r <= l.rc {
				mid++
			}
			if r > l.rc {
				tail++
			}
		}
		p := func(r int) float64 { return m.Probability(r) }
		z := 0.0 // mass of 1..v under the untruncated law
		z = tl.sum / l.upTo(math.MaxInt32).sum
		check := func(what string, got int, want float64) {
			t.Helper()
			if sd := math.Sqrt(want * n); math.Abs(float64(got)-want*n) > 5*sd+0.002*want*n {
				t.Errorf("v=%d %s: %d draws, want %.0f", v, what, got, want*n)
			}
		}
		check("rank 1", r1, p(1)/z)
		check("rank 2", r2, p(2)/z)
		if v > 1000 {
			mMid := segMass(1, l.s, l.q, 1001, float64(min(v, l.rc))) / tl.sum
			check("ranks 1001..rc", mid, mMid)
		}
		if v > l.rc {
			check("tail", tail, (tl.sum-tl.mMid)/tl.sum)
		}
	}
}

// TestCrossover: the law's mass beyond V is Heaps' derivative at V (the consistency that
// fixes the crossover), and the crossover is in the tens of thousands of ranks.
func TestCrossover(t *testing.T) {
	m, err := New(Options{Words: testWords()})
	if err != nil {
		t.Fatal(err)
	}
	o := m.Options()
	if rc := m.Crossover(); rc < 10_000 || rc > 100_000 {
		t.Errorf("crossover %d", rc)
	}
	total := m.law.upTo(math.MaxInt32).sum
	for _, v := range []int{1_000_000, 10_000_000} {
		beyond := 1 - m.law.upTo(v).sum/total
		a := 1 / o.HeapsBeta
		want := o.HeapsBeta * math.Pow(o.HeapsK, a) * math.Pow(float64(v), 1-a)
		if math.Abs(beyond-want)/want > 0.03 {
			t.Errorf("V=%d: mass beyond %.3g, Heaps derivative %.3g", v, beyond, want)
		}
	}
	for _, o := range []Options{
		{Words: testWords(), HeapsBeta: 0.95, ZipfExponent: 1.1},
		{Words: testWords(), HeapsBeta: 1.2},
		{Words: testWords(), TopicBandStart: 50},
	} {
		if _, err := New(o); !errors.Is(err, ErrOptions) {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

// TestVocabSchedule: the vocabulary grows as Heaps' law in the expected token count, capped
// at MaxNewShare of the tokens at the start, never shrinking.
func TestVocabSchedule(t *testing.T) {
	m, err := New(Options{Words: testWords()})
	if err != nil {
		t.Fatal(err)
	}
	prev := 0
	for i := 1; i < 5_000_000; i = i*5/4 + 1 {
		v := m.Vocab(i)
		n := float64(i) * m.TokensPerPassage()
		want := math.Min(0.3*n, 40*math.Pow(n, 0.55))
		if v < prev || math.Abs(float64(v)-want) > 1 {
			t.Fatalf("Vocab(%d) = %d, want %.0f (previous %d)", i, v, want, prev)
		}
		prev = v
	}
}
