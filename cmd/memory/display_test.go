package main

import (
	"strings"
	"testing"
)

func TestEscapeControls(t *testing.T) {
	tests := []struct {
		in, cell, text string
	}{
		{"plain text", "plain text", "plain text"},
		{"red \x1b[31mALERT\x1b[0m", `red \x1b[31mALERT\x1b[0m`, `red \x1b[31mALERT\x1b[0m`},
		{"title\x1b]0;pwned\x07", `title\x1b]0;pwned\x07`, `title\x1b]0;pwned\x07`},
		{"line1\nline2\ttab", "line1 line2 tab", "line1\nline2\ttab"},
		{"cr\roverwrite", "cr overwrite", `cr\x0doverwrite`},
		{"c1 \u009b31m", `c1 \x9b31m`, `c1 \x9b31m`},
		{"bidi \u202egnp.exe", `bidi \u202egnp.exe`, `bidi \u202egnp.exe`},
		{"bad \xff byte", `bad \xff byte`, `bad \xff byte`},
		{"real \ufffd stays", "real \ufffd stays", "real \ufffd stays"},
		{"naïve café 東京", "naïve café 東京", "naïve café 東京"},
		{"del\x7f", `del\x7f`, `del\x7f`},
	}
	for _, tc := range tests {
		if got := cell(tc.in, 200); got != tc.cell {
			t.Errorf("cell(%q) = %q, want %q", tc.in, got, tc.cell)
		}
		if got := escapeControls(tc.in, true); got != tc.text {
			t.Errorf("escapeControls(%q, true) = %q, want %q", tc.in, got, tc.text)
		}
	}
	if got := cell("abcdefghij", 6); got != "abc..." {
		t.Errorf("truncation: %q", got)
	}
}

func FuzzEscapeControls(f *testing.F) {
	f.Add("a\x1b[2Jb\xff\u202e\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{escapeControls(s, true), cell(s, 80)} {
			for _, r := range out {
				if r != '\n' && r != '\t' && needsEscape(r) {
					t.Fatalf("%q -> %q keeps control %U", s, out, r)
				}
			}
		}
	})
}

// TestCapEcho: input repeated by a message is whole up to 80 bytes, else cut at a
// character boundary with its length.
func TestCapEcho(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"short", "short"},
		{strings.Repeat("a", 80), strings.Repeat("a", 80)},
		{strings.Repeat("a", 81), strings.Repeat("a", 80) + "…(81 bytes)"},
		{strings.Repeat("a", 79) + "é", strings.Repeat("a", 79) + "…(81 bytes)"}, // é is 2 bytes: not split
		{strings.Repeat("日", 100), strings.Repeat("日", 26) + "…(300 bytes)"},
	} {
		if got := capEcho(tc.in); got != tc.want {
			t.Errorf("capEcho(%.20q… %d bytes) = %q, want %q", tc.in, len(tc.in), got, tc.want)
		}
	}
}
