package wordpiece

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normalizeText applies the BertNormalizer steps in the Hugging Face order: clean text,
// pad CJK ideographs with spaces, strip accents (NFD, drop Mn), lowercase.
func (t *Tokenizer) normalizeText(s string) string {
	if !t.normalize {
		return s
	}
	if isASCII(s) {
		return t.normalizeASCII(s)
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range s {
		if t.cleanText {
			if r == 0 || r == utf8.RuneError || isControl(r) {
				continue
			}
			if isWhitespace(r) {
				r = ' '
			}
		}
		if t.handleCJK && isCJK(r) {
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
			continue
		}
		b.WriteRune(r)
	}
	out := b.String()
	if t.stripAccents {
		out = stripMarks(norm.NFD.String(out))
	}
	if t.lowercase {
		out = lowerFull(out)
	}
	return out
}

// normalizeASCII is normalizeText for pure-ASCII input: no CJK, no accents, simple case.
func (t *Tokenizer) normalizeASCII(s string) string {
	changed := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (t.cleanText && (c < 0x20 || c == 0x7f)) || (t.lowercase && 'A' <= c && c <= 'Z') {
			changed = true
			break
		}
	}
	if !changed {
		return s
	}
	buf := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if t.cleanText {
			switch {
			case c == '\t' || c == '\n' || c == '\r':
				c = ' '
			case c < 0x20 || c == 0x7f:
				continue // NUL and other Cc controls are dropped
			}
		}
		if t.lowercase && 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf = append(buf, c)
	}
	return string(buf)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// isWhitespace is BERT's whitespace test: \t, \n, \r and the Unicode White_Space property.
func isWhitespace(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' || unicode.IsSpace(r)
}

// isControl reports the characters BERT's clean_text drops: every category C* character
// (Cc, Cf, Co, Cs and unassigned Cn) except \t, \n and \r.
func isControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z)
}

// isCJK reports the CJK ideograph blocks the Hugging Face BertNormalizer pads with spaces.
// Kana and Hangul are deliberately not included.
func isCJK(r rune) bool {
	switch {
	case r >= 0x4E00 && r <= 0x9FFF,
		r >= 0x3400 && r <= 0x4DBF,
		r >= 0x20000 && r <= 0x2A6DF,
		r >= 0x2A700 && r <= 0x2B73F,
		r >= 0x2B740 && r <= 0x2B81F,
		r >= 0x2B920 && r <= 0x2CEAF,
		r >= 0xF900 && r <= 0xFAFF,
		r >= 0x2F800 && r <= 0x2FA1F:
		return true
	}
	return false
}

// isPunct is BERT's punctuation test: the ASCII symbol ranges or Unicode category P*.
func isPunct(r rune) bool {
	if r < utf8.RuneSelf {
		return (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126)
	}
	return unicode.IsPunct(r)
}

// stripMarks removes non-spacing marks (category Mn) from an NFD string.
func stripMarks(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// lowerFull lowercases rune by rune with the full (SpecialCasing) mapping, as Rust's
// char::to_lowercase does: the only unconditional multi-rune lowercase mapping is
// U+0130 (İ) -> "i̇" (i + U+0307 combining dot above).
func lowerFull(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r == 0x130 {
			b.WriteString("i\u0307")
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
