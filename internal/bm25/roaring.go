package bm25

import (
	"encoding/binary"
	"math/bits"
)

// This file reads the documents of one block of a posting list straight from the list's
// serialized roaring bitmap (the portable format zap writes and maps), instead of through
// roaring's iterator: at 21M passages a query reads about four million postings, and the
// iterator's per-value calls were a fifth of its time. A block's documents are a range
// [lo, hi) of the bitmap; they are appended container by container: an array container's
// values from a binary search on, a bitmap container's set bits word by word, a run
// container's runs. Every offset read is bounds-checked, and values must rise; damage is a
// false ok (errBlockMeta to the caller), never a fault.

const (
	roaringCookieRuns   = 12347 // low 16 bits of the cookie: the bitmap has run containers
	roaringCookieNoRuns = 12346
	roaringNoOffsets    = 4    // with runs, fewer containers than this have no offset table
	roaringArrayMax     = 4096 // a container of more values is a bitmap (unless a run)
)

// roaringView is a parsed header of a serialized roaring bitmap.
type roaringView struct {
	b       []byte
	n       int    // containers
	runs    []byte // run-container flags, a bit per container (nil: none)
	hdr     int    // where the (key, cardinality-1) pairs start
	offsets []uint32
}

// parse reads b's header (ok false: not a bitmap this code reads).
func (v *roaringView) parse(b []byte) bool {
	*v = roaringView{b: b, offsets: v.offsets[:0]}
	if len(b) < 4 {
		return false
	}
	cookie := binary.LittleEndian.Uint32(b)
	p := 4
	switch {
	case cookie&0xffff == roaringCookieRuns:
		v.n = int(cookie>>16) + 1
		nb := (v.n + 7) / 8
		if len(b) < p+nb {
			return false
		}
		v.runs = b[p : p+nb]
		p += nb
	case cookie == roaringCookieNoRuns:
		if len(b) < 8 {
			return false
		}
		v.n = int(binary.LittleEndian.Uint32(b[4:]))
		p = 8
	default:
		return false
	}
	if v.n > len(b) || len(b)-p < 4*v.n { // each container takes bytes of the header
		return false
	}
	v.hdr = p
	p += 4 * v.n
	if v.runs == nil || v.n >= roaringNoOffsets {
		if len(b)-p < 4*v.n {
			return false
		}
		for i := range v.n {
			v.offsets = append(v.offsets, binary.LittleEndian.Uint32(b[p+4*i:]))
		}
		return true
	}
	// No offset table: the containers follow one another.
	for i := range v.n {
		v.offsets = append(v.offsets, uint32(p))
		size, ok := v.containerSize(i, p)
		if !ok {
			return false
		}
		p += size
	}
	return true
}

func (v *roaringView) key(i int) uint32 { return uint32(binary.LittleEndian.Uint16(v.b[v.hdr+4*i:])) }
func (v *roaringView) card(i int) int {
	return int(binary.LittleEndian.Uint16(v.b[v.hdr+4*i+2:])) + 1
}
func (v *roaringView) isRun(i int) bool { return v.runs != nil && v.runs[i/8]&(1<<(i%8)) != 0 }

// containerSize is the bytes of container i at offset p (ok false: past the end).
func (v *roaringView) containerSize(i, p int) (int, bool) {
	var size int
	switch {
	case v.isRun(i):
		if p+2 > len(v.b) {
			return 0, false
		}
		size = 2 + 4*int(binary.LittleEndian.Uint16(v.b[p:]))
	case v.card(i) > roaringArrayMax:
		size = 8192
	default:
		size = 2 * v.card(i)
	}
	return size, p+size <= len(v.b)
}

// firstContainer is the index of the first container whose key is >= lo's (v.n: none).
func (v *roaringView) firstContainer(lo uint64) int {
	a, z := 0, v.n
	for a < z {
		m := int(uint(a+z) >> 1)
		if uint64(v.key(m)) < lo>>16 {
			a = m + 1
		} else {
			z = m
		}
	}
	return a
}

// container returns container i's bytes (ok false: they do not lie inside the bitmap).
func (v *roaringView) container(i int) ([]byte, bool) {
	p := int(v.offsets[i])
	if p < 0 || p > len(v.b) {
		return nil, false
	}
	size, ok := v.containerSize(i, p)
	if !ok {
		return nil, false
	}
	return v.b[p : p+size], true
}

