// Package vecmath holds the small float32 vector routines the module's packages share: the
// dot product, cosine similarity, L2 normalisation, the logistic sigmoid, and the check that
// a vector has the expected length and only finite values.
//
// These are the portable reference versions. Hot loops with their own SIMD kernels (the flat
// index's AVX2 scan) keep those kernels; everything else calls these.
package vecmath

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Errors matched by the *VectorError that [Check] returns.
var (
	// ErrDim reports a vector whose length is not the expected dimension.
	ErrDim = errors.New("vecmath: wrong vector length")
	// ErrNonFinite reports a vector holding NaN or ±Inf.
	ErrNonFinite = errors.New("vecmath: vector holds NaN or Inf")
)

// VectorError describes why [Check] rejected a vector. It matches [ErrDim] or
// [ErrNonFinite] under errors.Is.
type VectorError struct {
	// Len is the vector's length and Dim the expected one.
	Len, Dim int
	// Index is the position of the first NaN or Inf, or -1 for a length mismatch.
	Index int
	// Value is the offending value when Index >= 0.
	Value float32
}

// Error says what is wrong, with the numbers.
func (e *VectorError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("%d values, want %d", e.Len, e.Dim)
	}
	return fmt.Sprintf("value %d is %v", e.Index, e.Value)
}

// Unwrap returns ErrDim or ErrNonFinite.
func (e *VectorError) Unwrap() error {
	if e.Index < 0 {
		return ErrDim
	}
	return ErrNonFinite
}

// Check returns nil when v has dim values, all finite, else a *VectorError. It runs in
// O(len(v)) and allocates only on failure.
func Check(v []float32, dim int) error {
	if len(v) != dim {
		return &VectorError{Len: len(v), Dim: dim, Index: -1}
	}
	if allFinite(v) {
		return nil
	}
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return &VectorError{Len: len(v), Dim: dim, Index: i, Value: x}
		}
	}
	return nil
}

// allFinite reports whether v holds no NaN or ±Inf: x*0 is ±0 for a finite x and NaN
// otherwise, so the sums stay 0 exactly when every value is finite. Four independent sums,
// without a branch per value, run several times faster than testing each value (bulk
// ingest checks every vector it stores); Check looks for the position only on failure.
func allFinite(v []float32) bool {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(v); i += 4 {
		w := v[i : i+4 : i+4]
		s0 += w[0] * 0
		s1 += w[1] * 0
		s2 += w[2] * 0
		s3 += w[3] * 0
	}
	for ; i < len(v); i++ {
		s0 += v[i] * 0
	}
	return s0+s1+s2+s3 == 0
}

// Dot is the inner product of a and b over the first len(a) values (b must be at least as
// long), accumulated in float32 from left to right.
func Dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s float32
	for i, x := range a {
		s += x * b[i]
	}
	return s
}

// Cosine is the cosine similarity of a and b, computed in float64; 0 when either is the
// zero vector. b must be at least as long as a.
func Cosine(a, b []float32) float64 {
	b = b[:len(a)]
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// NormalizeInto writes v/|v| into dst (len(dst) >= len(v)); a zero vector is copied
// unchanged. The norm is computed in float64, so the result does not depend on the order
// of the values' magnitudes. dst may be v.
func NormalizeInto(dst, v []float32) {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss == 0 {
		copy(dst, v)
		return
	}
	inv := 1 / math.Sqrt(ss)
	dst = dst[:len(v)]
	for i, x := range v {
		dst[i] = float32(float64(x) * inv)
	}
}

// Sigmoid is the logistic function 1/(1+e^-x), computed without overflow for any x
// (0 for large negative x, 1 for large positive x, NaN for NaN).
func Sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// LittleEndian reports whether this machine keeps a number's low byte first: the byte order
// of stored vectors and of the disk index's files, which are then read and written as
// they are in memory.
var LittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1
