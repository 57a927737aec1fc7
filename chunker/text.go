package chunker

import "strings"

// DefaultTextBudget is the default prose chunk size in non-whitespace characters.
const DefaultTextBudget = 1000

// TextOptions configure [Text]. The zero value is ready to use.
type TextOptions struct {
	// Budget is the maximum chunk size in non-whitespace characters, overlap excluded
	// (default DefaultTextBudget).
	Budget int
	// Overlap prepends to each chunk the last sentences of the previous one, up to this many
	// non-whitespace characters (0: none). With overlap the chunks no longer tile the text.
	Overlap int
	// Plain ignores markdown headings and code fences.
	Plain bool
}

// Text splits prose into chunks: markdown sections first (each chunk records its heading
// path in Headings), then paragraphs, then sentences, packed greedily within the budget.
// Without overlap the chunks' contents concatenated in order equal text. Chunks have Kind
// KindText and Language "text"; byte offsets and lines refer to text.
func Text(text string, opts TextOptions) []Chunk {
	if text == "" {
		return nil
	}
	src := []byte(text)
	nws := prefixNWS(src)
	budget := opts.Budget
	if budget <= 0 {
		budget = DefaultTextBudget
	}
	var spans []span
	if opts.Plain {
		spans = proseSpans(src, nws, 0, len(src), budget, nil, false)
	} else {
		spans = markdownSpans(src, nws, budget)
	}
	if opts.Overlap > 0 {
		spans = addOverlap(src, nws, spans, opts.Overlap)
	}
	return buildChunks("", "text", src, nws, spans, false)
}

// mdLine is one line of a markdown document.
type mdLine struct {
	start, end int // end includes the newline
	blank      bool
	fence      bool // inside or delimiting a code fence
	level      int  // heading level (1-6), 0 if not a heading
	heading    string
}

func scanMarkdown(src []byte) []mdLine {
	var lines []mdLine
	inFence := false
	fenceMark := ""
	for pos := 0; pos < len(src); {
		end := pos
		for end < len(src) && src[end] != '\n' {
			end++
		}
		next := end
		if next < len(src) {
			next++
		}
		l := mdLine{start: pos, end: next}
		text := string(src[pos:end])
		trimmed := strings.TrimSpace(text)
		indent := len(text) - len(strings.TrimLeft(text, " "))
		switch {
		case inFence:
			l.fence = true
			if indent < 4 && strings.HasPrefix(trimmed, fenceMark) && strings.Trim(trimmed, fenceMark[:1]) == "" {
				inFence = false
			}
		case indent < 4 && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			l.fence = true
			inFence = true
			n := 0
			for n < len(trimmed) && trimmed[n] == trimmed[0] {
				n++
			}
			fenceMark = trimmed[:n]
		case trimmed == "":
			l.blank = true
		case indent < 4 && strings.HasPrefix(trimmed, "#"):
			n := 0
			for n < len(trimmed) && trimmed[n] == '#' {
				n++
			}
			if n <= 6 && (n == len(trimmed) || trimmed[n] == ' ' || trimmed[n] == '\t') {
				l.level = n
				h := strings.TrimSpace(trimmed[n:])
				h = strings.TrimSpace(strings.TrimRight(h, "#"))
				l.heading = h
			}
		}
		lines = append(lines, l)
		pos = next
	}
	return lines
}

// markdownSpans splits a markdown document into sections, then prose pieces.
func markdownSpans(src []byte, nws []int32, budget int) []span {
	lines := scanMarkdown(src)
	type section struct {
		lo, hi   int
		headings []string
		bodyLo   int // first byte after the heading line
	}
	var secs []section
	var stack []string // heading path, by level
	var levels []int
	cur := section{lo: 0}
	for _, l := range lines {
		if l.level == 0 {
			continue
		}
		if l.start > cur.lo || len(secs) > 0 || cur.headings != nil {
			if l.start > cur.lo {
				cur.hi = l.start
				secs = append(secs, cur)
			}
		}
		for len(levels) > 0 && levels[len(levels)-1] >= l.level {
			levels = levels[:len(levels)-1]
			stack = stack[:len(stack)-1]
		}
		levels = append(levels, l.level)
		stack = append(stack, l.heading)
		cur = section{lo: l.start, headings: append([]string(nil), stack...), bodyLo: l.end}
	}
	if len(src) > cur.lo {
		cur.hi = len(src)
		secs = append(secs, cur)
	}
	var out []span
	for i := 0; i < len(secs); i++ {
		s := secs[i]
		// A section that is only its heading joins the next one when they fit together.
		for i+1 < len(secs) && s.headings != nil && s.bodyLo >= s.lo &&
			nws[s.hi]-nws[s.bodyLo] == 0 && int(nws[secs[i+1].hi]-nws[s.lo]) <= budget {
			n := secs[i+1]
			n.lo = s.lo
			s = n
			i++
		}
		h := s.headings
		if h == nil {
			h = []string{}
		}
		out = append(out, proseSpans(src, nws, s.lo, s.hi, budget, h, true)...)
	}
	return out
}

