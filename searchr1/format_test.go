package searchr1

import (
	"context"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/agentmem/memory"
)

// randPassage draws a passage from pieces that stress the formatter: protocol tags in
// every disguise, chat tokens, multi-byte runes, long words, newlines and quotes.
func randPassage(r *rand.Rand) string {
	pieces := []string{"word", "the", " ", "  ", "\n", "é", "日本語", "</doc>", "<doc id=\"x\">", "<\\/context>",
		"<|im_end|>", "\"", "(Title: x)", "&lt;/doc&gt;", strings.Repeat("long", 20), "\u200b", ")", "<", ">"}
	var b strings.Builder
	for n := r.IntN(40); n > 0; n-- {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

// sentenceTok counts sentences ("."-separated) as tokens: a Truncator unlike Words.
type sentenceTok struct{}

func (sentenceTok) Truncate(text string, max int) (string, bool) {
	n := 0
	for i, r := range text {
		if r == '.' {
			n++
			if n == max {
				return text[:i+1], i+1 < len(text)
			}
		}
	}
	return text, false
}

var docXMLRE = regexp.MustCompile(`^(?s:<doc id="[^"\n]*">[^\n]*?</doc>\n|<doc id="[^"\n]*">.*?</doc>\n)*$`)

// TestFormatPassagesCappedProperty: under any cap and any passages, every formatter emits
// whole passages, then at most one passage cut inside its text with its header and
// closing intact, and the block fits the cap.
func TestFormatPassagesCappedProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 13))
	for it := 0; it < 3000; it++ {
		results := make([]memory.Result, r.IntN(6))
		for i := range results {
			results[i] = memory.Result{ID: randPassage(r), Title: randPassage(r), Text: randPassage(r)}
		}
		var c ContextCap
		switch r.IntN(4) {
		case 0:
			c.MaxChars = r.IntN(400)
		case 1:
			c.MaxTokens = r.IntN(80)
		case 2:
			c.MaxChars, c.MaxTokens = r.IntN(400), r.IntN(80)
		case 3:
			c.MaxTokens, c.Tokenizer = 1+r.IntN(10), sentenceTok{}
		}
		for _, format := range []PassageFormat{FormatOriginal, FormatDocXML} {
			got, cut := FormatPassagesCapped(results, format, c)
			full := FormatPassages(results, format)
			if !cut {
				if got != full {
					t.Fatalf("uncut output differs from FormatPassages:\n%q\n%q", got, full)
				}
				continue
			}
			if !c.fits(got) {
				t.Fatalf("output over the cap %+v: %q", c, got)
			}
			parts := formatParts(results, format, nil)
			rest := got
			k := 0
			for ; k < len(parts); k++ {
				whole := parts[k].head + parts[k].body + parts[k].tail
				if !strings.HasPrefix(rest, whole) {
					break
				}
				rest = rest[len(whole):]
			}
			if rest != "" {
				p := parts[k]
				if !strings.HasPrefix(rest, p.head) || !strings.HasSuffix(rest, p.tail) || len(rest) < len(p.head)+len(p.tail) {
					t.Fatalf("partial passage lost its header or closing: %q (parts %+v)", rest, p)
				}
				body := rest[len(p.head) : len(rest)-len(p.tail)]
				if !strings.HasPrefix(p.body, body) || strings.TrimRightFunc(body, unicode.IsSpace) != body {
					t.Fatalf("partial body %q is not a trimmed prefix of %q", body, p.body)
				}
			}
			if format == FormatDocXML {
				if strings.Count(got, "<doc ") != strings.Count(got, "</doc>") || !docXMLRE.MatchString(got) {
					t.Fatalf("unbalanced <doc> under cap %+v:\n%s", c, got)
				}
			}
		}
	}
}

// TestLoopDocXMLCapNeverUnclosed is the issue-13 case: a context cap used to cut inside a
// <doc> and leave it open.
func TestLoopDocXMLCapNeverUnclosed(t *testing.T) {
	long := strings.Repeat("alpha beta ", 50)
	s := &fakeSearcher{byQuery: map[string][]memory.Result{"q": {res("a", "A", long, 1), res("b", "B", long, 1)}}}
	for capChars := 0; capChars < 1300; capChars += 37 {
		gen := &Scripted{Outputs: []string{"<search>q</search>", "<answer>a</answer>"}}
		l := Loop{Format: FormatDocXML, MaxContextChars: capChars}
		ep, err := l.Run(context.Background(), gen, s, "q")
		if err != nil {
			t.Fatal(err)
		}
		obs := ep.Trace.Turns[0].Observation
		if strings.Count(obs, "<doc ") != strings.Count(obs, "</doc>") {
			t.Fatalf("cap %d: unclosed <doc>: %q", capChars, obs)
		}
		body := strings.TrimSuffix(strings.TrimPrefix(obs, "\n\n<context>"), "</context>\n\n")
		body = strings.TrimSuffix(body, defaultTruncationMarker)
		if capChars > 0 && len([]rune(body)) > capChars {
			t.Fatalf("cap %d: body %d chars", capChars, len([]rune(body)))
		}
	}
}
