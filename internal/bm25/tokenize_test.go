package bm25

import (
	"math/rand"
	"testing"

	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
)

// TestASCIITokenizerMatchesBleve: on ASCII text heavy with the characters that join or break
// words, asciiTokenizer gives exactly the tokens of Bleve's unicode tokenizer; on other text
// it is Bleve's.
func TestASCIITokenizerMatchesBleve(t *testing.T) {
	ref := unicode.NewUnicodeTokenizer()
	ours := asciiTokenizer{fallback: ref}
	cases := []string{"", "_", "__", "a_", "_1", "1a", "1,000.5", "a:b", "1:2", "a.b", "1.a", "a.1", "a'b", "1'2",
		"a,b", "1;2", "U.S.A.", "x..y", "a::b", "a:", "1,", "_._", "a._b", "3.14,", "\x01a\x7f", "a\tb\r\nc",
		"can't won't rock'n'roll", "IL-6 and COVID-19 (p<0.05)", "café", "x\xffy", "e.g. i.e., etc."}
	rng := rand.New(rand.NewSource(7))
	ascii := []rune("aZz09_:.',; -\t\n\r\v\f\x00\x7f!?\"()/")
	other := []rune("é\u0301\u200d\u00a0\u2028\u3000日テ🙂\u00adß\u2019\uff0e")
	for _, alphabet := range [][]rune{ascii, append(append([]rune{}, ascii...), other...), append(append([]rune{}, ascii...), other[:3]...)} {
		for range 20000 {
			b := make([]rune, rng.Intn(24))
			for i := range b {
				b[i] = alphabet[rng.Intn(len(alphabet))]
			}
			cases = append(cases, string(b))
		}
	}
	for _, s := range cases {
		// Each side tokenizes its own copy: terms share the input's memory.
		if want, got := ref.Tokenize([]byte(s)), ours.Tokenize([]byte(s)); !sameTokens(want, got) {
			t.Fatalf("%q:\n bleve %v\n ours  %v", s, want, got)
		}
	}
}

// FuzzASCIITokenizer: any bytes tokenize as Bleve's unicode tokenizer does.
func FuzzASCIITokenizer(f *testing.F) {
	for _, s := range []string{"1,000.5 a:b U.S.A.", "can't _x_ 3.14,", "a\x80b", "x..y::z", "naïve  \u0301x 10 μM", " \u200d\U0001F642 a"} {
		f.Add([]byte(s))
	}
	ref := unicode.NewUnicodeTokenizer()
	ours := asciiTokenizer{fallback: ref}
	f.Fuzz(func(t *testing.T, data []byte) {
		if want, got := ref.Tokenize(append([]byte(nil), data...)), ours.Tokenize(append([]byte(nil), data...)); !sameTokens(want, got) {
			t.Fatalf("%q:\n bleve %v\n ours  %v", data, want, got)
		}
	})
}
