package vectorstore

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/agentmem/memory/internal/vecmath"
)

var _ BatchSearcher = (*flatIndex)(nil)

// flatBatchBlockBytes is the size of the block of stored vectors a batch search worker keeps
// hot (in L2) while every query of the batch is scored against it. A variable so tests can
// force many small blocks.
var flatBatchBlockBytes = 256 << 10

// flatBatchMaxItems bounds (queries per pass) x k: a batch whose queries times k exceed it is
// answered in several passes over the vectors, so the per-worker heaps stay under ~32 MiB
// whatever k and the number of queries.
const flatBatchMaxItems = 1 << 22

// SearchBatch answers many queries in one pass over the stored vectors: the result for
// qs[i] is exactly what Search(ctx, qs[i], k, f) returns (same ids, same scores bit for bit,
// same tie order), but the vectors are read from memory once per batch rather than once per
// query. It is a cache-blocked matrix product, as FAISS's IndexFlat does with BLAS: a block
// of vectors (flatBatchBlockBytes) stays in cache while every query is scored against it,
// three queries by two vectors at a time in registers (AVX2+FMA; portable Go elsewhere),
// and each query keeps its own top-k heap. Blocks are shared out to GOMAXPROCS workers (or
// cfg.Params["threads"]), whose heaps are merged at the end.
//
// f is called once per stored id per pass (not once per query), from several goroutines.
// A query of the wrong dimension or holding NaN/Inf fails the whole batch (the error names
// its position) before anything is scanned; k <= 0 gives an empty result per query. The
// scan checks ctx between blocks.
func (x *flatIndex) SearchBatch(ctx context.Context, qs [][]float32, k int, f Filter) ([][]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i, q := range qs {
		if err := checkVector(q, x.dim, fmt.Sprintf("query %d", i)); err != nil {
			return nil, err
		}
	}
	out := make([][]Hit, len(qs))
	if k <= 0 || len(qs) == 0 {
		return out, nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := len(x.ids)
	if n == 0 {
		return out, nil
	}
	k = min(k, n)
	per := max(3, flatBatchMaxItems/k/3*3)
	for lo := 0; lo < len(qs); lo += per {
		hi := min(lo+per, len(qs))
		if err := x.batchPass(ctx, qs[lo:hi], k, f, out[lo:hi]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// batchPass answers qs (at most flatBatchMaxItems/k of them) in one pass over the vectors,
// writing out[i] for qs[i]. The caller holds the read lock.
func (x *flatIndex) batchPass(ctx context.Context, qs [][]float32, k int, f Filter, out [][]Hit) error {
	d, n, nq := x.dim, len(x.ids), len(qs)
	// The queries, normalised for Cosine exactly as Search does, padded with zero queries to a
	// multiple of three for the 3x4 kernel.
	nq3 := (nq + 2) / 3 * 3
	qbuf := make([]float32, nq3*d)
	for i, q := range qs {
		if x.metric == Cosine {
			vecmath.NormalizeInto(qbuf[i*d:(i+1)*d], q)
		} else {
			copy(qbuf[i*d:(i+1)*d], q)
		}
	}
	rb := max(2, flatBatchBlockBytes/(4*d)/2*2) // rows per block, even
	nblocks := (n + rb - 1) / rb
	workers := x.threads
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, nblocks))

	heaps := make([][]flatHeap, workers)
	errs := make([]error, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		hs := make([]flatHeap, nq)
		for i := range hs {
			hs[i] = newFlatHeap(x.ids, k)
		}
		heaps[w] = hs
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = x.batchWorker(ctx, qbuf, nq, rb, nblocks, f, &next, hs)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err // every worker fails the same way (the context); one is enough
		}
	}
	for i := range nq {
		h := &heaps[0][i]
		for _, other := range heaps[1:] {
			h.Merge(&other[i])
		}
		out[i] = flatResults(h, x.ids)
	}
	return nil
}

// batchWorker scores blocks of rb rows, taken in turn from next, against every query of
// qbuf (nq real queries, padded to a multiple of three), offering the scores to hs.
func (x *flatIndex) batchWorker(ctx context.Context, qbuf []float32, nq, rb, nblocks int, f Filter, next *atomic.Int64, hs []flatHeap) error {
	d, n := x.dim, len(x.ids)
	ldo := rb
	scores := make([]float32, 3*ldo)
	var scratch []float32 // rows copied when a block is filtered or has an odd number of rows
	var slots []int32     // slot of each scratch row
	for {
		b := int(next.Add(1)) - 1
		if b >= nblocks {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		lo, hi := b*rb, min((b+1)*rb, n)
		rows, cnt := x.data[lo*d:hi*d], hi-lo
		var slotOf []int32 // nil: row i is slot lo+i
		if f != nil || cnt%2 != 0 {
			if scratch == nil {
				scratch = make([]float32, rb*d)
				slots = make([]int32, rb)
			}
			cnt = 0
			for s := lo; s < hi; s++ {
				if f != nil && !f(x.ids[s]) {
					continue
				}
				copy(scratch[cnt*d:(cnt+1)*d], x.data[s*d:(s+1)*d])
				slots[cnt] = int32(s)
				cnt++
			}
			if cnt == 0 {
				continue
			}
			pad := (cnt + 1) / 2 * 2
			clear(scratch[cnt*d : pad*d])
			rows, slotOf = scratch[:pad*d], slots[:cnt]
		}
		for t := 0; t < nq; t += 3 {
			flatTile3(qbuf[t*d:(t+3)*d], rows, d, cnt, scores, ldo)
			for a := range min(3, nq-t) {
				offerBlock(&hs[t+a], scores[a*ldo:a*ldo+cnt], int32(lo), slotOf)
			}
		}
	}
}

// offerBlock offers scores[i] for slot base+i (or slots[i] when slots is not nil) to h,
// deciding most rows with one comparison against the current k-th best score.
func offerBlock(h *flatHeap, scores []float32, base int32, slots []int32) {
	i := 0
	for ; i < len(scores) && !h.Full(); i++ {
		if slots != nil {
			h.Offer(scores[i], slots[i])
		} else {
			h.Offer(scores[i], base+int32(i))
		}
	}
	if i == len(scores) || h.Len() == 0 {
		return
	}
	thr := h.Min()
	if slots != nil {
		for ; i < len(scores); i++ {
			if s := scores[i]; s >= thr {
				h.Offer(s, slots[i])
				thr = h.Min()
			}
		}
		return
	}
	for ; i < len(scores); i++ {
		if s := scores[i]; s >= thr {
			h.Offer(s, base+int32(i))
			thr = h.Min()
		}
	}
}
