package bm25

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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
