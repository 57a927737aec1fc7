package postfile

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"

	"github.com/agentmem/memory/internal/postings"
)

// Writer writes a file term by term: NewWriter, Add for each term in
// ascending order, Close. The writer streams: entries are written as terms
// are added; only the dictionary (dict.go) is built in memory and written
// by Close.
//
// Errors are sticky: after Add fails (bad input or a write error) every
// later call returns the same error and Close writes no dictionary or
// footer, so no file that claims to be valid is ever written.
type Writer struct {
	s          sink
	bw         *bufio.Writer // our own buffer around the destination; nil if it is buffered
	lengths    []uint32      // Add's lengths, retained until Close
	n          uint64        // documents
	fixed      uint64        // Options.FixedSpan
	width      uint8         // bytes a length
	entriesOff uint64
	entries    uint64 // bytes of entries written
	terms      uint64
	prev       []byte // the last term added
	dict       dictWriter
	enc        encoder
	err        error
	closed     bool
}

// NewWriter returns a Writer of a file for the documents 0..len(lengths)-1
// whose field lengths are lengths. It writes the header and the lengths at
// once. lengths is retained (read, never modified) until Close returns: the
// frontiers Add computes need the lengths of the term's documents; the
// caller must not change it meanwhile.
//
// If w has an AvailableBuffer method (a *bufio.Writer, a *bytes.Buffer),
// the Writer writes to it directly, and the caller flushes it after Close;
// otherwise the Writer buffers its writes itself and flushes them by
// Close. A lengths of 0 or of more than 2^32 documents makes every call
// fail with ErrInput.
func NewWriter(w io.Writer, lengths []uint32) *Writer {
	return NewWriterOptions(w, lengths, Options{})
}

// NewWriterOptions is NewWriter with options o.
func NewWriterOptions(w io.Writer, lengths []uint32, o Options) *Writer {
	wr := newWriter(w, uint64(len(lengths)), o)
	if wr.err != nil {
		return wr
	}
	wr.lengths = lengths
	var m uint32
	for _, l := range lengths {
		m = max(m, l)
	}
	le := wr.lengthsWriter(widthFor(m))
	for _, l := range lengths {
		le.put(l)
	}
	le.flush()
	return wr
}

// newWriter starts a file of n documents: the header is written, the
// lengths are not.
func newWriter(w io.Writer, n uint64, o Options) *Writer {
	wr := &Writer{n: n, fixed: uint64(o.FixedSpan)}
	if _, ok := w.(interface{ AvailableBuffer() []byte }); ok {
		wr.s.w = w
	} else {
		wr.bw = bufio.NewWriterSize(w, 1<<16)
		wr.s.w = wr.bw
	}
	if n > maxDocs {
		wr.err = badInput("%d documents, want at most 2^32", n)
		return wr
	}
	wr.s.write([]byte(headerMagic))
	return wr
}

// lengthsWriter returns the encoder of the lengths section at width bytes
// a length; its flush records where the entries start.
func (w *Writer) lengthsWriter(width uint8) *lengthsEncoder {
	w.width = width
	return &lengthsEncoder{w: w, width: width, buf: make([]byte, 0, 1<<14)}
}

// lengthsEncoder writes the lengths section.
type lengthsEncoder struct {
	w     *Writer
	width uint8
	buf   []byte
}

func (e *lengthsEncoder) put(l uint32) {
	switch e.width {
	case 1:
		e.buf = append(e.buf, byte(l))
	case 2:
		e.buf = binary.LittleEndian.AppendUint16(e.buf, uint16(l))
	default:
		e.buf = binary.LittleEndian.AppendUint32(e.buf, l)
	}
	if len(e.buf) >= cap(e.buf)-4 {
		e.w.s.write(e.buf)
		e.buf = e.buf[:0]
	}
}

func (e *lengthsEncoder) flush() {
	e.w.s.write(e.buf)
	e.buf = e.buf[:0]
	e.w.entriesOff = uint64(e.w.s.n)
	if e.w.s.err != nil {
		e.w.err = e.w.s.err
	}
}

// Add writes the postings of term: documents docs, strictly ascending and
// below N, with frequencies freqs (each >= 1, len(freqs) == len(docs) >
// 0). Terms must be added in strictly ascending byte order. Errors for bad
// input wrap ErrInput; any error leaves the writer failed.
func (w *Writer) Add(term []byte, docs, freqs []uint32) error {
	if w.err != nil {
		return w.err
	}
	lens, err := w.check(term, docs, freqs)
	if err != nil {
		w.err = err
		return err
	}
	return w.add(term, docs, freqs, lens)
}

