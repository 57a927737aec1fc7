package bm25

import (
	"encoding/binary"
	"math"
	"math/bits"
	"reflect"
	"unsafe"

	"github.com/RoaringBitmap/roaring/v2"
	segment "github.com/blevesearch/scorch_segment_api/v2"
	zap "github.com/blevesearch/zapx/v16"
)

// This file reads one block of a posting list straight from a zap v16 segment's bytes,
// without zap's postings iterator. A block is one zap chunk (termBlocks.cs documents of
// the segment): its documents are the list's roaring bitmap between the chunk's bounds, and
// its frequencies and lengths are the chunk's run of the list's freq/norm stream, for each
// of those documents in order a uvarint freq<<1|hasLocations and, when freq > 0, a uvarint
// of the norm's float32 bits (the field length, the way this package indexes it). zap's
// iterator costs about 40 ns a posting (an interface call, a chunk check and two reader
// calls each); at 21M passages a query reads millions of postings and that was 80 % of its
// time. zap does not export where the stream lies, so the offsets of the few fields read
// are found by reflection once and checked by type; when any is missing (another zap) or a
// list is not the plain kind (one-hit lists encoded in the dictionary, lists with an
// exception bitmap, no freq/norm stream), zap's iterator is used as before. Every offset
// read from the segment is bounds-checked: damage is errBlockMeta, never a fault, and the
// caller recomputes the term's metadata (TestZapBlocksDirect holds both readers equal).

// zapFields are the byte offsets of the unexported fields read here (ok false: not found).
var zapFields = func() (f struct {
	ok                                                                  bool
	sb, postingsOffset, freqOffset, postings, except, normBits1Hit, mem uintptr
}) {
	pl := reflect.TypeOf(zap.PostingsList{})
	bm := reflect.TypeOf((*roaring.Bitmap)(nil))
	field := func(t reflect.Type, name string, want reflect.Type) (uintptr, bool) {
		sf, ok := t.FieldByName(name)
		return sf.Offset, ok && len(sf.Index) == 1 && sf.Type == want
	}
	var oks [7]bool
	f.sb, oks[0] = field(pl, "sb", reflect.TypeOf((*zap.SegmentBase)(nil)))
	f.postingsOffset, oks[6] = field(pl, "postingsOffset", reflect.TypeOf(uint64(0)))
	f.freqOffset, oks[1] = field(pl, "freqOffset", reflect.TypeOf(uint64(0)))
	f.postings, oks[2] = field(pl, "postings", bm)
	f.except, oks[3] = field(pl, "except", bm)
	f.normBits1Hit, oks[4] = field(pl, "normBits1Hit", reflect.TypeOf(uint64(0)))
	f.mem, oks[5] = field(reflect.TypeOf(zap.SegmentBase{}), "mem", reflect.TypeOf([]byte(nil)))
	f.ok = oks == [7]bool{true, true, true, true, true, true, true}
	return f
}()

// zapList is what a direct block read needs of one posting list.
type zapList struct {
	mem    []byte          // the segment's bytes
	data   uint64          // where the first chunk's freq/norm bytes start in mem
	ends   []uint64        // each chunk's end, from data
	bm     *roaring.Bitmap // the list's documents
	docs   roaringView     // bm's serialized bytes, read directly (when docsOK)
	docsOK bool            // docs parsed: blocks take their documents from it
}

