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

// quantizeInt8Ref is QuantizeInt8 as first written (math.Round per value, a finiteness
// test per value): the reference the faster one must match bit for bit.
func quantizeInt8Ref(v []float32, q []int8) (float32, error) {
	var m float32
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return 0, &VectorError{Len: len(v), Dim: len(v), Index: i, Value: x}
		}
		m = max(m, float32(math.Abs(float64(x))))
	}
	s := Int8Scale(m)
	for i, x := range v {
		q[i] = 0 // (a zero vector: scale 0, every value 0)
		if s != 0 {
			q[i] = int8(max(-127, min(127, math.Round(float64(x)*(1/float64(s))))))
		}
	}
	return s, nil
}

// TestQuantizeInt8MatchesReference: the same scale, values and errors as the reference on
// random vectors of every magnitude, on values that fall on the grid's half steps (ties
// round away from zero), just beside them, at the clamp, subnormals, signed zeros, and
// non-finite values anywhere (the first one is reported).
func TestQuantizeInt8MatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var vecs [][]float32
	for range 3000 {
		d := 1 + rng.IntN(1000)
		mag := math.Pow(10, float64(rng.IntN(80)-40))
		v := make([]float32, d)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * mag)
		}
		vecs = append(vecs, v)
	}
	for _, m := range []float32{1, 3.7, 1e-3, 1e30, 1e-39, math.SmallestNonzeroFloat32, math.MaxFloat32} {
		s := Int8Scale(m)
		v := []float32{m, -m, 0, float32(math.Copysign(0, -1))}
		for k := -127; k <= 127; k++ {
			half := (float32(k) + 0.5) * s
			v = append(v, half, -half, math.Nextafter32(half, 0), math.Nextafter32(half, float32(math.Inf(1))), float32(k)*s)
		}
		vecs = append(vecs, v)
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	vecs = append(vecs, []float32{1, 2, nan, inf}, []float32{inf, nan}, []float32{-inf}, []float32{0, 0, nan},
		[]float32{math.MaxFloat32, -math.MaxFloat32}, []float32{}, []float32{0})
	for n, v := range vecs {
		want, got := make([]int8, len(v)), make([]int8, len(v))
		ws, werr := quantizeInt8Ref(v, want)
		gs, gerr := QuantizeInt8(v, got)
		if werr != nil || gerr != nil {
			var we, ge *VectorError
			if !errors.As(werr, &we) || !errors.As(gerr, &ge) || *we != *ge && !(we.Index == ge.Index && we.Value != we.Value && ge.Value != ge.Value) {
				t.Fatalf("vector %d: err %v, want %v", n, gerr, werr)
			}
			continue
		}
		if math.Float32bits(gs) != math.Float32bits(ws) || !slices.Equal(got, want) {
			for i := range v {
				if got[i] != want[i] {
					t.Fatalf("vector %d: value %d (%v, scale %v): %d, want %d", n, i, v[i], ws, got[i], want[i])
				}
			}
			t.Fatalf("vector %d: scale %v, want %v", n, gs, ws)
		}
	}
}

func BenchmarkQuantizeInt8_768(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	v := make([]float32, 768)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	q := make([]int8, len(v))
	for b.Loop() {
		if _, err := QuantizeInt8(v, q); err != nil {
			b.Fatal(err)
		}
	}
}
