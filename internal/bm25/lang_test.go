package bm25

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/beir"
	"github.com/agentmem/memory/internal/fixtures"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/registry"
)

// langTexts are random texts mixing scripts (Latin with accents, Cyrillic, Greek, Arabic,
// Devanagari, Han, kana, Hangul), full-width forms, emoji, elisions, digits, punctuation
// and invalid UTF-8, and a few plain sentences.
func langTexts(seed int64, n int) []string {
	rng := rand.New(rand.NewSource(seed))
	pieces := []string{
		"Häuser", "groß", "Straße", "Zügen", "fuhren", "L'avion", "l’été", "chevaux", "étaient", "français", "niños", "corazón",
		"perché", "città", "ação", "coração", "журналы", "Москва", "книги", "ÅÄÖ", "søster", "kävelimme", "Ünlü", "İstanbul",
		"ıi", "árvíztűrő", "ţară", "științe", "ΑΒΓ", "ελληνικά", "مكتبة", "الكتب", "کتاب\u200cها", "हिन्दी", "किताबें",
		"コンピュータ", "サイエンス", "勉強します", "東京大学", "北京", "计算机科学", "한국어", "ﾃｽﾄ", "ＡＢＣ１２３",
		"😀", "👍🏽", "🇩🇪", "a\u0301", "\u200d", "\u200c", "x\xffy", "\xe6\x97", "3.14", "12,000", "U.S.A.", "don't",
		"e.g.", "a_b", "COVID-19", "the", "and", "der", "les", "och", "--", "!!", "«»", "¿Qué?", "\t", "\n", "running", "The",
	}
	seps := []string{" ", " ", " ", ".", ",", ";", ":", "-", "'", "\n", "", "、", "。", "\u00a0"}
	texts := []string{"", " ", "Die Häuser sind groß.", "Les chevaux mangent des pommes.", "コンピュータサイエンスを勉強します。",
		"我们在北京大学学习计算机科学", "Москва — столица России.", "x\xffy z"}
	for range n {
		var b strings.Builder
		for range 1 + rng.Intn(30) {
			b.WriteString(pieces[rng.Intn(len(pieces))])
			b.WriteString(seps[rng.Intn(len(seps))])
		}
		texts = append(texts, b.String())
	}
	return texts
}

// TestAnalyzersMatchBleve: for every analyzer an index may use, the analysis the index runs
// (bodies and queries) gives the tokens of Bleve's analyzer of that name, term for term
// with positions, offsets and types, on random text mixing scripts.
func TestAnalyzersMatchBleve(t *testing.T) {
	texts := langTexts(11, 1500)
	for _, name := range Analyzers() {
		t.Run(name, func(t *testing.T) {
			ref, err := registry.NewCache().AnalyzerNamed(name)
			if err != nil {
				t.Fatal(err)
			}
			ours, err := Analyzer(name)
			if err != nil {
				t.Fatal(err)
			}
			for pass := range 2 {
				for _, text := range texts {
					want, got := ref.Analyze([]byte(text)), ours.Analyze([]byte(text))
					if !sameTokens(want, got) {
						t.Fatalf("pass %d, %q:\n bleve %v\n ours  %v", pass, text, want, got)
					}
				}
			}
		})
	}
}

// TestAnalyzerIndexMatchesBleve indexes random text with each analyzer and requires the
// body field's dictionary to be exactly the terms Bleve's analyzer gives those texts, each
// with its document frequency, and every query's terms to be Bleve's.
func TestAnalyzerIndexMatchesBleve(t *testing.T) {
	texts := langTexts(12, 300)
	for _, name := range Analyzers() {
		t.Run(name, func(t *testing.T) {
			ref, err := registry.NewCache().AnalyzerNamed(name)
			if err != nil {
				t.Fatal(err)
			}
			ix, err := OpenWith("", Options{Analyzer: name})
			if err != nil {
				t.Fatal(err)
			}
			defer ix.Close()
			want := map[string]uint64{}
			docs := make([]Doc, len(texts))
			for i, text := range texts {
				docs[i] = Doc{ID: fmt.Sprint(i), Text: text}
				seen := map[string]bool{}
				for _, tk := range ref.Analyze([]byte(text)) {
					if !seen[string(tk.Term)] {
						seen[string(tk.Term)] = true
						want[string(tk.Term)]++
					}
				}
			}
			if err := ix.Apply(docs, nil, 1); err != nil {
				t.Fatal(err)
			}
			got := bodyDictionary(t, ix)
			if len(got) != len(want) {
				t.Fatalf("%d terms indexed, Bleve's analyzer gives %d", len(got), len(want))
			}
			for term, df := range want {
				if got[term] != df {
					t.Fatalf("term %q: document frequency %d, want %d", term, got[term], df)
				}
			}
			for _, q := range texts[:100] {
				terms, err := ix.analyzeQuery(q)
				if err != nil {
					t.Fatal(err)
				}
				var w []string
				for _, tk := range ref.Analyze([]byte(q)) {
					if !slices.Contains(w, string(tk.Term)) {
						w = append(w, string(tk.Term))
					}
				}
				g := make([]string, len(terms))
				for i, tc := range terms {
					g[i] = tc.term
				}
				if !slices.Equal(g, w) {
					t.Fatalf("query %q: terms %q, Bleve's %q", q, g, w)
				}
			}
		})
	}
}

