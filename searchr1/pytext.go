package searchr1

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file holds Python's str and re semantics where the original Search-R1 code relies
// on them (qa_em.py's normalize_answer, the .strip() of its data preparation, of its action
// parsing and of its observation), so that this package gives the original's bytes on
// every input, non-ASCII included. Each function names the Python it equals; the
// differential tests (testdata/qa_em_cases.py) hold them to CPython's own results, code
// point by code point, for every character both Unicode versions assign.

// isPySpace is Python's str.isspace for one character (what str.split() and str.strip()
// split and strip on, and the \s of a str pattern): Unicode's White_Space characters as Go
// has them, plus the ASCII separators U+001C to U+001F, which Python counts and Go does not.
func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// pyFields is Python's s.split(): the runs of non-whitespace of s (isPySpace).
func pyFields(s string) []string { return strings.FieldsFunc(s, isPySpace) }

// pyStrip is Python's s.strip(): s without leading and trailing whitespace (isPySpace).
func pyStrip(s string) string { return strings.TrimFunc(s, isPySpace) }

// pyIsWord is the \w of a Python str pattern (re's default Unicode mode): a letter (str.isalpha:
// categories Lu, Ll, Lt, Lm, Lo), a number (str.isnumeric: Nd, Nl, No), or "_". A \b lies
// between a word character and a non-word one (or an end). Combining marks (Mn, Mc, Me)
// are not word characters.
func pyIsWord(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '_' || ('0' <= r && r <= '9') || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z')
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r)
}

// pyCased is Unicode's Cased property (Lowercase, Uppercase or Lt), which CPython's
// lower() reads to place a final sigma.
func pyCased(r rune) bool {
	return unicode.In(r, unicode.Lu, unicode.Ll, unicode.Lt, unicode.Other_Lowercase, unicode.Other_Uppercase)
}

// pyCaseIgnorable is Unicode's Case_Ignorable property: Mn, Me, Cf, Lm, Sk, and the
// Word_Break classes MidLetter, MidNumLet and Single_Quote.
func pyCaseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', 0xB7, 0x387, 0x55F, 0x5F4, 0x2018, 0x2019, 0x2024, 0x2027,
		0xFE13, 0xFE52, 0xFE55, 0xFF07, 0xFF0E, 0xFF1A:
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}

// pyLower is Python's s.lower(): each character's full lowercase mapping, which differs
// from Go's strings.ToLower in two places: U+0130 (İ) becomes "i" and U+0307 (a combining
// dot above), as Unicode's SpecialCasing says; and U+03A3 (Σ) becomes the final sigma ς
// where it ends a word (after a cased character and not before one, case-ignorable
// characters skipped both ways), σ elsewhere. Invalid UTF-8 bytes become U+FFFD.
func pyLower(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	for i, r := range s {
		switch r {
		case 0x130:
			b.WriteString("i\u0307")
		case 0x3A3:
			if finalSigma(s, i) {
				b.WriteRune('ς')
			} else {
				b.WriteRune('σ')
			}
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// finalSigma reports whether the Σ at byte i of s is in Unicode's Final_Sigma context, as
// CPython's handle_capital_sigma decides it: the first character before it that is not
// case-ignorable is cased, and the first one after it that is not case-ignorable is not
// cased (or there is none).
func finalSigma(s string, i int) bool {
	before := false
	for j := i; j > 0; {
		r, size := utf8.DecodeLastRuneInString(s[:j])
		j -= size
		if !pyCaseIgnorable(r) {
			before = pyCased(r)
			break
		}
	}
	if !before {
		return false
	}
	for _, r := range s[i+len("Σ"):] {
		if !pyCaseIgnorable(r) {
			return !pyCased(r)
		}
	}
	return true
}

// removeArticles is Python's re.sub(r"\b(a|an|the)\b", " ", s): every "a", "an" or "the"
// that stands as a word (\b with Python's Unicode word characters, pyIsWord, on both sides)
// is replaced by a space. s must be lower case for the articles to be found, as
// normalize_answer calls it.
func removeArticles(s string) string {
	var b strings.Builder
	last := 0         // s[last:i] is not written yet
	prevWord := false // the character before i is a word character
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !prevWord && (r == 'a' || r == 't') {
			if n := articleAt(s[i:]); n > 0 {
				if b.Len() == 0 {
					b.Grow(len(s))
				}
				b.WriteString(s[last:i])
				b.WriteByte(' ')
				i += n
				last, prevWord = i, true // an article ends in a word character
				continue
			}
		}
		prevWord = pyIsWord(r)
		i += size
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// articleAt is the length of the article that starts s and ends a word ("a", then "an",
// then "the": the alternation's order), 0 when none does.
func articleAt(s string) int {
	for _, a := range [...]string{"a", "an", "the"} {
		if strings.HasPrefix(s, a) {
			if rest := s[len(a):]; rest == "" || !startsWord(rest) {
				return len(a)
			}
		}
	}
	return 0
}

// startsWord reports whether s begins with a word character.
func startsWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return pyIsWord(r)
}
