package textextract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync/atomic"

	"github.com/ledongthuc/pdf"
)

// Caps of the PDF reader beyond Options: they bound the work a damaged or hostile file can
// cause (a page tree that points back at itself, forms that draw themselves).
const (
	maxTreeDepth  = 64         // levels of the page tree, and of a page's Parent chain
	maxFormDepth  = 8          // form XObjects drawn inside one another
	maxStateStack = 1024       // q (save) without Q (restore)
	maxOperators  = 20_000_000 // content operators read, all pages together
)

// errStopped unwinds a page's content interpreter when the reading must end (a cap was
// reached, or ExtractPDF gave up waiting).
var errStopped = errors.New("textextract: stopped")

// ExtractPDF extracts the text of a PDF, page by page, up to opts.MaxPages pages and
// opts.MaxTextBytes bytes of text (the document is then Truncated). The text of a page
// is its text-showing operators in drawing order, decoded through each font's encoding
// or ToUnicode map, with a line break where the baseline moves and a space where the
// position jumps forward by more than a fraction of the font size (as between the words
// of a kerned TJ array). Text in form XObjects is included. The Title comes from the
// document information dictionary.
//
// A file that is not a PDF, or whose structure cannot be read, is ErrMalformed; one that
// needs a password (or uses an encryption this package does not decrypt) is
// ErrEncrypted; one whose pages draw no text (scanned images without a text layer) is
// ErrNoText. A page that is damaged part way keeps the text read before the damage and is
// listed in DamagedPages. The reading is bounded by opts.Timeout and ctx (ErrTimeout).
func ExtractPDF(ctx context.Context, data []byte, opts Options) (*Document, error) {
	o := opts.withDefaults()
	if err := checkSize(data, o); err != nil {
		return nil, err
	}
	data, err := normalizePDF(data)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	type result struct {
		doc *Document
		err error
	}
	done := make(chan result, 1)
	var stop atomic.Bool
	go func() {
		doc, err := readPDF(data, o, &stop)
		done <- result{doc, err}
	}()
	select {
	case r := <-done:
		return r.doc, r.err
	case <-ctx.Done():
		stop.Store(true)
		return nil, fmt.Errorf("%w: PDF not read within %s: %w", ErrTimeout, o.Timeout, ctx.Err())
	}
}

// normalizePDF finds the header (up to 1 KiB of junk may precede it, as readers allow),
// writes a 2.0 or oddly terminated header as "%PDF-1.7\n" for the parser (whose syntax it
// shares), and drops junk after the last %%EOF.
func normalizePDF(data []byte) ([]byte, error) {
	i := bytes.Index(data[:min(len(data), 1024)], []byte("%PDF-"))
	if i < 0 {
		return nil, fmt.Errorf("%w: no PDF header", ErrMalformed)
	}
	data = data[i:]
	if len(data) < 16 {
		return nil, fmt.Errorf("%w: PDF of %d bytes", ErrMalformed, len(data))
	}
	if !bytes.HasPrefix(data, []byte("%PDF-1.")) || data[7] < '0' || data[7] > '7' || (data[8] != '\r' && data[8] != '\n') {
		data = bytes.Clone(data)
		copy(data, "%PDF-1.7\n")
	}
	tail := max(len(data)-4096, 0)
	if j := bytes.LastIndex(data[tail:], []byte("%%EOF")); j >= 0 {
		end := tail + j + len("%%EOF")
		if len(bytes.TrimRight(data[end:], "\r\n\t \x00")) > 0 || len(data)-end > 64 {
			data = data[:end]
		}
	}
	return data, nil
}

// openError maps an error of the PDF parser's open to this package's errors.
func openError(err error) error {
	if errors.Is(err, pdf.ErrInvalidPassword) {
		return fmt.Errorf("%w: the PDF needs a password", ErrEncrypted)
	}
	if strings.Contains(strings.ToLower(err.Error()), "encrypt") {
		return fmt.Errorf("%w: %s", ErrEncrypted, message(err))
	}
	return fmt.Errorf("%w: %s", ErrMalformed, message(err))
}

