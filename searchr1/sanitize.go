package searchr1

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ProtectedTags are the tag names that retrieved text may never open or close, whatever the
// Loop's configuration: Search-R1's protocol tags, the seed's <context>, and <doc> of the
// XML passage format. A Loop adds its own configured names to these.
var ProtectedTags = []string{"search", "context", "answer", "information", "think", "doc"}

// Sanitize returns text with every tag-like sequence naming one of tags (or of
// [ProtectedTags] when tags is empty) neutralised: "<answer>", "</ANSWER>", "< /answer >",
// "＜answer＞", "‹answer›", "&lt;answer&gt;", "&amp;lt;/answer&gt;", "%3Canswer%3E",
// "\u003canswer\u003e" and similar variants all become "[answer]" or "[/answer]". Letters
// are compared case-insensitively after folding fullwidth forms and common Cyrillic/Greek
// homoglyphs, and zero-width characters inside the tag are ignored. Text that is not such
// a tag (for example "a < b" or "<b>") is left unchanged.
//
// The result contains no sequence that a model or a parser could read as one of those tags,
// so a hostile document cannot end an injected context block early or forge an answer.
func Sanitize(text string, tags ...string) string {
	if len(tags) == 0 {
		tags = ProtectedTags
	}
	names := make([][]rune, 0, len(tags))
	for _, t := range tags {
		if t = strings.TrimSpace(t); t != "" {
			names = append(names, []rune(strings.ToLower(t)))
		}
	}
	if len(names) == 0 || !mayHoldTag(text) {
		return text
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(text); {
		if c := text[i]; c < utf8.RuneSelf && c != '<' && c != '&' && c != '%' && c != '\\' {
			i++ // fast path: an ASCII byte that cannot start a bracket
			continue
		}
		end, closing, name, ok := matchTag(text, i, names)
		if !ok {
			_, size := utf8.DecodeRuneInString(text[i:])
			i += size
			continue
		}
		b.WriteString(text[last:i])
		b.WriteByte('[')
		if closing {
			b.WriteByte('/')
		}
		b.WriteString(string(name))
		b.WriteByte(']')
		i, last = end, end
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

// mayHoldTag is a fast pre-check: without any opening-bracket candidate there is nothing
// to neutralise.
func mayHoldTag(s string) bool {
	for _, r := range s {
		if r == '&' || r == '%' || r == '\\' || isOpenBracket(r) {
			return true
		}
	}
	return false
}

// matchTag tries to read a tag-like sequence at s[i:]: an opening bracket (or an encoding
// of one), optional ignorable characters, an optional slash, a protected name, optional
// ignorable characters and an optional closing bracket.
func matchTag(s string, i int, names [][]rune) (end int, closing bool, name []rune, ok bool) {
	n := bracketAt(s, i, isOpenBracket)
	if n == 0 {
		return 0, false, nil, false
	}
	j := skipIgnorable(s, i+n)
	if m := bracketAt(s, j, isSlash); m > 0 {
		closing = true
		j = skipIgnorable(s, j+m)
	}
	for _, nm := range names {
		k, ok := matchName(s, j, nm)
		if !ok {
			continue
		}
		k2 := skipIgnorable(s, k)
		if m := bracketAt(s, k2, isCloseBracket); m > 0 {
			k = k2 + m
		}
		return k, closing, nm, true
	}
	return 0, false, nil, false
}

// matchName matches name at s[j:], folding case, width and homoglyphs and skipping
// zero-width characters between letters; the name must not run on into an ASCII word
// character.
func matchName(s string, j int, name []rune) (int, bool) {
	k := j
	for idx, want := range name {
		if idx > 0 {
			k = skipZeroWidth(s, k)
		}
		if k >= len(s) {
			return 0, false
		}
		r, size := utf8.DecodeRuneInString(s[k:])
		if foldRune(r) != want {
			return 0, false
		}
		k += size
	}
	if k < len(s) {
		r, _ := utf8.DecodeRuneInString(s[k:])
		// Only an ASCII word character ends the match ("<answers>" is another tag); any
		// other rune after the name is treated as the end of a tag, to err on the safe side.
		if r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-') {
			return 0, false
		}
	}
	return k, true
}

// foldRune maps a rune to the lower-case ASCII letter it looks like, where it looks like one.
func foldRune(r rune) rune {
	switch {
	case r >= 'Ａ' && r <= 'Ｚ', r >= 'ａ' && r <= 'ｚ':
		r -= 0xFEE0
	}
	if h, ok := homoglyphs[r]; ok {
		return h
	}
	return unicode.ToLower(r)
}

// homoglyphs maps Cyrillic and Greek letters that render like Latin ones.
var homoglyphs = map[rune]rune{
	'а': 'a', 'А': 'a', 'е': 'e', 'Е': 'e', 'о': 'o', 'О': 'o', 'с': 'c', 'С': 'c',
	'р': 'p', 'Р': 'p', 'х': 'x', 'Х': 'x', 'і': 'i', 'І': 'i', 'ѕ': 's', 'Ѕ': 's',
	'ԁ': 'd', 'һ': 'h', 'Н': 'h', 'к': 'k', 'К': 'k', 'т': 't', 'Т': 't', 'у': 'y',
	'ո': 'n', 'ν': 'v', 'ο': 'o', 'Ο': 'o', 'α': 'a', 'Α': 'a', 'ε': 'e', 'Ε': 'e',
	'ι': 'i', 'Ι': 'i', 'τ': 't', 'Τ': 't', 'Ν': 'n', 'η': 'n', 'ѡ': 'w', 'ԝ': 'w',
	'ј': 'j', 'Ј': 'j', 'ɡ': 'g', 'ı': 'i', 'ℎ': 'h',
}

func isOpenBracket(r rune) bool {
	switch r {
	case '<', '\uFF1C', '\uFE64', '\u2039', '\u2329', '\u3008', '\u27E8', '❮', '❬', '˂', '«', 'ᐸ', '⧼', '≺', '⋖':
		return true
	}
	return false
}

func isCloseBracket(r rune) bool {
	switch r {
	case '>', '\uFF1E', '\uFE65', '\u203A', '\u232A', '\u3009', '\u27E9', '❯', '❭', '˃', '»', 'ᐳ', '⧽', '≻', '⋗':
		return true
	}
	return false
}

func isSlash(r rune) bool {
	switch r {
	case '/', '／', '⁄', '∕', '⧸', '\\':
		return true
	}
	return false
}

// bracketAt returns the byte length of a character accepted by class at s[i:], written
// literally, as an HTML entity (possibly with &amp; layers, with or without ';'), as a
// %XX escape or as a \uXXXX / \xXX escape; 0 when there is none.
func bracketAt(s string, i int, class func(rune) bool) int {
	if i >= len(s) {
		return 0
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	switch {
	case r == '&':
		if rr, n := entityAt(s, i); n > 0 && class(rr) {
			return n
		}
	case r == '%':
		if i+3 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil && class(rune(v)) {
				return 3
			}
		}
	case r == '\\':
		if rr, n := backslashEscapeAt(s, i); n > 0 && class(rr) {
			return n
		}
	}
	if class(r) {
		return size
	}
	return 0
}

// namedEntities are the HTML entity names of brackets and slashes.
var namedEntities = map[string]rune{
	"lt": '<', "gt": '>', "lsaquo": '‹', "rsaquo": '›', "lang": '\u2329', "rang": '\u232A',
	"langle": '⟨', "rangle": '⟩', "laquo": '«', "raquo": '»', "sol": '/', "bsol": '\\',
	"LT": '<', "GT": '>',
}

// entityAt decodes an HTML character reference at s[i] (which is '&'), peeling any number
// of "amp;" layers; the trailing ';' is optional, as browsers and models accept it.
func entityAt(s string, i int) (rune, int) {
	j := i + 1
	for len(s) >= j+4 && strings.EqualFold(s[j:j+4], "amp;") {
		j += 4
	}
	if j >= len(s) {
		return 0, 0
	}
	var r rune
	if s[j] == '#' {
		j++
		base := 10
		if j < len(s) && (s[j] == 'x' || s[j] == 'X') {
			base = 16
			j++
		}
		k := j
		for k < len(s) && k-j < 8 && isDigitIn(s[k], base) {
			k++
		}
		if k == j {
			return 0, 0
		}
		v, err := strconv.ParseUint(s[j:k], base, 32)
		if err != nil {
			return 0, 0
		}
		r, j = rune(v), k
	} else {
		k := j
		for k < len(s) && k-j < 8 && (s[k] >= 'a' && s[k] <= 'z' || s[k] >= 'A' && s[k] <= 'Z') {
			k++
		}
		// Longest known name first: "langle" before "lang".
		found := false
		for e := k; e > j; e-- {
			if v, ok := namedEntities[s[j:e]]; ok {
				r, j, found = v, e, true
				break
			}
		}
		if !found {
			return 0, 0
		}
	}
	if j < len(s) && s[j] == ';' {
		j++
	}
	return r, j - i
}

func isDigitIn(c byte, base int) bool {
	if c >= '0' && c <= '9' {
		return true
	}
	return base == 16 && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F')
}

// backslashEscapeAt decodes \uXXXX, \u{X..} or \xXX at s[i] (which is '\\').
func backslashEscapeAt(s string, i int) (rune, int) {
	if i+1 >= len(s) {
		return 0, 0
	}
	switch s[i+1] {
	case 'u', 'U':
		if i+2 < len(s) && s[i+2] == '{' {
			end := strings.IndexByte(s[i+3:], '}')
			if end <= 0 || end > 8 {
				return 0, 0
			}
			v, err := strconv.ParseUint(s[i+3:i+3+end], 16, 32)
			if err != nil {
				return 0, 0
			}
			return rune(v), end + 4
		}
		if i+6 <= len(s) {
			if v, err := strconv.ParseUint(s[i+2:i+6], 16, 32); err == nil {
				return rune(v), 6
			}
		}
	case 'x', 'X':
		if i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil {
				return rune(v), 4
			}
		}
	}
	return 0, 0
}

// skipIgnorable skips spaces and zero-width characters.
func skipIgnorable(s string, i int) int {
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsSpace(r) && !isZeroWidth(r) {
			return i
		}
		i += size
	}
	return i
}

// skipZeroWidth skips zero-width and format characters only.
func skipZeroWidth(s string, i int) int {
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isZeroWidth(r) {
			return i
		}
		i += size
	}
	return i
}

func isZeroWidth(r rune) bool {
	return unicode.Is(unicode.Cf, r) || r == '\u034f' || r == '\u115f' || r == '\u1160' || r == '\u3164'
}
