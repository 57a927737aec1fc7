package vecmath

import (
	"errors"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// naiveRotate is the reference: the dense matrix product of each round,
// v <- (1/sqrt(n)) H D_k v, with H[i][j] = (-1)^popcount(i&j), O(n^2) a round.
func naiveRotate(r *Rotation, src []float32) []float64 {
	n := r.Padded()
	v := make([]float64, n)
	for i, x := range src {
		v[i] = float64(x)
	}
	for k := range RotationRounds {
		for i := range v {
			if r.flips[k][i] != 0 {
				v[i] = -v[i]
			}
		}
		out := make([]float64, n)
		for i := range n {
			var s float64
			for j := range n {
				if bits.OnesCount(uint(i&j))%2 == 1 {
					s -= v[j]
				} else {
					s += v[j]
				}
			}
			out[i] = s / math.Sqrt(float64(n))
		}
		v = out
	}
	return v
}

func randVec(rng *rand.Rand, d int) []float32 {
	v := make([]float32, d)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

func TestRotationMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, d := range []int{1, 2, 3, 5, 8, 13, 64, 100} {
		r, err := NewRotation(d, uint64(d)*31+1)
		if err != nil {
			t.Fatal(err)
		}
		if want := 1 << bits.Len(uint(d-1)); r.Padded() != want || r.Dim() != d {
			t.Fatalf("d %d: dim %d padded %d, want %d", d, r.Dim(), r.Padded(), want)
		}
		for range 4 {
			src := randVec(rng, d)
			got := r.Apply(make([]float32, r.Padded()), src)
			want := naiveRotate(r, src)
			for i := range got {
				if math.Abs(float64(got[i])-want[i]) > 1e-5*(1+math.Abs(want[i])) {
					t.Fatalf("d %d: component %d = %v, the dense product gives %v", d, i, got[i], want[i])
				}
			}
		}
	}
}

func TestRotationPreservesNormsAndDots(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, d := range []int{7, 384, 768, 1000} {
		r, err := NewRotation(d, 42)
		if err != nil {
			t.Fatal(err)
		}
		a, b := randVec(rng, d), randVec(rng, d)
		ra, rb := r.Apply(make([]float32, r.Padded()), a), r.Apply(make([]float32, r.Padded()), b)
		dot := func(x, y []float32) float64 {
			var s float64
			for i := range x {
				s += float64(x[i]) * float64(y[i])
			}
			return s
		}
		for _, c := range []struct {
			name      string
			got, want float64
		}{
			{"|a|^2", dot(ra, ra), dot(a, a)},
			{"|b|^2", dot(rb, rb), dot(b, b)},
			{"a.b", dot(ra, rb), dot(a, b)},
		} {
			if math.Abs(c.got-c.want) > 1e-4*math.Sqrt(dot(a, a)*dot(b, b)) {
				t.Fatalf("d %d: %s = %v after the rotation, %v before", d, c.name, c.got, c.want)
			}
		}
		// A rotation, not the identity: the mass of a basis vector is spread out.
		e := make([]float32, d)
		e[0] = 1
		re := r.Apply(make([]float32, r.Padded()), e)
		if m := slices.Max(re); m > 0.5 {
			t.Fatalf("d %d: e0 rotates to a vector with a component %v (not spread)", d, m)
		}
	}
}

func TestRotationDeterministicPerSeed(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	v := randVec(rng, 96)
	r1, _ := NewRotation(96, 5)
	r2, _ := NewRotation(96, 5)
	r3, _ := NewRotation(96, 6)
	a := r1.Apply(make([]float32, 128), v)
	b := r2.Apply(make([]float32, 128), v)
	c := r3.Apply(make([]float32, 128), v)
	if !slices.Equal(a, b) {
		t.Fatal("the same seed gave two rotations")
	}
	if slices.Equal(a, c) {
		t.Fatal("seeds 5 and 6 gave the same rotation")
	}
	if r1.Seed() != 5 {
		t.Fatalf("Seed() = %d", r1.Seed())
	}
}

func TestRotationBadDim(t *testing.T) {
	for _, d := range []int{0, -1, MaxRotationDim + 1} {
		if _, err := NewRotation(d, 1); !errors.Is(err, ErrRotation) {
			t.Fatalf("dim %d: err %v, want ErrRotation", d, err)
		}
	}
}

func BenchmarkRotation768(b *testing.B) {
	r, _ := NewRotation(768, 1)
	v := randVec(rand.New(rand.NewPCG(1, 1)), 768)
	dst := make([]float32, r.Padded())
	for b.Loop() {
		r.Apply(dst, v)
	}
}

// walshHadamardRef is the transform stage by stage, as first written: the reference the
// fused first stages must match bit for bit.
func walshHadamardRef(v []float32) {
	n := len(v)
	for h := 1; h < n; h *= 2 {
		for i := 0; i < n; i += 2 * h {
			for j := i; j < i+h; j++ {
				x, y := v[j], v[j+h]
				v[j], v[j+h] = x+y, x-y
			}
		}
	}
}

// TestWalshHadamardMatchesReference: bit-identical to the stage-by-stage transform for
// every power-of-two length from 1 to 4,096, on random values of mixed magnitudes.
func TestWalshHadamardMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 1; n <= 4096; n *= 2 {
		for range 20 {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(12)-6)))
			}
			want := slices.Clone(v)
			walshHadamardRef(want)
			walshHadamard(v)
			for i := range v {
				if math.Float32bits(v[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n %d: component %d = %v, want %v", n, i, v[i], want[i])
				}
			}
		}
	}
}
