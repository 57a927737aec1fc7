package bm25

import (
	"bufio"
	"encoding/json"
	"math/rand"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentmem/memory/internal/fixtures"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/registry"
)

// TestCachedAnalyzerMatchesBleve runs Bleve's English analyzer and the cached one over the
// same texts (SciFact's corpus when ../shared is there, and random text mixing scripts,
// digits and punctuation), twice so the second pass answers from the cache, and requires
// the same tokens: terms, positions and offsets.
func TestCachedAnalyzerMatchesBleve(t *testing.T) {
	ref, err := registry.NewCache().AnalyzerNamed(en.AnalyzerName)
	if err != nil {
		t.Fatal(err)
	}
	ours := cachedEnglish(false)
	if ours == nil {
		t.Fatal("cachedEnglish: nil")
	}
	var texts []string
	for _, t := range readSciFact(2000) { // none without ../shared: the random texts below
		texts = append(texts, string(t))
	}
	rng := rand.New(rand.NewSource(3))
	pieces := []string{"running", "runs", "ran", "The", "cats'", "cat's", "ponies", "caresses", "hopping", "x.y", "3.14", "don't",
		"naïve", "Straße", "日本語", "テスト", "ΑΒΓ", "généralement", "e.g.", "U.S.A.", "a_b", "--", "!!", "\t", "\n", "12,000", "COVID-19", "IL-6"}
	for range 3000 {
		var b strings.Builder
		for range 1 + rng.Intn(30) {
			b.WriteString(pieces[rng.Intn(len(pieces))])
			b.WriteByte(" .,;:-'\n"[rng.Intn(8)])
		}
		texts = append(texts, b.String())
	}
	for pass := range 2 {
		for _, text := range texts {
			want, got := ref.Analyze([]byte(text)), ours.Analyze([]byte(text))
			if !sameTokens(want, got) {
				t.Fatalf("pass %d, %q:\n bleve %v\n ours  %v", pass, text, want, got)
			}
		}
	}
	// Concurrently (Bleve analyses a batch on several goroutines), with colliding slots.
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(texts); i += 2 {
				want, got := ref.Analyze([]byte(texts[i])), ours.Analyze([]byte(texts[i]))
				if !sameTokens(want, got) {
					errs <- texts[i]
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for text := range errs {
		t.Fatalf("concurrent analysis of %q differs", text)
	}
}

func sameTokens(a, b analysis.TokenStream) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := *a[i], *b[i]
		if string(x.Term) != string(y.Term) || x.Position != y.Position || x.Start != y.Start || x.End != y.End || x.Type != y.Type || x.KeyWord != y.KeyWord {
			return false
		}
		x.Term, y.Term = nil, nil
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// BenchmarkAnalyzer compares Bleve's English analyzer with the cached one on SciFact text.
func BenchmarkAnalyzer(b *testing.B) {
	texts := scifactTexts(b, 1000)
	ref, _ := registry.NewCache().AnalyzerNamed(en.AnalyzerName)
	for _, c := range []struct {
		name string
		a    analysis.Analyzer
	}{{"bleve", ref}, {"cached", cachedEnglish(false)}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				for _, t := range texts {
					c.a.Analyze(append([]byte(nil), t...))
				}
			}
		})
	}
}

// BenchmarkAnalyzerParallel analyses SciFact text on GOMAXPROCS goroutines, as Bleve's
// analysis workers do while indexing.
func BenchmarkAnalyzerParallel(b *testing.B) {
	texts := scifactTexts(b, -1)
	ref, _ := registry.NewCache().AnalyzerNamed(en.AnalyzerName)
	for _, c := range []struct {
		name string
		a    analysis.Analyzer
	}{{"bleve", ref}, {"cached", cachedEnglish(false)}} {
		b.Run(c.name, func(b *testing.B) {
			var next atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					t := texts[int(next.Add(1))%len(texts)]
					c.a.Analyze(append([]byte(nil), t...))
				}
			})
		})
	}
}

// scifactTexts returns up to limit (< 0: all) SciFact documents, title and text, or skips b
// without ../shared.
func scifactTexts(b *testing.B, limit int) [][]byte {
	texts := readSciFact(limit)
	if len(texts) == 0 {
		b.Skip("no SciFact corpus in ../shared")
	}
	return texts
}

// readSciFact reads up to limit (< 0: all) SciFact documents, title and text; none when
// ../shared is not there.
func readSciFact(limit int) [][]byte {
	f, err := os.Open(fixtures.Shared("data", "beir", "scifact", "corpus.jsonl"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var texts [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() && (limit < 0 || len(texts) < limit) {
		var d struct{ Title, Text string }
		if json.Unmarshal(sc.Bytes(), &d) == nil {
			texts = append(texts, []byte(d.Title+"\n"+d.Text))
		}
	}
	return texts
}
