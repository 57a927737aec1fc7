package vectorstore

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFlatKernels checks the dot-product kernels (SIMD where available, and the portable
// one) against float64 on every tail length.
func TestFlatKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for dim := 1; dim <= 100; dim++ {
		for _, n := range []int{1, 2, 5} {
			q := make([]float32, dim)
			rows := make([]float32, n*dim+3) // spare floats past the end must not be read into the result
			for i := range q {
				q[i] = float32(rng.NormFloat64())
			}
			for i := range rows {
				rows[i] = float32(rng.NormFloat64())
			}
			want := make([]float64, n)
			scale := make([]float64, n)
			for i := range n {
				for j := range dim {
					p := float64(q[j]) * float64(rows[i*dim+j])
					want[i] += p
					scale[i] += math.Abs(p)
				}
			}
			for _, kern := range []struct {
				name string
				f    func(q, rows, out []float32)
			}{{"dispatch", flatDots}, {"generic", flatDotsGeneric}} {
				out := make([]float32, n+1)
				out[n] = 42 // must stay untouched
				kern.f(q, rows[:n*dim], out[:n])
				for i := range n {
					if math.Abs(float64(out[i])-want[i]) > 1e-6*scale[i]+1e-7 {
						t.Fatalf("%s dim=%d n=%d row %d: %v, want %v", kern.name, dim, n, i, out[i], want[i])
					}
				}
				if out[n] != 42 {
					t.Fatalf("%s dim=%d n=%d wrote past out", kern.name, dim, n)
				}
			}
		}
	}
	if !flatAVX2 {
		t.Logf("AVX2+FMA kernel not in use on this CPU/arch: dispatch tested the portable kernel")
	}
}

func TestFlatSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	for _, n := range []int{0, 1, 7, 63, 64, 65, 1000, 4099} {
		x := make([]float32, n)
		want := 0.0
		for i := range x {
			x[i] = float32(rng.Float64())
			want += float64(x[i])
		}
		for name, f := range map[string]func([]float32) float32{"dispatch": flatSum, "generic": flatSumGeneric} {
			if got := f(x); math.Abs(float64(got)-want) > 1e-5*want+1e-6 {
				t.Errorf("%s n=%d: %v, want %v", name, n, got, want)
			}
		}
	}
}

func TestFlatHeapOrder(t *testing.T) {
	ids := []string{"c", "a", "b", "d"}
	h := newFlatHeap(ids, 3)
	h.Offer(1, 0)
	h.Offer(float32(math.NaN()), 3)
	h.Offer(1, 1)
	h.Offer(2, 3)
	h.Offer(1, 2)
	got := flatResults(&h, ids)
	want := []Hit{{ID: "d", Score: 2}, {ID: "a", Score: 1}, {ID: "b", Score: 1}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}
