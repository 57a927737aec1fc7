package textextract

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
)

// skippedElements hold no text a reader sees, or only navigation and controls.
var skippedElements = map[atom.Atom]bool{
	atom.Head: true, atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Svg: true, atom.Canvas: true, atom.Iframe: true, atom.Object: true,
	atom.Embed: true, atom.Nav: true, atom.Select: true, atom.Datalist: true, atom.Button: true,
	atom.Audio: true, atom.Video: true, atom.Map: true, atom.Title: true,
}

// lineElements end a line; paragraphElements end a paragraph (a blank line).
var (
	lineElements = map[atom.Atom]bool{
		atom.Li: true, atom.Dt: true, atom.Dd: true, atom.Tr: true, atom.Br: true, atom.Option: true,
		atom.Caption: true, atom.Figcaption: true, atom.Legend: true, atom.Summary: true,
	}
	paragraphElements = map[atom.Atom]bool{
		atom.P: true, atom.Div: true, atom.Section: true, atom.Article: true, atom.Main: true,
		atom.Header: true, atom.Footer: true, atom.Aside: true, atom.H1: true, atom.H2: true,
		atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true, atom.Ul: true, atom.Ol: true,
		atom.Dl: true, atom.Table: true, atom.Blockquote: true, atom.Pre: true, atom.Figure: true,
		atom.Form: true, atom.Fieldset: true, atom.Address: true, atom.Hr: true, atom.Details: true,
		atom.Body: true, atom.Center: true, atom.Hgroup: true,
	}
)

// ExtractHTML extracts the title and the visible text of an HTML page: the text of the
// body without scripts, styles, navigation (<nav>, role="navigation"), form controls and
// hidden elements (hidden, aria-hidden="true", display:none), a line per list item or
// table row, a blank line between paragraphs and headings. The encoding comes from a
// byte order mark or a <meta> charset, else from the bytes (UTF-8 when they are, else
// windows-1252, as browsers guess). A page with neither title nor text is ErrNoText; one
// nested deeper than the parser's 512 open elements is ErrMalformed.
func ExtractHTML(data []byte, opts Options) (doc *Document, err error) {
	o := opts.withDefaults()
	if err := checkSize(data, o); err != nil {
		return nil, err
	}
	defer func() { // x/net/html does not panic on bad markup; this is a last guard
		if r := recover(); r != nil {
			doc, err = nil, fmt.Errorf("%w: HTML: %s", ErrMalformed, message(r))
		}
	}()
	root, err := html.Parse(bytes.NewReader(toUTF8(data)))
	if err != nil {
		return nil, fmt.Errorf("%w: HTML: %s", ErrMalformed, message(err))
	}
	var w htmlWriter
	w.walk(root)
	title := findTitle(root)
	if title == "" {
		title = w.h1
	}
	budget := textBudget{left: o.MaxTextBytes}
	text := budget.take(cleanText(w.b.String()))
	title = collapseSpaces(strings.ToValidUTF8(title, ""))
	if text == "" && title == "" {
		return nil, fmt.Errorf("%w: the HTML page shows no text", ErrNoText)
	}
	doc = &Document{Format: HTML, Title: title, PageCount: 1, Truncated: budget.truncated}
	if text != "" {
		doc.Pages = []Page{{Number: 1, Text: text}}
	}
	return doc, nil
}

// toUTF8 decodes data from the encoding its byte order mark or <meta> charset names;
// invalid UTF-8 is dropped later (cleanText).
func toUTF8(data []byte) []byte {
	enc, name, _ := charset.DetermineEncoding(data, "text/html")
	if name == "utf-8" || enc == nil {
		return bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	}
	out, err := enc.NewDecoder().Bytes(data)
	if err != nil {
		return data
	}
	return out
}

// htmlWriter gathers the text of a parsed page.
type htmlWriter struct {
	b      strings.Builder
	h1     string // the first <h1>
	breaks int    // line ends pending before the next text: 1 a newline, 2 a blank line
	space  bool   // a space pending before the next text
	pre    int    // depth inside <pre>
	inH1   int    // depth inside the first <h1>, while it is read
	h1b    strings.Builder
}

// walk visits the tree in document order without recursion (a page may nest deeper than
// a goroutine's stack should grow).
func (w *htmlWriter) walk(root *html.Node) {
	n := root
	for n != nil {
		if w.enter(n) && n.FirstChild != nil {
			n = n.FirstChild
			continue
		}
		for n != nil {
			w.leave(n)
			if n == root {
				return
			}
			if n.NextSibling != nil {
				n = n.NextSibling
				break
			}
			n = n.Parent
		}
	}
}