// checkRC4 refuses RC4 keys shorter than 88 bits (40-bit RC4 among them, which FPDF and
// old Acrobat versions write even without a user password): the PDF parser derives their
// object keys at full MD5 length instead of cutting them to the key length plus 5 bytes
// (PDF 32000-1, 7.6.2, algorithm 1), so their text would decrypt to garbage.
func checkRC4(enc pdf.Value) error {
	if enc.IsNull() || enc.Key("V").Int64() >= 4 {
		return nil
	}
	bits := enc.Key("Length").Int64()
	if bits == 0 {
		bits = 40
	}
	if bits/8+5 < 16 {
		return fmt.Errorf("%w: %d-bit RC4 encryption is not supported", ErrEncrypted, bits)
	}
	return nil
}

// readPDF reads a normalized PDF. It never panics: a panic of the parser outside a page
// (opening, the page tree) is ErrMalformed; inside a page, it ends that page.
func readPDF(data []byte, o Options, stop *atomic.Bool) (doc *Document, err error) {
	defer func() {
		if r := recover(); r != nil {
			doc, err = nil, fmt.Errorf("%w: PDF: %s", ErrMalformed, message(r))
		}
	}()
	r, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, openError(err)
	}
	if err := checkRC4(r.Trailer().Key("Encrypt")); err != nil {
		return nil, err
	}
	pages, truncated, damaged := pageTree(r.Trailer().Key("Root").Key("Pages"), o.MaxPages)
	if len(pages) == 0 {
		if damaged {
			return nil, fmt.Errorf("%w: the PDF's page tree cannot be read", ErrMalformed)
		}
		return nil, fmt.Errorf("%w: the PDF has no pages", ErrNoText)
	}
	doc = &Document{Format: PDF, Title: infoTitle(r), PageCount: len(pages), Truncated: truncated}
	budget := textBudget{left: o.MaxTextBytes}
	ops := 0
	for i, p := range pages {
		if stop.Load() || budget.left == 0 {
			doc.Truncated = true
			break
		}
		text, bad, capped := pageText(p, &ops, 2*budget.left+64<<10, stop)
		if bad {
			doc.DamagedPages = append(doc.DamagedPages, i+1)
		}
		if capped {
			doc.Truncated = true
		}
		if text = budget.take(cleanText(text)); text != "" {
			doc.Pages = append(doc.Pages, Page{Number: i + 1, Text: text})
		}
		if capped {
			break
		}
	}
	doc.Truncated = doc.Truncated || budget.truncated
	if len(doc.Pages) == 0 {
		if len(doc.DamagedPages) == len(pages) {
			return nil, fmt.Errorf("%w: none of the PDF's %d pages can be read", ErrMalformed, len(pages))
		}
		return nil, fmt.Errorf("%w: the PDF's %d pages draw no text (scanned images without a text layer?)", ErrNoText, len(pages))
	}
	return doc, nil
}

// infoTitle is the Title of the document information dictionary ("" when none or damaged).
func infoTitle(r *pdf.Reader) (title string) {
	defer func() {
		if recover() != nil {
			title = ""
		}
	}()
	return collapseSpaces(strings.ToValidUTF8(r.Trailer().Key("Info").Key("Title").Text(), ""))
}

// pageTree lists the pages under root in order, at most max (truncated: there were more).
// A cycle or a damaged node ends the walk (damaged), keeping the pages found before it.
func pageTree(root pdf.Value, max int) (pages []pdf.Value, truncated, damaged bool) {
	defer func() {
		if r := recover(); r != nil {
			damaged = true
		}
	}()
	type node struct {
		v     pdf.Value
		depth int
	}
	maxNodes := 4*max + 1024
	stack := []node{{root, 0}}
	for visits := 0; len(stack) > 0; visits++ {
		if visits > maxNodes || len(stack) > maxNodes {
			return pages, truncated, true
		}
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n.v.Kind() != pdf.Dict {
			damaged = true
			continue
		}
		if kids := n.v.Key("Kids"); kids.Kind() == pdf.Array && n.v.Key("Type").Name() != "Page" {
			if n.depth >= maxTreeDepth {
				damaged = true
				continue
			}
			for j := kids.Len() - 1; j >= 0; j-- {
				stack = append(stack, node{kids.Index(j), n.depth + 1})
			}
			continue
		}
		if len(pages) == max {
			return pages, true, damaged
		}
		pages = append(pages, n.v)
	}
	return pages, truncated, damaged
}

// inherited is a page attribute that may sit on the page or an ancestor (Resources),
// following at most maxTreeDepth Parent links.
func inherited(page pdf.Value, key string) pdf.Value {
	v := page
	for range maxTreeDepth {
		if v.IsNull() {
			break
		}
		if r := v.Key(key); !r.IsNull() {
			return r
		}
		v = v.Key("Parent")
	}
	return pdf.Value{}
}