// zapListOf returns pl's freq/norm chunk table and bitmap, ok false when pl is not a plain
// zap v16 list (see above) or its chunk table does not lie inside the segment.
func zapListOf(pl segment.PostingsList, into *zapList) bool {
	zp, ok := pl.(*zap.PostingsList)
	if !ok || zp == nil || !zapFields.ok {
		return false
	}
	base := unsafe.Pointer(zp)
	sb := *(**zap.SegmentBase)(unsafe.Add(base, zapFields.sb))
	off := *(*uint64)(unsafe.Add(base, zapFields.freqOffset))
	bm := *(**roaring.Bitmap)(unsafe.Add(base, zapFields.postings))
	if sb == nil || bm == nil || off == 0 || // 0: no freq/norm stream (zap's termNotEncoded)
		*(**roaring.Bitmap)(unsafe.Add(base, zapFields.except)) != nil ||
		*(*uint64)(unsafe.Add(base, zapFields.normBits1Hit)) != 0 {
		return false
	}
	mem := *(*[]byte)(unsafe.Add(unsafe.Pointer(sb), zapFields.mem))
	if off >= uint64(len(mem)) {
		return false
	}
	p := mem[off:]
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)) { // each end takes a byte at least
		return false
	}
	p = p[k:]
	ends := into.ends[:0]
	last := uint64(0)
	for range n {
		e, k := binary.Uvarint(p)
		if k <= 0 || e < last {
			return false
		}
		ends = append(ends, e)
		last, p = e, p[k:]
	}
	data := uint64(len(mem) - len(p))
	if last > uint64(len(mem))-data {
		return false
	}
	*into = zapList{mem: mem, data: data, ends: ends, bm: bm, docs: into.docs}
	into.docsOK = into.docs.parse(bitmapBytes(mem, *(*uint64)(unsafe.Add(base, zapFields.postingsOffset))))
	return true
}

// chunk returns the freq/norm bytes of chunk c (ok false: no such chunk).
func (z *zapList) chunk(c uint64) ([]byte, bool) {
	if c >= uint64(len(z.ends)) {
		return nil, false
	}
	start := uint64(0)
	if c > 0 {
		start = z.ends[c-1]
	}
	return z.mem[z.data+start : z.data+z.ends[c]], true
}

// bitmapBytes returns the serialized roaring bitmap of the list at postingsOffset in mem
// (three uvarints, freq/norm and location offsets and the bitmap's length, then the
// bitmap), nil when they do not lie inside mem.
func bitmapBytes(mem []byte, off uint64) []byte {
	if off >= uint64(len(mem)) {
		return nil
	}
	p := mem[off:]
	var n uint64
	for range 3 {
		x, k := binary.Uvarint(p)
		if k <= 0 {
			return nil
		}
		n, p = x, p[k:]
	}
	if n > uint64(len(p)) {
		return nil
	}
	return p[:n]
}

// decodeDirect reads block i of tb from z, with it (an iterator over z.bm, standing at or
// before the block's first document) moved past the block. It checks what decode checks:
// the block's count, its documents inside its span, every posting covered by its frontier,
// and, besides, that the chunk's bytes hold exactly its postings.
//
// A block whose frontier bounds its frequencies under narrowFreqs is decoded narrow first
// (frequency and length in 16 bits: 6 bytes a posting in the cache, not 8; the memory a
// first-seen query fills with decoded blocks is most of what it costs); a length of
// narrowLen or more then has the block decoded again in full.
func decodeDirect(z *zapList, it roaring.IntPeekable, tb *termBlocks, i int) (*postBlock, error) {
	if front := tb.blockFront(i); z.docsOK && len(front) > 0 && front[0].f < narrowFreqs {
		blk, long, err := decodeBlock(z, it, tb, i, true)
		if !long {
			return blk, err
		}
	}
	blk, _, err := decodeBlock(z, it, tb, i, false)
	return blk, err
}

