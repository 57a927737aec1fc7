package vectorstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/agentmem/memory/internal/topk"
	"github.com/agentmem/memory/internal/vecmath"
)

func init() {
	RegisterIndex("flat", func(cfg IndexConfig) (Index, error) { return newFlatIndex(cfg) })
}

// flatBlock is how many rows the kernel scores per call on the unfiltered path.
const flatBlock = 256

// flatParallelMin is the slab size (floats) above which a search with automatic threading
// splits the scan across goroutines.
const flatParallelMin = 1 << 20

// flatIndex is an exact (brute-force) Index: every vector lives in one contiguous []float32
// slab and a search scores each accepted row with a SIMD dot-product kernel (AVX2+FMA on
// amd64 when the CPU has it, portable Go otherwise), keeping the best k in a small heap.
//
// With the Cosine metric vectors are normalised on insert and queries at search time, so the
// score is the cosine similarity; a zero vector scores 0 against everything. Ties are broken
// by id, ascending, so results are deterministic.
//
// Searches run concurrently with each other; Add and Delete take a write lock.
type flatIndex struct {
	mu      sync.RWMutex
	dim     int
	metric  Metric
	threads int // 0 = automatic

	data []float32        // len(ids)*dim floats, row s is the vector of ids[s]
	ids  []string         // slot -> id
	slot map[string]int32 // id -> slot
}

var _ Index = (*flatIndex)(nil)

// checkDimMetric checks cfg's dimension and metric for backend, filling the default metric
// (Cosine).
func checkDimMetric(cfg *IndexConfig, backend string) error {
	if cfg.Dim <= 0 {
		return fmt.Errorf("%w: dim %d", ErrBadConfig, cfg.Dim)
	}
	switch cfg.Metric {
	case "":
		cfg.Metric = Cosine
	case Cosine, InnerProduct:
	default:
		return fmt.Errorf("%w: %s: unknown metric %q", ErrBadConfig, backend, cfg.Metric)
	}
	return nil
}

// newFlatIndex builds an empty flat index. cfg.Params["threads"] sets how many goroutines a
// search may use: 1 scans on the calling goroutine; 0 (the default) uses GOMAXPROCS for slabs
// over 4 MiB and one goroutine below that.
func newFlatIndex(cfg IndexConfig) (*flatIndex, error) {
	if err := checkDimMetric(&cfg, "flat"); err != nil {
		return nil, err
	}
	threads := cfg.Params["threads"]
	if threads < 0 {
		return nil, fmt.Errorf("%w: flat: threads %d", ErrBadConfig, threads)
	}
	return &flatIndex{dim: cfg.Dim, metric: cfg.Metric, threads: threads, slot: map[string]int32{}}, nil
}

// checkVector validates the length and values of v; what names it in the error, which
// matches ErrDimMismatch or ErrNonFinite (and the *vecmath.VectorError with the details).
func checkVector(v []float32, dim int, what string) error {
	err := vecmath.Check(v, dim)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, vecmath.ErrNonFinite):
		return fmt.Errorf("%w: %s: %w", ErrNonFinite, what, err)
	default:
		return fmt.Errorf("%w: %s: %w", ErrDimMismatch, what, err)
	}
}

// checkBatch validates an Add batch before anything is changed.
func checkBatch(ids []string, vecs [][]float32, dim int) error {
	if len(ids) != len(vecs) {
		return fmt.Errorf("%w: %d ids but %d vectors", ErrBadBatch, len(ids), len(vecs))
	}
	for i, id := range ids {
		if id == "" {
			return fmt.Errorf("%w: empty id at position %d", ErrBadBatch, i)
		}
		// The label is built only for a bad vector: one string per vector was an allocation
		// per stored vector in bulk ingest.
		if vecmath.Check(vecs[i], dim) != nil {
			return checkVector(vecs[i], dim, fmt.Sprintf("vector of %q", id))
		}
	}
	return nil
}

