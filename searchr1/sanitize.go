package searchr1

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// protectedTags are the tag names that retrieved text may never open or close, whatever
// the Loop's configuration: Search-R1's protocol tags, the seed's <context>, and <doc> of
// the XML passage format. A Loop adds its own configured names to these.
var protectedTags = [...]string{"search", "context", "answer", "information", "think", "doc"}

// defaultProtectedTags returns the tag names that [Sanitize] protects by default: search,
// context, answer, information, think and doc. The result is a fresh copy.
func defaultProtectedTags() []string { return append([]string(nil), protectedTags[:]...) }

// angleTokens are chat-template special tokens written <name> / </name>: they need their
// closing bracket to count (so "a <s b" stays).
var angleTokens = [][]rune{
	[]rune("s"), []rune("bos"), []rune("eos"), []rune("unk"), []rune("pad"), []rune("start_of_turn"),
	[]rune("end_of_turn"), []rune("tool_call"), []rune("tool_response"), []rune("tools"),
	[]rune("start_of_image"), []rune("end_of_image"),
}

// squareTokens are template markers written [NAME] / [/NAME] (Llama 2, Mistral).
var squareTokens = [][]rune{
	[]rune("inst"), []rune("system_prompt"), []rune("available_tools"), []rune("tool_calls"),
	[]rune("tool_results"), []rune("tool_content"),
}

// doubleAngleTokens are markers written <<NAME>> / <</NAME>> (Llama 2's <<SYS>>).
var doubleAngleTokens = [][]rune{[]rune("sys")}

// maxPipeToken bounds the name of a <|name|> token, in bytes.
const maxPipeToken = 64

