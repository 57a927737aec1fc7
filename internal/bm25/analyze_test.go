package bm25

import (
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/registry"
	index "github.com/blevesearch/bleve_index_api"
)

// refBody is what Bleve's TextField does with a body (index.IndexField, the "en" analyzer):
// its term counts and its length.
func refBody(t testing.TB, text []byte) (map[string]int, int) {
	t.Helper()
	ana, err := refEnglish()
	if err != nil {
		t.Fatal(err)
	}
	ts := ana.Analyze(append([]byte(nil), text...))
	return freqs(analysis.TokenFrequency(ts, nil, index.IndexField)), len(ts)
}

var refEnglish = sync.OnceValues(func() (analysis.Analyzer, error) {
	return registry.NewCache().AnalyzerNamed(en.AnalyzerName)
})

func freqs(tf index.TokenFrequencies) map[string]int {
	out := make(map[string]int, len(tf))
	for k, f := range tf {
		if string(f.Term) != k {
			out["<key "+k+" holds term "+string(f.Term)+">"] = -1
		}
		out[k] = f.Frequency()
	}
	return out
}

// bodyTexts are SciFact's documents (when ../shared is there) and random text mixing
// scripts, possessives, digits and punctuation.
func bodyTexts() []string {
	var texts []string
	for _, t := range readSciFact(2000) {
		texts = append(texts, string(t))
	}
	rng := rand.New(rand.NewSource(5))
	pieces := []string{"running", "runs", "ran", "The", "THE", "cats'", "cat's", "CAT'S", "it's", "ponies", "caresses", "hopping",
		"x.y", "3.14", "don't", "naïve", "Straße", "日本語", "テスト", "ΑΒΓ", "ΟΔΟΣ", "généralement", "e.g.", "U.S.A.", "a_b",
		"--", "!!", "\t", "\n", "12,000", "COVID-19", "IL-6", "John’s", "Ⱥx", "a's", "'s", "s", "And", "Of", "x\xffy"}
	for range 4000 {
		var b strings.Builder
		for range 1 + rng.Intn(40) {
			b.WriteString(pieces[rng.Intn(len(pieces))])
			b.WriteByte(" .,;:-'\n"[rng.Intn(8)])
		}
		texts = append(texts, b.String())
	}
	// Many distinct words, long ones too: the local word tables fill and are emptied.
	for range 1500 {
		var b strings.Builder
		for range 40 {
			for range 2 + rng.Intn(22) {
				b.WriteByte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[rng.Intn(52)])
			}
			b.WriteString(" 's "[rng.Intn(4):][:1])
		}
		texts = append(texts, b.String())
	}
	// Texts of several batches of words (wordBatch), with words the tables hold, words past
	// 24 bytes (never in the local table), repeats on both sides of a batch's end, and one
	// word longer than the batch buffer keeps (maxLowerKept).
	for n := range 3 {
		var b strings.Builder
		for i := range wordBatch*(n+1) + 7 {
			switch i % 5 {
			case 0:
				b.WriteString("Running")
			case 1:
				b.WriteString("pneumonoultramicroscopicsilicovolcanoconiosis's")
			case 2:
				b.WriteString(strings.Repeat("Ab", 12+i%3)) // 24, 26 and 28 bytes
			case 3:
				b.WriteString("the")
			default:
				b.WriteString(pieces[i%len(pieces)])
			}
			b.WriteByte(' ')
		}
		texts = append(texts, b.String())
	}
	texts = append(texts, "cats "+strings.Repeat("x", maxLowerKept+10)+" cats", strings.Repeat("y", 3*maxLowerKept))
	return append(texts, "", " ", "the of and", "'s", "a\x80b", "The Cat's cats' CATS")
}

// TestBodyFieldMatchesAnalyzer: the one-pass body field counts the same terms, as many
// times, with the same length, as Bleve's English analyzer and TokenFrequency do, on first
// sight of each word and from the word table, and from several goroutines at once.
func TestBodyFieldMatchesAnalyzer(t *testing.T) {
	fast := newBodyAnalysis(cachedEnglish(false))
	if fast == nil {
		t.Fatal("newBodyAnalysis(cachedEnglish(false)) = nil")
	}
	texts := bodyTexts()
	check := func(text string) error {
		want, wantLen := refBody(t, []byte(text))
		f := &bodyDocField{value: []byte(text), ana: fast}
		f.Analyze()
		f.Analyze() // idempotent
		got := freqs(f.AnalyzedTokenFrequencies())
		if f.AnalyzedLength() != wantLen || fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("%q:\n bleve %d %v\n ours  %d %v", text, wantLen, want, f.AnalyzedLength(), got)
		}
		return nil
	}
	for pass := range 3 {
		if pass == 2 { // tables forget their terms every few documents
			defer func(n int) { localMaxTerms = n }(localMaxTerms)
			localMaxTerms = 100
		}
		for _, text := range texts {
			if err := check(text); err != nil {
				t.Fatalf("pass %d: %v", pass, err)
			}
		}
	}
	inParallel(t, 4, func(g int) error {
		for i := g; i < len(texts); i += 3 {
			if err := check(texts[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestNewBodyAnalysisNeedsEnglishLayout: an analyzer not laid out as cachedEnglish builds
// it gets no one-pass analysis (its documents go through Bleve's TextField).
func TestNewBodyAnalysisNeedsEnglishLayout(t *testing.T) {
	ref, err := registry.NewCache().AnalyzerNamed(en.AnalyzerName)
	if err != nil {
		t.Fatal(err)
	}
	da := *cachedEnglish(false).(*analysis.DefaultAnalyzer)
	short := da
	short.TokenFilters = short.TokenFilters[:3]
	swapped := da
	swapped.TokenFilters = []analysis.TokenFilter{da.TokenFilters[1], da.TokenFilters[0], da.TokenFilters[2], da.TokenFilters[3]}
	for name, a := range map[string]analysis.Analyzer{"bleve": ref, "three filters": &short, "swapped": &swapped, "nil": nil} {
		if newBodyAnalysis(a) != nil {
			t.Errorf("%s: got a one-pass analysis", name)
		}
	}
}

// FuzzBodyField: any bytes count as Bleve's analyzer counts them.
func FuzzBodyField(f *testing.F) {
	for _, s := range []string{"The cat's cats' 1,000.5 a:b U.S.A.", "can't _x_ 3.14,", "a\x80b", "John’s naïve  \u0301x 10 μM", "ΟΔΟΣ Ⱥ it's"} {
		f.Add([]byte(s))
	}
	fast := newBodyAnalysis(cachedEnglish(false))
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wantLen := refBody(t, data)
		fd := &bodyDocField{value: append([]byte(nil), data...), ana: fast}
		fd.Analyze()
		if got := freqs(fd.AnalyzedTokenFrequencies()); fd.AnalyzedLength() != wantLen || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%q:\n bleve %d %v\n ours  %d %v", data, wantLen, want, fd.AnalyzedLength(), got)
		}
	})
}
