package sop

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// token is one word of a query or a trigger: its folded form (lower case, accents removed)
// and its stem. prefix marks a trigger word written with a trailing "*".
type token struct {
	word   string
	stem   string
	prefix bool
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// tokenize splits text into segments of tokens. The first segment holds the words of text
// in order; when withParts is set, each word written in camelCase or PascalCase
// ("NullPointerException") adds a segment of its parts ("null pointer exception"), so a
// trigger can match a part without a phrase spanning a word and its parts.
//
// Words are runs of letters and digits; an apostrophe inside a word is dropped ("don't" is
// "dont"); "+" and "#" right after a word are kept ("c++", "c#"); a "*" right after a word
// marks it as a prefix.
func tokenize(text string, withParts bool) [][]token { return tokenizeWith(text, withParts, nil) }

// tokenizeWith is tokenize with the terms of each word given by terms (Options.Terms; nil:
// the built-in English stemmer).
func tokenizeWith(text string, withParts bool, terms func(string) []string) [][]token {
	src := []rune(norm.NFD.String(text))
	// Drop combining marks first so that "é" does not split a word.
	rs := src[:0]
	for _, r := range src {
		if !unicode.Is(unicode.Mn, r) {
			rs = append(rs, r)
		}
	}
	var (
		words []token
		parts [][]token
	)
	for i := 0; i < len(rs); {
		if !isWordRune(rs[i]) {
			i++
			continue
		}
		start := i
		var (
			b      []rune
			bounds []int // indexes in b where a camel-case part starts
		)
		for i < len(rs) {
			r := rs[i]
			switch {
			case isWordRune(r):
				if len(b) > 0 && unicode.IsUpper(r) {
					prev := rs[i-1]
					next := rune(0)
					if i+1 < len(rs) {
						next = rs[i+1]
					}
					// fooBar, or the last capital of an acronym before a lower-case run
					// (HTTPServer -> HTTP Server).
					if unicode.IsLower(prev) || unicode.IsUpper(prev) && unicode.IsLower(next) {
						bounds = append(bounds, len(b))
					}
				}
				b = append(b, r)
				i++
				continue
			case (r == '\'' || r == '’') && i+1 < len(rs) && unicode.IsLetter(rs[i+1]) && i > start:
				i++
				continue
			}
			break
		}
		for i < len(rs) && (rs[i] == '+' || rs[i] == '#') && (i+1 >= len(rs) || !isWordRune(rs[i+1])) {
			b = append(b, rs[i])
			i++
		}
		prefix := i < len(rs) && rs[i] == '*'
		w := strings.ToLower(string(b))
		words = appendWord(words, w, prefix, terms)
		if withParts && len(bounds) > 0 {
			seg := make([]token, 0, len(bounds)+1)
			from := 0
			for _, at := range append(bounds, len(b)) {
				p := strings.ToLower(string(b[from:at]))
				seg = appendWord(seg, p, false, terms)
				from = at
			}
			parts = append(parts, seg)
		}
	}
	if len(words) == 0 {
		return nil
	}
	return append([][]token{words}, parts...)
}

// appendWord appends the tokens of word w: one, stemmed by the built-in stemmer when
// terms is nil; else by its terms (see Options.Terms).
func appendWord(toks []token, w string, prefix bool, terms func(string) []string) []token {
	if terms == nil || prefix {
		s := w
		if terms == nil {
			s = stem(w)
		}
		return append(toks, token{word: w, stem: s, prefix: prefix})
	}
	ts := terms(w)
	switch len(ts) {
	case 0:
		return append(toks, token{word: w, stem: w})
	case 1:
		return append(toks, token{word: w, stem: ts[0]})
	}
	for _, t := range ts {
		toks = append(toks, token{word: t, stem: t})
	}
	return toks
}

func isVowel(c byte) bool {
	switch c {
	case 'a', 'e', 'i', 'o', 'u':
		return true
	}
	return false
}

func hasVowel(s string) bool {
	for i := 0; i < len(s); i++ {
		if isVowel(s[i]) || (s[i] == 'y' && i > 0) {
			return true
		}
	}
	return false
}

// stem removes English inflections from a lower-case word: plurals ("errors", "queries",
// "fixes"), "-ing" and "-ed" (undoubling "debugging" to "debug"), then a final "e" so that
// "merge", "merged" and "merging" share "merg". It does not touch derivational suffixes:
// "debugger", "deployment" and "documentary" keep their own stems. Words that are not plain
// ASCII letters are returned unchanged.
func stem(w string) string {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return w
		}
	}
	n := len(w)
	if n <= 2 {
		return w
	}
	if n == 3 {
		if w[2] == 's' && !isVowel(w[1]) && w[1] != 's' {
			return w[:2] // "prs" -> "pr", "ids" -> "id"
		}
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && n > 4:
		w = w[:n-3] + "y"
	case strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "ches"),
		strings.HasSuffix(w, "shes"), strings.HasSuffix(w, "zzes"):
		w = w[:n-2]
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
	case strings.HasSuffix(w, "s"):
		w = w[:n-1]
	}
	n = len(w)
	switch {
	case strings.HasSuffix(w, "ing") && n >= 6 && hasVowel(w[:n-3]):
		w = undouble(w[:n-3])
	case strings.HasSuffix(w, "ied") && n > 4:
		w = w[:n-3] + "y"
	case strings.HasSuffix(w, "eed"):
	case strings.HasSuffix(w, "ed") && n >= 5 && hasVowel(w[:n-2]):
		w = undouble(w[:n-2])
	}
	if n = len(w); n > 3 && w[n-1] == 'e' {
		w = w[:n-1]
	}
	return w
}

// undouble drops the last letter of a word ending in a doubled consonant other than l, s or
// z ("debugg" -> "debug", but "install" stays).
func undouble(w string) string {
	n := len(w)
	if n >= 3 && w[n-1] == w[n-2] && !isVowel(w[n-1]) {
		switch w[n-1] {
		case 'l', 's', 'z':
			return w
		}
		return w[:n-1]
	}
	return w
}
