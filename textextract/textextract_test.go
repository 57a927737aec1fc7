package textextract

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFormatOf(t *testing.T) {
	tests := []struct {
		path string
		want Format
	}{
		{"a.html", HTML}, {"dir/B.HTM", HTML}, {"c.xhtml", HTML}, {"d.pdf", PDF}, {"E.PDF", PDF},
		{"f.txt", ""}, {"g", ""}, {"h.pdf.bak", ""}, {".pdf", PDF},
	}
	for _, tt := range tests {
		if got := FormatOf(tt.path); got != tt.want {
			t.Errorf("FormatOf(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

func TestSniff(t *testing.T) {
	tests := []struct {
		data string
		want Format
	}{
		{"%PDF-1.4\n", PDF}, {"\x00\x01junk%PDF-1.7", PDF}, {"  <!DOCTYPE html><p>", HTML}, {"<HTML>", HTML},
		{"\xef\xbb\xbf<html>", HTML}, {"<body>", HTML}, {"hello", ""}, {"", ""}, {"<?xml version='1.0'?>", ""},
	}
	for _, tt := range tests {
		if got := Sniff([]byte(tt.data)); got != tt.want {
			t.Errorf("Sniff(%q) = %q, want %q", tt.data, got, tt.want)
		}
	}
}

func TestFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pdfData, err := os.ReadFile("testdata/sample.pdf")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		path   string
		opts   Options
		format Format // the document's, when no error
		want   error
	}{
		{"html by extension", write("a.html", "<p>hello</p>"), Options{}, HTML, nil},
		{"pdf by extension", write("b.pdf", string(pdfData)), Options{}, PDF, nil},
		{"pdf by content", write("c.bin", string(pdfData)), Options{}, PDF, nil},
		{"html by content", write("d", "<!doctype html><p>x</p>"), Options{}, HTML, nil},
		{"neither", write("e.dat", "plain words"), Options{}, "", ErrUnsupported},
		{"a folder", dir, Options{}, "", ErrUnsupported},
		{"too large, refused before reading", write("f.html", "<p>0123456789</p>"), Options{MaxFileBytes: 8}, "", ErrTooLarge},
		{"a PDF name on HTML", write("g.pdf", "<p>not a pdf</p>"), Options{}, "", ErrMalformed},
		{"missing", filepath.Join(dir, "missing.pdf"), Options{}, "", os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := File(context.Background(), tt.path, tt.opts)
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Fatalf("err %v, want %v", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if doc.Format != tt.format || len(doc.Pages) == 0 {
				t.Errorf("Format %q (want %q), %d pages", doc.Format, tt.format, len(doc.Pages))
			}
		})
	}
}

func TestCleanText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"  a  b\t c  ", "a b c"},
		{"a\n\n\n\nb", "a\n\nb"},
		{"\n\n a \n b \n\n", "a\nb"},
		{"x\x00y\x07z", "x y z"},
		{"soft\u00adhyphen zero\u200bwidth", "softhyphen zerowidth"},
		{"bad\xffbyte", "badbyte"},
		{"a\r\nb", "a\nb"},
	}
	for _, tt := range tests {
		if got := cleanText(tt.in); got != tt.want {
			t.Errorf("cleanText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMessage(t *testing.T) {
	long := strings.Repeat("x", 200)
	tests := []struct{ in, want string }{
		{"plain words", "plain words"},
		{"bytes \xab\xff and \x00 control", "bytes \uFFFD and \uFFFD control"}, // a run of invalid bytes is one U+FFFD
		{long, long[:maxMessageBytes] + "…"},
	}
	for _, tt := range tests {
		if got := message(tt.in); got != tt.want {
			t.Errorf("message(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
