package chunker

import "unicode/utf8"

// fallbackSpans cuts the whole of src into line-based spans.
func fallbackSpans(src []byte, nws []int32, budget int) []span {
	rs := lineSplit(src, nws, 0, len(src), budget)
	out := make([]span, len(rs))
	for i, r := range rs {
		out[i] = span{start: r[0], end: r[1], kind: KindLines}
	}
	return out
}

// lineSplit tiles [lo, hi) with ranges of at most budget non-whitespace characters, cut at
// line ends, preferring the end of a blank line (a paragraph break) when one leaves the
// range at least half full. A single line over the budget is cut at character boundaries.
func lineSplit(src []byte, nws []int32, lo, hi, budget int) [][2]int {
	if lo >= hi {
		return nil
	}
	size := func(a, b int) int { return int(nws[b] - nws[a]) }
	if size(lo, hi) <= budget {
		return [][2]int{{lo, hi}}
	}
	var out [][2]int
	start := lo     // start of the range being filled
	end := lo       // end of the last whole line in it
	lastBreak := -1 // end of the last blank line in it (> start)
	for pos := lo; pos < hi; {
		le := pos
		for le < hi && src[le] != '\n' {
			le++
		}
		if le < hi {
			le++ // include the newline
		}
		if size(start, le) <= budget {
			if size(pos, le) == 0 && pos > start {
				lastBreak = le
			}
			end, pos = le, le
			continue
		}
		if end > start {
			cut := end
			if lastBreak > start && size(start, lastBreak)*2 >= budget {
				cut = lastBreak
			}
			out = append(out, [2]int{start, cut})
			start, end, lastBreak = cut, cut, -1
			pos = cut
			continue
		}
		// A single line over the budget (start == pos): cut it at character boundaries.
		p := pos
		for size(p, le) > budget {
			q, n := p, 0
			for q < le {
				_, w := utf8.DecodeRune(src[q:le])
				c := size(q, q+w)
				if n+c > budget && q > p {
					break
				}
				n += c
				q += w
			}
			out = append(out, [2]int{p, q})
			p = q
		}
		start, end, lastBreak, pos = p, le, -1, le
	}
	if start < hi {
		out = append(out, [2]int{start, hi})
	}
	return out
}