// decodeBlock is decodeDirect into a narrow block or a full one; long reports a narrow
// decode given up for a posting that does not fit (the block is dropped: nil, nil).
func decodeBlock(z *zapList, it roaring.IntPeekable, tb *termBlocks, i int, narrow bool) (_ *postBlock, long bool, err error) {
	lo, hi := tb.span(i)
	if tb.cs == 0 || lo > math.MaxUint32 {
		return nil, false, errBlockMeta
	}
	buf, ok := z.chunk(lo / tb.cs)
	if !ok {
		return nil, false, errBlockMeta
	}
	n := int(tb.count[i])
	var blk *postBlock
	if narrow {
		blk = newNarrowBlock(n, hi-lo <= 1<<16)
	} else {
		blk = newBlock(n, true)
	}
	defer func() {
		if err != nil || long {
			dropBlock(blk)
		}
	}()
	// The block's documents: from the bitmap's bytes, else through roaring's iterator.
	if blk.d16 != nil {
		if m, ok := z.docs.fillRange16(blk.d16, lo, hi); !ok || m != n {
			return nil, false, errBlockMeta
		}
		blk.base = uint32(lo)
	} else if z.docsOK {
		if m, ok := z.docs.fillRange(blk.docs[:n], lo, hi); !ok || m != n {
			return nil, false, errBlockMeta
		}
	} else {
		it.AdvanceIfNeeded(uint32(lo))
		for j := range n {
			if !it.HasNext() {
				return nil, false, errBlockMeta
			}
			doc := it.Next()
			if uint64(doc) >= hi {
				return nil, false, errBlockMeta
			}
			blk.docs[j] = doc
		}
	}
	front := tb.blockFront(i)
	if !frontOrdered(front) {
		return nil, false, errBlockMeta
	}
	minDL := smallFront(front)
	if n > 0 && blk.doc(n-1) == math.MaxUint32 { // (the documents rise; noDoc is none of them)
		return nil, false, errBlockMeta
	}
	// bad is set by a posting of a small frequency the frontier does not cover.
	var j, p int
	var bad uint32
	if narrow {
		var lens uint64
		j, p, bad, lens = fastPostings(buf, blk.narrow[:n], &minDL, narrowShift)
		if lens >= narrowLen {
			return nil, true, nil
		}
	} else {
		j, p, bad, _ = fastPostings(buf, blk.packed[:n], &minDL, 16)
	}
	for ; j < n; j++ {
		f, dl, k := postingAt(buf, p)
		if k <= 0 {
			return nil, false, errBlockMeta
		}
		p += k
		if f < smallFreqs {
			bad |= b2u(uint32(dl) < minDL[f])
		} else if !dominatedOrdered(front, uint32(f), uint32(dl)) {
			return nil, false, errBlockMeta
		}
		if narrow {
			if f >= narrowFreqs || dl >= narrowLen {
				return nil, true, nil
			}
			blk.narrow[j] = uint16(f<<narrowShift | dl)
			continue
		}
		if blk.wide == nil && (f >= 1<<16 || dl >= 1<<16) {
			blk.wide = make([]fl, n)
			for q, v := range blk.packed[:j] {
				blk.wide[q] = fl{f: v >> 16, dl: v & 0xffff}
			}
			blk.packed = nil
		}
		if blk.wide != nil {
			blk.wide[j] = fl{f: uint32(f), dl: uint32(dl)}
		} else {
			blk.packed[j] = uint32(f)<<16 | uint32(dl)
		}
	}
	if p != len(buf) || bad != 0 {
		return nil, false, errBlockMeta // the chunk holds postings the metadata does not count or cover
	}
	blk.finish()
	return blk, false, nil
}

// fastPostings decodes into dst, as f<<shift | dl, the postings at the start of buf of
// the common shape: a one-byte frequency (f < 64, no locations bit beyond it) and a
// length of one or two bytes. It reads eight bytes at once and takes two postings from
// them without a call or a branch on their lengths (the second's place depends on the
// first's length only through a shift, not a load: the loop's chain of dependent loads
// is half as long), then four bytes for a last one. It stops at the first posting of
// another shape (the caller reads the rest, whatever their shape) and returns the
// postings read (j), their bytes (p), bad set when one of them is not covered by the
// frontier minDL tabulates (smallFront), and lens, the OR of their lengths (a narrow
// caller's test that every one fits).
func fastPostings[T uint16 | uint32](buf []byte, dst []T, minDL *[smallFreqs]uint32, shift uint) (j, p int, bad uint32, lens uint64) {
	// (Written for the compiler: no bounds checks, no branch but the loops' and the
	// shape test, dl < minDL[f] as the sign of a 64-bit difference.)
	for ; j+2 <= len(dst) && p+8 <= len(buf); j += 2 {
		w := binary.LittleEndian.Uint64(buf[p : p+8])
		a0, a1, a2 := w&0xff, w>>8&0xff, w>>16&0xff
		twoA := a1 >> 7 // the first length takes two bytes
		sa := 2 + twoA  // the first posting's bytes
		v := w >> (8 * sa)
		b0, b1, b2 := v&0xff, v>>8&0xff, v>>16&0xff
		twoB := b1 >> 7
		if a0 >= 0x80 || a0 < 2 || a2&(twoA<<7) != 0 || b0 >= 0x80 || b0 < 2 || b2&(twoB<<7) != 0 {
			break
		}
		fa, dla := a0>>1&(smallFreqs-1), a1&0x7f|(a2&0x7f)<<7&-twoA
		fb, dlb := b0>>1&(smallFreqs-1), b1&0x7f|(b2&0x7f)<<7&-twoB
		bad |= uint32((dla-uint64(minDL[fa]))>>63) | uint32((dlb-uint64(minDL[fb]))>>63)
		lens |= dla | dlb
		dst[j] = T(fa<<shift | dla)
		dst[j+1] = T(fb<<shift | dlb)
		p += int(sa + 2 + twoB)
	}
	for ; j < len(dst) && p+4 <= len(buf); j++ {
		w := uint64(binary.LittleEndian.Uint32(buf[p : p+4]))
		b0, b1, b2 := w&0xff, w>>8&0xff, w>>16&0xff
		two := b1 >> 7 // the length takes two bytes
		if b0 >= 0x80 || b0 < 2 || b2&(two<<7) != 0 {
			break
		}
		f, dl := b0>>1&(smallFreqs-1), b1&0x7f|(b2&0x7f)<<7&-two
		bad |= uint32((dl - uint64(minDL[f])) >> 63)
		lens |= dl
		dst[j] = T(f<<shift | dl)
		p += int(2 + two)
	}
	return j, p, bad, lens
}