// appendRange appends to out the values in [lo, hi), rising; ok false when the bitmap's
// bytes are damaged.
func (v *roaringView) appendRange(out []uint32, lo, hi uint64) ([]uint32, bool) {
	if lo >= hi || lo > 0xffffffff {
		return out, true
	}
	hi = min(hi, 1<<32)
	a := v.firstContainer(lo)
	last := uint64(0)
	if len(out) > 0 {
		last = uint64(out[len(out)-1]) + 1
	}
	for i := a; i < v.n; i++ {
		key := uint64(v.key(i))
		base := key << 16
		if base >= hi {
			break
		}
		if base < last {
			return out, false // keys must rise
		}
		// the container's part of [lo, hi), in its low 16 bits: [from, to)
		from := uint32(0)
		if lo > base {
			from = uint32(lo - base)
		}
		to := uint32(min(hi-base, 1<<16))
		c, ok := v.container(i)
		if !ok {
			return out, false
		}
		n0 := len(out)
		switch {
		case v.isRun(i):
			out, ok = appendRuns(out, c[2:], uint32(base), from, to)
		case v.card(i) > roaringArrayMax: // (4,096 values as an array take 8 KiB too)
			out = appendBits(out, c, uint32(base), from, to)
		default:
			out, ok = appendArray(out, c, uint32(base), from, to)
		}
		if !ok {
			return out, false
		}
		if len(out) > n0 {
			last = uint64(out[len(out)-1]) + 1
		}
	}
	return out, true
}

// appendArray appends an array container's values in [from, to) (low bits), checking
// that they rise.
func appendArray(out []uint32, c []byte, base, from, to uint32) ([]uint32, bool) {
	n := len(c) / 2
	a, z := 0, n
	for a < z {
		m := int(uint(a+z) >> 1)
		if uint32(binary.LittleEndian.Uint16(c[2*m:])) < from {
			a = m + 1
		} else {
			z = m
		}
	}
	prev := int64(-1)
	if a > 0 {
		prev = int64(binary.LittleEndian.Uint16(c[2*a-2:]))
	}
	for j := a; j < n; j++ {
		x := uint32(binary.LittleEndian.Uint16(c[2*j:]))
		if x >= to {
			break
		}
		if int64(x) <= prev {
			return out, false
		}
		prev = int64(x)
		out = append(out, base|x)
	}
	return out, true
}

// bitsWord is word w of a bitmap container with the bits outside [from, to) cleared.
func bitsWord(c []byte, w, from, to uint32) uint64 {
	x := binary.LittleEndian.Uint64(c[8*w:])
	if w == from/64 {
		x &= ^uint64(0) << (from % 64)
	}
	if end := (w + 1) * 64; end > to {
		x &= ^uint64(0) >> (end - to)
	}
	return x
}

// appendBits appends a bitmap container's set bits in [from, to).
func appendBits(out []uint32, c []byte, base, from, to uint32) []uint32 {
	for w := from / 64; w < (to+63)/64; w++ {
		x := bitsWord(c, w, from, to)
		for x != 0 {
			out = append(out, base|(w*64+uint32(bits.TrailingZeros64(x))))
			x &= x - 1
		}
	}
	return out
}

// appendRuns appends a run container's values in [from, to); runs are (start, length-1)
// pairs, which must rise without overlapping.
func appendRuns(out []uint32, c []byte, base, from, to uint32) ([]uint32, bool) {
	next := uint32(0) // the least start the next run may have
	for r := 0; r+4 <= len(c); r += 4 {
		start := uint32(binary.LittleEndian.Uint16(c[r:]))
		end := start + uint32(binary.LittleEndian.Uint16(c[r+2:])) + 1 // exclusive
		if start < next || end > 1<<16 {
			return out, false
		}
		next = end + 1
		if end <= from {
			continue
		}
		if start >= to {
			break
		}
		for x := max(start, from); x < min(end, to); x++ {
			out = append(out, base|x)
		}
	}
	return out, true
}

