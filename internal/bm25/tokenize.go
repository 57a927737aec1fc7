package bm25

import (
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
)

// Word segmentation (Unicode UAX #29, in Bleve's "unicode" tokenizer) is a sixth of indexing
// time, and most text is ASCII. asciiTokenizer segments ASCII text itself, by the same rules
// restricted to ASCII, and hands the words around non-ASCII bytes to Bleve's tokenizer: the tokens,
// offsets, positions and types are Bleve's (TestASCIITokenizerMatchesBleve, FuzzASCIITokenizer).
//
// The rules, for ASCII: letters, digits and '_' join (WB5, WB8–WB10, WB13a/b); ':' joins two
// letters (MidLetter), '.' and '\” join two letters or two digits (MidNumLet, Single_Quote),
// ',' and ';' join two digits (MidNum); anything else breaks and is no token. A token with a
// letter is AlphaNumeric, one with digits and no letter Numeric, one of '_' only AlphaNumeric.
type asciiTokenizer struct {
	fallback analysis.Tokenizer // for input that is not all ASCII
}

// ASCII character classes of the segmentation rules.
const (
	clOther    = iota
	clLetter   // A-Z a-z
	clDigit    // 0-9
	clUnder    // _ (ExtendNumLet)
	clMidL     // : (MidLetter)
	clMidNumL  // . ' (MidNumLet, Single_Quote)
	clMidNum   // , ; (MidNum)
	clNotASCII // never seen: the input is checked first
)

var asciiClass = func() (t [256]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = clLetter, clLetter
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = clDigit
	}
	t['_'], t[':'], t['.'], t['\''], t[','], t[';'] = clUnder, clMidL, clMidNumL, clMidNumL, clMidNum, clMidNum
	for c := 0x80; c < 0x100; c++ {
		t[c] = clNotASCII
	}
	return t
}()

// Tokenize segments input into words; its tokens' terms share input's memory, as Bleve's do.
// Text that is not all ASCII is cut into islands around its non-ASCII bytes, each from just
// after an ASCII space to just before the next ASCII space that a non-space ASCII byte
// follows: UAX #29 always breaks there (no rule joins across a space, and the byte after
// it is no Extend or Format character that would attach to it), so Bleve segments each
// island as it would the whole text, and the ASCII between islands is segmented here.
func (a asciiTokenizer) Tokenize(input []byte) analysis.TokenStream {
	n := len(input)
	w := words{rv: make(analysis.TokenStream, 0, n/6+1)}
	checked := false // input from the first non-ASCII byte on is valid UTF-8
	for pos := 0; pos < n; {
		q := pos
		for q < n && input[q] < 0x80 {
			q++
		}
		if q == n {
			w.ascii(input, pos, n)
			break
		}
		if !checked {
			// Bleve's segmenter stops at invalid UTF-8 (the rest gives no tokens): such
			// text is all Bleve's.
			if !utf8.Valid(input[q:]) {
				return a.fallback.Tokenize(input)
			}
			checked = true
		}
		s := q // the island: [s, e)
		for s > pos && !boundary(input, s) {
			s--
		}
		e := q + 1
		for e < n && !boundary(input, e) {
			e++
		}
		w.ascii(input, pos, s)
		for _, t := range a.fallback.Tokenize(input[s:e]) {
			t.Start += s
			t.End += s
			t.Position = len(w.rv) + 1
			w.rv = append(w.rv, t)
		}
		pos = e
	}
	return w.rv
}

// boundary reports whether a word break is certain before input[p]: an ASCII space before
// it and an ASCII byte other than a space at it.
func boundary(input []byte, p int) bool {
	return p > 0 && isSpace(input[p-1]) && input[p] < 0x80 && !isSpace(input[p])
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// words collects tokens; they are allocated in chunks, which rv points into.
type words struct {
	rv    analysis.TokenStream
	chunk []analysis.Token
}

// ascii appends the words of input[from:to], all ASCII, which starts and ends at breaks.
func (w *words) ascii(input []byte, from, to int) {
	for i := from; i < to; {
		c := asciiClass[input[i]]
		if c != clLetter && c != clDigit && c != clUnder {
			i++
			continue
		}
		start := i
		letter, digit := c == clLetter, c == clDigit
		prev := c
		i++
		for i < to {
			c = asciiClass[input[i]]
			switch c {
			case clLetter, clDigit, clUnder:
				letter, digit = letter || c == clLetter, digit || c == clDigit
				prev = c
				i++
				continue
			case clMidL, clMidNumL, clMidNum:
				if i+1 < to {
					next := asciiClass[input[i+1]]
					if (prev == clLetter && next == clLetter && c != clMidNum) ||
						(prev == clDigit && next == clDigit && c != clMidL) {
						prev = next
						i += 2
						continue
					}
				}
			}
			break
		}
		if len(w.chunk) == cap(w.chunk) {
			w.chunk = make([]analysis.Token, 0, min(1000, max(16, (to-i)/6+1)))
		}
		typ := analysis.AlphaNumeric
		if digit && !letter {
			typ = analysis.Numeric
		}
		w.chunk = append(w.chunk, analysis.Token{Term: input[start:i], Start: start, End: i, Position: len(w.rv) + 1, Type: typ})
		w.rv = append(w.rv, &w.chunk[len(w.chunk)-1])
	}
}