// check validates Add's arguments and returns the lengths of the term's
// documents.
func (w *Writer) check(term []byte, docs, freqs []uint32) ([]uint32, error) {
	if w.closed {
		return nil, badInput("Add after Close")
	}
	if len(docs) == 0 {
		return nil, badInput("term %q: no postings", term)
	}
	if len(docs) != len(freqs) {
		return nil, badInput("term %q: %d docs, %d freqs", term, len(docs), len(freqs))
	}
	if w.terms > 0 && bytes.Compare(term, w.prev) <= 0 {
		return nil, badInput("term %q not above %q", term, w.prev)
	}
	lens := slices.Grow(w.enc.lens[:0], len(docs))[:len(docs)]
	w.enc.lens = lens
	freqs = freqs[:len(docs)]
	prev := int64(-1)
	for k, d := range docs {
		if int64(d) <= prev || uint64(d) >= w.n {
			return nil, badInput("term %q: doc %d after %d (N = %d)", term, d, prev, w.n)
		}
		if freqs[k] == 0 {
			return nil, badInput("term %q: doc %d: frequency 0", term, d)
		}
		prev = int64(d)
		lens[k] = w.lengths[d]
	}
	return lens, nil
}

// add encodes and writes one term whose postings are valid; lens[k] is the
// length of document docs[k].
func (w *Writer) add(term []byte, docs, freqs, lens []uint32) error {
	if w.terms > 0 && bytes.Compare(term, w.prev) <= 0 {
		w.err = badInput("term %q not above %q", term, w.prev)
		return w.err
	}
	inline, v, err := w.enc.encode(w.n, w.fixed, docs, freqs, lens)
	if err != nil {
		w.err = err
		return err
	}
	if !inline {
		v = w.entries << 1
		w.s.write(w.enc.hdr)
		w.s.write(w.enc.lists)
		w.entries += uint64(len(w.enc.hdr) + len(w.enc.lists))
		if w.s.err != nil {
			w.err = fmt.Errorf("postfile: write: %w", w.s.err)
			return w.err
		}
	}
	if err := w.dict.add(term, v); err != nil {
		w.err = fmt.Errorf("postfile: dictionary: term %q: %w", term, err)
		return w.err
	}
	w.prev = append(w.prev[:0], term...)
	w.terms++
	return nil
}

// Close writes the dictionary and the footer and flushes the Writer's own
// buffer. It does not close (nor, if it is buffered, flush) the destination.
// A writer with no terms fails with ErrInput.
func (w *Writer) Close() error {
	if w.closed {
		if w.err != nil {
			return w.err
		}
		return badInput("Close called twice")
	}
	w.closed = true
	if w.err != nil {
		return w.err
	}
	dict := w.dict.finish()
	dictOff := uint64(w.s.n)
	w.s.write(dict)
	f := footer{
		numDocs: w.n, numTerms: w.terms,
		lensOff: uint64(headerSize), lensLen: w.n * uint64(w.width),
		entriesOff: w.entriesOff, entryLen: w.entries,
		dictOff: dictOff, dictLen: uint64(len(dict)),
		dictCRC: crc32.Checksum(dict, castagnoli),
		width:   w.width, fixedSpan: uint16(w.fixed),
	}
	fb := appendFooter(make([]byte, 0, footerSize), &f)
	w.s.write(fb)
	w.s.write(binary.LittleEndian.AppendUint32(nil, w.s.crc))
	if w.bw != nil && w.s.err == nil {
		w.s.err = w.bw.Flush()
	}
	if w.s.err != nil {
		w.err = fmt.Errorf("postfile: write: %w", w.s.err)
	}
	w.dict = dictWriter{}
	w.lengths = nil
	return w.err
}

// Size returns the number of bytes written so far (to the Writer's own
// buffer included).
func (w *Writer) Size() int64 { return w.s.n }

// sink writes to the destination, counting the bytes and checksumming
// them; it keeps the first error.
type sink struct {
	w   io.Writer
	n   int64
	crc uint32
	err error
}

func (s *sink) write(p []byte) {
	if s.err != nil || len(p) == 0 {
		return
	}
	s.crc = crc32.Update(s.crc, castagnoli, p)
	k, err := s.w.Write(p)
	s.n += int64(k)
	if err == nil && k < len(p) {
		err = io.ErrShortWrite
	}
	s.err = err
}

