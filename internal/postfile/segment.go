package postfile

import (
	"encoding/binary"
	"math"
	"reflect"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/agentmem/memory/internal/postings"
	index "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

var (
	_ segment.TermDictionary     = (*dictionary)(nil)
	_ segment.DictionaryIterator = (*dictIterator)(nil)
	_ segment.PostingsList       = (*postingsList)(nil)
	_ segment.PostingsIterator   = (*postingsIterator)(nil)
	_ segment.Posting            = (*posting)(nil)
)

var (
	sizePostingsList     = int(reflect.TypeFor[postingsList]().Size())
	sizePostingsIterator = int(reflect.TypeFor[postingsIterator]().Size())
	sizePosting          = int(reflect.TypeFor[posting]().Size())
)

// Dictionary returns the file's terms as Bleve's segment.TermDictionary.
// Its postings lists skip the documents of their except bitmap; their
// postings carry the frequency and, as zap v16's do, the document's
// length as the norm (Norm is 1/sqrt(length) rounded to float32,
// NormUint64 the length) and no locations. Errors for damage wrap
// ErrCorrupt. Disk statistics are not kept: BytesRead and BytesWritten
// return 0.
func (r *Reader) Dictionary() segment.TermDictionary { return &dictionary{r: r} }

// dictionary is a Reader as a segment.TermDictionary.
type dictionary struct{ r *Reader }

// PostingsList returns the postings of term, less the documents in except
// (nil for none), reusing prealloc if it is one of this package's. An
// absent term gives an empty list.
func (d *dictionary) PostingsList(term []byte, except *roaring.Bitmap,
	prealloc segment.PostingsList) (segment.PostingsList, error) {
	pl, _ := prealloc.(*postingsList)
	if pl == nil {
		pl = &postingsList{}
	}
	pl.r, pl.except, pl.found = d.r, except, false
	found, err := d.r.Term(term, &pl.t)
	if err != nil {
		return nil, err
	}
	pl.found = found
	return pl, nil
}

// AutomatonIterator returns the terms in [startKeyInclusive,
// endKeyExclusive) (nil: unbounded) that a accepts, in order.
func (d *dictionary) AutomatonIterator(a segment.Automaton,
	startKeyInclusive, endKeyExclusive []byte) segment.DictionaryIterator {
	it := d.r.Iterator(startKeyInclusive, endKeyExclusive)
	it.aut = a
	return &dictIterator{it: it}
}

// Contains reports whether key is a term.
func (d *dictionary) Contains(key []byte) (bool, error) {
	if d.r.bd != nil {
		var c dictCursor
		_, ok, err := d.r.bd.get(&c, key)
		return ok, err
	}
	fr, err := d.r.fst.Reader()
	if err != nil {
		return false, corruptWrap(err, "dictionary")
	}
	_, ok, err := fstGet(fr, key)
	return ok, err
}

// Cardinality returns the number of terms.
func (d *dictionary) Cardinality() int { return d.r.terms }

// dictIterator is a TermIterator as a segment.DictionaryIterator.
type dictIterator struct {
	it    *TermIterator
	entry index.DictEntry
}

// Next returns the next term and its number of postings (ignoring any
// deletions), or nil, nil at the end.
func (d *dictIterator) Next() (*index.DictEntry, error) {
	if !d.it.next() {
		return nil, d.it.err
	}
	count, err := d.it.r.termCount(d.it.val)
	if err != nil {
		d.it.done, d.it.err = true, err
		return nil, err
	}
	d.entry = index.DictEntry{Term: string(d.it.key), Count: count}
	return &d.entry, nil
}

// termCount returns the number of postings of the term of dictionary
// value v, reading only the entry's first varint.
func (r *Reader) termCount(v uint64) (uint64, error) {
	if v&1 == 1 {
		return 1, nil
	}
	off := v >> 1
	if off >= uint64(len(r.entries)) {
		return 0, corrupt("entry offset %d outside %d bytes", off, len(r.entries))
	}
	count, k := binary.Uvarint(r.entries[off:])
	if k <= 0 || count == 0 || count > r.n {
		return 0, corrupt("entry at %d: bad count", off)
	}
	return count, nil
}

// postingsList is a term's postings as a segment.PostingsList.
type postingsList struct {
	r      *Reader
	t      Term
	found  bool
	except *roaring.Bitmap
	count  *postingsIterator // Count's iterator, reused
}

// Iterator returns an iterator over the postings, reusing prealloc if it
// is one of this package's. Frequencies and norms are always filled in;
// there are no locations.
func (p *postingsList) Iterator(includeFreq, includeNorm, includeLocations bool,
	prealloc segment.PostingsIterator) segment.PostingsIterator {
	it, _ := prealloc.(*postingsIterator)
	if it == nil {
		it = &postingsIterator{}
	}
	it.reset(p, p.except)
	return it
}

// Size returns an estimate of the memory the list takes.
func (p *postingsList) Size() int {
	return sizePostingsList + cap(p.t.chunks)*int(reflect.TypeFor[chunkInfo]().Size()) +
		cap(p.t.pairs)*8 + cap(p.t.buf)
}

// Count returns the number of postings not in except. With an except
// bitmap it decodes postings (or, for an except much smaller than the
// list, looks its documents up); damage met there is not reported here
// but by the list's iterators.
func (p *postingsList) Count() uint64 {
	if !p.found {
		return 0
	}
	n := p.t.count
	if p.except == nil || p.except.IsEmpty() {
		return n
	}
	if p.count == nil {
		p.count = &postingsIterator{}
	}
	it := p.count
	it.reset(p, nil)
	var in uint64 // postings in except
	if p.except.GetCardinality() < n/16 {
		ei := p.except.Iterator()
		for ei.HasNext() {
			e := uint64(ei.Next())
			if !it.seek(e) {
				break
			}
			if it.pos < it.n && uint64(it.docs[it.pos]) == e {
				in++
			}
		}
	} else {
		for {
			d, _, ok, err := it.nextRaw()
			if !ok || err != nil {
				break
			}
			if p.except.Contains(d) {
				in++
			}
		}
	}
	return n - min(in, n)
}

// BytesRead returns 0: disk statistics are not kept.
func (p *postingsList) BytesRead() uint64 { return 0 }

// ResetBytesRead does nothing: disk statistics are not kept.
func (p *postingsList) ResetBytesRead(uint64) {}

// BytesWritten returns 0: disk statistics are not kept.
func (p *postingsList) BytesWritten() uint64 { return 0 }

// postingsIterator walks a term's postings chunk by chunk, block by block.
type postingsIterator struct {
	r      *Reader
	t      *Term // nil for an absent term
	except *roaring.Bitmap
	c      int // current chunk, -1 before the first
	l      postings.List
	b      int // current block of l, -1 before the first
	pos, n int // the next posting in docs, freqs and their number
	done   bool
	err    error
	docs   [postings.BlockSize]uint32
	freqs  [postings.BlockSize]uint32
	p      posting
}

func (it *postingsIterator) reset(p *postingsList, except *roaring.Bitmap) {
	it.r, it.t, it.except = p.r, &p.t, except
	if !p.found {
		it.t = nil
	}
	it.c, it.b, it.pos, it.n = -1, -1, 0, 0
	it.done, it.err = it.t == nil, nil
	_ = it.l.Reset(emptyList)
}

// openChunk moves to the start of chunk c.
func (it *postingsIterator) openChunk(c int) error {
	it.c, it.b, it.pos, it.n = c, -1, 0, 0
	if err := it.t.Chunk(c, &it.l); err != nil {
		return it.fail(err)
	}
	return nil
}

// decode decodes block b of the current chunk.
func (it *postingsIterator) decode(b int) error {
	n, err := it.l.DecodeBlock(b, it.docs[:], it.freqs[:])
	if err != nil {
		return it.fail(corruptWrap(err, "chunk %d", it.c))
	}
	if lo := uint64(it.c) * it.t.span; b == 0 && uint64(it.docs[0]) < lo {
		return it.fail(corrupt("chunk %d: first document %d below %d", it.c, it.docs[0], lo))
	}
	it.b, it.pos, it.n = b, 0, n
	return nil
}

func (it *postingsIterator) fail(err error) error {
	it.done, it.err, it.pos, it.n = true, err, 0, 0
	return err
}

// nextRaw returns the next posting, deleted or not; ok false at the end or
// on error.
func (it *postingsIterator) nextRaw() (doc, freq uint32, ok bool, err error) {
	for it.pos >= it.n {
		if it.done {
			return 0, 0, false, it.err
		}
		if it.b+1 < it.l.Blocks() {
			if err := it.decode(it.b + 1); err != nil {
				return 0, 0, false, err
			}
			continue
		}
		if it.c+1 >= it.t.Chunks() {
			it.done = true
			return 0, 0, false, nil
		}
		if err := it.openChunk(it.c + 1); err != nil {
			return 0, 0, false, err
		}
	}
	k := it.pos
	it.pos++
	return it.docs[k], it.freqs[k], true, nil
}

// Next returns the next posting not in except, or nil, nil at the end. The
// posting is the iterator's own, valid until the next call.
func (it *postingsIterator) Next() (segment.Posting, error) {
	for {
		d, f, ok, err := it.nextRaw()
		if !ok {
			return nil, err
		}
		if it.except != nil && it.except.Contains(d) {
			continue
		}
		it.p = posting{doc: uint64(d), freq: uint64(f), length: it.r.Length(d)}
		return &it.p, nil
	}
}

// Advance returns the posting of document docNum, if there is one and it
// is not in except, or else the next posting, like Next. docNum must be
// above the document of the posting returned last.
func (it *postingsIterator) Advance(docNum uint64) (segment.Posting, error) {
	if !it.seek(docNum) {
		return nil, it.err
	}
	return it.Next()
}

// seek positions the iterator so that the next raw posting is the first
// one at or after target (of those not yet returned). It returns false if
// there is none or on error.
func (it *postingsIterator) seek(target uint64) bool {
	if it.done {
		return it.pos < it.n
	}
	if target >= it.r.n {
		it.done, it.pos, it.n = true, 0, 0
		return false
	}
	cc := int(target / it.t.span) // <= Chunks()-1, as target < N
	if cc > it.c {
		if it.openChunk(cc) != nil {
			return false
		}
	}
	if cc < it.c {
		return true // every posting left is in a later chunk
	}
	if it.pos < it.n && uint64(it.docs[it.n-1]) >= target {
		for uint64(it.docs[it.pos]) < target {
			it.pos++
		}
		return true
	}
	nb := it.l.Seek(uint32(target))
	if nb <= it.b {
		return true // the contract was broken: the current block holds target
	}
	if nb >= it.l.Blocks() {
		it.b, it.pos, it.n = it.l.Blocks()-1, 0, 0 // on to the next chunk
		return true
	}
	if it.decode(nb) != nil {
		return false
	}
	for it.pos < it.n && uint64(it.docs[it.pos]) < target {
		it.pos++
	}
	return true
}

// Size returns an estimate of the memory the iterator takes.
func (it *postingsIterator) Size() int { return sizePostingsIterator }

// BytesRead returns 0: disk statistics are not kept.
func (it *postingsIterator) BytesRead() uint64 { return 0 }

// ResetBytesRead does nothing: disk statistics are not kept.
func (it *postingsIterator) ResetBytesRead(uint64) {}

// BytesWritten returns 0: disk statistics are not kept.
func (it *postingsIterator) BytesWritten() uint64 { return 0 }

// posting is one posting as a segment.Posting.
type posting struct {
	doc, freq uint64
	length    uint32
}

// Number returns the document number.
func (p *posting) Number() uint64 { return p.doc }

// Frequency returns the term's frequency in the document.
func (p *posting) Frequency() uint64 { return p.freq }

// Norm returns 1/sqrt(length) rounded to float32, as zap v16 does.
func (p *posting) Norm() float64 {
	return float64(float32(1.0 / math.Sqrt(float64(p.length))))
}

// NormUint64 returns the document's field length.
func (p *posting) NormUint64() uint64 { return uint64(p.length) }

// Locations returns nil: there are no locations.
func (p *posting) Locations() []segment.Location { return nil }

// Size returns the memory the posting takes.
func (p *posting) Size() int { return sizePosting }
