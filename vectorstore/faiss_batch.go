//go:build faiss

package vectorstore

import (
	"context"
	"fmt"
	"math"
)

var _ BatchSearcher = (*faissIndex)(nil)

// faissBatchChunk is the most queries handed to faiss in one call (it bounds the distance
// and label buffers at faissBatchChunk * kk entries each).
const faissBatchChunk = 4096

// SearchBatch answers every query of qs; result i is what Search(ctx, qs[i], k, f) returns,
// up to float32 rounding: faiss ranks a batch with a matrix product, which sums in another
// order than the one-query scan, so scores may differ in the last bits (about 1e-7) and hits
// whose scores differ by less than that may swap.
//
// Without a filter the queries go to faiss together: one call per faissBatchChunk queries,
// on the GPU replica when there is one (faissgpu build tag), else on the CPU, where faiss
// spreads the queries over its OpenMP threads and Flat ranks them with one matrix product.
// A query whose batched answer cannot be settled from the k+1 (or 2k) candidates fetched (a
// tie at the cut-off, tombstones hiding hits) is answered by Search's own loop. With a filter
// every query takes Search's path.
func (x *faissIndex) SearchBatch(ctx context.Context, qs [][]float32, k int, f Filter) ([][]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d := x.cfg.Dim
	for i, q := range qs {
		if err := checkVector(q, d, fmt.Sprintf("query %d", i)); err != nil {
			return nil, err
		}
	}
	out := make([][]Hit, len(qs))
	if k <= 0 || len(qs) == 0 {
		return out, nil
	}
	flat := make([]float32, len(qs)*d)
	for i, q := range qs {
		x.prepare(flat[i*d:(i+1)*d], q)
	}

	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return nil, errFaissClosed
	}
	if f != nil || x.idx == nil {
		for i := range qs {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			h, err := x.searchLocked(flat[i*d:(i+1)*d], k, f)
			if err != nil {
				return nil, err
			}
			out[i] = h
		}
		return out, nil
	}
	live := len(x.labels)
	if live == 0 {
		return out, nil
	}
	n := int(x.idx.Ntotal()) + x.gpu.extra()
	target := min(k, live)
	kk := k + 1
	if n > live {
		kk = 2 * k
	}
	kk = min(kk, n)
	for lo := 0; lo < len(qs); lo += faissBatchChunk {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hi := min(len(qs), lo+faissBatchChunk)
		chunk := flat[lo*d : hi*d]
		dist, lab, onGPU, err := x.gpu.search(chunk, kk)
		if !onGPU {
			dist, lab, err = x.idx.Search(chunk, int64(kk))
		}
		if err != nil {
			return nil, fmt.Errorf("vectorstore: faiss search of %d queries, k=%d: %w", hi-lo, kk, err)
		}
		for i := lo; i < hi; i++ {
			row := (i - lo) * kk
			hits := make([]Hit, 0, target)
			last := float32(math.Inf(-1))
			for j := row; j < row+kk; j++ {
				l := lab[j]
				if l < 0 {
					continue
				}
				last = dist[j]
				if id, ok := x.labels[l]; ok {
					hits = append(hits, Hit{ID: id, Score: float64(dist[j])})
				}
			}
			// Settled as in Search: enough hits, and no tie at the cut-off that may continue
			// past the kk fetched (or the whole index was fetched).
			if len(hits) >= target && (kk >= n || float64(last) != hits[target-1].Score) {
				faissSortHits(hits)
				out[i] = hits[:target]
				continue
			}
			h, err := x.searchLocked(flat[i*d:(i+1)*d], k, nil)
			if err != nil {
				return nil, err
			}
			out[i] = h
		}
	}
	return out, nil
}
