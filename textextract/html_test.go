package textextract

import (
	"errors"
	"strings"
	"testing"
)

func TestExtractHTML(t *testing.T) {
	tests := []struct {
		name      string
		html      string
		opts      Options
		title     string
		text      string // "" with no error: the document has no pages
		truncated bool
	}{
		{"title and paragraphs", "<title>T</title><p>one</p><p>two</p>", Options{}, "T", "one\n\ntwo", false},
		{"inline elements join, blocks break", "<p>a<b>b</b> <i>c</i></p><div>d</div><ul><li>e<li>f</ul>", Options{}, "", "ab c\n\nd\n\ne\nf", false},
		{"no <title>: the first <h1>", "<body><h1> Main <em>Heading</em></h1><h1>Second</h1><p>x</p>", Options{}, "Main Heading", "Main Heading\n\nSecond\n\nx", false},
		{"scripts, styles, nav and hidden elements dropped", `<script>s()</script><style>p{}</style><nav>menu</nav><p>kept</p><p hidden>h</p>` +
			`<p aria-hidden="true">a</p><p style="visibility: hidden">v</p><div role="navigation">n</div><noscript>ns</noscript>`, Options{}, "", "kept", false},
		{"entities and non-breaking spaces", "<p>Fish &amp; chips&nbsp;&nbsp;&lt;tag&gt; &eacute;&#233;&#x1F9A6;</p>", Options{}, "", "Fish & chips <tag> éé🦦", false},
		{"pre keeps its lines", "<pre>a\n  b\n\nc</pre>", Options{}, "", "a\nb\n\nc", false},
		{"br and table rows", "<p>1<br>2</p><table><tr><td>x</td><td>y</td></tr><tr><td>z</td></tr></table>", Options{}, "", "1\n2\n\nx y\nz", false},
		{"latin-1 by its meta charset", "<meta charset=\"iso-8859-1\"><title>Caf\xe9</title><p>cr\xe8me br\xfbl\xe9e</p>", Options{}, "Café", "crème brûlée", false},
		{"a UTF-8 byte order mark", "\xef\xbb\xbf<p>bom</p>", Options{}, "", "bom", false},
		{"undeclared bytes that are not UTF-8 read as windows-1252, as browsers do", "<p>ok\xff\xfe text</p>", Options{}, "", "okÿþ text", false},
		{"a title only", "<title>Just a title</title>", Options{}, "Just a title", "", false},
		{"an svg title is not the page's", "<svg><title>icon</title></svg><p>body</p>", Options{}, "", "body", false},
		{"unclosed and misnested tags", "<p>one<div>two<p>three</b></i>", Options{}, "", "one\n\ntwo\n\nthree", false},
		{"MaxTextBytes", "<p>abcdef</p><p>ghi</p>", Options{MaxTextBytes: 4}, "", "abcd", true},
		{"MaxTextBytes inside a character", "<p>ééé</p>", Options{MaxTextBytes: 3}, "", "é", true},
		{"deep nesting", strings.Repeat("<div>", 500) + "deep" + strings.Repeat("</div>", 500), Options{}, "", "deep", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := ExtractHTML([]byte(tt.html), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if doc.Title != tt.title {
				t.Errorf("Title %q, want %q", doc.Title, tt.title)
			}
			if got := doc.Text(); got != tt.text {
				t.Errorf("text\n got %q\nwant %q", got, tt.text)
			}
			if (len(doc.Pages) == 0) != (tt.text == "") {
				t.Errorf("%d pages for text %q", len(doc.Pages), tt.text)
			}
			if doc.Truncated != tt.truncated || doc.Format != HTML || doc.PageCount != 1 {
				t.Errorf("Truncated %v (want %v), Format %q, PageCount %d", doc.Truncated, tt.truncated, doc.Format, doc.PageCount)
			}
		})
	}
}

func TestExtractHTMLErrors(t *testing.T) {
	tests := []struct {
		name string
		html string
		opts Options
		want error
	}{
		{"empty", "", Options{}, ErrNoText},
		{"only a script", "<html><script>x()</script></html>", Options{}, ErrNoText},
		{"white space only", "<p> \n&nbsp; </p>", Options{}, ErrNoText},
		{"over MaxFileBytes", "<p>0123456789</p>", Options{MaxFileBytes: 10}, ErrTooLarge},
		{"nested deeper than the parser's 512 open elements", strings.Repeat("<div>", 100000) + "deep", Options{}, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := ExtractHTML([]byte(tt.html), tt.opts)
			if !errors.Is(err, tt.want) || doc != nil {
				t.Fatalf("doc %+v, err %v, want %v", doc, err, tt.want)
			}
		})
	}
}
