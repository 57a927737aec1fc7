package textextract

import (
	"bytes"
	"crypto/md5"
	"crypto/rc4"
	"fmt"
	"strings"
)

// pdfObject is one object of a hand-made PDF: a dictionary (or any object), and a stream's
// data when it is a stream (its /Length is written by buildPDF).
type pdfObject struct {
	body   string
	stream string
	isStrm bool
}

func obj(body string) pdfObject { return pdfObject{body: body} }

func strm(dict, data string) pdfObject { return pdfObject{body: dict, stream: data, isStrm: true} }

// rc4Crypt is the encryption of a hand-made PDF: RC4 with a 128-bit key (V 2, R 3) and the
// given owner-entry bytes; the user password is empty.
type rc4Crypt struct {
	key []byte
	o   []byte
	u   []byte
	id  string
}

// pdfPad is the password padding of PDF 32000-1, 7.6.3.3.
var pdfPad = []byte("\x28\xbf\x4e\x5e\x4e\x75\x8a\x41\x64\x00\x4e\x56\xff\xfa\x01\x08\x2e\x2e\x00\xb6\xd0\x68\x3e\x80\x2f\x0c\xa9\xfe\x64\x53\x69\x7a")

const pdfPerms = -4 // every permission

// newRC4Crypt derives the file key and the U entry for an empty user password (algorithms
// 2 and 5 of PDF 32000-1, revision 3).
func newRC4Crypt(id string) *rc4Crypt {
	c := &rc4Crypt{o: bytes.Repeat([]byte{'O'}, 32), id: id}
	h := md5.New()
	h.Write(pdfPad)
	h.Write(c.o)
	perms := int32(pdfPerms)
	p := uint32(perms)
	h.Write([]byte{byte(p), byte(p >> 8), byte(p >> 16), byte(p >> 24)})
	h.Write([]byte(id))
	key := h.Sum(nil)
	for range 50 {
		s := md5.Sum(key[:16])
		key = s[:]
	}
	c.key = key[:16]
	h.Reset()
	h.Write(pdfPad)
	h.Write([]byte(id))
	u := h.Sum(nil)
	for i := range 20 {
		k := make([]byte, len(c.key))
		for j := range k {
			k[j] = c.key[j] ^ byte(i)
		}
		ci, _ := rc4.NewCipher(k)
		ci.XORKeyStream(u, u)
	}
	c.u = append(u, bytes.Repeat([]byte{0}, 16)...)
	return c
}

// crypt encrypts (or decrypts) the data of object num (generation 0).
func (c *rc4Crypt) crypt(num int, data []byte) []byte {
	h := md5.New()
	h.Write(c.key)
	h.Write([]byte{byte(num), byte(num >> 8), byte(num >> 16), 0, 0})
	ci, _ := rc4.NewCipher(h.Sum(nil)[:16])
	out := make([]byte, len(data))
	ci.XORKeyStream(out, data)
	return out
}

// dict is the /Encrypt dictionary.
func (c *rc4Crypt) dict() string {
	return fmt.Sprintf("<< /Filter /Standard /V 2 /R 3 /Length 128 /P %d /O <%x> /U <%x> >>", pdfPerms, c.o, c.u)
}

// buildPDF writes a PDF of the objects (numbered from 1; the first is the catalog), with
// an xref table at the right offsets. infoTitle, when set, adds an information
// dictionary; enc, when set, encrypts the streams and the title and adds /Encrypt.
func buildPDF(objs []pdfObject, infoTitle string, enc *rc4Crypt) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
	all := append([]pdfObject{}, objs...)
	infoNum, encNum := 0, 0
	if infoTitle != "" {
		t := []byte(infoTitle)
		if enc != nil {
			t = enc.crypt(len(all)+1, t)
		}
		all = append(all, obj(fmt.Sprintf("<< /Title <%x> >>", t)))
		infoNum = len(all)
	}
	if enc != nil {
		all = append(all, obj(enc.dict()))
		encNum = len(all)
	}
	offsets := make([]int, len(all))
	for i, o := range all {
		num := i + 1
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n", num)
		if o.isStrm {
			data := []byte(o.stream)
			if enc != nil {
				data = enc.crypt(num, data)
			}
			d := strings.TrimSpace(o.body)
			d = strings.TrimSuffix(d, ">>") + fmt.Sprintf(" /Length %d >>", len(data))
			fmt.Fprintf(&b, "%s\nstream\n", d)
			b.Write(data)
			b.WriteString("\nendstream")
		} else {
			b.WriteString(o.body)
		}
		b.WriteString("\nendobj\n")
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(all)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R", len(all)+1)
	if infoNum > 0 {
		fmt.Fprintf(&b, " /Info %d 0 R", infoNum)
	}
	if enc != nil {
		fmt.Fprintf(&b, " /Encrypt %d 0 R /ID [<%x> <%x>]", encNum, enc.id, enc.id)
	}
	fmt.Fprintf(&b, " >>\nstartxref\n%d\n%%%%EOF\n", xref)
	return b.Bytes()
}

// helvetica is a Type1 font object; with widths, every character of 32..126 is half an em.
func helvetica(widths bool) pdfObject {
	w := ""
	if widths {
		w = " /FirstChar 32 /LastChar 126 /Widths [" + strings.TrimSpace(strings.Repeat("500 ", 95)) + "]"
	}
	return obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding" + w + " >>")
}

// onePage is a PDF of one page drawing content with font F1 (object 4).
func onePage(content string, font pdfObject) []byte {
	return buildPDF([]pdfObject{
		obj("<< /Type /Catalog /Pages 2 0 R >>"),
		obj("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
		obj("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>"),
		font,
		strm("<< >>", content),
	}, "", nil)
}

// pages is a PDF of one page per content stream, all with font F1 (object 3); extra
// objects follow the pages' (numbered from 4+2*len(contents)).
func pages(contents []string, extra ...pdfObject) []byte {
	n := len(contents)
	kids := make([]string, n)
	objs := []pdfObject{obj(""), obj(""), helvetica(false)}
	for i, c := range contents {
		page, cont := 4+2*i, 5+2*i
		kids[i] = fmt.Sprintf("%d 0 R", page)
		objs = append(objs,
			obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", cont)),
			strm("<< >>", c))
	}
	objs[0] = obj("<< /Type /Catalog /Pages 2 0 R >>")
	objs[1] = obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n))
	return buildPDF(append(objs, extra...), "", nil)
}