// uvarintAt decodes the uvarint at b[p:] (k <= 0: none there, as binary.Uvarint), a
// one-byte value, the common case, without a call.
func uvarintAt(b []byte, p int) (uint64, int) {
	if p < len(b) && b[p] < 0x80 {
		return uint64(b[p]), 1
	}
	if p >= len(b) {
		return 0, 0
	}
	return binary.Uvarint(b[p:])
}

// frontOrdered reports whether front is in the order frontAcc.flush writes: frequencies
// and lengths both strictly falling. Metadata read from a sidecar is checked so before
// dominatedOrdered relies on it.
func frontOrdered(front []fl) bool {
	for j := 1; j < len(front); j++ {
		if front[j].f >= front[j-1].f || front[j].dl >= front[j-1].dl {
			return false
		}
	}
	return true
}

// smallFreqs bounds the frequencies smallFront tabulates: every frequency a one-byte
// uvarint holds (zap's freq<<1|hasLocations), nearly every posting's.
const smallFreqs = 64

// smallFront tabulates an ordered front (frontOrdered) for the frequencies under
// smallFreqs: a posting (f, dl) with f < smallFreqs is dominated exactly when dl >=
// minDL[f], the length of the front's last pair of frequency >= f (MaxUint32 when none
// has: no length dominates then, lengths being below it). dominatedOrdered's walk along
// the front branches on each posting's frequency; a table lookup does not.
func smallFront(front []fl) (minDL [smallFreqs]uint32) {
	j := len(front) - 1
	for f := range uint32(smallFreqs) {
		for j >= 0 && front[j].f < f {
			j--
		}
		minDL[f] = math.MaxUint32
		if j >= 0 {
			minDL[f] = front[j].dl
		}
	}
	return minDL
}

// b2u is 1 for true, 0 for false (a flag set without a branch).
func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// dominatedOrdered is dominated for an ordered front (frontOrdered): the pairs with a
// frequency >= f are a prefix of it, whose last pair has the smallest length, so that
// pair alone decides. A posting of frequency 1, most of them, costs one comparison.
func dominatedOrdered(front []fl, f, dl uint32) bool {
	j := len(front) - 1
	for j >= 0 && front[j].f < f {
		j--
	}
	return j >= 0 && front[j].dl <= dl
}

