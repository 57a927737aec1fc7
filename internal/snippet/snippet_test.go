package snippet

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentmem/memory/internal/bm25"
)

// prose is n bytes of seeded sentences of common words.
func prose(seed int64, n int) string {
	words := strings.Fields("the lantern keeper walked along the harbor while orchard river " +
		"winds carried salt over stone walls and quiet fields near the old mill")
	rng := rand.New(rand.NewSource(seed))
	var b strings.Builder
	for b.Len() < n {
		for i, k := 0, 6+rng.Intn(10); i < k; i++ {
			w := words[rng.Intn(len(words))]
			if i == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			} else {
				b.WriteByte(' ')
			}
			b.WriteString(w)
		}
		b.WriteString(". ")
	}
	return b.String()
}

// TestUnknownAnalyzer: an analyzer this build lacks matches no word, so the snippet is
// the start of the text.
func TestUnknownAnalyzer(t *testing.T) {
	text := strings.Repeat("filler words here. ", 40) + "target"
	if s := New("target", "no-such-analyzer").Of(text); !strings.HasPrefix(text, s) || len(s) > Bytes {
		t.Fatalf("snippet %q", s)
	}
}

func TestSnippet(t *testing.T) {
	long := strings.Repeat("filler words here. ", 40) + "The Running fox jumped over the lazy dogs near the river bank. " + strings.Repeat("more filler text. ", 40)
	tests := []struct {
		name, text, query string
		want              []string // substrings the snippet must hold
		prefix            bool     // the snippet is the start of the text
	}{
		{"short text whole", "Go is fun.", "go", []string{"Go is fun."}, true},
		{"stemmed match in the middle", long, "run dog", []string{"Running fox", "lazy dogs"}, false},
		{"no match: the start", long, "zebra", []string{"filler words here."}, true},
		{"stop words only: the start", long, "the of", []string{"filler"}, true},
		{"multibyte text", strings.Repeat("naïve café ", 60) + "ÉCOLE target " + strings.Repeat("日本語のテキスト ", 40), "target", []string{"target"}, false},
		{"whitespace collapsed", "alpha\n\n\tbeta   gamma", "beta", []string{"alpha beta gamma"}, true},
		{"possessive and case", strings.Repeat("padding words. ", 30) + "We met at the FOX'S den.", "foxes", []string{"FOX'S den"}, false},
		{"accented stem", strings.Repeat("padding words. ", 30) + "Les cafés ferment tôt.", "Café", []string{"cafés"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New(tc.query, bm25.DefaultAnalyzer).Of(tc.text)
			if len(s) > Bytes || !utf8.ValidString(s) || s == "" {
				t.Fatalf("snippet %q (%d bytes)", s, len(s))
			}
			for _, w := range tc.want {
				if !strings.Contains(s, w) {
					t.Fatalf("snippet %q lacks %q", s, w)
				}
			}
			norm := strings.Join(strings.Fields(tc.text), " ")
			if tc.prefix != strings.HasPrefix(norm, s) {
				t.Fatalf("snippet %q: prefix = %v, want %v", s, strings.HasPrefix(norm, s), tc.prefix)
			}
			// Never a cut word at either end (unless the text ends there).
			if i := strings.Index(norm, s); i > 0 && norm[i-1] != ' ' {
				t.Fatalf("snippet %q starts mid-word", s)
			}
		})
	}
}

func FuzzSnippet(f *testing.F) {
	f.Add("The quick brown fox", "fox")
	f.Add(strings.Repeat("é", 300), "e")
	f.Fuzz(func(t *testing.T, text, query string) {
		if !utf8.ValidString(text) {
			return
		}
		for _, analyzer := range []string{bm25.DefaultAnalyzer, "cjk", "no-such-analyzer"} {
			s := New(query, analyzer).Of(text)
			if len(s) > Bytes || !utf8.ValidString(s) {
				t.Fatalf("%s: snippet %q", analyzer, s)
			}
		}
	})
}

// BenchmarkSnippet: the snippet of one chunk-sized result (about 1,200 bytes).
func BenchmarkSnippet(b *testing.B) {
	text := prose(40, 1200) + " lighthouse keeper"
	terms := map[string]bool{"lighthous": true, "keeper": true, "lantern": true}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if snippet(text, newTermMatcher(terms), Bytes) == "" {
			b.Fatal("empty")
		}
	}
}

// TestSnippetHitsMatchAnalyzer: the word scan of snippets finds the words the English
// analyzer over the whole text finds.
func TestSnippetHitsMatchAnalyzer(t *testing.T) {
	texts := []string{
		prose(50, 3000),
		"Running runners ran; the runner's RUN-time isn't over. Happily, happiness happens: generalization generalizes. Naïve cafés' owners' caféine",
		"x y z 1 22 333 ab AB aB abc Abc ABC stop the and of to",
	}
	queries := []string{"running", "lantern orchard river", "happy generalize", "café naive", "ab abc 22", "owner runner"}
	for ti, text := range texts {
		for _, q := range queries {
			terms := map[string]bool{}
			for _, tok := range english().Analyze([]byte(q)) {
				terms[string(tok.Term)] = true
			}
			var want []string
			for _, tok := range english().Analyze([]byte(text)) {
				if terms[string(tok.Term)] {
					want = append(want, fmt.Sprintf("%d-%d:%s", tok.Start, tok.End, tok.Term))
				}
			}
			var got []string
			for _, h := range snippetHits(text, newTermMatcher(terms)) {
				got = append(got, fmt.Sprintf("%d-%d:%s", h.start, h.end, h.term))
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("text %d, query %q:\n got %v\nwant %v", ti, q, got, want)
			}
		}
	}
}
