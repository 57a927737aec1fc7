package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// failingReader returns its text, then err.
type failingReader struct {
	r   io.Reader
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, f.err
	}
	return n, err
}

// TestDecodeLines: lines decoded ahead come to the caller in order, each as it was read
// (blank, invalid JSON, too long, a document); an error of the caller stops the reading
// and is returned; an error of the reader is returned after the lines before it.
func TestDecodeLines(t *testing.T) {
	var b strings.Builder
	const n = 3*decodeChunk + 17
	for i := 1; i <= n; i++ {
		switch {
		case i%97 == 0:
			b.WriteString("  \n")
		case i%89 == 0:
			b.WriteString("{not json\n")
		case i == 1000:
			b.WriteString(`{"_id":"long","text":"` + strings.Repeat("x", maxLineBytes) + "\"}\n")
		default:
			fmt.Fprintf(&b, `{"_id":"d%d","text":"t %d"}`+"\n", i, i)
		}
	}
	text := b.String()
	boom := errors.New("boom")
	for _, c := range []struct {
		name    string
		r       io.Reader
		stopAt  int // the caller fails at this line (0: never)
		want    error
		wantSaw int
	}{
		{"all", strings.NewReader(text), 0, nil, n},
		{"caller stops", strings.NewReader(text), 600, boom, 600},
		{"caller stops at once", strings.NewReader(text), 1, boom, 1},
		{"reader fails", &failingReader{strings.NewReader(text), io.ErrUnexpectedEOF}, 0, io.ErrUnexpectedEOF, n},
		{"empty", strings.NewReader(""), 0, nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			saw := 0
			err := decodeLines(c.r, func(d *decodedLine) error {
				saw++
				if d.n != saw {
					return fmt.Errorf("line %d came as number %d", saw, d.n)
				}
				switch {
				case d.n%97 == 0:
					if !d.empty {
						return fmt.Errorf("line %d: not blank: %+v", d.n, d)
					}
				case d.n%89 == 0:
					if d.err == nil {
						return fmt.Errorf("line %d: no JSON error", d.n)
					}
				case d.n == 1000:
					if !d.tooLong {
						return fmt.Errorf("line %d: not too long", d.n)
					}
				default:
					if doc := d.doc.document(); d.err != nil || doc.ID != fmt.Sprintf("d%d", d.n) || doc.Text != fmt.Sprintf("t %d", d.n) {
						return fmt.Errorf("line %d: %+v, %v", d.n, doc, d.err)
					}
				}
				if saw == c.stopAt {
					return boom
				}
				return nil
			})
			if !errors.Is(err, c.want) || (c.want == nil && err != nil) {
				t.Fatalf("err %v, want %v", err, c.want)
			}
			if saw != c.wantSaw {
				t.Fatalf("saw %d lines, want %d", saw, c.wantSaw)
			}
		})
	}
}