// Sanitize returns text with every tag-like sequence naming one of tags (or of
// [defaultProtectedTags] when tags is empty) neutralised: "<answer>", "</ANSWER>", "< /answer >",
// "<\/answer>", "＜answer＞", "‹answer›", "&lt;answer&gt;", "&amp;lt;/answer&gt;",
// "%3Canswer%3E", "\u003canswer\u003e" and similar variants all become "[answer]" or
// "[/answer]". Letters are compared case-insensitively after folding fullwidth forms and
// common Cyrillic/Greek homoglyphs, and zero-width characters inside the tag are ignored.
//
// Chat-template special tokens are always neutralised too, in the same variants:
// "<|im_start|>", "<|im_end|>", "<|eot_id|>", "<|start_header_id|>", "<|endoftext|>" and
// any other "<|name|>" (also DeepSeek's "<｜name｜>") become "[name]"; "<s>", "</s>",
// "<start_of_turn>", "<tool_call>" and the like become "[s]", "[/s]", ...; "<<SYS>>" and
// "<</SYS>>" become "[SYS]" and "[/SYS]"; "[INST]", "[/INST]", "[SYSTEM_PROMPT]" and the
// like become "(INST)", "(/INST)", ...
//
// Text that is not such a tag (for example "a < b" or "<b>") is left unchanged. The result
// contains no sequence that a model, its tokenizer or a parser could read as one of those
// tags, so a hostile document cannot end an injected context block early, forge an answer
// or open a new chat turn. Sanitize runs in time linear in len(text).
func Sanitize(text string, tags ...string) string {
	if len(tags) == 0 {
		tags = protectedTags[:]
	}
	names := make([][]rune, 0, len(tags))
	for _, t := range tags {
		if t = strings.TrimSpace(t); t != "" {
			names = append(names, []rune(strings.ToLower(t)))
		}
	}
	if !mayHoldTag(text) {
		return text
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(text); {
		if c := text[i]; c < utf8.RuneSelf {
			if c != '<' && c != '&' && c != '%' && c != '\\' && c != '[' {
				i++ // fast path: an ASCII byte that cannot start a bracket
				continue
			}
		} else if r, size := utf8.DecodeRuneInString(text[i:]); !isOpenBracket(r) {
			i += size // fast path: a non-ASCII rune that is no bracket
			continue
		}
		end, repl, ok := matchTag(text, i, names)
		if !ok {
			if text[i] < utf8.RuneSelf {
				i++
				continue
			}
			_, size := utf8.DecodeRuneInString(text[i:])
			i += size
			continue
		}
		b.WriteString(text[last:i])
		b.WriteString(repl)
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
		if r == '&' || r == '%' || r == '\\' || r == '[' || isOpenBracket(r) {
			return true
		}
	}
	return false
}

// matchTag tries to read a tag-like sequence at s[i:] and returns its end and its
// neutral replacement. A protected tag is an opening bracket (or an encoding of one),
// optional ignorable characters, optional slashes, a protected name, optional ignorable
// characters and an optional closing bracket; the special tokens need their closing
// bracket. Every loop here is bounded by a constant or consumes characters that no other
// start position can consume, which keeps Sanitize linear.
func matchTag(s string, i int, names [][]rune) (end int, repl string, ok bool) {
	if s[i] == '[' {
		return matchSquare(s, i)
	}
	n := 1
	if s[i] != '<' {
		if n = bracketAt(s, i, isOpenBracket); n == 0 {
			return 0, "", false
		}
	}
	j := skipIgnorable(s, i+n)
	if j < len(s) && s[j] < utf8.RuneSelf && !mayFollowOpen(s[j]) {
		return 0, "", false // "<3", "a < b", "<<<<": nothing of interest follows
	}
	if k, name, ok := matchPipe(s, j); ok {
		return k, "[" + name + "]", true
	}
	if m := bracketAt(s, j, isOpenBracket); m > 0 {
		if k := skipIgnorable(s, j+m); k < len(s) && s[k] < utf8.RuneSelf && (s[k] == '<' || s[k] == '|' || !mayFollowOpen(s[k])) {
			return 0, "", false // "<<<": only "<</sys>>"-like markers are read after two brackets
		}
		if k, closing, name, ok := matchNamed(s, j+m, doubleAngleTokens, 2); ok {
			return k, bracketed("[", closing, strings.ToUpper(string(name)), "]"), true
		}
		return 0, "", false
	}
	j, closing := skipSlashes(s, j)
	if !nameStart(s, j) {
		return 0, "", false
	}
	first := foldAt(s, j)
	for _, nm := range names {
		if nm[0] != first {
			continue
		}
		k, ok := matchName(s, j, nm)
		if !ok {
			continue
		}
		k2 := skipIgnorable(s, k)
		if m := bracketAt(s, k2, isCloseBracket); m > 0 {
			k = k2 + m
		}
		return k, bracketed("[", closing, string(nm), "]"), true
	}
	if k, name, ok := closeNamed(s, j, angleTokens, 1); ok {
		return k, bracketed("[", closing, string(name), "]"), true
	}
	return 0, "", false
}

func bracketed(open string, closing bool, name, close string) string {
	if closing {
		return open + "/" + name + close
	}
	return open + name + close
}

// skipSlashes skips a run of slashes (literal, escaped like "\\/" or encoded) and
// ignorable characters, reporting whether there was one.
func skipSlashes(s string, j int) (int, bool) {
	closing := false
	for {
		m := bracketAt(s, j, isSlash)
		if m == 0 {
			return j, closing
		}
		closing = true
		j = skipIgnorable(s, j+m)
	}
}

// mayFollowOpen reports whether an ASCII byte after an opening bracket may continue a
// tag or token: a letter, a pipe, a slash, another bracket or the start of an escape.
func mayFollowOpen(c byte) bool {
	switch c {
	case '|', '/', '\\', '<', '&', '%':
		return true
	}
	c |= 0x20
	return c >= 'a' && c <= 'z'
}

// nameStart reports whether a name may start at s[j]: an ASCII letter or any non-ASCII
// rune (a fullwidth or homoglyph letter). It spares the name loops most hostile input.
func nameStart(s string, j int) bool {
	if j >= len(s) {
		return false
	}
	c := s[j]
	if c >= utf8.RuneSelf {
		return true
	}
	c |= 0x20
	return c >= 'a' && c <= 'z'
}

// foldAt is the folded rune at s[j] (j < len(s)).
func foldAt(s string, j int) rune {
	if c := s[j]; c < utf8.RuneSelf {
		return foldRune(rune(c))
	}
	r, _ := utf8.DecodeRuneInString(s[j:])
	return foldRune(r)
}

// matchNamed reads optional slashes, one of names and closes closing brackets at s[j:].
func matchNamed(s string, j int, names [][]rune, closes int) (int, bool, []rune, bool) {
	j, closing := skipSlashes(s, j)
	k, name, ok := closeNamed(s, j, names, closes)
	return k, closing, name, ok
}

// closeNamed reads one of names at s[j:] followed by closes closing brackets.
func closeNamed(s string, j int, names [][]rune, closes int) (int, []rune, bool) {
	if !nameStart(s, j) {
		return 0, nil, false
	}
	first := foldAt(s, j)
	for _, nm := range names {
		if nm[0] != first {
			continue
		}
		k, ok := matchName(s, j, nm)
		if !ok {
			continue
		}
		for c := 0; c < closes; c++ {
			k = skipIgnorable(s, k)
			m := bracketAt(s, k, isCloseBracket)
			if m == 0 {
				return 0, nil, false
			}
			k += m
		}
		return k, nm, true
	}
	return 0, nil, false
}

// matchSquare reads [NAME] or [/NAME] of a square-bracket template marker at s[i] ('[').
func matchSquare(s string, i int) (int, string, bool) {
	j := skipIgnorable(s, i+1)
	closing := false
	if j < len(s) && s[j] == '/' {
		closing = true
		j = skipIgnorable(s, j+1)
	}
	if !nameStart(s, j) {
		return 0, "", false
	}
	for _, nm := range squareTokens {
		k, ok := matchName(s, j, nm)
		if !ok {
			continue
		}
		k = skipIgnorable(s, k)
		if k < len(s) && s[k] == ']' {
			return k + 1, bracketed("(", closing, strings.ToUpper(string(nm)), ")"), true
		}
	}
	return 0, "", false
}

// matchPipe reads "|name|" and a closing bracket at s[j:] (the "<|name|>" special tokens),
// returning the end and the name without ignorable characters.
func matchPipe(s string, j int) (int, string, bool) {
	k := pipeAt(s, j)
	if k == 0 {
		return 0, "", false
	}
	k += j
	start, letters, zw := k, 0, false
	for {
		if k-start > maxPipeToken || k >= len(s) {
			return 0, "", false
		}
		if p := pipeAt(s, k); p > 0 {
			if letters == 0 {
				return 0, "", false
			}
			name := s[start:k]
			k = skipIgnorable(s, k+p)
			m := bracketAt(s, k, isCloseBracket)
			if m == 0 {
				return 0, "", false
			}
			if zw {
				name = strings.Map(func(r rune) rune {
					if isZeroWidth(r) {
						return -1
					}
					return r
				}, name)
			}
			return k + m, name, true
		}
		r, size := utf8.DecodeRuneInString(s[k:])
		switch {
		case r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.'),
			r == '▁':
			letters++
		case isZeroWidth(r):
			zw = true
		default:
			return 0, "", false
		}
		k += size
	}
}

// pipeAt returns the byte length of a vertical bar ('|' or fullwidth '｜') at s[j:].
func pipeAt(s string, j int) int {
	if j < len(s) && s[j] == '|' {
		return 1
	}
	if j < len(s) && s[j] == 0xEF && strings.HasPrefix(s[j:], "｜") {
		return len("｜")
	}
	return 0
}

// matchName matches name at s[j:], folding case, width and homoglyphs and skipping
// zero-width characters between letters; the name must not run on into an ASCII word
// character.
func matchName(s string, j int, name []rune) (int, bool) {
	if j >= len(s) {
		return 0, false
	}
	if c := s[j]; c < utf8.RuneSelf && foldRune(rune(c)) != name[0] {
		return 0, false // cheap reject on the first byte
	}
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
	if r < utf8.RuneSelf {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	switch {
	case r >= 'Ａ' && r <= 'Ｚ':
		return r - 0xFEE0 + 'a' - 'A'
	case r >= 'ａ' && r <= 'ｚ':
		return r - 0xFEE0
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
	var (
		r    rune
		size int
	)
	if c := s[i]; c < utf8.RuneSelf {
		if c != '&' && c != '%' && c != '\\' {
			if class(rune(c)) {
				return 1
			}
			return 0
		}
		r, size = rune(c), 1
	} else {
		r, size = utf8.DecodeRuneInString(s[i:])
	}
	switch {
	case r == '&':
		if rr, n := entityAt(s, i); n > 0 && class(rr) {
			return n
		}
	case r == '%':
		if i+3 <= len(s) {
			hi, ok1 := hexDigit(s[i+1])
			lo, ok2 := hexDigit(s[i+2])
			if ok1 && ok2 && class(rune(hi<<4|lo)) {
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

// hexDigit decodes one hexadecimal digit.
func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
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
			// Look for the '}' among the next 9 bytes only: scanning the rest of the text
			// from every "\\u{" made Sanitize quadratic.
			end := strings.IndexByte(s[i+3:min(len(s), i+3+9)], '}')
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
		if c := s[i]; c < utf8.RuneSelf {
			if c != ' ' && (c < '\t' || c > '\r') {
				return i
			}
			i++
			continue
		}
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
		if s[i] < utf8.RuneSelf {
			return i
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isZeroWidth(r) {
			return i
		}
		i += size
	}
	return i
}

func isZeroWidth(r rune) bool {
	switch {
	case r < 0xAD:
		return false
	case r >= 0x200B && r <= 0x200F, r >= 0x2060 && r <= 0x2064, r == 0xFEFF:
		return true
	}
	return unicode.Is(unicode.Cf, r) || r == '\u034f' || r == '\u115f' || r == '\u1160' || r == '\u3164'
}
