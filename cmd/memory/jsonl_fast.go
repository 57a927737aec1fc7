package main

import (
	"strconv"
	"unicode/utf8"
)

// Decoding a corpus line with encoding/json (reflection over jsonlDoc, a map for the
// metadata) was a tenth of the CPU of a BM25-only `memory index`. Most lines are flat
// objects of plain strings (BEIR's {"_id","title","text"}, with bench/corpusgen's metadata
// of strings and numbers): decodeJSONLFast reads those directly and declines everything
// else (escapes, other keys or key spellings, ids that are numbers, nested values, repeated
// keys, invalid UTF-8, anything malformed), which encoding/json then decodes as before. What
// it accepts it decodes as json.Unmarshal into a jsonlDoc would (FuzzJSONLFast).

// decodeJSONLFast decodes line into *d (which must be zero) and reports true when line is a
// JSON object it reads itself; false leaves *d partly filled: the caller resets it and
// decodes line with encoding/json.
func decodeJSONLFast(line []byte, d *jsonlDoc) bool {
	p := jsonScan{b: line}
	if !p.byte('{') {
		return false
	}
	var seen uint8
	if p.peek('}') {
		p.i++
		return p.end()
	}
	for {
		key, ok := p.str()
		if !ok || !p.byte(':') {
			return false
		}
		var bit uint8
		var dst *string
		switch string(key) {
		case "_id":
			bit, dst = 1, (*string)(&d.BeirID)
		case "id":
			bit, dst = 2, (*string)(&d.ID)
		case "title":
			bit, dst = 4, &d.Title
		case "text":
			bit, dst = 8, &d.Text
		case "contents":
			bit, dst = 16, &d.Contents
		case "source":
			bit, dst = 32, &d.Source
		case "metadata":
			bit = 64
		default:
			return false
		}
		if seen&bit != 0 {
			return false // repeated: encoding/json keeps the last
		}
		seen |= bit
		if dst != nil {
			v, ok := p.str()
			if !ok {
				return false
			}
			*dst = string(v)
		} else if !p.meta(&d.Metadata) {
			return false
		}
		switch {
		case p.byte(','):
		case p.byte('}'):
			return p.end()
		default:
			return false
		}
	}
}

// jsonScan reads a JSON text at b[i:].
type jsonScan struct {
	b []byte
	i int
}

// ws skips JSON whitespace.
func (p *jsonScan) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// byte skips whitespace and c, reporting whether c was there.
func (p *jsonScan) byte(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// peek skips whitespace and reports whether c is next.
func (p *jsonScan) peek(c byte) bool {
	p.ws()
	return p.i < len(p.b) && p.b[p.i] == c
}

// end reports whether only whitespace is left.
func (p *jsonScan) end() bool {
	p.ws()
	return p.i == len(p.b)
}

// str reads a string without escapes or control characters, valid UTF-8, and returns its
// bytes (a slice of the line).
func (p *jsonScan) str() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	start := p.i
	ascii := true
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
		p.i++
	}
	return nil, false
}

// meta reads a flat object of string, number and boolean values into a new map.
func (p *jsonScan) meta(m *map[string]any) bool {
	if !p.byte('{') {
		return false
	}
	out := map[string]any{}
	*m = out
	if p.byte('}') {
		return true
	}
	for {
		key, ok := p.str()
		if !ok || !p.byte(':') {
			return false
		}
		k := string(key)
		if _, dup := out[k]; dup {
			return false
		}
		p.ws()
		if p.i >= len(p.b) {
			return false
		}
		switch c := p.b[p.i]; {
		case c == '"':
			v, ok := p.str()
			if !ok {
				return false
			}
			out[k] = string(v)
		case c == 't' || c == 'f':
			word := "true"
			if c == 'f' {
				word = "false"
			}
			if len(p.b)-p.i < len(word) || string(p.b[p.i:p.i+len(word)]) != word {
				return false
			}
			p.i += len(word)
			out[k] = c == 't'
		default:
			v, ok := p.number()
			if !ok {
				return false
			}
			out[k] = v
		}
		switch {
		case p.byte(','):
		case p.byte('}'):
			return true
		default:
			return false
		}
	}
}

// number reads a JSON number as encoding/json reads one into an interface value.
func (p *jsonScan) number() (float64, bool) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	first := p.i
	if n := digits(); n == 0 || (n > 1 && p.b[first] == '0') {
		return 0, false
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return 0, false
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return 0, false
		}
	}
	v, err := strconv.ParseFloat(string(p.b[start:p.i]), 64)
	return v, err == nil
}
