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
	var m float32
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return 0, &VectorError{Len: len(v), Dim: len(v), Index: i, Value: x}
		}
		m = max(m, float32(math.Abs(float64(x))))
	}
	s := Int8Scale(m)
	q = q[:len(v)]
	if s == 0 {
		clear(q)
		return 0, nil
	}
	inv := 1 / float64(s)
	for i, x := range v {
		c := math.Round(float64(x) * inv)
		q[i] = int8(max(-127, min(127, c)))
	}
	return s, nil
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
