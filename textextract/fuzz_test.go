package textextract

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// sentinels are the errors an extraction may return.
var sentinels = []error{ErrUnsupported, ErrTooLarge, ErrMalformed, ErrEncrypted, ErrNoText, ErrTimeout}

// checkResult fails unless an extraction gave a document within the caps, or an error of
// this package.
func checkResult(t *testing.T, doc *Document, err error, o Options) {
	t.Helper()
	if err != nil {
		if msg := err.Error(); !utf8.ValidString(msg) || len(msg) > 400 || strings.ContainsFunc(msg, func(r rune) bool { return !unicode.IsPrint(r) }) {
			t.Fatalf("error message not printable or too long: %q", msg)
		}
		for _, s := range sentinels {
			if errors.Is(err, s) {
				if doc != nil {
					t.Fatalf("a document with error %v", err)
				}
				return
			}
		}
		t.Fatalf("error %v wraps none of the package's errors", err)
	}
	total := 0
	for _, p := range doc.Pages {
		if !utf8.ValidString(p.Text) || p.Text == "" || strings.TrimSpace(p.Text) != p.Text {
			t.Fatalf("page %d: text %q", p.Number, p.Text)
		}
		total += len(p.Text)
	}
	if total > o.MaxTextBytes || doc.PageCount > o.MaxPages || !utf8.ValidString(doc.Title) {
		t.Fatalf("over the caps: %d bytes of text, %d pages (options %+v)", total, doc.PageCount, o)
	}
}

// FuzzExtractPDF: no input panics ExtractPDF, or gives anything but a document within the
// caps or an error of this package.
func FuzzExtractPDF(f *testing.F) {
	for _, name := range []string{"sample.pdf", "encrypted.pdf", "protected.pdf", "notext.pdf"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(onePage("BT /F1 12 Tf 72 700 Td [(Hello) -333 (world)] TJ 0 -14 Td (x) Tj ET", helvetica(true)))
	f.Add(pages([]string{"BT /F1 9 Tf (a) Tj ET", "q 1 0 0 1 0 -20 cm BT (b) ' ET Q"}))
	f.Add(buildPDF([]pdfObject{
		obj("<< /Type /Catalog /Pages 2 0 R >>"),
		obj("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
		obj("<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>"),
		toUnicodeFont(6),
		strm("<< >>", "BT /F1 12 Tf <00010002> Tj ET"),
		strm("<< >>", toUnicodeCMap),
	}, "T", newRC4Crypt("fuzz")))
	f.Add([]byte("%PDF-1.4\n%%EOF"))
	o := Options{MaxPages: 50, MaxTextBytes: 1 << 16, Timeout: 5 * time.Second}.withDefaults()
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := ExtractPDF(context.Background(), data, o)
		checkResult(t, doc, err, o)
	})
}

// FuzzExtractHTML: the same for ExtractHTML.
func FuzzExtractHTML(f *testing.F) {
	b, err := os.ReadFile("testdata/sample.html")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	for _, s := range []string{"", "<title>t</title>", "<p>a<br>b</p><pre>x\n y</pre>", "<meta charset=\"iso-8859-1\"><p>\xe9</p>",
		"<svg><title>x</title></svg><table><td>1<td>2", "<h1>a<h1>b", "<![CDATA[x]]><p hidden>y"} {
		f.Add([]byte(s))
	}
	o := Options{MaxTextBytes: 1 << 12}.withDefaults()
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := ExtractHTML(data, o)
		checkResult(t, doc, err, o)
	})
}
