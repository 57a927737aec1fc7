package wordpiece

import (
	"strings"
	"unicode/utf8"
)

// Encode tokenizes one text as [CLS] pieces [SEP], keeping the first MaxLength()-2 word
// pieces (right truncation, as the Hugging Face fast tokenizer and sentence-transformers do).
func (t *Tokenizer) Encode(text string) Encoding {
	return t.EncodeMax(text, 0)
}

// EncodeMax is Encode with a cap of maxLen tokens ([CLS] and [SEP] included) instead of
// MaxLength(); maxLen <= 0 or over MaxLength() is MaxLength(), under 2 is 2.
func (t *Tokenizer) EncodeMax(text string, maxLen int) Encoding {
	if maxLen <= 0 || maxLen > t.MaxLength() {
		maxLen = t.MaxLength()
	}
	maxLen = max(maxLen, 2)
	pieces := t.appendPieces(nil, text)
	n := min(len(pieces), maxLen-2)
	e := newEncoding(n + 2)
	e.push(t, t.clsID, 0)
	for _, id := range pieces[:n] {
		e.push(t, id, 0)
	}
	e.push(t, t.sepID, 0)
	return e
}

// EncodePair tokenizes a pair as [CLS] a [SEP] b [SEP] with token type ids 0 for the first
// segment and 1 for the second, truncating to MaxLength() with the LongestFirst strategy of
// the Hugging Face Rust tokenizer (see TruncatePair).
func (t *Tokenizer) EncodePair(a, b string) Encoding {
	pa := t.appendPieces(nil, a)
	pb := t.appendPieces(nil, b)
	na, nb := TruncatePair(len(pa), len(pb), t.MaxLength()-3)
	e := newEncoding(na + nb + 3)
	e.push(t, t.clsID, 0)
	for _, id := range pa[:na] {
		e.push(t, id, 0)
	}
	e.push(t, t.sepID, 0)
	for _, id := range pb[:nb] {
		e.push(t, id, 1)
	}
	e.push(t, t.sepID, 1)
	return e
}

// TruncatePair returns how many pieces of each segment LongestFirst truncation keeps when
// the two segments (of n1 and n2 pieces) must fit in budget pieces. It is the rule of the
// Hugging Face Rust tokenizer (not the one-token-at-a-time loop of the Python slow
// tokenizer): with s the shorter and l the longer segment, l keeps max(s, budget-s) (or s
// when s alone exceeds the budget); if that still does not fit, the segments get budget/2
// and budget/2 + budget%2, the larger share going to the originally longer segment (to the
// second segment on a tie).
func TruncatePair(n1, n2, budget int) (keep1, keep2 int) {
	budget = max(budget, 0)
	if n1+n2 <= budget {
		return n1, n2
	}
	swap := n1 > n2
	if swap {
		n1, n2 = n2, n1
	}
	if n1 > budget {
		n2 = n1
	} else {
		n2 = max(n1, budget-n1)
	}
	if n1+n2 > budget {
		n1 = budget / 2
		n2 = n1 + budget%2
	}
	if swap {
		n1, n2 = n2, n1
	}
	return n1, n2
}

// Pieces returns the word-piece ids of text without special tokens and without truncation
// (the Model2Vec input). Unknown words appear as the unknown token id.
func (t *Tokenizer) Pieces(text string) []int64 {
	p := t.appendPieces(nil, text)
	out := make([]int64, len(p))
	for i, id := range p {
		out[i] = int64(id)
	}
	return out
}

// Tokenize returns the word-piece strings of text (no special tokens, no truncation).
func (t *Tokenizer) Tokenize(text string) []string {
	p := t.appendPieces(nil, text)
	out := make([]string, len(p))
	for i, id := range p {
		out[i] = t.idTok[id]
	}
	return out
}

// PadBatch right-pads encodings to the longest one: pad id [PAD], type id 0, mask 0.
func (t *Tokenizer) PadBatch(encs []Encoding) Batch {
	cols := 0
	for _, e := range encs {
		cols = max(cols, len(e.IDs))
	}
	n := len(encs) * cols
	b := Batch{
		IDs: make([]int64, n), TypeIDs: make([]int64, n), Mask: make([]int64, n),
		Rows: len(encs), Cols: cols,
	}
	pad := t.PadID()
	for r, e := range encs {
		row := r * cols
		for c := range cols {
			if c < len(e.IDs) {
				b.IDs[row+c] = e.IDs[c]
				if c < len(e.TypeIDs) {
					b.TypeIDs[row+c] = e.TypeIDs[c]
				}
				if c < len(e.Mask) {
					b.Mask[row+c] = e.Mask[c]
				} else {
					b.Mask[row+c] = 1
				}
			} else {
				b.IDs[row+c] = pad
			}
		}
	}
	return b
}

