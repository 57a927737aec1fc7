package postfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"unsafe"

	"github.com/agentmem/memory/internal/postings"
	"github.com/blevesearch/vellum"
)

// Reader reads a file from its bytes, which it refers to and never
// modifies. Its methods are safe for concurrent use; a Term or
// TermIterator is not.
type Reader struct {
	data    []byte
	n       uint64 // documents
	fixed   uint64 // Options.FixedSpan of the writer
	terms   int
	lens    []byte // the lengths section and the 3 bytes after it
	lshift  uint8  // log2 of the bytes a length
	lmask   uint32 // the mask of a length's bytes
	entries []byte
	fst     *vellum.FST // the dictionary of a version 2 file
	bd      *blockDict  // the dictionary of a version 3 file
}

// Open checks data, the whole file, and returns a Reader of it. It checks
// the header and footer (magics, version, section offsets and lengths that
// tile the file exactly), the dictionary's checksum, and loads the
// dictionary; it does not checksum the rest (see Verify). Errors wrap
// ErrCorrupt.
func Open(data []byte) (*Reader, error) {
	if len(data) < headerSize+footerSize {
		return nil, corrupt("%d bytes, too short for a file", len(data))
	}
	if string(data[:headerSize]) != headerMagic {
		return nil, corrupt("bad header magic")
	}
	foot := len(data) - footerSize
	f := parseFooter(data[foot:])
	if string(f.magic[:]) != footerMagic {
		return nil, corrupt("bad footer magic")
	}
	if f.version != Version && f.version != versionFST {
		return nil, corrupt("format version %d, want %d or %d", f.version, versionFST, Version)
	}
	if f.reserved != 0 {
		return nil, corrupt("footer: reserved byte not zero")
	}
	var shift uint8
	switch f.width {
	case 1:
		shift = 0
	case 2:
		shift = 1
	case 4:
		shift = 2
	default:
		return nil, corrupt("footer: length width %d", f.width)
	}
	size := uint64(len(data))
	if f.numDocs > maxDocs || f.numDocs > size {
		return nil, corrupt("footer: %d documents in %d bytes", f.numDocs, size)
	}
	// Every length below is checked against size before it is added, so
	// no sum overflows.
	if f.lensOff != uint64(headerSize) || f.lensLen != f.numDocs<<shift ||
		f.entriesOff != f.lensOff+f.lensLen || f.entryLen > size ||
		f.dictOff != f.entriesOff+f.entryLen || f.dictLen > size ||
		f.dictOff+f.dictLen != uint64(foot) {
		return nil, corrupt("footer: sections (lengths %d+%d, entries %d+%d, dictionary %d+%d) do not tile %d bytes",
			f.lensOff, f.lensLen, f.entriesOff, f.entryLen, f.dictOff, f.dictLen, size)
	}
	// (A version 2 FST can hold many more terms than it has bytes: terms sharing prefixes
	// and suffixes share states. The count is checked against the dictionary's own once it
	// loads.)
	if f.numTerms > 0 && f.numDocs == 0 {
		return nil, corrupt("footer: %d terms and no documents", f.numTerms)
	}
	dict := data[f.dictOff : f.dictOff+f.dictLen]
	if crc32.Checksum(dict, castagnoli) != f.dictCRC {
		return nil, corrupt("dictionary checksum mismatch")
	}
	var fst *vellum.FST
	var bd *blockDict
	var err error
	if f.version == versionFST {
		if fst, err = loadFST(dict); err != nil {
			return nil, err
		}
		if uint64(fst.Len()) != f.numTerms {
			return nil, corrupt("dictionary holds %d terms, footer says %d", fst.Len(), f.numTerms)
		}
	} else if bd, err = loadBlockDict(dict, f.numTerms); err != nil {
		return nil, err
	}
	r := &Reader{
		data:  data,
		n:     f.numDocs,
		fixed: uint64(f.fixedSpan),
		terms: int(f.numTerms),
		// The footer follows the lengths, so the 3 bytes past the last one,
		// which Length reads and masks off, are inside data.
		lens:    data[f.lensOff : f.lensOff+f.lensLen+3],
		lshift:  shift,
		lmask:   uint32(math.MaxUint32 >> (32 - 8*uint(f.width))),
		entries: data[f.entriesOff : f.entriesOff+f.entryLen],
		fst:     fst,
		bd:      bd,
	}
	return r, nil
}

