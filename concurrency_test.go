package memory

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/memory/internal/memtest"
	"github.com/agentmem/memory/vectorstore"
)

// TestConcurrentReadersAndWriters runs searches and gets against writes (adds, upserts,
// deletes, another collection) at once; -race checks the synchronisation and the end state
// checks that no write was lost. The writers wait, halfway, for searches to have completed
// since they started, and the readers keep within a few searches of the writes done, so
// the two always overlap and the readers do not starve the writers on a loaded machine
// (counted, not timed).
func TestConcurrentReadersAndWriters(t *testing.T) {
	m := openT(t, "", WithEmbedder(vectorstore.NewHashEmbedder(32)))
	ctx := context.Background()
	var base []Document
	for i := 0; i < 200; i++ {
		base = append(base, Document{ID: fmt.Sprintf("b%d", i), Text: fmt.Sprintf("base document %d about topic %d", i, i%7),
			Metadata: map[string]any{"topic": float64(i % 7)}})
	}
	if err := m.Add(ctx, base...); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var stop, failed atomic.Bool
	var searches, writes atomic.Int64
	errs := make(chan error, 100)
	fail := func(err error) {
		failed.Store(true)
		errs <- err
	}
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				for searches.Load() >= 8+2*writes.Load() && !stop.Load() {
					time.Sleep(time.Millisecond)
				}
				opts := []SearchOption{TopK(5)}
				if i%2 == 0 {
					opts = append(opts, WithWhere(Where{"topic": float64(i % 7)}))
				}
				res, err := m.Search(ctx, fmt.Sprintf("document topic %d", i%7), opts...)
				if err != nil {
					fail(err)
					return
				}
				for _, x := range res {
					if i%2 == 0 && x.Metadata["topic"] != float64(i%7) {
						fail(fmt.Errorf("filter violated under concurrency: %s", x.ID))
						return
					}
				}
				m.Get(ctx, fmt.Sprintf("b%d", i%200))
				m.Collection("side").Search(ctx, "side note")
				searches.Add(1)
			}
		}(r)
	}
	// Some searches complete before the writers start, and more while they write.
	for searches.Load() == 0 && !failed.Load() {
		time.Sleep(time.Millisecond)
	}
	before := searches.Load()
	var writers sync.WaitGroup
	for w := 0; w < 2; w++ {
		writers.Add(1)
		go func(w int) {
			defer writers.Done()
			for i := 0; i < 60; i++ {
				for i == 30 && searches.Load() < before+4 && !failed.Load() {
					time.Sleep(time.Millisecond)
				}
				id := fmt.Sprintf("w%d-%d", w, i)
				if err := m.Add(ctx, Document{ID: id, Text: "writtenmarker " + id}); err != nil {
					fail(err)
					return
				}
				if err := m.Upsert(ctx, Document{ID: fmt.Sprintf("b%d", i), Text: "rewritten base document"}); err != nil {
					fail(err)
					return
				}
				if i%3 == 0 {
					if err := m.Delete(ctx, id); err != nil {
						fail(err)
						return
					}
				}
				if err := m.Collection("side").Upsert(ctx, Document{ID: fmt.Sprint(i), Text: "side note"}); err != nil {
					fail(err)
					return
				}
				writes.Add(1)
			}
		}(w)
	}
	writers.Wait()
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// 200 base + 2 writers x 60 adds - 2 x 20 deletes.
	if got, want := memtest.Count(t, m), 200+120-40; got != want {
		t.Fatalf("Count = %d, want %d", got, want)
	}
	if got := memtest.Count(t, m.Collection("side")); got != 60 {
		t.Fatalf("side Count = %d, want 60", got)
	}
	res, err := m.Search(ctx, "writtenmarker", WithMode(BM25), TopK(200))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 80 {
		t.Fatalf("BM25 index has %d written docs, want 80", len(res))
	}
}