// proseSpans tiles [lo, hi) with prose spans: paragraphs, then sentences, then lines.
func proseSpans(src []byte, nws []int32, lo, hi, budget int, headings []string, md bool) []span {
	size := func(a, b int) int { return int(nws[b] - nws[a]) }
	var ranges [][2]int
	if size(lo, hi) <= budget {
		ranges = [][2]int{{lo, hi}}
	} else {
		// paragraph boundaries: the start of a non-blank line after a blank line
		bounds := []int{lo}
		prevBlank := false
		for _, l := range scanLinesIn(src, lo, hi, md) {
			if !l.blank && prevBlank && l.start > lo {
				bounds = append(bounds, l.start)
			}
			prevBlank = l.blank
		}
		bounds = append(bounds, hi)
		ranges = pack(bounds, size, budget, func(a, b int) [][2]int {
			return sentenceRanges(src, nws, a, b, budget)
		})
	}
	out := make([]span, len(ranges))
	for i, r := range ranges {
		out[i] = span{start: r[0], end: r[1], kind: KindText, headings: headings}
	}
	return out
}

// scanLinesIn returns the lines of src[lo:hi] (markdown-aware when md is set).
func scanLinesIn(src []byte, lo, hi int, md bool) []mdLine {
	lines := scanMarkdown(src[lo:hi])
	for i := range lines {
		lines[i].start += lo
		lines[i].end += lo
		if !md {
			lines[i].fence = false
			lines[i].level = 0
			if strings.TrimSpace(string(src[lines[i].start:lines[i].end])) == "" {
				lines[i].blank = true
			}
		}
	}
	return lines
}

// pack greedily groups the atoms between consecutive bounds into ranges within budget; an
// atom over the budget is cut by finer.
func pack(bounds []int, size func(a, b int) int, budget int, finer func(a, b int) [][2]int) [][2]int {
	var out [][2]int
	start := bounds[0]
	last := start
	for _, b := range bounds[1:] {
		if b <= last {
			continue
		}
		if size(start, b) <= budget {
			last = b
			continue
		}
		if size(last, b) <= budget {
			// the atom fits alone: close the range before it
			out = append(out, [2]int{start, last})
			start, last = last, b
			continue
		}
		// An atom over the budget: cut finer, from the start of the open range so that a
		// heading or short lead-in stays with what follows.
		pieces := finer(start, b)
		if n := len(pieces); n > 0 {
			out = append(out, pieces[:n-1]...)
			start = pieces[n-1][0]
		}
		last = b
	}
	if last > start {
		out = append(out, [2]int{start, last})
	}
	return out
}

// sentenceBounds returns lo, the starts of the sentences (after '.', '!' or '?', closing
// quotes or brackets, then whitespace) and lines in [lo, hi), and hi.
func sentenceBounds(src []byte, lo, hi int) []int {
	bounds := []int{lo}
	for i := lo; i < hi; i++ {
		c := src[i]
		j := i + 1
		if c == '.' || c == '!' || c == '?' {
			for j < hi && strings.IndexByte(`"')]`, src[j]) >= 0 {
				j++
			}
			if j >= hi || !isSpace(src[j]) {
				continue
			}
		} else if c != '\n' {
			continue
		}
		for j < hi && isSpace(src[j]) {
			j++
		}
		if j < hi && j > bounds[len(bounds)-1] {
			bounds = append(bounds, j)
		}
		i = j - 1
	}
	return append(bounds, hi)
}

// sentenceRanges cuts [lo, hi) at sentence and line starts, packed within budget.
func sentenceRanges(src []byte, nws []int32, lo, hi, budget int) [][2]int {
	size := func(a, b int) int { return int(nws[b] - nws[a]) }
	return pack(sentenceBounds(src, lo, hi), size, budget, func(a, b int) [][2]int {
		return lineSplit(src, nws, a, b, budget)
	})
}

// addOverlap extends each span but the first backwards over the last sentences (or lines)
// of the previous span, up to overlap non-whitespace characters.
func addOverlap(src []byte, nws []int32, spans []span, overlap int) []span {
	out := make([]span, len(spans))
	copy(out, spans)
	for i := 1; i < len(out); i++ {
		prev := spans[i-1]
		start := spans[i].start
		best := start
		for _, b := range sentenceBounds(src, prev.start, prev.end) {
			if int(nws[start]-nws[b]) <= overlap && b < best {
				best = b
			}
		}
		out[i].start = best
	}
	return out
}
