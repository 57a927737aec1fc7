package searchr1

import (
	"strconv"
	"strings"
	"unicode"

	"github.com/agentmem/memory"
)

// PassageFormat selects how retrieved passages are written into the context block.
type PassageFormat int

const (
	// FormatSearchR1 writes "Doc 1(Title: \"Title\") text\n" per passage, exactly like
	// Search-R1's _passages2string: the title is the first line of the contents (see
	// [Contents]) and keeps its quotes; the text is the remaining lines.
	FormatSearchR1 PassageFormat = iota
	// FormatDocXML writes `<doc id="ID">contents</doc>` per passage, one per line.
	FormatDocXML
)

// Contents renders a result as a Search-R1 corpus "contents" field: the title in double
// quotes on the first line, then the text ("\"Title\"\ntext"). Without a title the text
// alone is returned.
func Contents(r memory.Result) string {
	if r.Title == "" {
		return r.Text
	}
	return `"` + r.Title + `"` + "\n" + r.Text
}

// FormatPassages renders results in the given format. Every piece of retrieved text is
// passed through [Sanitize] with protected (plus [ProtectedTags]) first.
func FormatPassages(results []memory.Result, format PassageFormat, protected ...string) string {
	tags := append(append([]string(nil), ProtectedTags...), protected...)
	var b strings.Builder
	for i, r := range results {
		contents := Sanitize(Contents(r), tags...)
		switch format {
		case FormatDocXML:
			b.WriteString(`<doc id="`)
			b.WriteString(attrEscape(Sanitize(r.ID, tags...)))
			b.WriteString(`">`)
			b.WriteString(contents)
			b.WriteString("</doc>\n")
		default:
			title, text, _ := strings.Cut(contents, "\n")
			b.WriteString("Doc ")
			b.WriteString(strconv.Itoa(i + 1))
			b.WriteString("(Title: ")
			b.WriteString(title)
			b.WriteString(") ")
			b.WriteString(text)
			b.WriteString("\n")
		}
	}
	return b.String()
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