// Add inserts or replaces the vectors of ids. A bad batch (count mismatch, empty id, wrong
// dimension, NaN or Inf) changes nothing. A later duplicate of an id in the batch wins.
func (x *flatIndex) Add(ctx context.Context, ids []string, vecs [][]float32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkBatch(ids, vecs, x.dim); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	d := x.dim
	for i, id := range ids {
		s, ok := x.slot[id]
		if !ok {
			if len(x.ids) >= math.MaxInt32 {
				return fmt.Errorf("%w: flat index is full", ErrBadBatch)
			}
			s = int32(len(x.ids))
			x.ids = append(x.ids, id)
			x.slot[id] = s
			x.data = slices.Grow(x.data, d)[:len(x.data)+d] // the row is overwritten below
		}
		row := x.data[int(s)*d : int(s+1)*d]
		if x.metric == Cosine {
			vecmath.NormalizeInto(row, vecs[i])
		} else {
			copy(row, vecs[i])
		}
	}
	return nil
}

// Delete removes ids (unknown ids are ignored). The last row moves into each freed slot.
func (x *flatIndex) Delete(ctx context.Context, ids ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	d := x.dim
	for _, id := range ids {
		s, ok := x.slot[id]
		if !ok {
			continue
		}
		last := int32(len(x.ids) - 1)
		if s != last {
			copy(x.data[int(s)*d:int(s+1)*d], x.data[int(last)*d:int(last+1)*d])
			moved := x.ids[last]
			x.ids[s] = moved
			x.slot[moved] = s
		}
		x.ids[last] = ""
		x.ids = x.ids[:last]
		x.data = x.data[:int(last)*d]
		delete(x.slot, id)
	}
	// Give memory back when the slab has shrunk to a quarter of its capacity.
	if c := cap(x.data); c > 1<<16 && len(x.data) < c/4 {
		x.data = append([]float32(nil), x.data...)
		x.ids = append([]string(nil), x.ids...)
	}
	return nil
}

// Len is the number of vectors held.
func (x *flatIndex) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.ids)
}

// Close releases the vectors; the index is empty (and still usable) afterwards.
func (x *flatIndex) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.data, x.ids, x.slot = nil, nil, map[string]int32{}
	return nil
}

