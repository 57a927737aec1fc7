package postings

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// BlockSize is the number of postings in every block of a list but the
// last, which holds 1..BlockSize. DecodeBlock needs slices this long.
const BlockSize = 128

// Errors. Every error returned for damaged input wraps ErrCorrupt; the
// writer's errors wrap ErrOrder or ErrFreq; DecodeBlock's argument errors
// wrap ErrBlockRange or io.ErrShortBuffer. Test with errors.Is.
var (
	// ErrCorrupt is wrapped by every error OpenList, (*List).Reset and
	// DecodeBlock return for bytes that are not a valid encoded list.
	ErrCorrupt = errors.New("postings: corrupt list")
	// ErrOrder is wrapped by the error ListWriter.Add returns for a
	// document not above the previous one.
	ErrOrder = errors.New("documents must rise strictly")
	// ErrFreq is wrapped by the error ListWriter.Add returns for a
	// frequency of 0.
	ErrFreq = errors.New("frequency must be at least 1")
	// ErrBlockRange is wrapped by the error DecodeBlock returns for a
	// block index outside [0, Blocks()).
	ErrBlockRange = errors.New("block index out of range")
)

// corruptError describes damaged input; it unwraps to ErrCorrupt.
type corruptError struct{ msg string }

func (e *corruptError) Error() string { return "postings: " + e.msg }
func (e *corruptError) Unwrap() error { return ErrCorrupt }

func corrupt(format string, args ...any) error {
	return &corruptError{msg: fmt.Sprintf(format, args...)}
}

// ListWriter encodes the postings of one term. The zero value is ready to
// use; Finish leaves it empty again, so one writer can encode many lists.
type ListWriter struct {
	n     int               // postings added
	base  uint32            // the first document is counted from base (SetBase)
	last  uint32            // last document added, if n > 0
	fill  int               // postings pending in docs and freqs
	docs  [BlockSize]uint32 // pending document gaps minus one
	freqs [BlockSize]uint32 // pending frequencies minus one
	skip  []byte            // skip entries of the flushed blocks
	data  []byte            // the flushed blocks
}

// Add appends a posting: document doc, which must be above the previous
// document added, occurring freq >= 1 times. A rejected posting leaves
// the writer unchanged; the error wraps ErrOrder or ErrFreq.
func (w *ListWriter) Add(doc, freq uint32) error {
	if freq == 0 {
		return fmt.Errorf("postings: doc %d: %w", doc, ErrFreq)
	}
	if w.n == 0 && doc < w.base {
		return fmt.Errorf("postings: doc %d below the list's base %d: %w", doc, w.base, ErrOrder)
	}
	gap := doc - w.base // the first gap is counted from base-1: doc - (base-1) - 1
	if w.n > 0 {
		if doc <= w.last {
			return fmt.Errorf("postings: doc %d after doc %d: %w", doc, w.last, ErrOrder)
		}
		gap = doc - w.last - 1
	}
	w.docs[w.fill] = gap
	w.freqs[w.fill] = freq - 1
	w.fill++
	w.n++
	w.last = doc
	if w.fill == BlockSize {
		w.flush()
	}
	return nil
}

// SetBase makes the list's documents count from base: every document must be
// at least base, and the first is stored as its distance from base, so a list
// whose documents are known to lie above a bound (a chunk of a longer list)
// packs its first block no wider than its gaps. A reader must open the list
// with List.ResetBase and the same base. SetBase applies to the list being
// written: call it before its first Add; Finish and Reset set the base back to
// 0. It reports false, changing nothing, when postings were added already.
func (w *ListWriter) SetBase(base uint32) bool {
	if w.n > 0 {
		return false
	}
	w.base = base
	return true
}

// Len returns the number of postings added since the last Finish or Reset.
func (w *ListWriter) Len() int { return w.n }

// Reset discards the postings added since the last Finish.
func (w *ListWriter) Reset() {
	w.n, w.last, w.fill, w.base = 0, 0, 0, 0
	w.skip = w.skip[:0]
	w.data = w.data[:0]
}

// flush encodes the pending postings as one block.
func (w *ListWriter) flush() {
	docs, freqs := w.docs[:w.fill], w.freqs[:w.fill]
	dw, fw := maxWidth(docs), maxWidth(freqs)
	start := len(w.skip)
	w.skip = binary.AppendUvarint(w.skip, uint64(w.last))
	if fw < 3 {
		w.skip = append(w.skip, dw|fw<<6)
	} else {
		w.skip = append(w.skip, dw|3<<6, fw)
	}
	dataStart := len(w.data)
	w.data = appendPacked(w.data, docs, dw)
	w.data = appendPacked(w.data, freqs, fw)
	w.skip = append(w.skip, xorBytes(w.skip[start:])^xorBytes(w.data[dataStart:]))
	w.fill = 0
}