// loadFST loads a vellum FST, reporting a panic as damage.
func loadFST(b []byte) (fst *vellum.FST, err error) {
	defer func() {
		if p := recover(); p != nil {
			fst, err = nil, corrupt("dictionary: %v", p)
		}
	}()
	fst, err = vellum.Load(b)
	if err != nil {
		return nil, corruptWrap(err, "dictionary")
	}
	return fst, nil
}

// Verify checks the checksum of the whole file. Errors wrap ErrCorrupt.
func (r *Reader) Verify() error {
	end := len(r.data) - 4
	if crc32.Checksum(r.data[:end], castagnoli) != binary.LittleEndian.Uint32(r.data[end:]) {
		return corrupt("checksum mismatch")
	}
	return nil
}

// NumDocs returns N, the number of documents.
func (r *Reader) NumDocs() int { return int(r.n) }

// NumTerms returns the number of terms.
func (r *Reader) NumTerms() int { return r.terms }

// Size returns the size of the file in bytes.
func (r *Reader) Size() int { return len(r.data) }

// Length returns the field length of document doc, which must be below
// NumDocs() (the result is unspecified otherwise, and Length may panic).
func (r *Reader) Length(doc uint32) uint32 {
	return binary.LittleEndian.Uint32(r.lens[uint(doc)<<r.lshift:]) & r.lmask
}

// Lengths writes the field lengths of docs to dst[:len(docs)] (dst at least as
// long as docs; every document below NumDocs()). Looking a batch up in one loop lets
// the processor fetch the lengths of several documents at once: the table is
// read at random, and at millions of documents most of those reads miss the
// caches.
func (r *Reader) Lengths(docs, dst []uint32) {
	dst = dst[:len(docs)]
	lens, shift, mask := r.lens, r.lshift, r.lmask
	for i, d := range docs {
		dst[i] = binary.LittleEndian.Uint32(lens[uint(d)<<shift:]) & mask
	}
}

// Pair is a (frequency, length) pair of a chunk's frontier.
type Pair struct{ Freq, Len uint32 }

// chunkInfo locates one chunk of a term.
type chunkInfo struct {
	n        uint32 // postings
	off, len int    // the list in Reader.entries
	fs, fe   int32  // the frontier: Term.pairs[fs:fe]
}

// Term is one term's entry, filled by Reader.Term or TermIterator.Next and
// reusable: its memory is kept for the next term. Once filled, its methods
// only read it: goroutines may share a filled Term as long as none refills it.
type Term struct {
	r      *Reader
	count  uint64
	span   uint64
	chunks []chunkInfo
	pairs  []Pair
	// the entry's extent in Reader.entries; 0, 0 for an inline term
	entryStart, end int

	inline    bool
	doc, freq uint32
	lw        *postings.ListWriter // encodes an inline term's list
	buf       []byte               // an inline term's list

	fr    *vellum.Reader // looks terms up in fst without allocating
	frFST *vellum.FST
	dc    dictCursor // looks terms up in a block dictionary
}

// Count returns the number of postings of the term.
func (t *Term) Count() uint64 { return t.count }

// Bytes returns the memory t holds (for callers that keep Terms in a budget).
func (t *Term) Bytes() int {
	return int(unsafe.Sizeof(*t)) + cap(t.chunks)*int(unsafe.Sizeof(chunkInfo{})) + cap(t.pairs)*8 + cap(t.buf)
}

// Span returns the number of documents a chunk spans.
func (t *Term) Span() uint64 { return t.span }

