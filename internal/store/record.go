package store

import (
	"strconv"
	"strings"
)

// Record is the stored form of a document (its id is the key).
type Record struct {
	Title    string         `json:"t,omitempty"`
	Text     string         `json:"x"`
	Metadata map[string]any `json:"m,omitempty"`
	// Chunks are the document's chunks when it has several; none: the document is its own
	// single chunk (as every document stored before chunking).
	Chunks []Chunk `json:"c,omitempty"`
}

// Chunk is a stored chunk: the bytes [S, E) of its document's text.
type Chunk struct {
	S int      `json:"s"`
	E int      `json:"e"`
	H []string `json:"h,omitempty"` // heading path (markdown) or qualified name (code)
}

// Index ids (units). A document of one chunk is indexed under its own id; chunk i of a
// chunked document under id + "\x00" + i (document ids may not hold NUL bytes).

// UnitID is the index id of chunk i of document parent.
func UnitID(parent string, i int) string { return parent + "\x00" + strconv.Itoa(i) }

// SplitUnit returns the document id and chunk index of an index id (-1: the whole document).
func SplitUnit(uid string) (parent string, idx int) {
	j := strings.IndexByte(uid, 0)
	if j < 0 {
		return uid, -1
	}
	n, err := strconv.Atoi(uid[j+1:])
	if err != nil || n < 0 || strconv.Itoa(n) != uid[j+1:] { // only what UnitID writes
		return uid, -1
	}
	return uid[:j], n
}

// UnitIDs lists the index ids of stored document id (r nil: none).
func (r *Record) UnitIDs(id string) []string {
	if r == nil {
		return nil
	}
	if len(r.Chunks) == 0 {
		return []string{id}
	}
	out := make([]string, len(r.Chunks))
	for i := range r.Chunks {
		out[i] = UnitID(id, i)
	}
	return out
}

// UnitIndex is the chunk index of r's u-th index id (-1 for an unchunked record).
func (r *Record) UnitIndex(u int) int {
	if len(r.Chunks) == 0 {
		return -1
	}
	return u
}

// UnitText returns the text, its byte range and the heading path of chunk i (-1 or an
// unchunked record: the whole text).
func (r *Record) UnitText(i int) (text string, start, end int, headings []string) {
	if i < 0 || len(r.Chunks) == 0 {
		return r.Text, 0, len(r.Text), nil
	}
	c := r.Chunks[i]
	return r.Text[c.S:c.E], c.S, c.E, c.H
}

// HasUnit reports whether chunk idx (-1: the whole document) is one of r's index ids.
func (r *Record) HasUnit(idx int) bool {
	if idx < 0 {
		return len(r.Chunks) == 0
	}
	return idx < len(r.Chunks)
}