// Search returns the k vectors most similar to q among those f accepts, best first
// (score descending, then id ascending). f is called once per stored id, under the index's
// read lock, and rejected rows are not scored.
func (x *flatIndex) Search(ctx context.Context, q []float32, k int, f Filter) ([]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkVector(q, x.dim, "query"); err != nil {
		return nil, err
	}
	if k <= 0 {
		return nil, nil
	}
	if x.metric == Cosine {
		nq := make([]float32, len(q))
		vecmath.NormalizeInto(nq, q)
		q = nq
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := len(x.ids)
	if n == 0 {
		return nil, nil
	}
	k = min(k, n)
	parts := x.parallelism(n)
	if parts == 1 {
		h := newFlatHeap(x.ids, k)
		if err := x.scan(ctx, q, 0, n, f, &h); err != nil {
			return nil, err
		}
		return flatResults(&h, x.ids), nil
	}
	heaps := make([]flatHeap, parts)
	errs := make([]error, parts)
	per := (n + parts - 1) / parts
	per = (per + flatBlock - 1) / flatBlock * flatBlock
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*per, min((p+1)*per, n)
		heaps[p] = newFlatHeap(x.ids, k)
		if lo >= hi {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[p] = x.scan(ctx, q, lo, hi, f, &heaps[p])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	all := &heaps[0]
	for i := range heaps[1:] {
		all.Merge(&heaps[1+i])
	}
	return flatResults(all, x.ids), nil
}

// parallelism is how many goroutines a search over n rows uses.
func (x *flatIndex) parallelism(n int) int {
	t := x.threads
	if t == 0 {
		if n*x.dim < flatParallelMin {
			return 1
		}
		t = runtime.GOMAXPROCS(0)
	}
	// At least a few blocks per goroutine.
	return max(1, min(t, n/(4*flatBlock)))
}

// scan offers rows [lo, hi) to h. The caller holds the read lock.
func (x *flatIndex) scan(ctx context.Context, q []float32, lo, hi int, f Filter, h *flatHeap) error {
	d := x.dim
	var buf [flatBlock]float32
	for b := lo; b < hi; b += flatBlock {
		if (b-lo)%(64*flatBlock) == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		e := min(b+flatBlock, hi)
		if f == nil {
			out := buf[:e-b]
			flatDots(q, x.data[b*d:e*d], out)
			for i, s := range out {
				h.Offer(s, int32(b+i))
			}
			continue
		}
		for s := b; s < e; s++ {
			if !f(x.ids[s]) {
				continue
			}
			var one [1]float32
			flatDots(q, x.data[s*d:(s+1)*d], one[:])
			h.Offer(one[0], int32(s))
		}
	}
	return nil
}

// flatHeap keeps the k best slots of a scan; equal scores rank by id, ascending.
type flatHeap = topk.Heap[int32]

// newFlatHeap returns a heap over the slots of ids.
func newFlatHeap(ids []string, k int) flatHeap {
	return topk.New(k, func(a, b int32) bool { return ids[a] < ids[b] })
}

// flatResults returns the heap's slots as hits, best first.
func flatResults(h *flatHeap, ids []string) []Hit {
	items := h.Sorted()
	out := make([]Hit, len(items))
	for i, it := range items {
		out[i] = Hit{ID: ids[it.Value], Score: float64(it.Score)}
	}
	return out
}

// flatDotsGeneric sets out[i] to the dot product of q with row i of rows (rows holds
// len(out) rows of len(q) floats). Portable Go with eight independent accumulators.
func flatDotsGeneric(q, rows, out []float32) {
	d := len(q)
	for i := range out {
		r := rows[i*d : (i+1)*d : (i+1)*d]
		var a0, a1, a2, a3, a4, a5, a6, a7 float32
		j := 0
		for ; j+8 <= d; j += 8 {
			qq, rr := q[j:j+8:j+8], r[j:j+8:j+8]
			a0 += qq[0] * rr[0]
			a1 += qq[1] * rr[1]
			a2 += qq[2] * rr[2]
			a3 += qq[3] * rr[3]
			a4 += qq[4] * rr[4]
			a5 += qq[5] * rr[5]
			a6 += qq[6] * rr[6]
			a7 += qq[7] * rr[7]
		}
		for ; j < d; j++ {
			a0 += q[j] * r[j]
		}
		out[i] = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))
	}
}

// flatTail is the dot product of the last len(q) (< 8) floats, added by the SIMD paths
// after their main part. Each product is rounded to float32 before it is added (the
// conversion forbids fusing it into an FMA), so every caller gets the same bits.
func flatTail(q, r []float32) float32 {
	var t float32
	r = r[:len(q)]
	for j := range q {
		t += float32(q[j] * r[j])
	}
	return t
}

// flatTile3Generic is the portable flatTile3: query a's scores against the nrows rows go to
// out[a*ldo : a*ldo+nrows], computed by flatDotsGeneric so they equal a single search's.
func flatTile3Generic(qs, rows []float32, d, nrows int, out []float32, ldo int) {
	for a := range 3 {
		flatDotsGeneric(qs[a*d:(a+1)*d], rows[:nrows*d], out[a*ldo:a*ldo+nrows])
	}
}

// flatSumGeneric is the sum of x (the portable twin of the read-bandwidth kernel).
func flatSumGeneric(x []float32) float32 {
	var a0, a1, a2, a3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		a0 += x[i]
		a1 += x[i+1]
		a2 += x[i+2]
		a3 += x[i+3]
	}
	for ; i < len(x); i++ {
		a0 += x[i]
	}
	return (a0 + a1) + (a2 + a3)
}
