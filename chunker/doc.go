//go:build cgo

package chunker

import "strings"

// cleanComment strips comment markers (//, ///, /* */, *, #, --) from a doc comment and
// drops lines that are only an XML tag (C# <summary>).
func cleanComment(s string) string {
	lines := strings.Split(s, "\n")
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		l = strings.TrimSpace(l)
		for _, p := range []string{"/**", "/*!", "/*", "///", "//!", "//", "#", "--"} {
			if strings.HasPrefix(l, p) {
				l = l[len(p):]
				break
			}
		}
		l = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(l), "*/"))
		if strings.HasPrefix(l, "*") {
			l = strings.TrimSpace(l[1:])
		}
		l = stripXMLDocTags(l)
		if l == "" && len(out) > 0 && out[len(out)-1] == "" {
			continue
		}
		out = append(out, l)
	}
	return trimBlankLines(out)
}

// cleanDocstring strips the quotes and prefix of a Python string literal and the common
// indentation of its lines.
func cleanDocstring(s string) string {
	s = strings.TrimLeft(s, "rRuUbBfF")
	for _, q := range []string{`"""`, `'''`, `"`, `'`} {
		if strings.HasPrefix(s, q) && strings.HasSuffix(s, q) && len(s) >= 2*len(q) {
			s = s[len(q) : len(s)-len(q)]
			break
		}
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return trimBlankLines(lines)
}

func trimBlankLines(lines []string) string {
	for len(lines) > 0 && lines[0] == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}

// xmlDocTags are the C# XML doc comment tags removed from doc text.
var xmlDocTags = []string{"summary", "remarks", "returns", "para", "param", "typeparam", "value", "example"}

func stripXMLDocTags(l string) string {
	for _, t := range xmlDocTags {
		for _, open := range []string{"<" + t + ">", "</" + t + ">", "<" + t + " "} {
			for {
				i := strings.Index(l, open)
				if i < 0 {
					break
				}
				j := strings.IndexByte(l[i:], '>')
				if j < 0 {
					break
				}
				l = strings.TrimSpace(l[:i] + " " + l[i+j+1:])
			}
		}
	}
	return l
}
