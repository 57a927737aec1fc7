package vecmath

import (
	"errors"
	"fmt"
	"math"
)

// ErrHalfRange reports a value that IEEE 754 binary16 (float16) cannot hold: its magnitude
// rounds above 65504, the largest finite float16, or it is NaN.
var ErrHalfRange = errors.New("vecmath: value outside float16's range (|x| <= 65504)")

// MaxHalf is the largest finite float16.
const MaxHalf = 65504

// HalfBits is the float16 nearest f (ties to even), as IEEE 754 binary16 bits; ok is false
// when f is NaN or its magnitude rounds above MaxHalf. Values below float16's smallest
// subnormal (2^-24) round to a signed zero, as IEEE rounding does.
func HalfBits(f float32) (h uint16, ok bool) {
	b := math.Float32bits(f)
	if r, ok := roundNormal(b); ok {
		// float32 exponent e is float16's e-112; the mantissa's top 10 bits are float16's.
		return uint16(b>>16)&0x8000 | uint16((r&0x7fffffff)>>13-112<<10), true
	}
	return halfBitsSlow(b)
}

// roundNormal rounds float32 bits b to float16's precision in float32 bits (10 mantissa
// bits, ties to even, a carry raising the exponent) when b is a float16 normal (float32
// biased exponents 113..142: float16's -14..15) and the rounded value still is one. Other
// values (subnormals, zero, too large, Inf, NaN): ok false. Branch-free apart from the
// range check, which real vectors rarely fail: the rounding in halfBitsSlow branches on
// each value's low bits, a coin toss for the CPU.
func roundNormal(b uint32) (r uint32, ok bool) {
	if e := b >> 23 & 0xff; e < 113 || e > 142 {
		return 0, false
	}
	r = (b + 0xfff + (b>>13)&1) &^ 0x1fff
	return r, r>>23&0xff <= 142
}

// halfBitsSlow is HalfBits for every value, case by case: the definition roundNormal's
// shortcut is tested against.
func halfBitsSlow(b uint32) (h uint16, ok bool) {
	sign := uint16(b>>16) & 0x8000
	if b&0x7fffffff > 0x7f800000 { // NaN
		return 0, false
	}
	exp := int(b>>23&0xff) - 127 + 15 // float16's biased exponent
	mant := b & 0x7fffff
	switch {
	case exp >= 31: // ±Inf, or a normal float32 past float16's exponents
		return 0, false
	case exp <= 0: // a float16 subnormal, or zero
		if exp < -10 {
			return sign, true // below half the smallest subnormal
		}
		m := mant | 0x800000 // the implicit leading 1
		shift := uint(14 - exp)
		h := m >> shift
		rem, half := m&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > half || rem == half && h&1 == 1 {
			h++ // may carry into the smallest normal: its bits follow on
		}
		return sign | uint16(h), true
	}
	h = sign | uint16(exp)<<10 | uint16(mant>>13)
	if rem := mant & 0x1fff; rem > 0x1000 || rem == 0x1000 && h&1 == 1 {
		h++ // a carry out of the mantissa raises the exponent, as it should
	}
	if h&0x7c00 == 0x7c00 {
		return 0, false // rounded up to Inf
	}
	return h, true
}

// HalfFloat is the value of float16 bits h (exact: every float16 is a float32).
func HalfFloat(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0: // zero or subnormal: mant * 2^-24
		f := float32(mant) * (1.0 / (1 << 24))
		return math.Float32frombits(math.Float32bits(f) | sign)
	case 31:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp-15+127)<<23 | mant<<13)
}

// RoundHalf returns v with every value rounded to the nearest float16 (a new slice: v is
// not changed). A value float16 cannot hold is ErrHalfRange, naming its position.
func RoundHalf(v []float32) ([]float32, error) {
	out := make([]float32, len(v))
	for i, f := range v {
		b := math.Float32bits(f)
		if r, ok := roundNormal(b); ok {
			out[i] = math.Float32frombits(r) // a float16 normal, rounded in float32 bits
			continue
		}
		h, ok := halfBitsSlow(b)
		if !ok {
			return nil, fmt.Errorf("%w: value %d is %v", ErrHalfRange, i, f)
		}
		out[i] = HalfFloat(h)
	}
	return out, nil
}