// Chunks returns the number of chunks.
func (t *Term) Chunks() int { return len(t.chunks) }

// ChunkCount returns the number of postings of chunk c (0 if c is out of
// range).
func (t *Term) ChunkCount(c int) int {
	if uint(c) >= uint(len(t.chunks)) {
		return 0
	}
	return int(t.chunks[c].n)
}

// Front returns chunk c's frontier, frequency and length strictly falling;
// nil for an empty chunk or a c out of range. It is valid until t is
// reused.
func (t *Term) Front(c int) []Pair {
	if uint(c) >= uint(len(t.chunks)) {
		return nil
	}
	ch := t.chunks[c]
	if ch.fs == ch.fe {
		return nil
	}
	return t.pairs[ch.fs:ch.fe:ch.fe]
}

var emptyList = []byte{0}

// Chunk opens chunk c's postings list into l (with List.Reset). An empty
// chunk gives an empty list. It checks that the list holds ChunkCount(c)
// postings, that its last document is below min((c+1)*Span(), N), and
// that its first block's last document leaves room for the block's
// postings above c*Span(). The list refers to the file's bytes, or, for a
// term stored inline, to t's memory (valid until t is reused). Errors for
// damage wrap ErrCorrupt; a c out of range gives ErrChunkRange.
func (t *Term) Chunk(c int, l *postings.List) error {
	if uint(c) >= uint(len(t.chunks)) {
		_ = l.Reset(emptyList)
		return fmt.Errorf("postfile: chunk %d of %d: %w", c, len(t.chunks), ErrChunkRange)
	}
	ch := t.chunks[c]
	if ch.n == 0 {
		return l.Reset(emptyList)
	}
	if t.inline {
		return l.ResetBase(t.buf, 0) // (one chunk, from document 0)
	}
	if err := l.ResetBase(t.r.entries[ch.off:ch.off+ch.len], uint32(uint64(c)*t.span)); err != nil {
		return corruptWrap(err, "chunk %d", c)
	}
	if l.Len() != int(ch.n) {
		n := l.Len()
		_ = l.Reset(emptyList)
		return corrupt("chunk %d: list holds %d postings, entry says %d", c, n, ch.n)
	}
	lo := uint64(c) * t.span
	hi := min(lo+t.span, t.r.n)
	last := uint64(l.LastDoc(l.Blocks() - 1))
	first := uint64(l.LastDoc(0))
	if last >= hi || first < lo+uint64(l.BlockLen(0)-1) {
		_ = l.Reset(emptyList)
		return corrupt("chunk %d: documents up to %d (first block to %d) outside [%d, %d)", c, last, first, lo, hi)
	}
	return nil
}

// Term looks term up and fills t with its entry. It returns false if the
// term is absent (t is then undefined). It allocates nothing once t has
// held a term of as many chunks and frontier pairs.
func (r *Reader) Term(term []byte, t *Term) (bool, error) {
	if r.bd != nil {
		v, ok, err := r.bd.get(&t.dc, term)
		if err != nil || !ok {
			return false, err
		}
		return true, r.load(v, t)
	}
	if t.frFST != r.fst {
		fr, err := r.fst.Reader()
		if err != nil {
			return false, corruptWrap(err, "dictionary")
		}
		t.fr, t.frFST = fr, r.fst
	}
	v, ok, err := fstGet(t.fr, term)
	if err != nil || !ok {
		return false, err
	}
	return true, r.load(v, t)
}

// fstGet looks a key up, reporting a panic as damage.
func fstGet(fr *vellum.Reader, key []byte) (v uint64, ok bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, ok, err = 0, false, corrupt("dictionary: %v", p)
		}
	}()
	v, ok, err = fr.Get(key)
	if err != nil {
		return 0, false, corruptWrap(err, "dictionary")
	}
	return v, ok, nil
}

