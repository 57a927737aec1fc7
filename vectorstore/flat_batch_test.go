package vectorstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/agentmem/memory/internal/vectest"
)

// setBatchBlockBytes shrinks (or grows) the batch search's vector block for a test.
func setBatchBlockBytes(t *testing.T, b int) {
	old := flatBatchBlockBytes
	flatBatchBlockBytes = b
	t.Cleanup(func() { flatBatchBlockBytes = old })
}

// sameHits fails unless got and want hold the same ids in the same order with bit-identical
// scores.
func sameHits(t *testing.T, what string, got, want []Hit) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d hits, want %d\ngot  %v\nwant %v", what, len(got), len(want), got, want)
	}
	for i := range want {
		if got[i].ID != want[i].ID || math.Float64bits(got[i].Score) != math.Float64bits(want[i].Score) {
			t.Fatalf("%s: hit %d is %v, want %v\ngot  %v\nwant %v", what, i, got[i], want[i], got, want)
		}
	}
}

// TestFlatSearchBatchMatchesSearch is the property test of the batch search: over random
// sizes, dimensions (with and without a tail past a multiple of 8), k (including more than
// the index holds), metrics, thread counts, block sizes, filters (none, some, none accepted)
// and heavy ties (vectors with few distinct values, duplicated vectors, zero vectors), each
// batch answer equals Search's for that query: same ids, same order, the same float bits.
// It runs with the AVX2 kernels (where the CPU has them) and with the portable ones.
func TestFlatSearchBatchMatchesSearch(t *testing.T) {
	for _, generic := range []bool{false, true} {
		t.Run(fmt.Sprintf("generic=%v", generic), func(t *testing.T) {
			useGenericKernel(t, generic)
			rng := rand.New(rand.NewPCG(7, uint64(len(fmt.Sprint(generic)))))
			for iter := range 120 {
				dim := []int{1, 3, 8, 13, 16, 24, 31, 40, 67}[rng.IntN(9)]
				n := rng.IntN(300)
				if iter%10 == 0 {
					n = rng.IntN(2000)
				}
				nq := 1 + rng.IntN(40)
				k := 1 + rng.IntN(12)
				if rng.IntN(5) == 0 {
					k = n + 1 + rng.IntN(5)
				}
				metric := Cosine
				if rng.IntN(2) == 0 {
					metric = InnerProduct
				}
				threads := rng.IntN(4)
				setBatchBlockBytes(t, 4*dim*(1+rng.IntN(40)))
				ties := rng.IntN(3) // 0: normal values; 1: few distinct values; 2: duplicates
				gen := func() []float32 {
					v := make([]float32, dim)
					for j := range v {
						if ties == 1 {
							v[j] = float32(rng.IntN(3) - 1)
						} else {
							v[j] = float32(rng.NormFloat64())
						}
					}
					return v
				}
				ids := make([]string, n)
				vecs := make([][]float32, n)
				for i := range n {
					ids[i] = strconv.Itoa(rng.IntN(1_000_000)) + "-" + strconv.Itoa(i) // ties break by these ids
					switch {
					case ties == 2 && i > 0 && rng.IntN(2) == 0:
						vecs[i] = vecs[rng.IntN(i)]
					case rng.IntN(50) == 0:
						vecs[i] = make([]float32, dim) // zero vector
					default:
						vecs[i] = gen()
					}
				}
				qs := make([][]float32, nq)
				for i := range qs {
					if n > 0 && rng.IntN(4) == 0 {
						qs[i] = vecs[rng.IntN(n)]
					} else {
						qs[i] = gen()
					}
				}
				var f Filter
				switch rng.IntN(4) {
				case 1:
					mod := 2 + rng.IntN(3)
					f = func(id string) bool { return len(id)%mod != 0 }
				case 2:
					f = func(string) bool { return false }
				}
				cfg := IndexConfig{Backend: "flat", Dim: dim, Metric: metric, Params: map[string]int{"threads": threads}}
				idx, err := newFlatIndex(cfg)
				if err != nil {
					t.Fatal(err)
				}
				ctx := context.Background()
				if err := idx.Add(ctx, ids, vecs); err != nil {
					t.Fatal(err)
				}
				// Delete a few so slots are reshuffled.
				if n > 10 {
					if err := idx.Delete(ctx, ids[rng.IntN(n)], ids[rng.IntN(n)]); err != nil {
						t.Fatal(err)
					}
				}
				got, err := idx.SearchBatch(ctx, qs, k, f)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != nq {
					t.Fatalf("%d result lists for %d queries", len(got), nq)
				}
				for i, q := range qs {
					want, err := idx.Search(ctx, q, k, f)
					if err != nil {
						t.Fatal(err)
					}
					what := fmt.Sprintf("iter %d (n=%d dim=%d nq=%d k=%d %s threads=%d block=%d ties=%d filter=%v) query %d",
						iter, n, dim, nq, k, metric, threads, flatBatchBlockBytes, ties, f != nil, i)
					sameHits(t, what, got[i], want)
				}
			}
		})
	}
}

