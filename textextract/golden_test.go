package textextract

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/ from what the extraction gives now")

// render is a document as its golden file holds it.
func render(doc *Document) string {
	var b strings.Builder
	fmt.Fprintf(&b, "format: %s\ntitle: %s\npages read: %d\ntruncated: %v\ndamaged pages: %v\n", doc.Format, doc.Title, doc.PageCount, doc.Truncated, doc.DamagedPages)
	for _, p := range doc.Pages {
		fmt.Fprintf(&b, "--- page %d ---\n%s\n", p.Number, p.Text)
	}
	return b.String()
}

// TestGolden extracts the fixtures of testdata/ (sample.pdf is written by a real PDF
// producer: see testdata/genpdf) and compares with their golden text (-update rewrites it).
func TestGolden(t *testing.T) {
	tests := []struct {
		file string
		want error // nil: compare with FILE.golden
	}{
		{"sample.html", nil},
		{"sample.pdf", nil},
		{"encrypted.pdf", ErrEncrypted}, // a user password
		{"protected.pdf", ErrEncrypted}, // 40-bit RC4, no user password: not decrypted
		{"notext.pdf", ErrNoText},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := "testdata/" + tt.file
			doc, err := File(context.Background(), path, Options{})
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Fatalf("err %v, want %v", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := render(doc)
			if *update {
				if err := os.WriteFile(path+".golden", []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path + ".golden")
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if got != string(want) {
				t.Errorf("%s: got\n%s\nwant\n%s", path, got, want)
			}
		})
	}
}
