package vecmath

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestQuantizeInt8(t *testing.T) {
	tests := []struct {
		name  string
		v     []float32
		scale float32
		q     []int8
	}{
		{"zero", []float32{0, 0, 0}, 0, []int8{0, 0, 0}},
		{"empty", nil, 0, []int8{}},
		{"max maps to 127", []float32{1.27, -0.635, 0}, Int8Scale(1.27), []int8{127, -64, 0}},
		{"negative max", []float32{-2, 1, 0.5}, Int8Scale(2), []int8{-127, 64, 32}},
		{"one value", []float32{3}, Int8Scale(3), []int8{127}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := make([]int8, len(tc.v))
			s, err := QuantizeInt8(tc.v, q)
			if err != nil {
				t.Fatal(err)
			}
			if s != tc.scale || !slices.Equal(q, tc.q) {
				t.Fatalf("scale %v q %v, want %v %v", s, q, tc.scale, tc.q)
			}
		})
	}
}

func TestInt8ScaleBits(t *testing.T) {
	for _, m := range []float32{1, 0.1, 3.3e-5, 12345.678, math.MaxFloat32, math.SmallestNonzeroFloat32, 1e-40} {
		s := Int8Scale(m)
		if s <= 0 || math.Float32bits(s)&0xff != 0 || math.IsInf(float64(127*s), 0) {
			t.Fatalf("Int8Scale(%v) = %v (bits %08x)", m, s, math.Float32bits(s))
		}
		if r := float64(m) / float64(s); m > 1e-30 && (r < 126.99 || r > 127.01) {
			t.Fatalf("Int8Scale(%v) = %v: max maps to %v", m, s, r)
		}
	}
	if Int8Scale(0) != 0 {
		t.Fatal("scale of a zero vector is not 0")
	}
}

func TestQuantizeInt8NonFinite(t *testing.T) {
	for _, x := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		_, err := QuantizeInt8([]float32{1, x}, make([]int8, 2))
		var ve *VectorError
		if !errors.Is(err, ErrNonFinite) || !errors.As(err, &ve) || ve.Index != 1 {
			t.Fatalf("%v: err %v", x, err)
		}
		if _, err := RoundInt8([]float32{x}); !errors.Is(err, ErrNonFinite) {
			t.Fatalf("RoundInt8(%v): %v", x, err)
		}
	}
}

// TestRoundInt8Idempotent: a rounded vector rounds to itself (bit for bit), its values are
// within half a step of the input's, and the dequantized products are exact.
func TestRoundInt8Idempotent(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		d := 1 + rng.IntN(800)
		mag := math.Pow(10, float64(rng.IntN(60)-30))
		v := make([]float32, d)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * mag)
		}
		r, err := RoundInt8(v)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := RoundInt8(r)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(r, r2) {
			t.Fatalf("trial %d (d %d, mag %g): rounding is not idempotent", trial, d, mag)
		}
		q := make([]int8, d)
		s, _ := QuantizeInt8(v, q)
		for i := range v {
			if diff := math.Abs(float64(v[i]) - float64(r[i])); diff > 0.5001*float64(s) {
				t.Fatalf("trial %d: value %d %v rounds to %v (step %v)", trial, i, v[i], r[i], s)
			}
			if float64(r[i]) != float64(q[i])*float64(s) {
				t.Fatalf("trial %d: value %d: %v x %v is not exact in float32", trial, i, q[i], s)
			}
		}
	}
}