// TestFlatSearchBatchLargeK checks that a batch whose queries x k exceed the per-pass budget
// is answered in several passes with the same results.
func TestFlatSearchBatchLargeK(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	const dim = 8
	n := 1000
	idx, err := newFlatIndex(IndexConfig{Dim: dim})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := idx.Add(ctx, vectest.IDs(n), vectest.RandVecs(rng, n, dim)); err != nil {
		t.Fatal(err)
	}
	k := n
	nq := flatBatchMaxItems/k + 7 // more than one pass
	qs := vectest.RandVecs(rng, nq, dim)
	got, err := idx.SearchBatch(ctx, qs, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, nq / 2, nq - 1} {
		want, err := idx.Search(ctx, qs[i], k, nil)
		if err != nil {
			t.Fatal(err)
		}
		sameHits(t, fmt.Sprintf("query %d", i), got[i], want)
	}
}

// TestFlatSearchBatchInput covers the edges: bad queries fail the batch with a typed error
// naming the query, k <= 0 and an empty index give empty lists, a cancelled context stops it.
func TestFlatSearchBatchInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	ctx := context.Background()
	idx, err := newFlatIndex(IndexConfig{Dim: 4})
	if err != nil {
		t.Fatal(err)
	}
	// Empty index.
	res, err := idx.SearchBatch(ctx, vectest.RandVecs(rng, 2, 4), 3, nil)
	if err != nil || len(res) != 2 || len(res[0]) != 0 || len(res[1]) != 0 {
		t.Fatalf("empty index: %v, %v", res, err)
	}
	if err := idx.Add(ctx, vectest.IDs(50), vectest.RandVecs(rng, 50, 4)); err != nil {
		t.Fatal(err)
	}
	_, err = idx.SearchBatch(ctx, [][]float32{{1, 2, 3, 4}, {1, 2, 3}}, 3, nil)
	if !errors.Is(err, ErrDimMismatch) || !containsStr(err.Error(), "query 1") {
		t.Fatalf("short query: %v", err)
	}
	_, err = idx.SearchBatch(ctx, [][]float32{{1, 2, float32(math.NaN()), 4}}, 3, nil)
	if !errors.Is(err, ErrNonFinite) {
		t.Fatalf("NaN query: %v", err)
	}
	res, err = idx.SearchBatch(ctx, vectest.RandVecs(rng, 3, 4), 0, nil)
	if err != nil || len(res) != 3 || len(res[2]) != 0 {
		t.Fatalf("k=0: %v, %v", res, err)
	}
	res, err = idx.SearchBatch(ctx, nil, 3, nil)
	if err != nil || len(res) != 0 {
		t.Fatalf("no queries: %v, %v", res, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := idx.SearchBatch(cctx, vectest.RandVecs(rng, 3, 4), 3, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	// Cancelled from inside the scan (the filter cancels on its first call): the workers stop
	// at their next block.
	setBatchBlockBytes(t, 4*4*4)
	cctx, cancel = context.WithCancel(ctx)
	defer cancel()
	f := func(string) bool { cancel(); return true }
	if _, err := idx.SearchBatch(cctx, vectest.RandVecs(rng, 3, 4), 3, f); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled mid-scan: %v", err)
	}
}

func containsStr(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestSearchBatchAnyIndex checks the package function on the backends without a batch search
// of their own (chromem, faiss: one Search per query) and on the flat index (its
// BatchSearcher).
func TestSearchBatchAnyIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	ctx := context.Background()
	const dim = 16
	ids, vecs := vectest.IDs(200), vectest.RandVecs(rng, 200, dim)
	qs := vectest.RandVecs(rng, 25, dim)
	for _, backend := range Backends() { // flat, chromem, and faiss under its build tag
		idx, err := NewIndex(IndexConfig{Backend: backend, Dim: dim})
		if err != nil {
			t.Fatal(err)
		}
		defer idx.Close()
		if err := idx.Add(ctx, ids, vecs); err != nil {
			t.Fatal(err)
		}
		f := func(id string) bool { return id[len(id)-1] != '3' }
		got, err := SearchBatch(ctx, idx, qs, 5, f)
		if err != nil {
			t.Fatal(err)
		}
		for i, q := range qs {
			want, err := idx.Search(ctx, q, 5, f)
			if err != nil {
				t.Fatal(err)
			}
			sameHits(t, fmt.Sprintf("%s query %d", backend, i), got[i], want)
		}
		_, err = SearchBatch(ctx, idx, [][]float32{qs[0], {1}}, 5, nil)
		if !errors.Is(err, ErrDimMismatch) {
			t.Fatalf("%s: bad query: %v", backend, err)
		}
	}
}
