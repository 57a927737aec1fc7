package vecmath

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
)

// ErrRotation reports a rotation that cannot be built (a dimension out of range).
var ErrRotation = errors.New("vecmath: bad rotation")

// RotationRounds is how many rounds of (random sign flips, Walsh–Hadamard transform) a
// [Rotation] applies. One round already spreads a vector's mass over every component;
// three make the result close to a uniformly random rotation for the sign codes built on
// it (sign random projections), at 3 x n log2 n additions a vector.
const RotationRounds = 3

// MaxRotationDim is the largest dimension a [Rotation] takes.
const MaxRotationDim = 1 << 16

// Rotation is a fixed pseudo-random orthogonal transform of dim-dimensional vectors into
// n dimensions, n the next power of two from dim: the vector, padded with zeros, goes
// through RotationRounds rounds of a diagonal of random ±1 (drawn from the seed) followed
// by the normalised fast Walsh–Hadamard transform (H/sqrt(n), orthogonal). Norms and dot
// products are preserved (up to float32 rounding), and the same seed always gives the same
// transform. A Rotation is read-only after NewRotation: safe for concurrent use.
type Rotation struct {
	dim, n int
	seed   uint64
	flips  [RotationRounds][]uint32 // per round and component: 0 or the float32 sign bit
	scale  float32                  // n^(-rounds/2): the rounds' normalisation, applied once
}

// NewRotation returns the rotation of seed for vectors of dim dimensions (1 to
// MaxRotationDim; else an error matching ErrRotation).
func NewRotation(dim int, seed uint64) (*Rotation, error) {
	if dim < 1 || dim > MaxRotationDim {
		return nil, fmt.Errorf("%w: %d dimensions (1 to %d)", ErrRotation, dim, MaxRotationDim)
	}
	n := 1 << bits.Len(uint(dim-1))
	r := &Rotation{dim: dim, n: n, seed: seed,
		scale: float32(math.Pow(float64(n), -float64(RotationRounds)/2))}
	rng := rand.New(rand.NewPCG(seed, 0x726f746174696f6e)) // "rotation"
	for k := range r.flips {
		f := make([]uint32, n)
		for i := 0; i < n; i += 64 {
			w := rng.Uint64()
			for j := i; j < min(i+64, n); j++ {
				f[j] = uint32(w&1) << 31
				w >>= 1
			}
		}
		r.flips[k] = f
	}
	return r, nil
}

// Dim is the dimension of the vectors the rotation takes.
func (r *Rotation) Dim() int { return r.dim }

// Padded is the dimension of the rotated vectors: the next power of two from Dim.
func (r *Rotation) Padded() int { return r.n }

// Seed is the seed the rotation was drawn from.
func (r *Rotation) Seed() uint64 { return r.seed }

// Apply writes the rotation of src (Dim values) to dst (Padded values; it may not overlap
// src) and returns dst. It panics on other lengths (a programming error).
func (r *Rotation) Apply(dst, src []float32) []float32 {
	if len(src) != r.dim || len(dst) != r.n {
		panic(fmt.Sprintf("vecmath: rotation of %d into %d dimensions given %d into %d", r.dim, r.n, len(src), len(dst)))
	}
	copy(dst, src)
	clear(dst[r.dim:])
	for k := range r.flips {
		f := r.flips[k][:len(dst)]
		for i, v := range dst {
			dst[i] = math.Float32frombits(math.Float32bits(v) ^ f[i])
		}
		walshHadamard(dst)
	}
	for i := range dst {
		dst[i] *= r.scale
	}
	return dst
}

// walshHadamard applies the unnormalised Walsh–Hadamard transform to v in place (len(v)
// a power of two): after it, v[i] = sum_j (-1)^popcount(i&j) v[j]. Stage h (h = 1, 2, 4,
// ...) replaces each pair (v[i], v[i+h]) of a 2h-aligned group by (v[i]+v[i+h],
// v[i]-v[i+h]); the first three stages run on each group of 8 values held in registers,
// the same additions in the same order as stage by stage (bit-identical results), without
// a loop of one, two and four pairs per group; the later stages go two at a time.
func walshHadamard(v []float32) {
	n := len(v)
	h := 1
	if n >= 8 {
		for i := 0; i+8 <= n; i += 8 {
			w := (*[8]float32)(v[i : i+8])
			a0, a1 := w[0]+w[1], w[0]-w[1]
			a2, a3 := w[2]+w[3], w[2]-w[3]
			a4, a5 := w[4]+w[5], w[4]-w[5]
			a6, a7 := w[6]+w[7], w[6]-w[7]
			b0, b2 := a0+a2, a0-a2
			b1, b3 := a1+a3, a1-a3
			b4, b6 := a4+a6, a4-a6
			b5, b7 := a5+a7, a5-a7
			w[0], w[4] = b0+b4, b0-b4
			w[1], w[5] = b1+b5, b1-b5
			w[2], w[6] = b2+b6, b2-b6
			w[3], w[7] = b3+b7, b3-b7
		}
		h = 8
	}
	// Then two stages at a time (h and 2h) over each 4h-aligned group: every value is
	// loaded and stored once for the two.
	for ; 2*h < n; h *= 4 {
		for i := 0; i < n; i += 4 * h {
			a, b := v[i:i+h:i+h], v[i+h:i+2*h:i+2*h]
			c, d := v[i+2*h:i+3*h:i+3*h], v[i+3*h:i+4*h:i+4*h]
			for j := range a {
				x0, x1, x2, x3 := a[j], b[j], c[j], d[j]
				a0, a1 := x0+x1, x0-x1
				a2, a3 := x2+x3, x2-x3
				a[j], c[j] = a0+a2, a0-a2
				b[j], d[j] = a1+a3, a1-a3
			}
		}
	}
	if h < n { // the last stage alone
		a, b := v[:h:h], v[h:2*h:2*h]
		for j := range a {
			x, y := a[j], b[j]
			a[j], b[j] = x+y, x-y
		}
	}
}