// rank returns how many values of [lo, d) the bitmap holds and whether it holds d (ok
// false when its bytes are damaged): a document's position in its block, found without
// listing the block's documents.
func (v *roaringView) rank(lo uint64, d uint32) (n int, has, ok bool) {
	if lo > uint64(d) {
		return 0, false, true
	}
	a := v.firstContainer(lo)
	prev := int64(-1)
	for i := a; i < v.n; i++ {
		key := v.key(i)
		if int64(key) <= prev {
			return 0, false, false // keys must rise
		}
		prev = int64(key)
		base := uint64(key) << 16
		if base > uint64(d) {
			break
		}
		from := uint32(0)
		if lo > base {
			from = uint32(lo - base)
		}
		last := key == d>>16
		to := uint32(1 << 16)
		if last {
			to = d & 0xffff
		}
		c, sok := v.container(i)
		if !sok {
			return 0, false, false
		}
		var k int
		var h bool
		switch {
		case v.isRun(i):
			k, h, sok = rankRuns(c[2:], from, to, last)
		case v.card(i) > roaringArrayMax:
			k, h = rankBits(c, from, to, last)
		default:
			k, h, sok = rankArray(c, from, to, last)
		}
		if !sok {
			return 0, false, false
		}
		n += k
		if last {
			return n, h, true
		}
	}
	return n, false, true
}

// rankArray counts an array container's values in [from, to) and, when want, whether it
// holds to; the values around the two bounds must rise.
func rankArray(c []byte, from, to uint32, want bool) (int, bool, bool) {
	n := len(c) / 2
	at := func(j int) uint32 { return uint32(binary.LittleEndian.Uint16(c[2*j:])) }
	lower := func(x uint32) int {
		a, z := 0, n
		for a < z {
			m := int(uint(a+z) >> 1)
			if at(m) < x {
				a = m + 1
			} else {
				z = m
			}
		}
		return a
	}
	a, b := lower(from), n
	if want || to < 1<<16 {
		b = lower(to)
	}
	if b < a || (a > 0 && at(a-1) >= from) || (b < n && at(b) < to) {
		return 0, false, false
	}
	return b - a, want && b < n && at(b) == to, true
}

// rankBits counts a bitmap container's set bits in [from, to) and, when want, whether bit
// to is set.
func rankBits(c []byte, from, to uint32, want bool) (int, bool) {
	n := 0
	for w := from / 64; w < (to+63)/64; w++ {
		x := bitsWord(c, w, from, to)
		n += bits.OnesCount64(x)
	}
	has := want && to < 1<<16 && binary.LittleEndian.Uint64(c[8*(to/64):])&(1<<(to%64)) != 0
	return n, has
}

// rankRuns counts a run container's values in [from, to) and, when want, whether it holds
// to; runs must rise without overlapping.
func rankRuns(c []byte, from, to uint32, want bool) (int, bool, bool) {
	n, has := 0, false
	next := uint32(0)
	for r := 0; r+4 <= len(c); r += 4 {
		start := uint32(binary.LittleEndian.Uint16(c[r:]))
		end := start + uint32(binary.LittleEndian.Uint16(c[r+2:])) + 1 // exclusive
		if start < next || end > 1<<16 {
			return 0, false, false
		}
		next = end + 1
		if start > to {
			break
		}
		if want && start <= to && to < end {
			has = true
		}
		if lo, hi := max(start, from), min(end, to); lo < hi {
			n += int(hi - lo)
		}
	}
	return n, has, true
}

// fillRange writes the values in [lo, hi) to dst, rising, and returns how many it wrote:
// appendRange into a destination sized beforehand (a block's posting count), each
// container's values stored by index without growing a slice. ok is false when the
// bitmap's bytes are damaged or hold more values in the range than dst has room for.
func (v *roaringView) fillRange(dst []uint32, lo, hi uint64) (n int, ok bool) {
	return fillRangeOf(v, dst, lo, hi, 0)
}

// fillRange16 is fillRange writing each value less lo in 16 bits: hi - lo must be at
// most 1<<16.
func (v *roaringView) fillRange16(dst []uint16, lo, hi uint64) (n int, ok bool) {
	if hi-lo > 1<<16 || lo > 0xffffffff {
		return 0, false
	}
	return fillRangeOf(v, dst, lo, hi, uint32(lo))
}

