package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/agentmem/memory/internal/memtest"
)

// TestCollectionCap: creating one collection past Options.MaxCollections is
// ErrTooManyCollections, and nothing stored is touched.
func TestCollectionCap(t *testing.T) {
	ctx := context.Background()
	m := openT(t, "", func(o *Options) { o.MaxCollections = 3 })
	for i := range 3 {
		if err := m.Collection(fmt.Sprintf("c%d", i)).Add(ctx, Document{ID: "x", Text: "hello"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.CreateCollection("c3"); !errors.Is(err, ErrTooManyCollections) {
		t.Fatalf("CreateCollection past the cap: %v, want ErrTooManyCollections", err)
	}
	if err := m.Collection("c4").Add(ctx, Document{ID: "x", Text: "hello"}); !errors.Is(err, ErrTooManyCollections) {
		t.Fatalf("Add to a new collection past the cap: %v, want ErrTooManyCollections", err)
	}
	if got := memtest.Collections(t, m); len(got) != 3 {
		t.Fatalf("collections %q", got)
	}
	if err := m.DeleteCollection(ctx, "c0"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateCollection("c3"); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
	if res, err := m.Collection("c1").Search(ctx, "hello"); err != nil || len(res) != 1 {
		t.Fatalf("c1 after the cap: %v %v", res, err)
	}
}

// TestIdleCollectionsClose opens more collections than Options.MaxOpenCollections, from
// several goroutines, and checks that at most that many keep their indexes open, that
// searches on closed ones reopen them with the right answers, and that open files stay
// bounded.
func TestIdleCollectionsClose(t *testing.T) {
	ctx := context.Background()
	const cols, maxOpen = 40, 4
	m := openT(t, t.TempDir(), func(o *Options) { o.MaxOpenCollections = maxOpen })
	for i := range cols {
		c := m.Collection(fmt.Sprintf("col%02d", i))
		if err := c.Add(ctx, Document{ID: "a", Text: fmt.Sprintf("apple word%d", i)}, Document{ID: "b", Text: "banana"}); err != nil {
			t.Fatal(err)
		}
	}
	fds := func() int {
		e, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd")
		}
		return len(e)
	}
	before := fds()
	var wg sync.WaitGroup
	errs := make(chan error, 4*cols)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range cols {
				i := (r*7 + g*11) % cols
				res, err := m.Collection(fmt.Sprintf("col%02d", i)).Search(ctx, fmt.Sprintf("word%d", i), WithMode(BM25))
				if err != nil {
					errs <- err
					return
				}
				if len(res) != 1 || res[0].ID != "a" {
					errs <- fmt.Errorf("col%02d: %v", i, ids(res))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Opening one more with no search running closes every idle one past the cap (while
	// searches ran, those in use could not be closed).
	if err := m.Collection("fresh").Add(ctx, Document{ID: "f", Text: "fresh"}); err != nil {
		t.Fatal(err)
	}
	if n := m.reg.openCount.Load(); n > maxOpen {
		t.Fatalf("%d collections have their indexes open, want <= %d", n, maxOpen)
	}
	open := 0
	m.reg.mu.RLock()
	for _, s := range m.reg.cols {
		if s.Indexes != nil {
			open++
		}
	}
	m.reg.mu.RUnlock()
	if open > maxOpen {
		t.Fatalf("%d collections hold open indexes, want <= %d", open, maxOpen)
	}
	if after := fds(); after > before+10*maxOpen {
		t.Fatalf("open files grew from %d to %d", before, after)
	}
	// Writes to a closed collection reopen it and catch it up.
	if err := m.Collection("col00").Upsert(ctx, Document{ID: "a", Text: "cherry"}); err != nil {
		t.Fatal(err)
	}
	if res, err := m.Collection("col00").Search(ctx, "cherry", WithMode(BM25)); err != nil || len(ids(res)) != 1 {
		t.Fatalf("after upsert: %v %v", ids(res), err)
	}
}