// encoder encodes one term's entry; its buffers are reused.
type encoder struct {
	lw    postings.ListWriter
	hdr   []byte   // count and chunk headers
	lists []byte   // the chunks' lists
	lens  []uint32 // Add's lengths of the term's documents
	front frontier
}

// encode encodes a term of postings (docs, freqs) with document lengths
// lens in a segment of n documents. A term stored inline returns its
// dictionary value; otherwise the entry is e.hdr followed by e.lists.
func (e *encoder) encode(n, fixed uint64, docs, freqs, lens []uint32) (inline bool, v uint64, err error) {
	count := len(docs)
	if count == 1 && freqs[0] <= inlineMaxFreq {
		return true, (uint64(freqs[0]-1)<<32|uint64(docs[0]))<<1 | 1, nil
	}
	sp, chunks := span(n, uint64(count), fixed)
	hdr := binary.AppendUvarint(e.hdr[:0], uint64(count))
	lists := e.lists[:0]
	i := 0
	for c := range chunks {
		end := uint64(c+1) * sp
		j := i
		for j < count && uint64(docs[j]) < end {
			j++
		}
		if c < chunks-1 {
			hdr = binary.AppendUvarint(hdr, uint64(j-i))
		}
		if j == i {
			continue
		}
		start := len(lists)
		e.lw.SetBase(uint32(uint64(c) * sp)) // (below N <= 2^32 since chunk c holds a document)
		for k := i; k < j; k++ {
			if err := e.lw.Add(docs[k], freqs[k]); err != nil {
				e.lw.Reset()
				return false, 0, badInput("%v", err)
			}
		}
		lists = e.lw.Finish(lists)
		hdr = binary.AppendUvarint(hdr, uint64(len(lists)-start))
		hdr = appendFront(hdr, e.front.compute(freqs[i:j], lens[i:j]))
		i = j
	}
	e.hdr, e.lists = hdr, lists
	if i != count {
		return false, 0, badInput("doc %d not below N = %d", docs[i], n)
	}
	return false, 0, nil
}

// appendFront appends the encoding of a frontier (both fields strictly
// falling) to dst: each pair as two uvarints, the first with a flag in bit
// 0 saying another pair follows.
func appendFront(dst []byte, front []Pair) []byte {
	more := func(k int) uint64 {
		if k < len(front)-1 {
			return 1
		}
		return 0
	}
	dst = binary.AppendUvarint(dst, uint64(front[0].Freq)<<1|more(0))
	dst = binary.AppendUvarint(dst, uint64(front[0].Len))
	for k := 1; k < len(front); k++ {
		dst = binary.AppendUvarint(dst, uint64(front[k-1].Freq-front[k].Freq-1)<<1|more(k))
		dst = binary.AppendUvarint(dst, uint64(front[k-1].Len-front[k].Len-1))
	}
	return dst
}

// smallFreqs is the number of frequencies (0..smallFreqs-1) the frontier
// tracks in a table; larger ones are collected and sorted.
const smallFreqs = 64

// frontier computes Pareto frontiers; its memory is reused.
type frontier struct {
	best [smallFreqs]uint64 // ^(least length) of frequency f, or 0 if f not seen
	over []Pair             // postings of frequency >= smallFreqs
	out  []Pair
}

// compute returns the frontier of the postings (freqs[k], lens[k]): the
// pairs no other pair dominates, with frequency and length strictly
// falling. The result is valid until the next call.
func (fr *frontier) compute(freqs, lens []uint32) []Pair {
	maxf := uint32(0)
	over := fr.over[:0]
	for k, f := range freqs {
		if f < smallFreqs {
			fr.best[f] = max(fr.best[f], ^uint64(lens[k]))
			maxf = max(maxf, f)
		} else {
			over = append(over, Pair{f, lens[k]})
		}
	}
	slices.SortFunc(over, func(a, b Pair) int {
		if c := cmp.Compare(b.Freq, a.Freq); c != 0 {
			return c
		}
		return cmp.Compare(a.Len, b.Len)
	})
	out := fr.out[:0]
	least := uint64(math.MaxUint64) // the least length of a larger frequency
	for k, p := range over {
		if k > 0 && p.Freq == over[k-1].Freq {
			continue
		}
		if uint64(p.Len) < least {
			out = append(out, p)
			least = uint64(p.Len)
		}
	}
	for f := int(maxf); f >= 1; f-- {
		x := fr.best[f]
		if x == 0 {
			continue
		}
		fr.best[f] = 0
		if l := ^x; l < least {
			out = append(out, Pair{uint32(f), uint32(l)})
			least = l
		}
	}
	fr.over, fr.out = over, out
	return out
}
