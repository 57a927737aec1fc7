// Package textextract pulls the text out of documents people keep as files, so that they
// can be indexed: HTML (the title and the visible text, without scripts, styles,
// navigation or hidden elements) and PDF (the text of each page, in the order the page
// draws it, with spaces and line breaks read from the glyph positions).
//
// Everything here is pure Go (golang.org/x/net/html for HTML, github.com/ledongthuc/pdf
// for the PDF object layer). Inputs are untrusted: every entry point caps what it reads
// ([Options.MaxFileBytes]), how many pages it reads ([Options.MaxPages]) and how much text
// it returns ([Options.MaxTextBytes]), never panics (a panic of the PDF parser on a damaged
// file becomes [ErrMalformed]), and reports failures with errors that wrap the sentinels of
// this package ([ErrUnsupported], [ErrTooLarge], [ErrMalformed], [ErrEncrypted],
// [ErrNoText], [ErrTimeout]); test them with errors.Is.
package textextract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Errors of this package. The errors returned wrap one of them with the details.
var (
	// ErrUnsupported: the file is of no format this package reads.
	ErrUnsupported = errors.New("textextract: unsupported format")
	// ErrTooLarge: the input is over Options.MaxFileBytes.
	ErrTooLarge = errors.New("textextract: file too large")
	// ErrMalformed: the input is damaged or not of the format its name says.
	ErrMalformed = errors.New("textextract: malformed document")
	// ErrEncrypted: the PDF is encrypted with a password (or a scheme this package does
	// not decrypt). A PDF encrypted with an empty user password (permissions only) is
	// read.
	ErrEncrypted = errors.New("textextract: encrypted document")
	// ErrNoText: the document holds no text (a PDF of scanned pages without a text layer,
	// an empty page).
	ErrNoText = errors.New("textextract: no text")
	// ErrTimeout: reading a PDF took longer than Options.Timeout, or the context ended.
	ErrTimeout = errors.New("textextract: extraction timed out")
)

// Format is a document format this package reads.
type Format string

// The formats.
const (
	// HTML is an HTML (or XHTML) page.
	HTML Format = "html"
	// PDF is a PDF document.
	PDF Format = "pdf"
)

// Defaults of [Options].
const (
	// DefaultMaxFileBytes is the default of Options.MaxFileBytes (64 MiB).
	DefaultMaxFileBytes = 64 << 20
	// DefaultMaxPages is the default of Options.MaxPages.
	DefaultMaxPages = 5000
	// DefaultMaxTextBytes is the default of Options.MaxTextBytes (16 MiB).
	DefaultMaxTextBytes = 16 << 20
	// DefaultTimeout is the default of Options.Timeout.
	DefaultTimeout = time.Minute
)