// Finish appends the encoded list to dst and returns the extended slice.
// The writer is then empty. A writer with no postings encodes the empty
// list, a single zero byte.
func (w *ListWriter) Finish(dst []byte) []byte {
	if w.fill > 0 {
		w.flush()
	}
	dst = binary.AppendUvarint(dst, uint64(w.n))
	dst = append(dst, w.skip...)
	dst = append(dst, w.data...)
	w.Reset()
	return dst
}

// blockInfo locates one block and holds what decoding it needs.
type blockInfo struct {
	off    int   // offset of the block in List.data
	dw, fw uint8 // doc and freq bit widths
	check  byte  // the check byte with the entry's other bytes folded in
}

// List reads an encoded list. Make one with OpenList, or reuse one with
// Reset. A List refers to, and never modifies, the bytes it was opened on.
// Its methods are safe for concurrent use; DecodeBlock writes only to the
// caller's slices.
type List struct {
	n    int         // postings
	base uint32      // the first document counts from base-1 (ResetBase)
	last []uint32    // last document of each block
	info []blockInfo // one per block
	data []byte      // the blocks
}

// OpenList checks the list header and skip table in b, which must hold
// exactly one encoded list, and returns a List reading it. It does not
// decode blocks; DecodeBlock checks each block. Errors wrap ErrCorrupt.
func OpenList(b []byte) (List, error) {
	var l List
	err := l.Reset(b)
	return l, err
}

// Reset is OpenList reusing l's memory. On error l is left empty.
func (l *List) Reset(b []byte) error { return l.ResetBase(b, 0) }

// ResetBase is Reset for a list written with ListWriter.SetBase(base).
func (l *List) ResetBase(b []byte, base uint32) error {
	l.n, l.last, l.info, l.data, l.base = 0, l.last[:0], l.info[:0], nil, base
	count, k := binary.Uvarint(b)
	if k <= 0 {
		if k == 0 {
			return corrupt("list header: truncated posting count")
		}
		return corrupt("list header: posting count overflows")
	}
	if count > math.MaxUint32+1 {
		return corrupt("list header: %d postings > 2^32", count)
	}
	rest := b[k:]
	nb := (count + BlockSize - 1) / BlockSize
	if nb*3 > uint64(len(rest)) { // an entry takes at least 3 bytes
		return corrupt("list header: %d postings need %d blocks, %d bytes follow", count, nb, len(rest))
	}
	n, blocks := int(count), int(nb)
	last, info := l.last, l.info
	if cap(last) < blocks {
		last = make([]uint32, 0, blocks)
		info = make([]blockInfo, 0, blocks)
	}
	pos, off := 0, 0
	prev := int64(base) - 1
	for i := range blocks {
		cnt := BlockSize
		if i == blocks-1 {
			cnt = n - (blocks-1)*BlockSize
		}
		start := pos
		v, k := binary.Uvarint(rest[pos:])
		if k <= 0 {
			return corrupt("block %d entry: bad last-doc varint", i)
		}
		if v > math.MaxUint32 {
			return corrupt("block %d entry: last doc %d > 2^32-1", i, v)
		}
		pos += k
		if len(rest)-pos < 2 {
			return corrupt("block %d entry: truncated", i)
		}
		wb := rest[pos]
		pos++
		dw, fw := wb&63, wb>>6
		if dw > 32 {
			return corrupt("block %d entry: doc width %d > 32", i, dw)
		}
		if fw == 3 {
			fw = rest[pos]
			pos++
			if fw < 3 || fw > 32 {
				return corrupt("block %d entry: freq width %d not in 3..32", i, fw)
			}
			if pos == len(rest) {
				return corrupt("block %d entry: truncated", i)
			}
		}
		check := rest[pos] ^ xorBytes(rest[start:pos])
		pos++
		if int64(v)-prev < int64(cnt) {
			return corrupt("block %d entry: last doc %d leaves no room for %d postings after %d", i, v, cnt, prev)
		}
		prev = int64(v)
		last = append(last, uint32(v))
		info = append(info, blockInfo{off: off, dw: dw, fw: fw, check: check})
		off += packedLen(cnt, int(dw)) + packedLen(cnt, int(fw))
	}
	data := rest[pos:]
	if off != len(data) {
		return corrupt("blocks take %d bytes, %d follow the skip table", off, len(data))
	}
	l.n, l.last, l.info, l.data = n, last, info, data
	return nil
}

// Len returns the number of postings in the list.
func (l *List) Len() int { return l.n }

// Blocks returns the number of blocks in the list.
func (l *List) Blocks() int { return len(l.info) }

// LastDoc returns the last document of block i, 0 <= i < Blocks(). The
// first document of block i is above LastDoc(i-1).
func (l *List) LastDoc(i int) uint32 { return l.last[i] }

// BlockLen returns the number of postings in block i, 0 <= i < Blocks():
// BlockSize for all blocks but the last.
func (l *List) BlockLen(i int) int {
	if i == len(l.info)-1 {
		return l.n - i*BlockSize
	}
	return BlockSize
}

