package postings

import (
	"encoding/binary"
	"math/bits"
)

//go:generate go run gen.go

// maxWidth returns the bit width of the largest of vals (0 if all are 0).
func maxWidth(vals []uint32) uint8 {
	var or uint32
	for _, v := range vals {
		or |= v
	}
	return uint8(bits.Len32(or))
}

// packedLen is the number of bytes n values of width w take.
func packedLen(n, w int) int {
	return (n*w + 7) / 8
}

// appendPacked appends vals packed at width w (every value must fit in w
// bits) as a little-endian bit stream: value k occupies bits
// [k*w, (k+1)*w), bit j of the stream is bit j%8 of byte j/8. The last
// byte is padded with zero bits.
func appendPacked(dst []byte, vals []uint32, w uint8) []byte {
	if w == 0 {
		return dst
	}
	var acc uint64 // pending bits, low first
	var have uint  // number of pending bits (< 64 between values)
	for _, v := range vals {
		acc |= uint64(v) << have
		have += uint(w)
		if have >= 64 {
			dst = binary.LittleEndian.AppendUint64(dst, acc)
			have -= 64
			// The bits of v that did not fit; for have == 0 this shifts
			// by w and leaves 0 (a shift of 32 on a uint64 is defined).
			acc = uint64(v) >> (uint(w) - have)
		}
	}
	for have > 0 {
		dst = append(dst, byte(acc))
		acc >>= 8
		have = max(have, 8) - 8
	}
	return dst
}

// unpackDocs decodes n (<= BlockSize) document gaps minus one of width w
// from src into dst[:n], each document the previous one plus its gap,
// starting from a, and returns the last document as a uint64 (a wrapped
// sum stays visible). src must hold packedLen(n, w) bytes and dst
// BlockSize elements; the caller checks both.
func unpackDocs(dst []uint32, src []byte, n int, w uint8, a uint64) uint64 {
	switch {
	case w == 0:
		for k, d := 0, dst[:n]; k < len(d); k++ {
			d[k] = uint32(a + uint64(k) + 1)
		}
		return a + uint64(n)
	case n == BlockSize:
		f := docUnpackers[w]
		half := 8 * int(w)
		a = f(dst[:64], src[:half], a)
		return f(dst[64:128], src[half:2*half], a)
	}
	unpackTail(dst, src, n, w)
	for k, d := 0, dst[:n]; k < len(d); k++ {
		a += uint64(d[k]) + 1
		d[k] = uint32(a)
	}
	return a
}

// unpackFreqs decodes n (<= BlockSize) frequencies minus one of width w
// from src into dst[:n], adding the one back. The sizes are as for
// unpackDocs.
func unpackFreqs(dst []uint32, src []byte, n int, w uint8) {
	switch {
	case w == 0:
		for k, f := 0, dst[:n]; k < len(f); k++ {
			f[k] = 1
		}
	case n == BlockSize:
		f := freqUnpackers[w]
		half := 8 * int(w)
		f(dst[:64], src[:half])
		f(dst[64:128], src[half:2*half])
	default:
		unpackTail(dst, src, n, w)
		for k, f := 0, dst[:n]; k < len(f); k++ {
			f[k]++
		}
	}
}

// unpackTail is the general, slower unpacker for short blocks.
func unpackTail(dst []uint32, src []byte, n int, w uint8) {
	dst = dst[:n]
	mask := uint64(1)<<w - 1
	var acc uint64
	var have uint
	pos := 0
	for k := range dst {
		for have < uint(w) {
			acc |= uint64(src[pos]) << have
			pos++
			have += 8
		}
		dst[k] = uint32(acc & mask)
		acc >>= w
		have -= uint(w)
	}
}

// xorBytes folds b into one byte by exclusive or.
func xorBytes(b []byte) byte {
	var x uint64
	for len(b) >= 8 {
		x ^= binary.LittleEndian.Uint64(b)
		b = b[8:]
	}
	for _, c := range b {
		x ^= uint64(c)
	}
	x ^= x >> 32
	x ^= x >> 16
	x ^= x >> 8
	return byte(x)
}
