package parallel

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestFor(t *testing.T) {
	ctx := context.Background()
	for _, workers := range []int{0, 1, 3, 64} {
		// every index exactly once
		seen := make([]atomic.Int32, 500)
		if err := For(ctx, len(seen), workers, func(_ context.Context, i int) error { seen[i].Add(1); return nil }); err != nil {
			t.Fatal(err)
		}
		for i := range seen {
			if seen[i].Load() != 1 {
				t.Fatalf("workers %d: index %d ran %d times", workers, i, seen[i].Load())
			}
		}
		// the first error stops the hand-out, cancels the context of the calls still
		// running and is returned. Calls after index 7 wait for that cancellation, so the
		// count is deterministic: indices 0..7, plus at most one call per other worker.
		boom := errors.New("boom")
		var ran, uncancelled atomic.Int32
		err := For(ctx, 10_000, workers, func(ctx context.Context, i int) error {
			ran.Add(1)
			switch {
			case i == 7:
				return boom
			case i > 7:
				select {
				case <-ctx.Done():
				case <-time.After(time.Minute): // a hang guard, not a timing assertion
					uncancelled.Add(1)
				}
			}
			return nil
		})
		effective := workers
		if effective <= 0 {
			effective = runtime.GOMAXPROCS(0)
		}
		if !errors.Is(err, boom) || uncancelled.Load() != 0 || int(ran.Load()) > 8+effective-1 {
			t.Fatalf("workers %d: err %v after %d calls (%d never saw the cancellation)", workers, err, ran.Load(), uncancelled.Load())
		}
		// a cancelled context runs nothing
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		ran.Store(0)
		if err := For(cctx, 100, workers, func(context.Context, int) error { ran.Add(1); return nil }); !errors.Is(err, context.Canceled) || ran.Load() != 0 {
			t.Fatalf("workers %d: cancelled: err %v, %d calls", workers, err, ran.Load())
		}
	}
	if err := For(ctx, 0, 0, nil); err != nil {
		t.Fatalf("n 0: %v", err)
	}
}

func TestMap(t *testing.T) {
	ctx := context.Background()
	got, err := Map(ctx, 100, 4, func(_ context.Context, i int) (int, error) { return i * i, nil })
	if err != nil || len(got) != 100 {
		t.Fatalf("%v %v", len(got), err)
	}
	for i, v := range got {
		if v != i*i {
			t.Fatalf("out[%d] = %d", i, v)
		}
	}
	boom := errors.New("boom")
	_, err = Map(ctx, 100, 4, func(_ context.Context, i int) (int, error) {
		if i == 42 {
			return 0, boom
		}
		return i, nil
	})
	if !errors.Is(err, boom) || err.Error() != "query 42: boom" {
		t.Fatalf("err %v", err)
	}
}
