package searchr1

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentmem/memory"
)

// PassageFormat selects how retrieved passages are written into the context block.
type PassageFormat int

const (
	// FormatOriginal writes "Doc 1(Title: \"Title\") text\n" per passage, exactly like
	// Search-R1's _passages2string: the title is the first line of the contents (see
	// [Contents]) and keeps its quotes; the text is the remaining lines.
	FormatOriginal PassageFormat = iota
	// FormatDocXML writes `<doc id="ID">contents</doc>` per passage, one per line.
	FormatDocXML
)

// Contents renders a result as a Search-R1 corpus "contents" field: the title in double
// quotes on the first line, then the text ("\"Title\"\ntext"). Without a title the text
// alone is returned: a corpus row stored as [CorpusDocument] stores it (memory index
// --compat search-r1) comes back byte for byte.
func Contents(r memory.Result) string {
	if r.Title == "" {
		return r.Text
	}
	return `"` + r.Title + `"` + "\n" + r.Text
}

// FormatPassages renders results in the given format. Every piece of retrieved text is
// passed through [Sanitize] with protected (plus [defaultProtectedTags]) first.
func FormatPassages(results []memory.Result, format PassageFormat, protected ...string) string {
	var b strings.Builder
	for _, p := range formatParts(results, format, protected) {
		b.WriteString(p.head)
		b.WriteString(p.body)
		b.WriteString(p.tail)
	}
	return b.String()
}

// ContextCap bounds an injected context block (see [FormatPassagesCapped]). The zero value
// does not cap.
type ContextCap struct {
	// MaxTokens caps the block, counted by Tokenizer (0: no cap).
	MaxTokens int
	// Tokenizer counts tokens for MaxTokens (default [Words]).
	Tokenizer Truncator
	// MaxChars caps the block in code points (0: no cap).
	MaxChars int
}

// fits reports whether s is within both caps.
func (c ContextCap) fits(s string) bool {
	if c.MaxTokens > 0 {
		tok := c.Tokenizer
		if tok == nil {
			tok = Words{}
		}
		if _, cut := tok.Truncate(s, c.MaxTokens); cut {
			return false
		}
	}
	if c.MaxChars > 0 {
		if _, cut := (Chars{}).Truncate(s, c.MaxChars); cut {
			return false
		}
	}
	return true
}

// FormatPassagesCapped renders results like [FormatPassages] and cuts the block to c
// without ever leaving an element or a header open: passages that fit are kept whole, the
// first one that does not keeps its header ("<doc id=...>" or "Doc i(Title: ...)") and its
// closing ("</doc>") around as much of its text as fits, and it is dropped when not even
// those fit. It reports whether anything was cut. The result fits c.
func FormatPassagesCapped(results []memory.Result, format PassageFormat, c ContextCap, protected ...string) (string, bool) {
	parts := formatParts(results, format, protected)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.head)
		b.WriteString(p.body)
		b.WriteString(p.tail)
	}
	full := b.String()
	if c.fits(full) {
		return full, false
	}
	// Whole passages while they fit; each check is linear and there are at most topk.
	prefix := ""
	for _, p := range parts {
		whole := prefix + p.head + p.body + p.tail
		if c.fits(whole) {
			prefix = whole
			continue
		}
		if !c.fits(prefix + p.head + p.tail) {
			return prefix, true
		}
		// The longest cut of the body (at a rune boundary) that fits, by bisection.
		lo, hi := 0, len(p.body) // body[:lo] fits, body[:hi] does not
		for hi-lo > 1 {
			mid := (lo + hi) / 2
			for mid > lo && !utf8.RuneStart(p.body[mid]) {
				mid--
			}
			if mid == lo {
				mid = (lo + hi) / 2
				for mid < hi && !utf8.RuneStart(p.body[mid]) {
					mid++
				}
				if mid == hi {
					break
				}
			}
			if c.fits(prefix + p.head + p.body[:mid] + p.tail) {
				lo = mid
			} else {
				hi = mid
			}
		}
		body := strings.TrimRightFunc(p.body[:lo], unicode.IsSpace)
		return prefix + p.head + body + p.tail, true
	}
	return prefix, true
}

// passageParts is one formatted passage: a header, the (cuttable) text and a closing.
type passageParts struct{ head, body, tail string }

func formatParts(results []memory.Result, format PassageFormat, protected []string) []passageParts {
	tags := append(defaultProtectedTags(), protected...)
	parts := make([]passageParts, len(results))
	for i, r := range results {
		contents := Sanitize(Contents(r), tags...)
		switch format {
		case FormatDocXML:
			parts[i] = passageParts{
				head: `<doc id="` + attrEscape(Sanitize(r.ID, tags...)) + `">`,
				body: contents,
				tail: "</doc>\n",
			}
		default:
			title, text, _ := strings.Cut(contents, "\n")
			parts[i] = passageParts{
				head: "Doc " + strconv.Itoa(i+1) + "(Title: " + title + ") ",
				body: text,
				tail: "\n",
			}
		}
	}
	return parts
}

// attrEscape makes s safe inside a double-quoted attribute without producing entities
// (which a model might decode back): quotes become apostrophes, control characters spaces.
func attrEscape(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '"':
			return '\''
		case unicode.IsControl(r):
			return ' '
		}
		return r
	}, s)
}

// Truncator cuts text to at most max units (tokens or characters) and reports whether it
// cut anything.
type Truncator interface {
	Truncate(text string, max int) (string, bool)
}

// Chars truncates by Unicode code points.
type Chars struct{}

// Truncate keeps the first max code points.
func (Chars) Truncate(text string, max int) (string, bool) {
	n := 0
	for i := range text {
		if n == max {
			return text[:i], true
		}
		n++
	}
	return text, false
}

// Words approximates model tokens by whitespace-separated words; it keeps the first max
// words with their original spacing. Plug a real tokenizer in through [Truncator] where
// exact token budgets matter.
type Words struct{}

// Truncate keeps the first max words.
func (Words) Truncate(text string, max int) (string, bool) {
	n := 0
	inWord := false
	for i, r := range text {
		if unicode.IsSpace(r) {
			inWord = false
			continue
		}
		if !inWord {
			if n == max {
				return strings.TrimRightFunc(text[:i], unicode.IsSpace), true
			}
			n++
			inWord = true
		}
	}
	return text, false
}

var (
	_ Truncator = Chars{}
	_ Truncator = Words{}
)