// load fills t from the dictionary value v.
func (r *Reader) load(v uint64, t *Term) error {
	t.r = r
	t.chunks, t.pairs = t.chunks[:0], t.pairs[:0]
	t.buf = t.buf[:0]
	t.entryStart, t.end = 0, 0
	t.inline = v&1 == 1
	if t.inline {
		t.doc, t.freq = uint32(v>>1), uint32(v>>33)+1
		if uint64(t.doc) >= r.n {
			t.count = 0
			return corrupt("inline term: doc %d >= N = %d", t.doc, r.n)
		}
		t.count, t.span = 1, r.n
		t.pairs = append(t.pairs, Pair{t.freq, r.Length(t.doc)})
		t.chunks = append(t.chunks, chunkInfo{n: 1, fs: 0, fe: 1})
		// The posting's list, encoded now so that Chunk only reads t.
		if t.lw == nil {
			t.lw = new(postings.ListWriter)
		}
		if err := t.lw.Add(t.doc, t.freq); err != nil {
			t.count = 0
			return corruptWrap(err, "inline posting")
		}
		t.buf = t.lw.Finish(t.buf[:0])
		return nil
	}
	err := r.parseEntry(v>>1, t)
	if err != nil {
		t.count, t.chunks, t.pairs = 0, t.chunks[:0], t.pairs[:0]
	}
	return err
}

// parseEntry reads the entry at offset off into t.
func (r *Reader) parseEntry(off uint64, t *Term) error {
	b := r.entries
	if off >= uint64(len(b)) {
		return corrupt("entry offset %d outside %d bytes", off, len(b))
	}
	pos := int(off)
	uv := func() (uint64, bool) {
		v, k := binary.Uvarint(b[pos:])
		if k <= 0 {
			return 0, false
		}
		pos += k
		return v, true
	}
	count, ok := uv()
	if !ok || count == 0 || count > r.n {
		return corrupt("entry at %d: count %d (N = %d)", off, count, r.n)
	}
	sp, chunks := span(r.n, count, r.fixed)
	// Every chunk header but the last takes at least one byte.
	if chunks-1 > len(b)-pos {
		return corrupt("entry at %d: %d chunks in %d bytes", off, chunks, len(b)-pos)
	}
	t.count, t.span = count, sp
	if cap(t.chunks) < chunks {
		t.chunks = make([]chunkInfo, 0, chunks)
	}
	var sum uint64 // postings of the chunks so far
	var lists uint64
	for c := range chunks {
		var n uint64
		if c < chunks-1 {
			if n, ok = uv(); !ok || n > count-sum {
				return corrupt("entry at %d: chunk %d: bad count", off, c)
			}
		} else {
			n = count - sum
		}
		sum += n
		width := min(sp, r.n-uint64(c)*sp) // documents the chunk spans
		if n > width {
			return corrupt("entry at %d: chunk %d: %d postings in %d documents", off, c, n, width)
		}
		ch := chunkInfo{n: uint32(n), fs: int32(len(t.pairs)), fe: int32(len(t.pairs))}
		if n > 0 {
			ln, ok := uv()
			if !ok || ln == 0 || ln > uint64(len(b)) {
				return corrupt("entry at %d: chunk %d: bad list length", off, c)
			}
			ch.off, ch.len = int(lists), int(ln) // relative until the header ends
			lists += ln
			if err := r.parseFront(b, &pos, n, t); err != nil {
				return fmt.Errorf("entry at %d: chunk %d: %w", off, c, err)
			}
			ch.fe = int32(len(t.pairs))
		}
		t.chunks = append(t.chunks, ch)
	}
	if lists > uint64(len(b)-pos) {
		return corrupt("entry at %d: lists of %d bytes, %d left", off, lists, len(b)-pos)
	}
	for k := range t.chunks {
		t.chunks[k].off += pos
	}
	t.entryStart, t.end = int(off), pos+int(lists)
	return nil
}

