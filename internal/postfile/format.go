package postfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"

	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// Dropped is the newDocNums entry of a document that a merge removes.
const Dropped = math.MaxUint64

// Version is the format version this package writes and reads.
const Version = 3

// versionFST is the version before, whose dictionary is a vellum FST; it
// is still read.
const versionFST = 2

// ChunkPostings is the target number of postings a chunk: a term of count
// postings is cut into count/ChunkPostings + 1 spans of documents (zap
// v16's chunk mode).
const ChunkPostings = 1024

const (
	headerMagic = "AMPOSTF1"
	footerMagic = "PSTF"
	headerSize  = len(headerMagic)
	footerSize  = 84
	// maxDocs is the most documents a file can hold: document numbers are
	// uint32s.
	maxDocs = 1 << 32
	// inlineMaxFreq is the largest frequency stored inline in a
	// dictionary value.
	inlineMaxFreq = 1 << 31
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors. Test with errors.Is.
var (
	// ErrCorrupt is wrapped by every error returned for bytes that are not
	// a valid file. Errors that come from the postings codec wrap
	// postings.ErrCorrupt too.
	ErrCorrupt = errors.New("postfile: corrupt file")
	// ErrInput is wrapped by the errors the Writer and Merge return for
	// input that breaks their contract: terms not strictly ascending,
	// documents not strictly ascending or not below N, a frequency of 0,
	// docs and freqs of different lengths, an empty posting list, no terms
	// at all, a bad document count, or newDocNums that do not renumber
	// densely in order.
	ErrInput = errors.New("postfile: bad input")
	// ErrClosed is returned by Merge when its close channel is closed. It
	// is scorch's segment.ErrClosed, returned as is, so scorch's merger
	// recognises it.
	ErrClosed = segment.ErrClosed
	// ErrChunkRange is wrapped by the error Term.Chunk returns for a chunk
	// index outside [0, Chunks()).
	ErrChunkRange = errors.New("postfile: chunk index out of range")
)

// corruptError describes damaged bytes; it unwraps to ErrCorrupt and to
// the codec's error, if any.
type corruptError struct {
	msg   string
	cause error
}

func (e *corruptError) Error() string {
	if e.cause != nil {
		return "postfile: " + e.msg + ": " + e.cause.Error()
	}
	return "postfile: " + e.msg
}

func (e *corruptError) Unwrap() []error {
	if e.cause != nil {
		return []error{ErrCorrupt, e.cause}
	}
	return []error{ErrCorrupt}
}

func corrupt(format string, args ...any) error {
	return &corruptError{msg: fmt.Sprintf(format, args...)}
}

// corruptWrap reports damage found by the postings codec (or vellum).
func corruptWrap(cause error, format string, args ...any) error {
	return &corruptError{msg: fmt.Sprintf(format, args...), cause: cause}
}

func badInput(format string, args ...any) error {
	return fmt.Errorf("postfile: %s: %w", fmt.Sprintf(format, args...), ErrInput)
}

// footer is the decoded fixed-size footer.
type footer struct {
	numDocs, numTerms    uint64
	lensOff, lensLen     uint64
	entriesOff, entryLen uint64
	dictOff, dictLen     uint64
	dictCRC              uint32
	width                uint8
	fixedSpan            uint16 // Options.FixedSpan
	reserved             byte
	version              uint32
	magic                [4]byte
}

// appendFooter appends f's bytes, all but the trailing checksum.
func appendFooter(dst []byte, f *footer) []byte {
	le := binary.LittleEndian
	for _, v := range []uint64{f.numDocs, f.numTerms, f.lensOff, f.lensLen,
		f.entriesOff, f.entryLen, f.dictOff, f.dictLen} {
		dst = le.AppendUint64(dst, v)
	}
	dst = le.AppendUint32(dst, f.dictCRC)
	dst = append(dst, f.width)
	dst = le.AppendUint16(dst, f.fixedSpan)
	dst = append(dst, 0)
	dst = le.AppendUint32(dst, Version)
	dst = append(dst, footerMagic...)
	return dst
}

// parseFooter decodes b, the last footerSize bytes of a file.
func parseFooter(b []byte) footer {
	le := binary.LittleEndian
	var f footer
	u := func(i int) uint64 { return le.Uint64(b[8*i:]) }
	f.numDocs, f.numTerms = u(0), u(1)
	f.lensOff, f.lensLen = u(2), u(3)
	f.entriesOff, f.entryLen = u(4), u(5)
	f.dictOff, f.dictLen = u(6), u(7)
	f.dictCRC = le.Uint32(b[64:])
	f.width = b[68]
	f.fixedSpan = le.Uint16(b[69:])
	f.reserved = b[71]
	f.version = le.Uint32(b[72:])
	copy(f.magic[:], b[76:80])
	return f
}

// span returns the documents a chunk of a term of count postings spans in
// a segment of n documents, and the number of chunks: fixed documents when
// fixed > 0 (Options.FixedSpan), else zap v16's rule. count must be in
// [1, n].
func span(n, count, fixed uint64) (span uint64, chunks int) {
	if fixed > 0 {
		span = fixed
	} else {
		span = n / (count/ChunkPostings + 1)
	}
	return span, int((n-1)/span + 1)
}

// Options tunes a Writer; the zero value writes zap v16's chunks.
type Options struct {
	// FixedSpan, when not 0, makes every chunk of every term span FixedSpan
	// documents (as zap's chunk modes up to 1024 do), however many postings
	// the term has: tests use it to get lists of many chunks from a few
	// documents. It is recorded in the file.
	FixedSpan uint16
}

// widthFor returns the bytes a length needs to hold max: 1, 2 or 4.
func widthFor(max uint32) uint8 {
	switch {
	case max <= math.MaxUint8:
		return 1
	case max <= math.MaxUint16:
		return 2
	}
	return 4
}