// Options cap the work of an extraction. The zero value uses the defaults.
type Options struct {
	// MaxFileBytes refuses larger inputs with ErrTooLarge (default DefaultMaxFileBytes).
	MaxFileBytes int64
	// MaxPages is the most PDF pages read; the document is then Truncated (default
	// DefaultMaxPages).
	MaxPages int
	// MaxTextBytes is the most text returned, all pages together; the text is cut at a
	// character boundary and the document Truncated (default DefaultMaxTextBytes).
	MaxTextBytes int
	// Timeout bounds the reading of a PDF (default DefaultTimeout): past it, PDF returns
	// ErrTimeout. A damaged file can send the PDF parser into a loop that cannot be
	// interrupted; the reading is then abandoned (its goroutine ends with the process).
	Timeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.MaxPages <= 0 {
		o.MaxPages = DefaultMaxPages
	}
	if o.MaxTextBytes <= 0 {
		o.MaxTextBytes = DefaultMaxTextBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// Page is the text of one page (an HTML document has one page).
type Page struct {
	// Number is the page's number, from 1.
	Number int
	// Text is the page's text: lines separated by "\n", paragraphs by a blank line.
	Text string
}

// Document is what an extraction found.
type Document struct {
	// Format is the input's format.
	Format Format
	// Title is the HTML <title> (else its first <h1>), or the PDF's Title entry; "" when
	// it has none.
	Title string
	// Pages are the pages that hold text, in order (a PDF page without text is left out).
	Pages []Page
	// PageCount is how many pages were read (a PDF's pages up to MaxPages; 1 for HTML).
	PageCount int
	// Truncated is set when a cap (MaxPages, MaxTextBytes) cut the text short.
	Truncated bool
	// DamagedPages are the numbers of the PDF pages that could not be read to the end (the
	// text read before the damage is kept).
	DamagedPages []int
}

// Text is the text of all pages, separated by blank lines.
func (d *Document) Text() string {
	parts := make([]string, len(d.Pages))
	for i, p := range d.Pages {
		parts[i] = p.Text
	}
	return strings.Join(parts, "\n\n")
}

// FormatOf is the format of a path by its extension (.html, .htm, .xhtml; .pdf), or ""
// when this package does not read it.
func FormatOf(path string) Format {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".html", ".htm", ".xhtml":
		return HTML
	case ".pdf":
		return PDF
	}
	return ""
}

// Sniff is the format of data by its first bytes (a PDF header, an HTML doctype or root
// element), or "" when it looks like neither.
func Sniff(data []byte) Format {
	head := data[:min(len(data), 1024)]
	if bytes.Contains(head, []byte("%PDF-")) {
		return PDF
	}
	h := bytes.ToLower(bytes.TrimLeftFunc(head, unicode.IsSpace))
	h = bytes.TrimPrefix(h, []byte("\xef\xbb\xbf"))
	for _, p := range []string{"<!doctype html", "<html", "<head", "<body"} {
		if bytes.HasPrefix(h, []byte(p)) {
			return HTML
		}
	}
	return ""
}

// File extracts the text of the file at path, of the format its extension names (else
// the one its first bytes show: [Sniff]). A file over opts.MaxFileBytes is refused with
// ErrTooLarge before it is read.
func File(ctx context.Context, path string, opts Options) (*Document, error) {
	o := opts.withDefaults()
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrUnsupported, path)
	}
	if st.Size() > o.MaxFileBytes {
		return nil, fmt.Errorf("%w: %s is %d bytes, over the cap of %d", ErrTooLarge, path, st.Size(), o.MaxFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, o.MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	format := FormatOf(path)
	if format == "" {
		format = Sniff(data)
	}
	switch format {
	case HTML:
		return ExtractHTML(data, o)
	case PDF:
		return ExtractPDF(ctx, data, o)
	}
	return nil, fmt.Errorf("%w: %s", ErrUnsupported, path)
}

// checkSize refuses data over o.MaxFileBytes.
func checkSize(data []byte, o Options) error {
	if int64(len(data)) > o.MaxFileBytes {
		return fmt.Errorf("%w: %d bytes, over the cap of %d", ErrTooLarge, len(data), o.MaxFileBytes)
	}
	return nil
}

// textBudget hands out the text bytes a document may still take.
type textBudget struct {
	left      int
	truncated bool
}

// take returns s, cut at a character boundary to what is left of the budget.
func (b *textBudget) take(s string) string {
	if len(s) <= b.left {
		b.left -= len(s)
		return s
	}
	b.truncated = true
	n := b.left
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	b.left = 0
	return s[:n]
}

// cleanText tidies extracted text: valid UTF-8, no control characters, spaces collapsed
// and trimmed within each line, no more than one blank line in a row, none at either end.
func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "")
	var out strings.Builder
	out.Grow(len(s))
	blank := 0 // newlines pending
	for line := range strings.SplitSeq(s, "\n") {
		l := collapseSpaces(line)
		if l == "" {
			if out.Len() > 0 {
				blank++
			}
			continue
		}
		if out.Len() > 0 {
			out.WriteString(strings.Repeat("\n", min(blank+1, 2)))
		}
		blank = 0
		out.WriteString(l)
	}
	return out.String()
}

// collapseSpaces turns every run of white space and control characters in a line into
// one space and trims the ends.
func collapseSpaces(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if r == '\u00ad' || r == '\ufeff' || r == '\u200b' { // soft hyphen, zero-width (no-break) space
			continue
		}
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// maxMessageBytes caps what an error repeats of a parser's message.
const maxMessageBytes = 160

// message is a parser's error or panic value as an error may repeat it: printable UTF-8
// (a damaged file's bytes are often in it), at most maxMessageBytes.
func message(v any) string {
	s := fmt.Sprint(v)
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if b.Len() >= maxMessageBytes {
			b.WriteString("…")
			break
		}
		if !unicode.IsPrint(r) {
			r = '\uFFFD'
		}
		b.WriteRune(r)
	}
	return b.String()
}
