package textextract

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// pageTexts are the pages of doc as "N: text".
func pageTexts(doc *Document) []string {
	var out []string
	for _, p := range doc.Pages {
		out = append(out, strconv.Itoa(p.Number)+": "+p.Text)
	}
	return out
}

// toUnicodeFont is a Type0 font (two-byte codes, Identity-H) whose ToUnicode map sends
// 0001 to H, 0002 to i and 0003 to a space; the map is object num.
func toUnicodeFont(num int) pdfObject {
	return obj("<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding /Identity-H /ToUnicode " + strconv.Itoa(num) + " 0 R >>")
}

const toUnicodeCMap = `/CIDInit /ProcSet findresource begin
12 dict begin
begincmap
1 begincodespacerange
<0000> <FFFF>
endcodespacerange
3 beginbfchar
<0001> <0048>
<0002> <0069>
<0003> <0020>
endbfchar
endcmap
CMapName currentdict /CMap defineresource pop
end
end`

func TestExtractPDFText(t *testing.T) {
	type want struct {
		pages     []string
		truncated bool
		damaged   []int
	}
	tests := []struct {
		name string
		pdf  []byte
		opts Options
		want want
	}{
		{"Td lines", onePage("BT /F1 12 Tf 72 700 Td (Hello world) Tj 0 -14 Td (Second line) Tj ET", helvetica(false)),
			Options{}, want{pages: []string{"1: Hello world\nSecond line"}}},
		{"TJ kerning: a large gap is a space, a small one is not", onePage("BT /F1 12 Tf 72 700 Td [(Hello) -333 (world) 20 (s)] TJ ET", helvetica(true)),
			Options{}, want{pages: []string{"1: Hello worlds"}}},
		{"TJ kerning with estimated widths", onePage("BT /F1 12 Tf 72 700 Td [(Hello) -400 (world) 20 (s)] TJ ET", helvetica(false)),
			Options{}, want{pages: []string{"1: Hello worlds"}}},
		{"words placed apart on one line", onePage("BT /F1 10 Tf 72 700 Td (Left) Tj 200 0 Td (Right) Tj ET", helvetica(true)),
			Options{}, want{pages: []string{"1: Left Right"}}},
		{"glyphs placed one by one", onePage("BT /F1 10 Tf 72 700 Td (W) Tj 5 0 Td (ord) Tj ET", helvetica(true)),
			Options{}, want{pages: []string{"1: Word"}}},
		{"lines placed by the CTM", onePage("q 1 0 0 1 72 700 cm BT /F1 12 Tf (Line one) Tj ET Q q 1 0 0 1 72 680 cm BT /F1 12 Tf (Line two) Tj ET Q", helvetica(false)),
			Options{}, want{pages: []string{"1: Line one\nLine two"}}},
		{"T*, ' and \" operators", onePage("BT /F1 12 Tf 14 TL 72 700 Td (a) Tj T* (b) Tj (c) ' 0 0 (d) \" ET", helvetica(false)),
			Options{}, want{pages: []string{"1: a\nb\nc\nd"}}},
		{"WinAnsi bytes", onePage("BT /F1 12 Tf 72 700 Td (caf\\351 \\223quoted\\224) Tj ET", helvetica(false)),
			Options{}, want{pages: []string{"1: café “quoted”"}}},
		{"ToUnicode CMap of a Type0 font", buildPDF([]pdfObject{
			obj("<< /Type /Catalog /Pages 2 0 R >>"),
			obj("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
			obj("<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>"),
			toUnicodeFont(6),
			strm("<< >>", "BT /F1 12 Tf 72 700 Td <000100020003000100020002> Tj ET"),
			strm("<< >>", toUnicodeCMap),
		}, "", nil), Options{}, want{pages: []string{"1: Hi Hii"}}},
		{"text of a form XObject", buildPDF([]pdfObject{
			obj("<< /Type /Catalog /Pages 2 0 R >>"),
			obj("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
			obj("<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 4 0 R >> /XObject << /Fm1 6 0 R >> >> /Contents 5 0 R >>"),
			helvetica(false),
			strm("<< >>", "BT /F1 12 Tf 72 700 Td (Before the form) Tj ET /Fm1 Do"),
			strm("<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] >>", "BT /F1 12 Tf 72 600 Td (Inside the form) Tj ET"),
		}, "", nil), Options{}, want{pages: []string{"1: Before the form\nInside the form"}}},
		{"a form that draws itself stops at the depth cap", buildPDF([]pdfObject{
			obj("<< /Type /Catalog /Pages 2 0 R >>"),
			obj("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
			obj("<< /Type /Page /Parent 2 0 R /Resources 6 0 R /Contents 5 0 R >>"),
			helvetica(false),
			strm("<< >>", "/Fm1 Do"),
			obj("<< /Font << /F1 4 0 R >> /XObject << /Fm1 7 0 R >> >>"),
			strm("<< /Type /XObject /Subtype /Form /Resources 6 0 R >>", "1 0 0 1 0 -20 cm BT /F1 12 Tf (x) Tj ET /Fm1 Do"),
		}, "", nil), Options{}, want{pages: []string{"1: x\nx\nx\nx\nx\nx\nx\nx"}}},
		{"resources inherited from the page tree", buildPDF([]pdfObject{
			obj("<< /Type /Catalog /Pages 2 0 R >>"),
			obj("<< /Type /Pages /Kids [3 0 R] /Count 1 /Resources << /Font << /F1 4 0 R >> >> >>"),
			obj("<< /Type /Page /Parent 2 0 R /Contents 5 0 R >>"),
			helvetica(false),
			strm("<< >>", "BT /F1 12 Tf 72 700 Td (caf\\351) Tj ET"),
		}, "", nil), Options{}, want{pages: []string{"1: café"}}},
		{"a Parent chain that loops ends at the depth cap", buildPDF([]pdfObject{
			obj("<< /Type /Catalog /Pages 2 0 R >>"),
			obj("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
			obj("<< /Type /Page /Parent 3 0 R /Contents 4 0 R >>"),
			strm("<< >>", "BT /F1 12 Tf 72 700 Td (no font) Tj ET"),
		}, "", nil), Options{}, want{pages: []string{"1: no font"}}},
		{"pages in order, a nested page tree", buildPDF([]pdfObject{
			obj("<< /Type /Catalog /Pages 2 0 R >>"),
			obj("<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 3 >>"),
			obj("<< /Type /Pages /Parent 2 0 R /Kids [5 0 R 6 0 R] /Count 2 /Resources << /Font << /F1 8 0 R >> >> >>"),
			obj("<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 8 0 R >> >> /Contents 9 0 R >>"),
			obj("<< /Type /Page /Parent 3 0 R /Contents 10 0 R >>"),
			obj("<< /Type /Page /Parent 3 0 R /Contents 7 0 R >>"),
			strm("<< >>", "BT /F1 9 Tf (two) Tj ET"),
			helvetica(false),
			strm("<< >>", "BT /F1 9 Tf (three) Tj ET"),
			strm("<< >>", "BT /F1 9 Tf (one) Tj ET"),
		}, "", nil), Options{}, want{pages: []string{"1: one", "2: two", "3: three"}}},
		{"a page without text is left out", pages([]string{"BT /F1 9 Tf (first) Tj ET", "0 0 10 10 re f", "BT /F1 9 Tf (third) Tj ET"}),
			Options{}, want{pages: []string{"1: first", "3: third"}}},
		{"MaxPages", pages([]string{"BT /F1 9 Tf (a) Tj ET", "BT /F1 9 Tf (b) Tj ET", "BT /F1 9 Tf (c) Tj ET"}),
			Options{MaxPages: 2}, want{pages: []string{"1: a", "2: b"}, truncated: true}},
		{"MaxTextBytes cuts at a character boundary", pages([]string{"BT /F1 9 Tf (abc) Tj ET", "BT /F1 9 Tf (d\\351f) Tj ET", "BT /F1 9 Tf (ghi) Tj ET"}),
			Options{MaxTextBytes: 5}, want{pages: []string{"1: abc", "2: d"}, truncated: true}},
		{"a damaged page keeps the text before the damage", pages([]string{"BT /F1 9 Tf (kept) Tj ET", "BT /F1 9 Tf (also kept) Tj ET ) (lost) Tj"}),
			Options{}, want{pages: []string{"1: kept", "2: also kept"}, damaged: []int{2}}},
		{"a page whose stream cannot be decoded", buildPDF([]pdfObject{
			obj("<< /Type /Catalog /Pages 2 0 R >>"),
			obj("<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >>"),
			obj("<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 5 0 R >> >> /Contents 6 0 R >>"),
			obj("<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 5 0 R >> >> /Contents 7 0 R >>"),
			helvetica(false),
			strm("<< >>", "BT /F1 9 Tf (fine) Tj ET"),
			strm("<< /Filter /NoSuchFilter >>", "BT /F1 9 Tf (lost) Tj ET"),
		}, "", nil), Options{}, want{pages: []string{"1: fine"}, damaged: []int{2}}},
		{"RC4-128 with an empty user password is read", buildPDF([]pdfObject{
			obj("<< /Type /Catalog /Pages 2 0 R >>"),
			obj("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
			obj("<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>"),
			helvetica(false),
			strm("<< >>", "BT /F1 12 Tf 72 700 Td (Secret otters) Tj ET"),
		}, "Protected", newRC4Crypt("0123456789abcdef")), Options{}, want{pages: []string{"1: Secret otters"}}},
		{"a 2.0 header and junk after %%EOF", append(bytes.Replace(onePage("BT /F1 12 Tf (new) Tj ET", helvetica(false)), []byte("%PDF-1.7"), []byte("%PDF-2.0"), 1), bytes.Repeat([]byte{0}, 300)...),
			Options{}, want{pages: []string{"1: new"}}},
		{"junk before the header", append([]byte("junk line\n"), onePage("BT /F1 12 Tf (shifted) Tj ET", helvetica(false))...),
			Options{}, want{}}, // offsets now point 10 bytes early: malformed or read, never a panic
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := ExtractPDF(context.Background(), tt.pdf, tt.opts)
			if tt.want.pages == nil {
				if err != nil && !errors.Is(err, ErrMalformed) {
					t.Fatalf("err %v, want nil or ErrMalformed", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ExtractPDF: %v", err)
			}
			if got := pageTexts(doc); !slices.Equal(got, tt.want.pages) {
				t.Errorf("pages\n got %q\nwant %q", got, tt.want.pages)
			}
			if doc.Truncated != tt.want.truncated {
				t.Errorf("Truncated %v, want %v", doc.Truncated, tt.want.truncated)
			}
			if !slices.Equal(doc.DamagedPages, tt.want.damaged) {
				t.Errorf("DamagedPages %v, want %v", doc.DamagedPages, tt.want.damaged)
			}
			if doc.Format != PDF {
				t.Errorf("Format %q", doc.Format)
			}
		})
	}
}

func TestExtractPDFTitle(t *testing.T) {
	doc, err := ExtractPDF(context.Background(), buildPDF([]pdfObject{
		obj("<< /Type /Catalog /Pages 2 0 R >>"),
		obj("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
		obj("<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>"),
		helvetica(false),
		strm("<< >>", "BT /F1 12 Tf (body) Tj ET"),
	}, "A  Title\n", newRC4Crypt("id")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if doc.Title != "A Title" || doc.PageCount != 1 {
		t.Errorf("Title %q, PageCount %d", doc.Title, doc.PageCount)
	}
}

func TestExtractPDFErrors(t *testing.T) {
	sample, err := os.ReadFile("testdata/sample.pdf")
	if err != nil {
		t.Fatal(err)
	}
	encrypted := onePage("BT /F1 12 Tf (x) Tj ET", helvetica(false))
	encrypted = bytes.Replace(encrypted, []byte("/Root 1 0 R"), []byte("/Root 1 0 R /Encrypt << /Filter /Standard /V 2 /R 3 /Length 128 /P -4 /O <"+strings.Repeat("4f", 32)+"> /U <"+strings.Repeat("55", 32)+"> >> /ID [<01> <01>]"), 1)
	aes256 := bytes.Replace(encrypted, []byte("/V 2 /R 3"), []byte("/V 5 /R 6"), 1)
	cyclic := buildPDF([]pdfObject{
		obj("<< /Type /Catalog /Pages 2 0 R >>"),
		obj("<< /Type /Pages /Kids [2 0 R] /Count 1 >>"),
	}, "", nil)
	tests := []struct {
		name string
		data []byte
		opts Options
		want error
	}{
		{"not a PDF", []byte("hello, this is plain text and not a PDF at all"), Options{}, ErrMalformed},
		{"empty", nil, Options{}, ErrMalformed},
		{"cut in half", sample[:len(sample)/2], Options{}, ErrMalformed},
		{"header only", []byte("%PDF-1.4\n%%EOF\n"), Options{}, ErrMalformed},
		{"a page tree that contains itself", cyclic, Options{}, ErrMalformed},
		{"no pages", buildPDF([]pdfObject{obj("<< /Type /Catalog /Pages 2 0 R >>"), obj("<< /Type /Pages /Kids [] /Count 0 >>")}, "", nil), Options{}, ErrNoText},
		{"needs a user password", encrypted, Options{}, ErrEncrypted},
		{"AES-256", aes256, Options{}, ErrEncrypted},
		{"over MaxFileBytes", sample, Options{MaxFileBytes: 100}, ErrTooLarge},
		{"only pages without text", pages([]string{"0 0 10 10 re f"}), Options{}, ErrNoText},
		{"every page damaged", pages([]string{"BT /F1 9 Tf <zz> Tj ET"}), Options{}, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := ExtractPDF(context.Background(), tt.data, tt.opts)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err %v, want %v (doc %+v)", err, tt.want, doc)
			}
			if doc != nil {
				t.Errorf("doc %+v with an error", doc)
			}
		})
	}
}

func TestExtractPDFCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ExtractPDF(ctx, onePage("BT /F1 12 Tf (x) Tj ET", helvetica(false)), Options{})
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want ErrTimeout and context.Canceled", err)
	}
}
