// Package parallel runs index-addressed work over a bounded number of goroutines: the
// worker pool behind every batch search (BM25, vectors, /retrieve). Ahead overlaps a
// producer (reading and decoding lines) with its consumer (writing them).
package parallel

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// For calls fn(ctx, i) for every i in [0, n) from up to workers goroutines (<= 0:
// GOMAXPROCS), each taking the next index as it finishes one. The first error stops the
// hand-out of further indices, cancels the context passed to the calls still running, and
// is returned; so does the cancellation of ctx. With one worker the calls run in order on
// the caller's goroutine.
func For(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
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
		return ctx.Err()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next     atomic.Int64
		once     sync.Once
		firstErr error
		wg       sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(ctx, i); err != nil {
					once.Do(func() { firstErr = err })
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// Map returns fn(ctx, i) for every i in [0, n), in index order, computed as For computes
// them. The first error is returned naming its index: "query i: err" (the batches this
// package serves are batches of queries).
func Map[T any](ctx context.Context, n, workers int, fn func(ctx context.Context, i int) (T, error)) ([]T, error) {
	out := make([]T, n)
	err := For(ctx, n, workers, func(ctx context.Context, i int) error {
		v, err := fn(ctx, i)
		if err != nil {
			return fmt.Errorf("query %d: %w", i, err)
		}
		out[i] = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
