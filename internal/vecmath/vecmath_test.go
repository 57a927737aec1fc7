package vecmath

import (
	"errors"
	"math"
	"testing"
)

func TestCheck(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, c := range []struct {
		name  string
		v     []float32
		dim   int
		want  error
		index int
	}{
		{"ok", []float32{1, 2, 3}, 3, nil, 0},
		{"empty ok", nil, 0, nil, 0},
		{"short", []float32{1, 2}, 3, ErrDim, -1},
		{"long", []float32{1, 2, 3, 4}, 3, ErrDim, -1},
		{"nan", []float32{1, nan, 3}, 3, ErrNonFinite, 1},
		{"+inf", []float32{inf, 2, 3}, 3, ErrNonFinite, 0},
		{"-inf", []float32{1, 2, -inf}, 3, ErrNonFinite, 2},
		{"length before values", []float32{nan}, 3, ErrDim, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Check(c.v, c.dim)
			if c.want == nil {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("Check: %v, want %v", err, c.want)
			}
			var ve *VectorError
			if !errors.As(err, &ve) || ve.Index != c.index || ve.Len != len(c.v) || ve.Dim != c.dim {
				t.Fatalf("Check: %#v, want index %d", ve, c.index)
			}
			if err.Error() == "" {
				t.Fatal("empty message")
			}
		})
	}
}

func TestDotCosine(t *testing.T) {
	for _, c := range []struct {
		name   string
		a, b   []float32
		dot    float32
		cosine float64
	}{
		{"parallel", []float32{1, 2, 3}, []float32{2, 4, 6}, 28, 1},
		{"orthogonal", []float32{1, 0}, []float32{0, 5}, 0, 0},
		{"opposite", []float32{1, 1}, []float32{-1, -1}, -2, -1},
		{"zero", []float32{0, 0}, []float32{1, 2}, 0, 0},
		{"b longer", []float32{3}, []float32{4, 100}, 12, 1},
		{"empty", nil, nil, 0, 0},
	} {
		if got := Dot(c.a, c.b); got != c.dot {
			t.Errorf("%s: Dot = %v, want %v", c.name, got, c.dot)
		}
		if got := Cosine(c.a, c.b); math.Abs(got-c.cosine) > 1e-12 {
			t.Errorf("%s: Cosine = %v, want %v", c.name, got, c.cosine)
		}
	}
}

func TestNormalizeInto(t *testing.T) {
	v := []float32{3, 4}
	dst := make([]float32, 2)
	NormalizeInto(dst, v)
	if dst[0] != 0.6 || dst[1] != 0.8 || v[0] != 3 {
		t.Fatalf("NormalizeInto = %v (src %v)", dst, v)
	}
	z := []float32{0, 0, 0}
	NormalizeInto(z, z)
	for _, x := range z {
		if x != 0 {
			t.Fatalf("zero vector became %v", z)
		}
	}
	in := []float32{1, 1, 1, 1}
	NormalizeInto(in, in)
	if in[0] != 0.5 || in[3] != 0.5 {
		t.Fatalf("in place: %v", in)
	}
}

func TestSigmoid(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{
		{0, 0.5}, {2, 0.8807970779778823}, {-2, 0.11920292202211755}, {-1000, 0}, {1000, 1},
	} {
		if got := Sigmoid(c.in); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Sigmoid(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if got := Sigmoid(math.NaN()); !math.IsNaN(got) {
		t.Errorf("Sigmoid(NaN) = %v", got)
	}
}

func BenchmarkCheck384(b *testing.B) {
	v := make([]float32, 384)
	for i := range v {
		v[i] = float32(i)
	}
	for b.Loop() {
		if Check(v, 384) != nil {
			b.Fatal("rejected")
		}
	}
}

// TestCheckFindsEveryNonFinite puts each non-finite value at every position of vectors
// whose lengths cover the four-wide fast path and its tail: Check reports it at that
// position, and passes the finite vector (negative values and zeros included).
func TestCheckFindsEveryNonFinite(t *testing.T) {
	bad := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	for _, n := range []int{1, 3, 4, 5, 8, 384, 385} {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(i%7) - 3 // negatives, zeros, positives
		}
		v[0] = -math.MaxFloat32
		if err := Check(v, n); err != nil {
			t.Fatalf("n=%d finite: %v", n, err)
		}
		for i := range v {
			for _, b := range bad {
				keep := v[i]
				v[i] = b
				err := Check(v, n)
				v[i] = keep
				var ve *VectorError
				if !errors.As(err, &ve) || ve.Index != i || !errors.Is(err, ErrNonFinite) {
					t.Fatalf("n=%d %v at %d: got %v", n, b, i, err)
				}
			}
		}
	}
}