// EncodeBatch encodes texts with Encode and pads them with PadBatch.
func (t *Tokenizer) EncodeBatch(texts []string) Batch {
	encs := make([]Encoding, len(texts))
	for i, s := range texts {
		encs[i] = t.Encode(s)
	}
	return t.PadBatch(encs)
}

func newEncoding(n int) Encoding {
	return Encoding{
		IDs: make([]int64, 0, n), TypeIDs: make([]int64, 0, n),
		Mask: make([]int64, 0, n), Tokens: make([]string, 0, n),
	}
}

func (e *Encoding) push(t *Tokenizer, id int32, typ int64) {
	e.IDs = append(e.IDs, int64(id))
	e.TypeIDs = append(e.TypeIDs, typ)
	e.Mask = append(e.Mask, 1)
	e.Tokens = append(e.Tokens, t.idTok[id])
}

// appendPieces splits text on special tokens (matched verbatim in the raw text, like the
// Hugging Face added-vocabulary pass), and tokenizes the text between them.
func (t *Tokenizer) appendPieces(dst []int32, text string) []int32 {
	for len(text) > 0 {
		at, sp := t.findSpecial(text)
		if at < 0 {
			return t.appendSegment(dst, text)
		}
		dst = t.appendSegment(dst, text[:at])
		dst = append(dst, sp.id)
		text = text[at+len(sp.content):]
	}
	return dst
}

// findSpecial returns the leftmost (then longest) special token occurrence in s.
func (t *Tokenizer) findSpecial(s string) (int, specialToken) {
	best, bestTok := -1, specialToken{}
	for _, sp := range t.special {
		limit := s
		if best >= 0 {
			limit = s[:min(len(s), best+len(sp.content)-1)]
		}
		if i := strings.Index(limit, sp.content); i >= 0 && (best < 0 || i < best) {
			best, bestTok = i, sp
		}
	}
	return best, bestTok
}

// appendSegment normalizes, pre-tokenizes and word-pieces a text without special tokens.
func (t *Tokenizer) appendSegment(dst []int32, text string) []int32 {
	if text == "" {
		return dst
	}
	s := t.normalizeText(text)
	var scratch []byte
	start := -1 // start of the current word, -1 when outside a word
	for i, r := range s {
		switch {
		case isWhitespace(r):
			if start >= 0 {
				dst, scratch = t.appendWord(dst, scratch, s[start:i])
				start = -1
			}
		case t.splitPunct && isPunct(r):
			if start >= 0 {
				dst, scratch = t.appendWord(dst, scratch, s[start:i])
				start = -1
			}
			dst, scratch = t.appendWord(dst, scratch, s[i:i+utf8.RuneLen(r)])
		default:
			if start < 0 {
				start = i
			}
		}
	}
	if start >= 0 {
		dst, _ = t.appendWord(dst, scratch, s[start:])
	}
	return dst
}

// appendWord appends the WordPiece ids of one word: greedy longest match from the left,
// continuation pieces carrying the prefix. A word longer than maxChars runes, or one with
// an unmatched remainder, becomes a single unknown token.
func (t *Tokenizer) appendWord(dst []int32, scratch []byte, w string) ([]int32, []byte) {
	if utf8.RuneCountInString(w) > t.maxChars {
		return append(dst, t.unkID), scratch
	}
	if id, ok := t.vocab[w]; ok { // whole-word fast path
		return append(dst, id), scratch
	}
	mark := len(dst)
	start := 0
	for start < len(w) {
		limit := len(w)
		if start > 0 {
			limit = min(limit, start+t.maxTok-len(t.prefix))
		} else {
			limit = min(limit, t.maxTok)
		}
		for limit > start && limit < len(w) && !utf8.RuneStart(w[limit]) {
			limit--
		}
		found := false
		for end := limit; end > start; {
			var id int32
			var ok bool
			if start == 0 {
				id, ok = t.vocab[w[:end]]
			} else {
				scratch = append(scratch[:0], t.prefix...)
				scratch = append(scratch, w[start:end]...)
				id, ok = t.vocab[string(scratch)]
			}
			if ok {
				dst = append(dst, id)
				start = end
				found = true
				break
			}
			end--
			for end > start && !utf8.RuneStart(w[end]) {
				end--
			}
		}
		if !found {
			return append(dst[:mark], t.unkID), scratch
		}
	}
	return dst, scratch
}
