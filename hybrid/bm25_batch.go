package hybrid

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// SearchBatch runs Search for every query of qs over GOMAXPROCS workers (one query per
// worker at a time) and returns the hits in input order. It stops at the first failing
// query and returns that error, naming the query's index; a cancelled ctx stops every
// worker.
func (b *BM25Index) SearchBatch(ctx context.Context, qs []string, k int, allow []string) ([][]Hit, error) {
	out := make([][]Hit, len(qs))
	err := ParallelFor(ctx, len(qs), 0, func(ctx context.Context, i int) error {
		hits, err := b.Search(ctx, qs[i], k, allow)
		if err != nil {
			return fmt.Errorf("query %d: %w", i, err)
		}
		out[i] = hits
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ParallelFor calls fn(ctx, i) for every i in [0, n) on up to workers goroutines
// (0 = GOMAXPROCS). It returns the first error; after an error, or once ctx is cancelled,
// no new call starts and the context passed to running calls is cancelled.
func ParallelFor(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, n)
	if workers <= 1 {
		for i := range n {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := fn(ctx, i); err != nil {
				return err
			}
		}
		return nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		once sync.Once
		ferr error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, i); err != nil {
					once.Do(func() { ferr = err; cancel(err) })
					return
				}
			}
		}()
	}
	wg.Wait()
	if ferr != nil {
		return ferr
	}
	return ctx.Err()
}
