package vectorstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agentmem/memory/internal/vectest"
)

// TestDiskSearchFocus: a focused search of a row-less index (codes, then rescoring with
// rows read from the RowSource) reads Focus x oversample rows (at least k) instead of
// k x oversample; its first Focus hits are what a search for Focus returns, every hit's
// score is the exact one, best first; a batch answers as single searches do; a focus of 0
// or >= k is a plain search; the package functions take any Index.
func TestDiskSearchFocus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params map[string]int
		mode   DiskMode
	}{
		{"rotated-binary", map[string]int{"code": DiskCodeRotated}, DiskBinary},
		{"int8", map[string]int{"quant": DiskQuantInt8}, DiskInt8},
		{"binary-ivf", map[string]int{"quant": DiskQuantBinary, "nlist": 4, "nprobe": 4, "code": DiskCodeRotated}, DiskBinary},
	} {
		t.Run(tc.name, func(t *testing.T) {
			smallDiskWrites(t, 50)
			ctx := context.Background()
			const n, dim = 600, 32
			rng := rand.New(rand.NewPCG(3, 30))
			params := map[string]int{"segrows": 128, "threads": 2}
			for k, v := range tc.params {
				params[k] = v
			}
			src := &countingRows{m: RowMap{}}
			x := openDisk(t, IndexConfig{Dim: dim, Metric: Cosine, Dir: filepath.Join(t.TempDir(), "x"), Params: params, Rows: src})
			defer x.Close()
			ids := make([]string, n)
			vecs := diskClustered(rng, n, dim, 6, 0.6)
			for i := range ids {
				ids[i] = fmt.Sprintf("v%04d", i)
				src.m[ids[i]] = vecs[i]
			}
			if err := x.Add(ctx, ids, vecs); err != nil {
				t.Fatal(err)
			}
			if err := x.Commit(1); err != nil {
				t.Fatal(err)
			}
			if len(x.tailIDs) != 0 {
				t.Fatalf("%d rows left in memory: the test wants every row in segments", len(x.tailIDs))
			}
			qs := vectest.RandVecs(rng, 8, dim)
			const os = 4
			for _, c := range []struct{ k, focus int }{{40, 5}, {40, 10}, {12, 1}, {100, 30}} {
				for qi, q := range qs {
					score := exactScores(t, x, q, n)
					before := src.ids.Load()
					got, err := x.SearchWith(ctx, q, c.k, nil, DiskSearchOptions{Mode: tc.mode, Oversample: os, Focus: c.focus})
					if err != nil {
						t.Fatal(err)
					}
					if read, want := src.ids.Load()-before, int64(max(c.k, c.focus*os)); read > want {
						t.Fatalf("k %d focus %d: %d rows read for rescoring, want <= %d", c.k, c.focus, read, want)
					}
					if len(got) != c.k {
						t.Fatalf("k %d focus %d: %d hits", c.k, c.focus, len(got))
					}
					for i, h := range got {
						if h.Score != score[h.ID] {
							t.Fatalf("hit %d %s scored %v, exact %v", i, h.ID, h.Score, score[h.ID])
						}
						if i > 0 && h.Score > got[i-1].Score {
							t.Fatalf("hit %d scores above hit %d", i, i-1)
						}
					}
					if c.focus*os >= c.k { // the same candidates as a search for focus
						top, err := x.SearchWith(ctx, q, c.focus, nil, DiskSearchOptions{Mode: tc.mode, Oversample: os})
						if err != nil {
							t.Fatal(err)
						}
						if !reflect.DeepEqual(got[:c.focus], top) {
							t.Fatalf("query %d k %d focus %d: first hits %v, a search for %d %v", qi, c.k, c.focus, got[:c.focus], c.focus, top)
						}
					}
					full, err := x.SearchWith(ctx, q, c.k, nil, DiskSearchOptions{Mode: tc.mode, Oversample: os})
					if err != nil {
						t.Fatal(err)
					}
					for _, f := range []int{0, c.k, c.k + 5} {
						same, err := x.SearchWith(ctx, q, c.k, nil, DiskSearchOptions{Mode: tc.mode, Oversample: os, Focus: f})
						if err != nil {
							t.Fatal(err)
						}
						if !reflect.DeepEqual(same, full) {
							t.Fatalf("focus %d of k %d is not a plain search", f, c.k)
						}
					}
				}
			}
			// Default options through the package functions and the batch.
			one := make([][]Hit, len(qs))
			for i, q := range qs {
				var err error
				if one[i], err = SearchFocus(ctx, x, q, 50, 5, nil); err != nil {
					t.Fatal(err)
				}
			}
			batch, err := SearchBatchFocus(ctx, x, qs, 50, 5, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(batch, one) {
				t.Fatal("SearchBatchFocus differs from SearchFocus per query")
			}
			before := src.ids.Load()
			if _, err := SearchFocus(ctx, x, qs[0], 50, 50, nil); err != nil {
				t.Fatal(err)
			}
			plain := src.ids.Load() - before
			before = src.ids.Load()
			if _, err := SearchFocus(ctx, x, qs[0], 50, 5, nil); err != nil {
				t.Fatal(err)
			}
			if focused := src.ids.Load() - before; focused >= plain {
				t.Fatalf("default oversampling: focused search read %d rows, plain %d", focused, plain)
			}
		})
	}
}

// TestSearchFocusFallback: an Index without FocusSearcher answers SearchFocus and
// SearchBatchFocus with its plain searches.
func TestSearchFocusFallback(t *testing.T) {
	ctx := context.Background()
	inner, err := NewIndex(IndexConfig{Dim: 8, Metric: Cosine})
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	idx := struct{ Index }{inner} // Index's methods only: no optional ability
	rng := rand.New(rand.NewPCG(1, 2))
	vecs := vectest.RandVecs(rng, 30, 8)
	ids := make([]string, len(vecs))
	for i := range ids {
		ids[i] = fmt.Sprintf("a%02d", i)
	}
	if err := idx.Add(ctx, ids, vecs); err != nil {
		t.Fatal(err)
	}
	q := vectest.RandVecs(rng, 2, 8)
	want, _ := SearchBatch(ctx, idx, q, 20, nil)
	got, err := SearchBatchFocus(ctx, idx, q, 20, 3, nil)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("batch: %v %v", got, err)
	}
	one, err := SearchFocus(ctx, idx, q[0], 20, 3, nil)
	if err != nil || !reflect.DeepEqual(one, want[0]) {
		t.Fatalf("one: %v %v", one, err)
	}
}