// lookupDirect reads the posting of document d in block i of tb straight from z, without
// decoding the block: d's position comes from the bitmap's rank, and its bytes from
// counting uvarint ends in the chunk (a posting of frequency > 0 is two uvarints). A
// query probes most blocks of its low-weight terms for a few documents only; decoding a
// thousand postings to read one was most of a query's time at 21M passages.
//
// st is the caller's state for this block (zero for a block not looked up yet): a query
// looks up a block's documents in rising order, so each lookup counts on from where the
// last one stopped (a lower document starts again from the block's first). The first
// lookup in a block counts the chunk's uvarint ends (once: tb.probed keeps that it did):
// the chunk must end a uvarint and hold exactly two per posting, else errBlockMeta and the
// caller decodes the block, which reads any chunk.
// The posting found must be covered by the block's frontier, as in decodeDirect.
func lookupDirect(z *zapList, tb *termBlocks, i int, d uint32, st *lookupState) (f, dl uint32, present bool, err error) {
	lo, hi := tb.span(i)
	if tb.cs == 0 || lo > math.MaxUint32 || !z.docsOK {
		return 0, 0, false, errBlockMeta
	}
	if uint64(d) < lo || uint64(d) >= hi {
		return 0, 0, false, nil
	}
	buf, ok := z.chunk(lo / tb.cs)
	if !ok {
		return 0, 0, false, errBlockMeta
	}
	n := int(tb.count[i])
	if !st.checked {
		if tb.probed[i].Load()&chunkChecked == 0 {
			if len(buf) == 0 || buf[len(buf)-1] >= 0x80 || varintEnds(buf) != 2*n {
				return 0, 0, false, errBlockMeta
			}
			tb.probed[i].Or(chunkChecked)
		}
		st.checked = true
	}
	if uint64(d) < st.d || st.d < lo || st.pos > n || st.off > len(buf) {
		st.d, st.pos, st.off = lo, 0, 0
	}
	k, has, ok := z.docs.rank(st.d, d)
	pos := st.pos + k
	if !ok || (has && pos >= n) || pos > n {
		return 0, 0, false, errBlockMeta
	}
	p := st.off
	if k > 0 {
		q := skipVarints(buf[p:], 2*k)
		if q < 0 {
			return 0, 0, false, errBlockMeta
		}
		p += q
	}
	st.d, st.pos, st.off = uint64(d), pos, p // the documents below d: pos postings, ending at p
	if !has {
		return 0, 0, false, nil
	}
	f, dl, kp := postingAt(buf, p)
	if kp <= 0 || f == 0 || !dominated(tb.blockFront(i), f, dl) {
		return 0, 0, false, errBlockMeta
	}
	return f, dl, true, nil
}

// postingAt reads the posting at buf[p:]: a uvarint freq<<1|hasLocations and, when freq >
// 0, a uvarint of the norm's float32 bits (zap keeps them so; the low 32 bits are the
// length). k is the bytes read, <= 0 when they are not a posting this package reads (past
// the end, a frequency over 2^32 - 1 or a length of 2^32 - 1).
func postingAt(buf []byte, p int) (f, dl uint32, k int) {
	x, kx := uvarintAt(buf, p)
	if kx <= 0 || x>>1 > math.MaxUint32 {
		return 0, 0, 0
	}
	if x>>1 == 0 {
		return 0, 0, kx
	}
	y, ky := uvarintAt(buf, p+kx)
	if ky <= 0 || uint32(y) == math.MaxUint32 {
		return 0, 0, 0
	}
	return uint32(x >> 1), uint32(y), kx + ky
}

// lookupState is how far lookupDirect has counted in one block: the chunk's uvarint ends
// (checked), and the documents below d, pos of them, whose postings end at byte off.
type lookupState struct {
	checked  bool
	d        uint64
	pos, off int
}

const varintHighBits = 0x8080808080808080

// varintEnds counts the bytes of b below 0x80: the uvarints that end in b.
func varintEnds(b []byte) int {
	n, p := 0, 0
	for ; p+8 <= len(b); p += 8 {
		n += bits.OnesCount64(^binary.LittleEndian.Uint64(b[p:]) & varintHighBits)
	}
	for ; p < len(b); p++ {
		n += int(^b[p] >> 7)
	}
	return n
}

// skipVarints returns the offset just past the n-th uvarint end of b (n > 0), or -1 when
// b ends fewer.
func skipVarints(b []byte, n int) int {
	p := 0
	for ; p+8 <= len(b); p += 8 {
		t := ^binary.LittleEndian.Uint64(b[p:]) & varintHighBits
		c := bits.OnesCount64(t)
		if c >= n {
			for ; n > 1; n-- {
				t &= t - 1
			}
			return p + bits.TrailingZeros64(t)/8 + 1
		}
		n -= c
	}
	for ; p < len(b); p++ {
		if b[p] < 0x80 {
			if n--; n == 0 {
				return p + 1
			}
		}
	}
	return -1
}