// parseFront reads a frontier of at most n pairs at b[*pos:] and appends
// it to t.pairs.
func (r *Reader) parseFront(b []byte, pos *int, n uint64, t *Term) error {
	var f, l uint64
	for i := uint64(0); ; i++ {
		if i == n {
			return corrupt("frontier: more than %d pairs", n)
		}
		a, k1 := binary.Uvarint(b[*pos:])
		if k1 <= 0 {
			return corrupt("frontier: bad varint")
		}
		*pos += k1
		d, k2 := binary.Uvarint(b[*pos:])
		if k2 <= 0 {
			return corrupt("frontier: bad varint")
		}
		*pos += k2
		df := a >> 1
		if i == 0 {
			if df == 0 || df > math.MaxUint32 || d > math.MaxUint32 {
				return corrupt("frontier: first pair (%d, %d)", df, d)
			}
			f, l = df, d
		} else {
			if df >= f-1 || d >= l {
				return corrupt("frontier: pair %d does not fall", i)
			}
			f, l = f-df-1, l-d-1
		}
		// Each pair took at least 2 bytes: t.pairs grows with the input.
		t.pairs = append(t.pairs, Pair{uint32(f), uint32(l)})
		if a&1 == 0 {
			return nil
		}
	}
}

// TermIterator walks the terms of a range in order. Make one with
// Reader.Iterator.
type TermIterator struct {
	r          *Reader
	start, end []byte
	aut        vellum.Automaton // nil: every term
	itr        *vellum.FSTIterator
	started    bool
	done       bool
	err        error
	key        []byte
	val        uint64
	// a block dictionary's reading
	dc     dictCursor
	last   []byte // the last term read (accepted or not)
	read   bool   // a term was read (last holds it)
	states []int  // the automaton's state after each byte of last, as far as it ran
}

// Iterator returns an iterator over the terms in [start, end), in
// ascending order; a nil start or end leaves that side unbounded.
func (r *Reader) Iterator(start, end []byte) *TermIterator {
	return &TermIterator{r: r, start: start, end: end}
}

// Next moves to the next term and returns it (valid until the next call)
// and, if t is not nil, fills t with its entry. It returns ok false at the
// end of the range or on error; errors wrap ErrCorrupt.
func (it *TermIterator) Next(t *Term) (term []byte, ok bool, err error) {
	if !it.next() {
		return nil, false, it.err
	}
	if t != nil {
		if err := it.r.load(it.val, t); err != nil {
			it.done, it.err = true, fmt.Errorf("term %q: %w", it.key, err)
			return nil, false, it.err
		}
	}
	return it.key, true, nil
}

// next advances to the next key and value, in it.key and it.val.
func (it *TermIterator) next() (ok bool) {
	if it.done {
		return false
	}
	defer func() {
		if p := recover(); p != nil {
			it.done, it.err, ok = true, corrupt("dictionary: %v", p), false
		}
	}()
	if it.r.bd != nil {
		return it.nextBlock()
	}
	var err error
	if !it.started {
		it.started = true
		if it.aut != nil {
			it.itr, err = it.r.fst.Search(it.aut, it.start, it.end)
		} else {
			it.itr, err = it.r.fst.Iterator(it.start, it.end)
		}
	} else {
		err = it.itr.Next()
	}
	if err != nil {
		it.done = true
		if !errors.Is(err, vellum.ErrIteratorDone) {
			it.err = corruptWrap(err, "dictionary")
		}
		return false
	}
	k, v := it.itr.Current()
	it.key = append(it.key[:0], k...)
	it.val = v
	return true
}

// nextBlock is next for a block dictionary: it reads terms in order,
// checking that they ascend, until one is in range and accepted.
func (it *TermIterator) nextBlock() bool {
	for {
		var ok bool
		var err error
		if !it.started {
			it.started = true
			if ok, err = it.r.bd.seek(&it.dc, it.start); err == nil && !ok {
				ok, err = it.dc.next()
			}
		} else {
			ok, err = it.dc.next()
		}
		if err != nil || !ok {
			it.done, it.err = true, err
			return false
		}
		k := it.dc.key
		if it.read && bytes.Compare(k, it.last) <= 0 {
			it.done, it.err = true, corrupt("dictionary: term %q after %q", k, it.last)
			return false
		}
		if it.end != nil && bytes.Compare(k, it.end) >= 0 {
			it.done = true
			return false
		}
		accepted := it.aut == nil || it.accepts(k)
		it.last, it.read = append(it.last[:0], k...), true
		if accepted {
			it.key = append(it.key[:0], k...)
			it.val = it.dc.val
			return true
		}
	}
}

