package main

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// escapeControls makes stored text safe to print on a terminal: C0 and C1 control
// characters (ESC included), DEL, bidirectional overrides and invalid UTF-8 bytes become
// visible escapes (\x1b, \u202e, \xff). keepNewlines keeps "\n" and "\t" (whole texts);
// otherwise they become spaces (table cells).
func escapeControls(s string, keepNewlines bool) string {
	clean := true
	for i, r := range s {
		if r == utf8.RuneError || needsEscape(r) {
			if r == utf8.RuneError {
				if _, size := utf8.DecodeRuneInString(s[i:]); size == 3 {
					continue // a real U+FFFD
				}
			}
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t':
			if keepNewlines {
				b.WriteRune(r)
			} else {
				b.WriteByte(' ')
			}
		case r == '\r' && !keepNewlines:
			b.WriteByte(' ')
		case needsEscape(r) && r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case needsEscape(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// needsEscape reports control characters and bidirectional formatting characters.
func needsEscape(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}

// cell is one table cell: escaped, on one line, runs of spaces folded, at most n runes.
func cell(s string, n int) string {
	s = strings.Join(strings.Fields(escapeControls(s, false)), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-3]) + "..."
}

// maxEcho is the most bytes of a name, id or other piece of input a message repeats.
const maxEcho = 80

// capEcho is s as a message repeats it: whole when it is at most maxEcho bytes, else its
// first maxEcho bytes (cut at a character boundary) and "…(N bytes)", N its length.
func capEcho(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	cut := maxEcho
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:cut], len(s))
}