// buildBlocksDirect is buildBlocks reading the list straight from the segment's bytes, a
// chunk a block: each chunk's documents from the list's bitmap, its frequencies and
// lengths from its bytes (a first-seen query used to spend 40 % of its time computing
// block metadata through zap's iterator). ok is false when the list is not of the plain
// kind zapListOf reads, or its bytes disagree with its bitmap: the caller then takes zap's
// iterator (buildBlocksIter), which also decides what such a list's blocks are.
func buildBlocksDirect(pl segment.PostingsList, src *blockSource, acc *frontAcc, keep bool) (_ *termBlocks, _ []*postBlock, ok bool) {
	// (Kept blocks are in arena slots: on a false ok they go back, see below; the caller
	// hands back those it does not cache.)
	cs := chunkSizeOf(pl)
	if cs == 0 || !zapListOf(pl, &src.z) || !src.z.docsOK {
		return nil, nil, false
	}
	z := &src.z
	tb := &termBlocks{total: pl.Count(), cs: cs, fstart: []uint32{0}}
	var (
		blks  []*postBlock
		total uint64
		last  = -1 // the last block with postings
	)
	defer func() {
		if !ok {
			for _, b := range blks {
				dropBlock(b)
			}
		}
	}()
	docs := src.scratch[:0]
	defer func() { src.scratch = docs[:0] }()
	acc.flush(nil)
	for c := range uint64(len(z.ends)) {
		buf, ok := z.chunk(c)
		if !ok {
			return nil, nil, false
		}
		if docs, ok = z.docs.appendRange(docs[:0], c*cs, (c+1)*cs); !ok {
			return nil, nil, false
		}
		var blk *postBlock
		if keep && len(docs) > 0 {
			// Straight into an arena slot (the cache keeps it as it is), not the heap.
			blk = newBlock(len(docs), true)
			copy(blk.docs, docs)
		}
		if keep {
			blks = append(blks, blk)
		}
		p := 0
		for j := range docs {
			f, dl, k := postingAt(buf, p)
			if k <= 0 {
				return nil, nil, false
			}
			p += k
			acc.add(f, dl)
			if blk != nil {
				blk.set(j, f, dl)
			}
		}
		if p != len(buf) {
			return nil, nil, false
		}
		if blk != nil {
			blk.finish()
		}
		tb.count = append(tb.count, uint32(len(docs)))
		tb.front = acc.flush(tb.front)
		tb.fstart = append(tb.fstart, uint32(len(tb.front)))
		total += uint64(len(docs))
		if len(docs) > 0 {
			last = int(c)
		}
	}
	if total != tb.total || last < 0 {
		return nil, nil, false
	}
	// Blocks past the last posting are not blocks of the list (as zap's iterator sees it).
	tb.count, tb.fstart = tb.count[:last+1], tb.fstart[:last+2]
	tb.front = tb.front[:tb.fstart[last+1]]
	if keep {
		for _, b := range blks[last+1:] {
			dropBlock(b) // (nil: past the last posting every block is empty)
		}
		blks = blks[:last+1]
	}
	tb.makeSlots()
	tb.bytes = tb.sizeBytes()
	if tb.check() != nil {
		return nil, nil, false
	}
	return tb, blks, true
}

// set stores posting j's frequency and length in a block made by newBlock(n, true),
// moving the block's postings to wide when they do not fit 16 bits each.
func (p *postBlock) set(j int, f, dl uint32) {
	if p.wide == nil && (f >= 1<<16 || dl >= 1<<16) {
		p.wide = make([]fl, len(p.docs))
		for q, v := range p.packed[:j] {
			p.wide[q] = fl{f: v >> 16, dl: v & 0xffff}
		}
		p.packed = nil
	}
	if p.wide != nil {
		p.wide[j] = fl{f: f, dl: dl}
	} else {
		p.packed[j] = f<<16 | dl
	}
}