// accepts runs the automaton over key, from the state it reached on the
// bytes key shares with the last term read.
func (it *TermIterator) accepts(key []byte) bool {
	if it.states == nil {
		it.states = append(it.states, it.aut.Start())
	}
	p := min(commonPrefix(it.last, key), len(it.states)-1)
	it.states = it.states[:p+1]
	s := it.states[p]
	for _, b := range key[p:] {
		if !it.aut.CanMatch(s) {
			return false
		}
		s = it.aut.Accept(s, b)
		it.states = append(it.states, s)
	}
	return it.aut.IsMatch(s)
}

// Check checks the whole file: Verify, then every term's entry, every
// chunk's list and every block, each chunk's frontier against its
// postings and the documents' lengths, that the entries lie back to back
// and fill their section, and the number of terms. It is linear in the
// file's size, and slower than Verify: it decodes every posting. Errors
// wrap ErrCorrupt.
func (r *Reader) Check() error {
	if err := r.Verify(); err != nil {
		return err
	}
	return r.checkStructure()
}

// checkStructure is Check without the checksum.
func (r *Reader) checkStructure() error {
	var (
		t           Term
		l           postings.List
		fr          frontier
		docs, freqs [postings.BlockSize]uint32
		cf, cl      []uint32
		terms       int
		next        int // where the next entry must start
	)
	it := r.Iterator(nil, nil)
	for {
		term, ok, err := it.Next(&t)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		terms++
		if err := r.checkTerm(&t, &next, &l, &fr, docs[:], freqs[:], &cf, &cl); err != nil {
			return fmt.Errorf("term %q: %w", term, err)
		}
	}
	if terms != r.terms {
		return corrupt("%d terms, footer says %d", terms, r.terms)
	}
	if next != len(r.entries) {
		return corrupt("entries end at %d, section holds %d bytes", next, len(r.entries))
	}
	return nil
}

// checkTerm decodes every chunk of t and checks it; next is where t's
// entry must start (for an entry), advanced to its end.
func (r *Reader) checkTerm(t *Term, next *int, l *postings.List, fr *frontier,
	docs, freqs []uint32, cf, cl *[]uint32) error {
	if !t.inline {
		start := t.entryStart
		if start != *next {
			return corrupt("entry at %d, previous entry ends at %d", start, *next)
		}
		*next = t.end
	}
	var total uint64
	for c := range t.Chunks() {
		if err := t.Chunk(c, l); err != nil {
			return err
		}
		lo := uint64(c) * t.span
		*cf, *cl = (*cf)[:0], (*cl)[:0]
		for b := range l.Blocks() {
			n, err := l.DecodeBlock(b, docs, freqs)
			if err != nil {
				return corruptWrap(err, "chunk %d", c)
			}
			if b == 0 && uint64(docs[0]) < lo {
				return corrupt("chunk %d: first document %d below %d", c, docs[0], lo)
			}
			for k := range n {
				*cf = append(*cf, freqs[k])
				*cl = append(*cl, r.Length(docs[k]))
			}
		}
		total += uint64(len(*cf))
		want := t.Front(c)
		if len(*cf) == 0 {
			if want != nil {
				return corrupt("chunk %d: empty, with a frontier", c)
			}
			continue
		}
		got := fr.compute(*cf, *cl)
		if !slices.Equal(got, want) {
			return corrupt("chunk %d: frontier %v, postings give %v", c, want, got)
		}
	}
	if total != t.count {
		return corrupt("chunks hold %d postings, count %d", total, t.count)
	}
	return nil
}