// Seek returns the index of the first block whose last document is at
// least d, or Blocks() if there is none. It reads only the skip table.
func (l *List) Seek(d uint32) int {
	last := l.last
	lo, hi := 0, len(last)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if last[m] < d {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// DecodeBlock decodes block i into docs[:n] and freqs[:n] and returns n,
// the number of postings in the block. Both slices must have length at
// least BlockSize. The documents are checked to rise strictly and to end
// at LastDoc(i), and the block's check byte is verified; damage found
// returns an error wrapping ErrCorrupt, with docs and freqs undefined.
func (l *List) DecodeBlock(i int, docs, freqs []uint32) (int, error) {
	if uint(i) >= uint(len(l.info)) {
		return 0, fmt.Errorf("postings: block %d of %d: %w", i, len(l.info), ErrBlockRange)
	}
	if len(docs) < BlockSize || len(freqs) < BlockSize {
		return 0, fmt.Errorf("postings: decode needs %d-element slices, got %d and %d: %w",
			BlockSize, len(docs), len(freqs), io.ErrShortBuffer)
	}
	n, src, err := l.decodeDocs(i, docs)
	if err != nil {
		return 0, err
	}
	bi := l.info[i]
	unpackFreqs(freqs, src[packedLen(n, int(bi.dw)):], n, bi.fw)
	if bi.fw == 32 {
		for _, f := range freqs[:n] {
			if f == 0 {
				return 0, corrupt("block %d: frequency 2^32", i)
			}
		}
	}
	return n, nil
}

// DecodeDocs is DecodeBlock without the frequencies: it decodes block i's
// documents into docs[:n] (docs of length at least BlockSize) and returns
// n, with DecodeBlock's checks (the check byte covers the whole block, the
// frequencies too). Freq then reads one posting's frequency: a caller
// looking a document up decodes no other frequency.
func (l *List) DecodeDocs(i int, docs []uint32) (int, error) {
	if uint(i) >= uint(len(l.info)) {
		return 0, fmt.Errorf("postings: block %d of %d: %w", i, len(l.info), ErrBlockRange)
	}
	if len(docs) < BlockSize {
		return 0, fmt.Errorf("postings: decode needs %d-element slices, got %d: %w",
			BlockSize, len(docs), io.ErrShortBuffer)
	}
	n, _, err := l.decodeDocs(i, docs)
	return n, err
}

// decodeDocs is DecodeDocs once its arguments are checked; it also returns the
// block's bytes (documents, then frequencies).
func (l *List) decodeDocs(i int, docs []uint32) (int, []byte, error) {
	bi := l.info[i]
	n := BlockSize
	if i == len(l.info)-1 {
		n = l.n - i*BlockSize
	}
	dlen, flen := packedLen(n, int(bi.dw)), packedLen(n, int(bi.fw))
	src := l.data[bi.off : bi.off+dlen+flen]
	if xorBytes(src) != bi.check {
		return 0, nil, corrupt("block %d: check byte mismatch", i)
	}
	a := uint64(l.base) - 1 // the document before the first: base-1 (-1 wrapped for base 0)
	if i > 0 {
		a = uint64(l.last[i-1])
	}
	if a = unpackDocs(docs, src[:dlen], n, bi.dw, a); a != uint64(l.last[i]) {
		return 0, nil, corrupt("block %d: documents end at %d, skip table says %d", i, a, l.last[i])
	}
	return n, src, nil
}

// Freq returns the frequency of posting k of block i, decoding it alone.
// The block should have been checked by DecodeDocs(i); k must be in
// [0, BlockLen(i)) (ErrBlockRange otherwise). A frequency of 2^32 (a
// damaged block of width 32) wraps ErrCorrupt.
func (l *List) Freq(i, k int) (uint32, error) {
	if uint(i) >= uint(len(l.info)) || uint(k) >= uint(l.BlockLen(i)) {
		return 0, fmt.Errorf("postings: posting %d of block %d of %d: %w", k, i, len(l.info), ErrBlockRange)
	}
	bi := l.info[i]
	if bi.fw == 0 {
		return 1, nil
	}
	n := l.BlockLen(i)
	dlen, flen := packedLen(n, int(bi.dw)), packedLen(n, int(bi.fw))
	src := l.data[bi.off+dlen : bi.off+dlen+flen]
	bit := uint(k) * uint(bi.fw)
	var acc uint64
	for j, p := uint(0), bit/8; j < 5 && int(p) < len(src); j, p = j+1, p+1 {
		acc |= uint64(src[p]) << (8 * j)
	}
	f := uint32(acc>>(bit%8)&(uint64(1)<<bi.fw-1)) + 1
	if f == 0 {
		return 0, corrupt("block %d: frequency 2^32", i)
	}
	return f, nil
}