// pageText is the raw text of a page (cleanText tidies it). bad: the page is damaged (the
// text read before the damage is returned); capped: maxOperators was reached, or the
// reading was stopped, or the page's text grew past limit bytes.
func pageText(page pdf.Value, ops *int, limit int, stop *atomic.Bool) (text string, bad, capped bool) {
	t := &textState{ops: ops, stop: stop, limit: limit, tm: identity, tlm: identity}
	t.th, t.ctm = 1, identity
	defer func() {
		if r := recover(); r != nil {
			if err, ok := r.(error); ok && errors.Is(err, errStopped) {
				capped = true
			} else {
				bad = true
				slog.Debug("textextract: damaged PDF page", "err", message(r))
			}
			text = t.out.String()
		}
	}()
	t.run(page.Key("Contents"), inherited(page, "Resources"), 0)
	return t.out.String(), false, false
}

// matrix is a PDF transformation matrix [a b c d e f].
type matrix [6]float64

var identity = matrix{1, 0, 0, 1, 0, 0}

// mul is m × n (m applied first).
func (m matrix) mul(n matrix) matrix {
	return matrix{
		m[0]*n[0] + m[1]*n[2], m[0]*n[1] + m[1]*n[3],
		m[2]*n[0] + m[3]*n[2], m[2]*n[1] + m[3]*n[3],
		m[4]*n[0] + m[5]*n[2] + n[4], m[4]*n[1] + m[5]*n[3] + n[5],
	}
}

func translate(x, y float64) matrix { return matrix{1, 0, 0, 1, x, y} }

// fontInfo is what the text reader needs of a font.
type fontInfo struct {
	enc    pdf.TextEncoding // nil: the bytes as they are
	simple bool             // one byte per glyph
	first  int              // the code of widths[0]
	widths []float64        // glyph widths in thousandths of the font size (simple fonts)
}

func (f *fontInfo) decode(raw string) string {
	if f == nil || f.enc == nil {
		return raw
	}
	return f.enc.Decode(raw)
}

// width is the advance of raw in text space units before scaling by the font size, and
// whether it was known from the font (else estimated at half an em a character).
func (f *fontInfo) width(raw, decoded string) (w float64, known bool) {
	if f != nil && f.simple && len(f.widths) > 0 {
		known = true
		for i := 0; i < len(raw); i++ {
			c := int(raw[i]) - f.first
			if c < 0 || c >= len(f.widths) || f.widths[c] <= 0 {
				w += 0.5
				known = false
				continue
			}
			w += f.widths[c] / 1000
		}
		return w, known
	}
	return 0.5 * float64(len([]rune(decoded))), false
}

// loadFont reads a font dictionary; a damaged one reads as raw bytes.
func loadFont(v pdf.Value) (fi *fontInfo) {
	fi = &fontInfo{}
	defer func() {
		if recover() != nil {
			fi = &fontInfo{}
		}
	}()
	f := pdf.Font{V: v}
	fi.enc = f.Encoder()
	if v.Key("Subtype").Name() != "Type0" {
		fi.simple = true
		fi.first = int(v.Key("FirstChar").Int64())
		ws := v.Key("Widths")
		for i := 0; i < min(ws.Len(), 256); i++ {
			fi.widths = append(fi.widths, ws.Index(i).Float64())
		}
	}
	return fi
}

// graphics is the part of the graphics state that q and Q save and restore.
type graphics struct {
	ctm                 matrix
	font                *fontInfo
	tfs, tc, tw, th, tl float64
}

// textState reads the text of a page's content streams.
type textState struct {
	out   strings.Builder
	ops   *int
	stop  *atomic.Bool
	limit int // raw text bytes past which the page is cut (the budget left, with room for clean-up)

	graphics
	saved   []graphics
	tm, tlm matrix

	last struct { // where the last text shown ended
		x, y, size float64
		known      bool // its advance came from the font's widths
		ok         bool
	}
}