// bodyDictionary is the body field's terms with their document frequencies.
func bodyDictionary(t *testing.T, ix *Index) map[string]uint64 {
	t.Helper()
	r := snapshotReader(t, ix)
	defer r.Close()
	d, err := r.FieldDict(bodyField)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	out := map[string]uint64{}
	for {
		e, err := d.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			return out
		}
		out[e.Term] = e.Count
	}
}

// TestAnalyzerFindsInflectedForms: a German, a French, a Japanese and a Chinese corpus,
// where the language's analyzer finds documents by inflected or segmented forms that the
// English analyzer misses (or, for Han text, which English cuts into single characters,
// finds only the documents that hold the word, where English also finds those that share
// one of its characters).
func TestAnalyzerFindsInflectedForms(t *testing.T) {
	docs := []Doc{
		{ID: "de1", Text: "Die Häuser in der Altstadt sind groß."},
		{ID: "de2", Text: "Wir fuhren mit den Zügen nach Berlin."},
		{ID: "fr1", Text: "Les chevaux mangent des pommes dans le pré."},
		{ID: "fr2", Text: "L'avion était en retard à cause de la neige."},
		{ID: "ja1", Text: "コンピュータサイエンスを勉強します。"},
		{ID: "ja2", Text: "東京大学の図書館は大きい。"},
		{ID: "zh1", Text: "我们在北京大学学习计算机科学。"},
		{ID: "en1", Text: "The horses were eating apples."},
	}
	cases := []struct {
		analyzer, query string
		want            []string // ids found, best first
		enFinds         []string // what the English analyzer finds instead
	}{
		{"de", "Haus", []string{"de1"}, nil},
		{"de", "Zug", []string{"de2"}, nil},
		{"fr", "cheval", []string{"fr1"}, nil},
		{"fr", "avion", []string{"fr2"}, nil}, // English keeps "l'avion" whole
		{"cjk", "サイエンス", []string{"ja1"}, nil},
		{"cjk", "コンピュータ", []string{"ja1"}, nil},
		{"cjk", "科学", []string{"zh1"}, []string{"zh1", "ja2"}}, // 学 of 大学
	}
	ctx := context.Background()
	open := func(name string) *Index {
		ix, err := OpenWith("", Options{Analyzer: name})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ix.Close() })
		if err := ix.Apply(docs, nil, 1); err != nil {
			t.Fatal(err)
		}
		return ix
	}
	english := open("")
	for _, c := range cases {
		ix := open(c.analyzer)
		for _, bleveScoring := range []bool{false, true} {
			ix.SetBleveScoring(bleveScoring)
			english.SetBleveScoring(bleveScoring)
			hits, err := ix.Search(ctx, c.query, 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, h := range hits {
				ids = append(ids, h.ID)
			}
			if !slices.Equal(ids, c.want) {
				t.Errorf("%s %q (bleve scoring %v): %v, want %v", c.analyzer, c.query, bleveScoring, ids, c.want)
			}
			enHits, err := english.Search(ctx, c.query, 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			var enIDs []string
			for _, h := range enHits {
				enIDs = append(enIDs, h.ID)
			}
			if !slices.Equal(enIDs, c.enFinds) {
				t.Errorf("en %q finds %v, want %v", c.query, enIDs, c.enFinds)
			}
		}
	}
}

// TestUnknownAnalyzer: an unknown name is an error naming it and the known ones.
func TestUnknownAnalyzer(t *testing.T) {
	for _, name := range []string{"klingon", "english", "pl", "web", " "} {
		_, err := OpenWith("", Options{Analyzer: name})
		if !errors.Is(err, ErrUnknownAnalyzer) {
			t.Fatalf("%q: %v, want ErrUnknownAnalyzer", name, err)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("%q", name)) || !strings.Contains(err.Error(), "cjk, ckb, da, de") {
			t.Fatalf("%q: %v does not name the value and the known analyzers", name, err)
		}
		if _, err := Analyzer(name); !errors.Is(err, ErrUnknownAnalyzer) {
			t.Fatalf("Analyzer(%q): %v", name, err)
		}
	}
	for in, want := range map[string]string{"": "en", "EN": "en", "cjk": "cjk", "De": "de"} {
		if got, err := CheckAnalyzer(in); err != nil || got != want {
			t.Fatalf("CheckAnalyzer(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestAnalyzerRecorded: an index records its analyzer; opening it with another fails with
// ErrAnalyzerMismatch, and an index written before the setting (none recorded) is English.
func TestAnalyzerRecorded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bm25")
	ix, err := OpenWith(dir, Options{Analyzer: "de"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Apply([]Doc{{ID: "1", Text: "Die Häuser sind groß"}}, nil, 1); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	for _, other := range []string{"", "en", "fr", "cjk"} {
		if _, err := OpenWith(dir, Options{Analyzer: other}); !errors.Is(err, ErrAnalyzerMismatch) {
			t.Fatalf("reopened with %q: %v, want ErrAnalyzerMismatch", other, err)
		}
	}
	for _, ro := range []bool{false, true} {
		ix, err = OpenWith(dir, Options{Analyzer: "DE", ReadOnly: ro})
		if err != nil {
			t.Fatal(err)
		}
		hits, err := ix.Search(context.Background(), "Haus", 5, nil)
		if err != nil || len(hits) != 1 {
			t.Fatalf("read only %v: %v, %v", ro, hits, err)
		}
		ix.Close()
	}
	// An index of an older version: no analyzer recorded.
	old := filepath.Join(t.TempDir(), "bm25")
	ix, err = Open(old)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.idx.DeleteInternal(analyzerKey); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	if _, err := OpenWith(old, Options{Analyzer: "cjk"}); !errors.Is(err, ErrAnalyzerMismatch) {
		t.Fatalf("old index opened as cjk: %v", err)
	}
	ix, err = Open(old)
	if err != nil {
		t.Fatalf("old index opened as English: %v", err)
	}
	ix.Close()
}

// FuzzAnalyzers: for any text, every analyzer an index may use gives Bleve's tokens.
func FuzzAnalyzers(f *testing.F) {
	for _, s := range langTexts(13, 20) {
		f.Add(s)
	}
	names := Analyzers()
	refs := make([]analysis.Analyzer, len(names))
	ours := make([]analysis.Analyzer, len(names))
	for i, name := range names {
		var err error
		if refs[i], err = registry.NewCache().AnalyzerNamed(name); err != nil {
			f.Fatal(err)
		}
		if ours[i], err = Analyzer(name); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		for i := range names {
			want, got := refs[i].Analyze([]byte(text)), ours[i].Analyze([]byte(text))
			if !sameTokens(want, got) {
				t.Fatalf("%s, %q:\n bleve %v\n ours  %v", names[i], text, want, got)
			}
		}
	})
}

// TestLuceneEnglishMatchesLucene analyses texts (SciFact passages and queries, and lines
// made to differ: possessives, contractions, stop words of both lists, hyphens, numbers,
// scripts, Porter's own examples) with LuceneEnglishAnalyzer and requires the terms Lucene
// 8.8's EnglishAnalyzer made of them (testdata/lucene_en_tokens.txt, recorded with
// bench/lucene/tokens.sh), but for the differences listed in luceneKnownDiffs.
func TestLuceneEnglishMatchesLucene(t *testing.T) {
	texts := readLines(t, filepath.Join("testdata", "lucene_en_texts.txt"))
	want := readLines(t, filepath.Join("testdata", "lucene_en_tokens.txt"))
	if len(texts) != len(want) || len(texts) < 200 {
		t.Fatalf("%d texts, %d token lines", len(texts), len(want))
	}
	ana, err := Analyzer(LuceneEnglishAnalyzer)
	if err != nil {
		t.Fatal(err)
	}
	body, err := analyzerFor(LuceneEnglishAnalyzer)
	if err != nil || body.body == nil {
		t.Fatalf("no one-pass body analysis for %s (%v)", LuceneEnglishAnalyzer, err)
	}
	same := 0
	for i, text := range texts {
		var got []string
		for _, tok := range ana.Analyze([]byte(text)) {
			got = append(got, string(tok.Term))
		}
		g := strings.Join(got, " ")
		if g == want[i] {
			same++
			continue
		}
		if d, ok := luceneKnownDiffs[i+1]; ok {
			w := strings.Fields(want[i])
			for from, to := range d {
				if j := slices.Index(w, from); j >= 0 {
					w = slices.Delete(w, j, j+1)
					if to != "" {
						w = slices.Insert(w, j, to)
					}
				}
			}
			if strings.Join(w, " ") == g {
				continue
			}
		}
		t.Errorf("line %d %q:\n lucene %s\n ours   %s", i+1, text, want[i], g)
	}
	// The body field (one pass, the indexing path) counts the terms Analyze gives.
	for _, text := range texts {
		terms, n := body.body.analyze([]byte(text))
		if toks := ana.Analyze([]byte(text)); n != len(toks) {
			t.Errorf("%q: body length %d, %d tokens", text, n, len(toks))
		} else if len(terms) == 0 && n > 0 {
			t.Errorf("%q: no body terms", text)
		}
	}
	t.Logf("%d of %d lines give Lucene's terms exactly", same, len(texts))
}

// luceneKnownDiffs are the lines (1-based) whose terms differ from Lucene's, and the
// Lucene terms ours lack or cut there: Lucene's StandardTokenizer keeps emoji and symbols of
// Unicode's Emoji property (®, 😀) as terms, and digits that follow letters in full-width
// forms; Bleve's segmenter drops both.
// Each maps a Lucene term to ours ("": none).
var luceneKnownDiffs = map[int]map[string]string{
	44:  {"®": ""},
	209: {"ａｂｃ１２３": "ａｂｃ", "😀": "", "👍🏽": ""},
}

// readLines returns the lines of a file, without their newlines.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestLuceneLengths compares lucenedl with the lengths Lucene 8.8's norms keep
// (SmallFloat.byte4ToInt(SmallFloat.intToByte4(n)), printed by Java for these n).
func TestLuceneLengths(t *testing.T) {
	for _, c := range []struct{ n, want uint64 }{
		{0, 0}, {1, 1}, {5, 5}, {23, 23}, {24, 24}, {25, 25}, {31, 31}, {32, 32}, {33, 33}, {39, 39},
		{40, 40}, {41, 40}, {47, 46}, {48, 48}, {100, 96}, {127, 120}, {128, 128}, {129, 128},
		{255, 248}, {256, 248}, {300, 280}, {511, 504}, {512, 504}, {1000, 984}, {4095, 3864},
		{4096, 3864}, {100000, 98328}, {1 << 20, 983064}, {math.MaxInt32, 2013265944},
	} {
		if got := lucenedl(c.n); got != c.want {
			t.Errorf("lucenedl(%d) = %d, Lucene keeps %d", c.n, got, c.want)
		}
	}
	prev := uint64(0)
	for n := uint64(0); n < 1<<16; n++ { // monotone: block bounds stay bounds
		l := lucenedl(n)
		if l < prev || l > n {
			t.Fatalf("lucenedl(%d) = %d after %d", n, l, prev)
		}
		prev = l
	}
}

// TestLuceneScoringMatchesLucene indexes SciFact with LuceneEnglishAnalyzer and
// ScoringLucene and requires each test query's top 10 to be Lucene 8.8's (EnglishAnalyzer,
// BM25Similarity k1 0.9 b 0.4, title and text in one field: the run of
// ../shared/tools/lucene-bm25, testdata/lucene_scifact_top10.tsv) with its scores: the
// same documents for every query, and scores equal to about float32 precision (the few
// documents with symbols Lucene keeps as terms, luceneKnownDiffs, are a little longer there).
func TestLuceneScoringMatchesLucene(t *testing.T) {
	dir := os.Getenv("MEMORY_SCIFACT")
	if dir == "" {
		dir = fixtures.Shared("data", "beir", "scifact")
	}
	ds, err := beir.Load(dir, "test")
	if err != nil {
		if os.Getenv("MEMORY_REQUIRE_FIXTURES") == "1" {
			t.Fatalf("SciFact: %v", err)
		}
		t.Skipf("SciFact not available (%v); set MEMORY_SCIFACT", err)
	}
	type hit struct {
		id    string
		score float64
	}
	want := map[string][]hit{}
	for _, l := range readLines(t, filepath.Join("testdata", "lucene_scifact_top10.tsv")) {
		f := strings.Split(l, "\t")
		s, err := strconv.ParseFloat(f[3], 64)
		if len(f) != 4 || err != nil {
			t.Fatalf("golden line %q", l)
		}
		want[f[0]] = append(want[f[0]], hit{f[2], s})
	}
	for _, scoring := range []string{ScoringLucene, ScoringClassic} {
		t.Run("scoring="+scoring, func(t *testing.T) {
			idx, err := OpenWith("", Options{Analyzer: LuceneEnglishAnalyzer, Scoring: scoring})
			if err != nil {
				t.Fatal(err)
			}
			defer idx.Close()
			docs := make([]Doc, len(ds.Corpus))
			for i, d := range ds.Corpus {
				docs[i] = Doc{ID: d.ID, Title: d.Title, Text: d.Text}
			}
			if err := idx.Apply(docs, nil, 1); err != nil {
				t.Fatal(err)
			}
			var overlap, n float64
			var rel []float64
			for _, q := range ds.Queries {
				w := want[q.ID]
				if len(w) == 0 {
					continue
				}
				hits, err := idx.Search(context.Background(), q.Text, 10, nil)
				if err != nil {
					t.Fatal(err)
				}
				got := map[string]float64{}
				for _, h := range hits {
					got[h.ID] = h.Score
				}
				same := 0
				for _, h := range w {
					if s, ok := got[h.id]; ok {
						same++
						rel = append(rel, math.Abs(s-h.score)/h.score)
					}
				}
				overlap += float64(same) / float64(len(w))
				n++
			}
			slices.Sort(rel)
			mean, med, worst := overlap/n, rel[len(rel)/2], rel[len(rel)-1]
			t.Logf("%v queries: top-10 overlap %.4f; score differences: median %.1e, largest %.1e", n, mean, med, worst)
			if n < 290 {
				t.Fatalf("only %v queries have a golden run", n)
			}
			switch scoring {
			case ScoringLucene:
				if mean < 0.999 || med > 1e-5 || worst > 1e-2 {
					t.Errorf("not Lucene's ranking: overlap %.4f, score differences median %.1e, largest %.1e", mean, med, worst)
				}
			case ScoringClassic: // the same order but for lengths: scores differ by k1+1
				if mean < 0.97 || med < 0.5 {
					t.Errorf("classic scoring: overlap %.4f, score differences median %.1e", mean, med)
				}
			}
		})
	}
}

// TestLuceneScoringFormula scores a tiny index with ScoringLucene and compares each score
// with Lucene 8's BM25Similarity evaluated here in float32 (as BM25Scorer does): weight =
// idf·count, norm = k1·((1 − b) + b·L/avgdl) with L the length a one-byte norm keeps,
// score = weight − weight/(1 + f/norm). Lengths of 100 and 300 terms (kept as 96 and 280)
// make length rounding matter.
func TestLuceneScoringFormula(t *testing.T) {
	idx, err := OpenWith("", Options{Analyzer: LuceneEnglishAnalyzer, Scoring: ScoringLucene})
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	words := func(n int, w string) string { return strings.TrimSpace(strings.Repeat(w+" ", n)) }
	docs := []Doc{
		{ID: "a", Text: "zebra " + words(99, "filler")},                  // 100 terms
		{ID: "b", Text: "zebra zebra zebra " + words(297, "padding")},    // 300 terms
		{ID: "c", Text: "zebra quagga " + words(8, "short")},             // 10 terms
		{ID: "d", Text: "quagga " + words(30, "other")},                  // 31 terms
		{ID: "e", Text: words(5, "nothing") + " " + words(18, "spacer")}, // 23 terms
	}
	lengths := []float32{100, 300, 10, 31, 23}
	if err := idx.Apply(docs, nil, 1); err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, l := range lengths {
		sum += float64(l)
	}
	avgdl := float32(sum / float64(len(lengths)))
	k1, b := float32(0.9), float32(0.4)
	lucene := func(f, df, dl float32, count float32) float32 {
		n := float32(len(docs))
		idf := float32(math.Log(1 + float64((n-df+0.5)/(df+0.5))))
		w := count * idf
		norm := k1 * ((1 - b) + b*float32(lucenedl(uint64(dl)))/avgdl)
		return w - w/(1+f*(1/norm))
	}
	hits, err := idx.Search(context.Background(), "zebra quagga zebra", 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float32{
		"a": lucene(1, 3, 100, 2),
		"b": lucene(3, 3, 300, 2),
		"c": lucene(1, 3, 10, 2) + lucene(1, 2, 10, 1),
		"d": lucene(1, 2, 31, 1),
	}
	if len(hits) != len(want) {
		t.Fatalf("hits %v, want %v", hits, want)
	}
	for _, h := range hits {
		w, ok := want[h.ID]
		if !ok || math.Abs(h.Score-float64(w)) > 1e-5*float64(w) {
			t.Errorf("%s: score %v, Lucene's %v", h.ID, h.Score, w)
		}
	}
}
