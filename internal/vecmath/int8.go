package vecmath

import "math"

// Per-vector int8 quantization (a store that keeps its vectors in int8): each vector is
// kept as one float32 scale and an int8 a value, value i being q[i] x scale. The scale is
// the vector's largest magnitude over 127, with the low 8 bits of its float32 mantissa
// cleared (16 significant bits): every product q x scale (|q| <= 127, 7 bits) is then exact
// in float32, so dequantizing costs no rounding, and quantizing a dequantized vector gives
// back the same scale and values (RoundInt8 is idempotent: an index fed the rounded vector
// holds what the store decodes, bit for bit). The scale's relative error (2^-16) is far
// below the int8 grid's (1/254). A zero vector has scale 0.

// Int8Scale is the scale QuantizeInt8 uses for a vector whose largest magnitude is m
// (finite, >= 0).
func Int8Scale(m float32) float32 {
	if m == 0 {
		return 0
	}
	b := math.Float32bits(m / 127)
	s := math.Float32frombits(b &^ 0xff)
	if s == 0 { // a tiny subnormal: the least scale that is not 0
		s = math.Float32frombits(0x100)
	}
	return s
}

// QuantizeInt8 writes v's int8 values into q (len(q) >= len(v)) and returns its scale:
// q[i] = round(v[i]/scale) within [-127, 127]. A NaN or Inf is a *VectorError matching
// ErrNonFinite (q is then undefined).
func QuantizeInt8(v []float32, q []int8) (float32, error) {
	// The largest magnitude first, as the bits of |x|: for values without a sign their
	// order as unsigned integers is the floats' order, and every NaN's bits are above
	// +Inf's, so one test after the loop finds a non-finite value (then the first one is
	// looked for). Four running maxima keep the loop from waiting on one.
	const signBit, infBits = 1 << 31, 0x7f800000
	var m0, m1, m2, m3 uint32
	i := 0
	for ; i+4 <= len(v); i += 4 {
		w := (*[4]float32)(v[i : i+4])
		m0 = max(m0, math.Float32bits(w[0])&^signBit)
		m1 = max(m1, math.Float32bits(w[1])&^signBit)
		m2 = max(m2, math.Float32bits(w[2])&^signBit)
		m3 = max(m3, math.Float32bits(w[3])&^signBit)
	}
	for ; i < len(v); i++ {
		m0 = max(m0, math.Float32bits(v[i])&^signBit)
	}
	mb := max(m0, m1, m2, m3)
	if mb >= infBits {
		for i, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return 0, &VectorError{Len: len(v), Dim: len(v), Index: i, Value: x}
			}
		}
	}
	m := math.Float32frombits(mb)
	s := Int8Scale(m)
	q = q[:len(v)]
	if s == 0 {
		clear(q)
		return 0, nil
	}
	inv := 1 / float64(s)
	for i, x := range v {
		// (The conversion rounds the product, so that no machine fuses it with
		// roundInt8's subtraction: math.Round rounded this product.)
		q[i] = roundInt8(float64(float64(x) * inv))
	}
	return s, nil
}

// roundInt8 is int8(max(-127, min(127, math.Round(y)))) for a value over its vector's
// scale (|y| at most 127 and a little, or about 255 where the scale is subnormal and the
// bits Int8Scale cleared were a large part of it: far inside int64's range), without
// math.Round's call and branches: y is truncated, and the truncation moved one step away
// from zero when the fraction it dropped, exact in float64, is at least one half.
func roundInt8(y float64) int8 {
	t := int64(y)
	f := y - float64(t)
	t += b2i(f >= 0.5) - b2i(f <= -0.5)
	return int8(max(-127, min(127, t)))
}

// b2i is 1 for true and 0 for false (compiled without a branch).
func b2i(b bool) int64 {
	var i int64
	if b {
		i = 1
	}
	return i
}

// DequantizeInt8 writes q[i] x scale into dst (len(dst) >= len(q)).
func DequantizeInt8(q []int8, scale float32, dst []float32) {
	dst = dst[:len(q)]
	for i, c := range q {
		dst[i] = float32(c) * scale
	}
}

// RoundInt8 returns v rounded to its int8 grid (a new slice): what a store keeping int8
// vectors decodes for v. A NaN or Inf is a *VectorError matching ErrNonFinite.
func RoundInt8(v []float32) ([]float32, error) {
	q := make([]int8, len(v))
	s, err := QuantizeInt8(v, q)
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(v))
	DequantizeInt8(q, s, out)
	return out, nil
}
