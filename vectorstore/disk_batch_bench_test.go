package vectorstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// benchRows is a RowSource whose row of id "doc-N" is made from N (one of 64 centres plus
// hashed noise), so that a million-row index keeps no million rows in memory.
type benchRows struct{ centres [][]float32 }

func (r benchRows) row(n int, dst []float32) {
	c := r.centres[n%len(r.centres)]
	rng := rand.New(rand.NewPCG(uint64(n), 99))
	for j := 0; j < len(dst); j += 4 {
		u := rng.Uint64()
		for k := 0; k < 4 && j+k < len(dst); k++ {
			dst[j+k] = c[j+k] + float32(int16(u>>(16*k)))/32768
		}
	}
}

// Rows implements RowSource.
func (r benchRows) Rows(_ context.Context, ids []string, dst [][]float32) error {
	for i, id := range ids {
		n, err := strconv.Atoi(strings.TrimPrefix(id, "doc-"))
		if err != nil {
			return fmt.Errorf("%w: %s", ErrNoRow, id)
		}
		r.row(n, dst[i])
	}
	return nil
}

// BenchmarkDiskSearchBatch: a batch of 256 queries over n x 768 binary codes in 1,024
// inverted lists (written in order), nprobe 64, k 10, oversample 56: SearchBatch (list
// by list, the queries probing a list scanning it together) against the same queries
// one after another (SearchWith on the index's threads). ns/op is the whole batch.
func BenchmarkDiskSearchBatch(b *testing.B) {
	const d, nq, k = 768, 256, 10
	for _, n := range []int{250_000, 1_000_000} {
		rng := rand.New(rand.NewPCG(1, 2))
		src := benchRows{centres: make([][]float32, 64)}
		for i := range src.centres {
			src.centres[i] = make([]float32, d)
			for j := range src.centres[i] {
				src.centres[i][j] = float32(rng.NormFloat64())
			}
		}
		x, err := NewDiskIndex(IndexConfig{Dim: d, Metric: Cosine, Dir: b.TempDir(), Rows: src, Params: map[string]int{"nlist": 1024, "code": DiskCodeRotated}})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		const chunk = 50_000
		ids, vecs := make([]string, chunk), make([][]float32, chunk)
		for i := range vecs {
			vecs[i] = make([]float32, d)
		}
		for lo := 0; lo < n; lo += chunk {
			for i := range chunk {
				ids[i] = fmt.Sprintf("doc-%d", lo+i)
				src.row(lo+i, vecs[i])
			}
			if err := x.Add(ctx, ids, vecs); err != nil {
				b.Fatal(err)
			}
			if err := x.Commit(uint64(lo + chunk)); err != nil {
				b.Fatal(err)
			}
		}
		if err := x.OrderLists(ctx); err != nil {
			b.Fatal(err)
		}
		qs := make([][]float32, nq)
		for i := range qs {
			qs[i] = make([]float32, d)
			src.row(n+1_000_000+i, qs[i]) // near the rows' centres, not one of them
		}
		o := DiskSearchOptions{Mode: DiskBinary, NProbe: 64, Oversample: 56}
		b.Run(fmt.Sprintf("n=%d/batch", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := x.SearchBatchWith(ctx, qs, k, nil, o); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("n=%d/one-by-one", n), func(b *testing.B) {
			for b.Loop() {
				for _, q := range qs {
					if _, err := x.SearchWith(ctx, q, k, nil, o); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		x.Close()
	}
}

// BenchmarkHammingFilter: the prefilter's cut over a block of 256 rows of 768-bit codes,
// with the AVX-512 kernel (where the machine has it) eight rows at a time and a row at a
// time, and row by row with POPCNT. ns/op is the
// block; a cut near the mean distance keeps about half the rows.
func BenchmarkHammingFilter(b *testing.B) {
	const W, n = 12, 256
	rng := rand.New(rand.NewPCG(3, 4))
	codes := make([]uint64, W*n)
	for i := range codes {
		codes[i] = rng.Uint64()
	}
	q := make([]uint64, W)
	for i := range q {
		q[i] = rng.Uint64()
	}
	out := make([]int32, n)
	for _, c := range []struct {
		name        string
		avx, groups bool
	}{{"avx512-8rows", true, true}, {"avx512-rows", true, false}, {"popcnt", false, false}} {
		if c.avx && !hammingAVX512 {
			continue
		}
		b.Run("kernel="+c.name, func(b *testing.B) {
			oldAVX, oldGroups := hammingAVX512, hammingGroups
			hammingAVX512, hammingGroups = c.avx, c.groups
			defer func() { hammingAVX512, hammingGroups = oldAVX, oldGroups }()
			for b.Loop() {
				hammingFilter(q, codes, 32*W, out)
			}
		})
	}
}