// run interprets a content stream (or array of streams) with the given resources.
func (t *textState) run(contents, resources pdf.Value, depth int) {
	if contents.Kind() != pdf.Stream && contents.Kind() != pdf.Array {
		return
	}
	fonts := map[string]*fontInfo{}
	pdf.Interpret(contents, func(stk *pdf.Stack, op string) {
		*t.ops++
		if *t.ops > maxOperators || t.stop.Load() {
			panic(errStopped)
		}
		args := make([]pdf.Value, stk.Len())
		for i := len(args) - 1; i >= 0; i-- {
			args[i] = stk.Pop()
		}
		num := func(i int) float64 {
			if i < len(args) {
				return args[i].Float64()
			}
			return 0
		}
		switch op {
		case "q":
			if len(t.saved) < maxStateStack {
				t.saved = append(t.saved, t.graphics)
			}
		case "Q":
			if n := len(t.saved); n > 0 {
				t.graphics = t.saved[n-1]
				t.saved = t.saved[:n-1]
			}
		case "cm":
			if len(args) == 6 {
				t.ctm = matrix{num(0), num(1), num(2), num(3), num(4), num(5)}.mul(t.ctm)
			}
		case "BT":
			t.tm, t.tlm = identity, identity
		case "Tf":
			if len(args) == 2 {
				name := args[0].Name()
				f, ok := fonts[name]
				if !ok {
					f = loadFont(resources.Key("Font").Key(name))
					fonts[name] = f
				}
				t.font, t.tfs = f, num(1)
			}
		case "Tc":
			t.tc = num(0)
		case "Tw":
			t.tw = num(0)
		case "Tz":
			t.th = num(0) / 100
		case "TL":
			t.tl = num(0)
		case "Td":
			t.moveLine(num(0), num(1))
		case "TD":
			t.tl = -num(1)
			t.moveLine(num(0), num(1))
		case "Tm":
			if len(args) == 6 {
				t.tm = matrix{num(0), num(1), num(2), num(3), num(4), num(5)}
				t.tlm = t.tm
			}
		case "T*":
			t.moveLine(0, -t.tl)
		case "Tj":
			if len(args) == 1 {
				t.show(args[0].RawString())
			}
		case "'":
			if len(args) == 1 {
				t.moveLine(0, -t.tl)
				t.show(args[0].RawString())
			}
		case "\"":
			if len(args) == 3 {
				t.tw, t.tc = num(0), num(1)
				t.moveLine(0, -t.tl)
				t.show(args[2].RawString())
			}
		case "TJ":
			if len(args) == 1 && args[0].Kind() == pdf.Array {
				a := args[0]
				for i := 0; i < a.Len(); i++ {
					x := a.Index(i)
					if x.Kind() == pdf.String {
						t.show(x.RawString())
					} else {
						t.tm = translate(-x.Float64()/1000*t.tfs*t.th, 0).mul(t.tm)
					}
				}
			}
		case "Do":
			if len(args) == 1 && depth < maxFormDepth {
				xo := resources.Key("XObject").Key(args[0].Name())
				if xo.Kind() == pdf.Stream && xo.Key("Subtype").Name() == "Form" {
					res := xo.Key("Resources")
					if res.IsNull() {
						res = resources
					}
					saved, tm, tlm := t.graphics, t.tm, t.tlm
					t.run(xo, res, depth+1)
					t.graphics, t.tm, t.tlm = saved, tm, tlm
				}
			}
		}
	})
}

// moveLine starts a new line offset by (tx, ty) from the start of the current one.
func (t *textState) moveLine(tx, ty float64) {
	t.tlm = translate(tx, ty).mul(t.tlm)
	t.tm = t.tlm
}

// show adds a string of a text-showing operator: a line break before it when the
// baseline moved, a space when it starts well after where the last one ended.
func (t *textState) show(raw string) {
	if raw == "" {
		return
	}
	s := t.font.decode(raw)
	m := t.tm.mul(t.ctm)
	size := math.Abs(t.tfs) * math.Hypot(m[2], m[3])
	if t.last.ok {
		h := max(size, t.last.size)
		gap := m[4] - t.last.x
		frac := 0.15
		if !t.last.known {
			frac = 0.3
		}
		switch {
		case math.Abs(m[5]-t.last.y) > 0.5*h:
			t.out.WriteByte('\n')
		case gap > frac*h || gap < -2*h:
			t.out.WriteByte(' ')
		}
	}
	t.out.WriteString(s)
	if t.out.Len() > t.limit {
		panic(errStopped)
	}
	w, known := t.font.width(raw, s)
	adv := (w*t.tfs + t.tc*float64(len(raw)) + t.tw*float64(strings.Count(raw, " "))) * t.th
	t.tm = translate(adv, 0).mul(t.tm)
	end := t.tm.mul(t.ctm)
	t.last.x, t.last.y, t.last.size, t.last.known, t.last.ok = end[4], end[5], size, known, true
}
