package vecmath

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// TestHalfRoundTrip: every finite float16 converts to float32 and back to itself.
func TestHalfRoundTrip(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		if h&0x7c00 == 0x7c00 {
			continue // Inf and NaN
		}
		f := HalfFloat(h)
		got, ok := HalfBits(f)
		if !ok || got != h {
			t.Fatalf("%#04x -> %v -> %#04x (ok %v)", h, f, got, ok)
		}
	}
}

// nearestHalf is the float16 nearest f, ties to the even one, found by search (the
// reference HalfBits is held to).
func nearestHalf(f float32) (uint16, bool) {
	x := math.Abs(float64(f))
	best, bestD := uint16(0), math.Inf(1)
	lo, hi := 0, 0x7bff // the finite magnitudes, in increasing order
	for lo < hi {       // the largest magnitude <= x
		mid := (lo + hi + 1) / 2
		if float64(HalfFloat(uint16(mid))) <= x {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	for _, c := range []int{lo, lo + 1} {
		if c > 0x7bff {
			continue
		}
		d := math.Abs(float64(HalfFloat(uint16(c))) - x)
		if d < bestD || d == bestD && c&1 == 0 {
			best, bestD = uint16(c), d
		}
	}
	// past MaxHalf: IEEE rounds to Inf from MaxHalf + half an ulp (2^15 * 2^-10 / 2 = 16) on
	if x >= MaxHalf+16 {
		return 0, false
	}
	if f < 0 || f == 0 && math.Signbit(float64(f)) {
		best |= 0x8000
	}
	return best, true
}

func TestHalfBitsNearest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 0.5, MaxHalf, -MaxHalf, MaxHalf + 15.99, MaxHalf + 16,
		1.0 / (1 << 24), 1.0 / (1 << 25), 1.5 / (1 << 25), 3.0 / (1 << 25), 6.1e-5, 6.103515625e-05, 1 + 1.0/2048, 1 + 3.0/2048}
	for range 200000 {
		switch r.IntN(3) {
		case 0: // unit-vector values
			cases = append(cases, float32(r.NormFloat64()*0.05))
		case 1: // any float32 magnitude in float16's reach
			cases = append(cases, float32(math.Ldexp(r.Float64()*2-1, r.IntN(44)-26)))
		default: // ties: a float16 and the next, halfway
			h := uint16(r.IntN(0x7bff))
			a, b := float64(HalfFloat(h)), float64(HalfFloat(h+1))
			cases = append(cases, float32((a+b)/2))
		}
	}
	for _, f := range cases {
		want, wok := nearestHalf(f)
		got, ok := HalfBits(f)
		if ok != wok || ok && got != want {
			t.Fatalf("HalfBits(%v (%#08x)) = %#04x, %v; want %#04x, %v", f, math.Float32bits(f), got, ok, want, wok)
		}
	}
}

func TestRoundHalf(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []float32
		err  bool
	}{
		{"unit", []float32{0.6, -0.8, 0}, false},
		{"max", []float32{MaxHalf, -MaxHalf}, false},
		{"too large", []float32{1, 70000}, true},
		{"inf", []float32{float32(math.Inf(-1))}, true},
		{"nan", []float32{float32(math.NaN())}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]float32(nil), tc.in...)
			out, err := RoundHalf(in)
			if tc.err {
				if !errors.Is(err, ErrHalfRange) {
					t.Fatalf("err %v, want ErrHalfRange", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, f := range out {
				// float16 keeps 11 significant bits: relative error <= 2^-11
				if d := math.Abs(float64(f - tc.in[i])); d > math.Abs(float64(tc.in[i]))/2048 {
					t.Fatalf("value %d: %v -> %v", i, tc.in[i], f)
				}
				if in[i] != tc.in[i] {
					t.Fatal("RoundHalf changed its input")
				}
			}
		})
	}
}

// TestRoundHalfMatchesHalfBits holds HalfBits and RoundHalf (which round float16 normals
// in float32 bits, roundNormal) to the case-by-case definition (halfBitsSlow, then
// HalfFloat), value by value: every float32 exponent near float16's
// range with mantissas at the rounding edges (ties, one either side, all ones) and random
// bit patterns, both signs.
func TestRoundHalfMatchesHalfBits(t *testing.T) {
	var in []float32
	for e := uint32(100); e <= 145; e++ {
		for _, m := range []uint32{0, 1, 0xfff, 0x1000, 0x1001, 0x2000, 0x3000, 0x7fefff, 0x7ff000, 0x7fffff, 0x400000} {
			for _, s := range []uint32{0, 1 << 31} {
				in = append(in, math.Float32frombits(s|e<<23|m))
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		b := rng.Uint32()
		if e := b >> 23 & 0xff; e == 0xff {
			continue // NaN and Inf: errors, tested above
		}
		in = append(in, math.Float32frombits(b))
	}
	for _, f := range in {
		h, ok := halfBitsSlow(math.Float32bits(f))
		if hf, okf := HalfBits(f); hf != h || okf != ok {
			t.Fatalf("%v (%#08x): HalfBits %#04x %v, want %#04x %v", f, math.Float32bits(f), hf, okf, h, ok)
		}
		got, err := RoundHalf([]float32{f})
		if !ok {
			if !errors.Is(err, ErrHalfRange) {
				t.Fatalf("%v (%#08x): err %v, want ErrHalfRange", f, math.Float32bits(f), err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v (%#08x): %v", f, math.Float32bits(f), err)
		}
		if want := HalfFloat(h); math.Float32bits(got[0]) != math.Float32bits(want) {
			t.Fatalf("%v (%#08x): %v (%#08x), want %v (%#08x)", f, math.Float32bits(f), got[0], math.Float32bits(got[0]), want, math.Float32bits(want))
		}
	}
}
