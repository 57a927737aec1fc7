package parallel

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
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
		// the first error stops the hand-out and is returned
		boom := errors.New("boom")
		var ran atomic.Int32
		err := For(ctx, 10_000, workers, func(_ context.Context, i int) error {
			ran.Add(1)
			if i == 7 {
				return boom
			}
			return nil
		})
		if !errors.Is(err, boom) || ran.Load() > 10_000/2 {
			t.Fatalf("workers %d: err %v after %d calls", workers, err, ran.Load())
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