// hidden reports whether an element is not shown (or is navigation).
func hidden(n *html.Node) bool {
	if skippedElements[n.DataAtom] {
		return true
	}
	for _, a := range n.Attr {
		v := strings.ToLower(strings.TrimSpace(a.Val))
		switch strings.ToLower(a.Key) {
		case "hidden":
			return true
		case "aria-hidden":
			if v == "true" {
				return true
			}
		case "role":
			if v == "navigation" {
				return true
			}
		case "style":
			s := strings.ReplaceAll(v, " ", "")
			if strings.Contains(s, "display:none") || strings.Contains(s, "visibility:hidden") {
				return true
			}
		}
	}
	return false
}

// enter handles the start of n and reports whether its children are to be read.
func (w *htmlWriter) enter(n *html.Node) bool {
	switch n.Type {
	case html.TextNode:
		w.text(n.Data)
		return false
	case html.DocumentNode:
		return true
	case html.ElementNode:
	default: // comments, doctype
		return false
	}
	if hidden(n) { // <svg> among them: its <title> is not the page's
		return false
	}
	switch {
	case n.DataAtom == atom.Br:
		w.lineBreak(1)
	case paragraphElements[n.DataAtom]:
		w.lineBreak(2)
	case lineElements[n.DataAtom]:
		w.lineBreak(1)
	case n.DataAtom == atom.Td || n.DataAtom == atom.Th:
		w.space = true
	}
	if n.DataAtom == atom.Pre {
		w.pre++
	}
	if n.DataAtom == atom.H1 && w.h1 == "" && w.inH1 == 0 {
		w.inH1 = 1
	} else if w.inH1 > 0 {
		w.inH1++
	}
	return true
}

// leave handles the end of n (for an element whose children were read, or not).
func (w *htmlWriter) leave(n *html.Node) {
	if n.Type != html.ElementNode || hidden(n) {
		return
	}
	switch {
	case paragraphElements[n.DataAtom]:
		w.lineBreak(2)
	case lineElements[n.DataAtom]:
		w.lineBreak(1)
	case n.DataAtom == atom.Td || n.DataAtom == atom.Th:
		w.space = true
	}
	if n.DataAtom == atom.Pre {
		w.pre--
	}
	if w.inH1 > 0 {
		w.inH1--
		if w.inH1 == 0 {
			w.h1 = collapseSpaces(w.h1b.String())
		}
	}
}

func (w *htmlWriter) lineBreak(n int) {
	w.breaks = max(w.breaks, n)
}

// text adds the text of a text node: white space collapsed, except inside <pre>.
func (w *htmlWriter) text(s string) {
	if w.inH1 > 0 {
		w.h1b.WriteString(s)
		w.h1b.WriteByte(' ')
	}
	if w.pre > 0 {
		if s != "" {
			w.flush()
			w.b.WriteString(s)
		}
		return
	}
	lead, trail := false, false
	if s != "" {
		r, _ := utf8.DecodeRuneInString(s)
		lead = isHTMLSpace(r)
		r, _ = utf8.DecodeLastRuneInString(s)
		trail = isHTMLSpace(r)
	}
	words := strings.FieldsFunc(s, isHTMLSpace)
	if len(words) == 0 {
		w.space = w.space || lead
		return
	}
	w.space = w.space || lead
	w.flush()
	w.b.WriteString(strings.Join(words, " "))
	w.space = trail
}

// flush writes the line ends or the space pending before new text.
func (w *htmlWriter) flush() {
	if w.b.Len() == 0 {
		w.breaks, w.space = 0, false
		return
	}
	switch {
	case w.breaks > 0:
		w.b.WriteString(strings.Repeat("\n", w.breaks))
	case w.space:
		w.b.WriteByte(' ')
	}
	w.breaks, w.space = 0, false
}

func isHTMLSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '\f', '\u00a0':
		return true
	}
	return false
}

// findTitle is the text of the page's first <title> (not an <svg> one), without
// recursion.
func findTitle(root *html.Node) string {
	stack := []*html.Node{root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n.Type == html.ElementNode && n.DataAtom == atom.Title && n.Namespace == "" {
			return nodeText(n)
		}
		for c := n.LastChild; c != nil; c = c.PrevSibling {
			stack = append(stack, c)
		}
	}
	return ""
}

// nodeText is the text below n, white space collapsed.
func nodeText(n *html.Node) string {
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
			b.WriteByte(' ')
		}
	}
	return collapseSpaces(b.String())
}