// fillRangeOf is fillRange writing each value less sub.
func fillRangeOf[T uint16 | uint32](v *roaringView, dst []T, lo, hi uint64, sub uint32) (n int, ok bool) {
	if lo >= hi || lo > 0xffffffff {
		return 0, true
	}
	hi = min(hi, 1<<32)
	last := uint64(0) // the least value the next container may hold
	for i := v.firstContainer(lo); i < v.n; i++ {
		base := uint64(v.key(i)) << 16
		if base >= hi {
			break
		}
		if base < last {
			return n, false // keys must rise
		}
		from := uint32(0)
		if lo > base {
			from = uint32(lo - base)
		}
		to := uint32(min(hi-base, 1<<16))
		c, ok := v.container(i)
		if !ok {
			return n, false
		}
		var m int
		switch {
		case v.isRun(i):
			m, ok = fillRuns(dst[n:], c[2:], uint32(base)-sub, from, to)
		case v.card(i) > roaringArrayMax:
			m, ok = fillBits(dst[n:], c, uint32(base)-sub, from, to)
		default:
			m, ok = fillArray(dst[n:], c, uint32(base)-sub, from, to)
		}
		if !ok {
			return n, false
		}
		n += m
		if m > 0 {
			last = uint64(dst[n-1]) + uint64(sub) + 1
		}
	}
	return n, true
}

// fillArray writes an array container's values in [from, to) (low bits) to dst: the
// run between the two bounds' binary searches, which must rise (then, the searches having
// found it, every value lies within the bounds).
func fillArray[T uint16 | uint32](dst []T, c []byte, base, from, to uint32) (int, bool) {
	n := len(c) / 2
	lower := func(x uint32) int {
		a, z := 0, n
		for a < z {
			m := int(uint(a+z) >> 1)
			if uint32(binary.LittleEndian.Uint16(c[2*m:])) < x {
				a = m + 1
			} else {
				z = m
			}
		}
		return a
	}
	a, b := lower(from), n
	if to < 1<<16 {
		b = lower(to)
	}
	if b <= a {
		return 0, true
	}
	m := b - a
	if m > len(dst) {
		return 0, false
	}
	prev := int32(-1)
	if a > 0 {
		prev = int32(binary.LittleEndian.Uint16(c[2*a-2:]))
	}
	src, d := c[2*a:2*b], dst[:m]
	bad := uint32(0)
	for j := range d {
		x := int32(binary.LittleEndian.Uint16(src[2*j:]))
		bad |= b2u(x <= prev)
		prev = x
		d[j] = T(base + uint32(x))
	}
	return m, bad == 0
}

// fillBits writes a bitmap container's set bits in [from, to) to dst, a word at a time:
// the word's count first, then its bits by trailing zeros into a slice of that length.
func fillBits[T uint16 | uint32](dst []T, c []byte, base, from, to uint32) (int, bool) {
	n := 0
	for w := from / 64; w < (to+63)/64; w++ {
		x := bitsWord(c, w, from, to)
		if x == 0 {
			continue
		}
		k := bits.OnesCount64(x)
		if k > len(dst)-n {
			return n, false
		}
		hb := base + w*64
		d := dst[n : n+k]
		for j := range d {
			d[j] = T(hb + uint32(bits.TrailingZeros64(x)))
			x &= x - 1
		}
		n += k
	}
	return n, true
}

// fillRuns writes a run container's values in [from, to) to dst; runs are (start,
// length-1) pairs, which must rise without overlapping.
func fillRuns[T uint16 | uint32](dst []T, c []byte, base, from, to uint32) (int, bool) {
	n := 0
	next := uint32(0) // the least start the next run may have
	for r := 0; r+4 <= len(c); r += 4 {
		start := uint32(binary.LittleEndian.Uint16(c[r:]))
		end := start + uint32(binary.LittleEndian.Uint16(c[r+2:])) + 1 // exclusive
		if start < next || end > 1<<16 {
			return n, false
		}
		next = end + 1
		if end <= from {
			continue
		}
		if start >= to {
			break
		}
		s, e := max(start, from), min(end, to)
		if int(e-s) > len(dst)-n {
			return n, false
		}
		d := dst[n : n+int(e-s)]
		for j := range d {
			d[j] = T(base + s + uint32(j))
		}
		n += len(d)
	}
	return n, true
}
