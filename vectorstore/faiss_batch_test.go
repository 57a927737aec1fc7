//go:build faiss

package vectorstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestFaissSearchBatchMatchesSearch: for every kind, with ties, replaced and deleted ids
// (HNSW tombstones), small and large k and a filter, SearchBatch returns exactly what Search
// returns query by query.
func TestFaissSearchBatchMatchesSearch(t *testing.T) {
	ctx := context.Background()
	const dim, n = 16, 1200
	rng := rand.New(rand.NewPCG(7, 8))
	vecs := faissClustered(rng, n, dim, 12, 0.3)
	for i := 0; i < 40; i++ { // exact duplicates: tied scores at every cut-off
		vecs[n-1-i] = append([]float32(nil), vecs[i]...)
	}
	ids := faissIDs(n)
	queries := faissClustered(rng, 60, dim, 12, 0.3)
	queries = append(queries, vecs[3], vecs[5]) // queries whose best hits tie
	for _, cfg := range faissKinds(dim) {
		t.Run(cfg.Factory, func(t *testing.T) {
			x := newFaissTest(t, cfg)
			if err := x.Add(ctx, ids, vecs); err != nil {
				t.Fatal(err)
			}
			// Replace some, delete some: IVF and Flat remove from faiss, HNSW keeps tombstones.
			if err := x.Add(ctx, ids[100:150], vecs[200:250]); err != nil {
				t.Fatal(err)
			}
			if err := x.Delete(ctx, ids[300:360]...); err != nil {
				t.Fatal(err)
			}
			even := func(id string) bool { return id[len(id)-1]%2 == 0 }
			for _, k := range []int{1, 10, 37, 2000} {
				for _, f := range []Filter{nil, even} {
					got, err := x.SearchBatch(ctx, queries, k, f)
					if err != nil {
						t.Fatal(err)
					}
					if len(got) != len(queries) {
						t.Fatalf("k=%d: %d results for %d queries", k, len(got), len(queries))
					}
					for i, q := range queries {
						want, err := x.Search(ctx, q, k, f)
						if err != nil {
							t.Fatal(err)
						}
						if msg := faissSameHits(got[i], want, 1e-5); msg != "" {
							t.Fatalf("k=%d filter=%v query %d: %s\nbatch  %v\nsearch %v", k, f != nil, i, msg, got[i], want)
						}
					}
				}
			}
		})
	}
}

// faissSameHits compares two rankings of one query made by different faiss code paths (a
// matrix product sums in another order than the one-query scan): same length, scores equal
// within tol position by position, and the same ids but for those within tol of the last
// score (near-ties at the cut-off may swap). It returns "" or what differs.
func faissSameHits(got, want []Hit, tol float64) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d hits, want %d", len(got), len(want))
	}
	if len(got) == 0 {
		return ""
	}
	for i := range got {
		if math.Abs(got[i].Score-want[i].Score) > tol {
			return fmt.Sprintf("score %d: %v, want %v", i, got[i].Score, want[i].Score)
		}
	}
	cut := want[len(want)-1].Score + tol
	firm := map[string]bool{}
	for _, h := range want {
		if h.Score > cut {
			firm[h.ID] = true
		}
	}
	for _, h := range got {
		if h.Score > cut && !firm[h.ID] {
			return fmt.Sprintf("%q ranks in the batch answer, not in Search's", h.ID)
		}
		delete(firm, h.ID)
	}
	if len(firm) > 0 {
		return fmt.Sprintf("%d ids of Search's answer missing", len(firm))
	}
	return ""
}

// TestFaissSearchBatchInput: a bad query names its position and fails the batch; k <= 0 and
// no queries give empty answers; an untrained IVF index answers from its buffer.
func TestFaissSearchBatchInput(t *testing.T) {
	ctx := context.Background()
	x := newFaissTest(t, IndexConfig{Dim: 4, Factory: "IVF16,Flat"})
	if err := x.Add(ctx, []string{"a", "b"}, [][]float32{{1, 0, 0, 0}, {0, 1, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	_, err := x.SearchBatch(ctx, [][]float32{{1, 0, 0, 0}, {1, 0}}, 3, nil)
	if !errors.Is(err, ErrDimMismatch) || !strings.Contains(err.Error(), "query 1") {
		t.Fatalf("short query: err = %v, want ErrDimMismatch naming query 1", err)
	}
	if got, err := x.SearchBatch(ctx, [][]float32{{1, 0, 0, 0}}, 0, nil); err != nil || len(got) != 1 || got[0] != nil {
		t.Fatalf("k=0: %v, %v", got, err)
	}
	if got, err := x.SearchBatch(ctx, nil, 3, nil); err != nil || len(got) != 0 {
		t.Fatalf("no queries: %v, %v", got, err)
	}
	got, err := x.SearchBatch(ctx, [][]float32{{0, 1, 0, 0}}, 1, nil)
	if err != nil || len(got) != 1 || len(got[0]) != 1 || got[0][0].ID != "b" {
		t.Fatalf("untrained IVF: %v, %v", got, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := x.SearchBatch(cctx, [][]float32{{1, 0, 0, 0}}, 1, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: err = %v", err)
	}
}

// BenchmarkFaissSearchBatch compares one SearchBatch call with per-query Search calls over
// the same 2,560 queries (CPU; the GPU figures come from BenchmarkFaissGPU).
func BenchmarkFaissSearchBatch(b *testing.B) {
	ctx := context.Background()
	const dim, n, nq, k = 384, 100000, 2560, 10
	rng := rand.New(rand.NewPCG(1, 2))
	vecs := faissClustered(rng, n, dim, 1000, 0.5)
	qs := faissClustered(rng, nq, dim, 1000, 0.5)
	x, err := newFaissIndex(IndexConfig{Dim: dim})
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	if err := x.Add(ctx, faissIDs(n), vecs); err != nil {
		b.Fatal(err)
	}
	b.Run(fmt.Sprintf("batch-%d", nq), func(b *testing.B) {
		for b.Loop() {
			if _, err := x.SearchBatch(ctx, qs, k, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(nq*b.N)/b.Elapsed().Seconds(), "queries/s")
	})
	b.Run(fmt.Sprintf("each-%d", nq), func(b *testing.B) {
		for b.Loop() {
			if _, err := SearchBatch(ctx, struct{ Index }{x}, qs, k, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(nq*b.N)/b.Elapsed().Seconds(), "queries/s")
	})
}
