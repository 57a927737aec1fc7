package vectorstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/memory/internal/vectest"
)

// TestDiskBatchListMajor: a batch over inverted lists (scanned list by list, every query
// probing a list scanning a block of it in turn) answers each query exactly as a search of
// that query alone: binary and int8 codes, lists packed in place or row by row, with dead
// rows, rows in memory, a filter (no prefilter), Focus, and with a prefilter cut. (A
// damaged code block fails a batch as it fails a search: TestDiskDamage's SearchBatch.)
func TestDiskBatchListMajor(t *testing.T) {
	ctx := context.Background()
	const n, d, nq, k = 5000, 32, 25, 10
	rng := rand.New(rand.NewPCG(11, 12))
	all := diskClustered(rng, n+60+nq, d, 40, 0.6)
	vecs, qs := all[:n+60], all[n+60:]
	ids := vectest.IDs(n + 60)
	for _, tc := range []struct {
		name    string
		quant   int
		ordered bool
	}{
		{"binary", DiskQuantBinary, false},
		{"binary-ordered", DiskQuantBinary, true},
		{"int8", DiskQuantInt8, false},
		{"int8-ordered", DiskQuantInt8, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			smallDiskWrites(t, 500)
			old := diskBatchBlock
			diskBatchBlock = 7 // blocks end inside lists and pieces
			t.Cleanup(func() { diskBatchBlock = old })
			x := openDisk(t, IndexConfig{Dim: d, Dir: t.TempDir(), Params: map[string]int{"quant": tc.quant, "segrows": 900, "nlist": 12}})
			defer x.Close()
			for lo := 0; lo < n; lo += 1000 {
				if err := x.Add(ctx, ids[lo:lo+1000], vecs[lo:lo+1000]); err != nil {
					t.Fatal(err)
				}
				if err := x.Commit(uint64(lo + 1000)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.ordered {
				if err := x.OrderLists(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := x.Delete(ctx, ids[100:400]...); err != nil {
				t.Fatal(err)
			}
			if err := x.Add(ctx, ids[n:], vecs[n:]); err != nil { // stay in memory
				t.Fatal(err)
			}
			if len(x.tailIDs) == 0 || x.lists == nil || x.listsInOrder() != tc.ordered {
				t.Fatalf("setup: %d rows in memory, lists %v, in order %v", len(x.tailIDs), x.lists != nil, x.listsInOrder())
			}
			mode := DiskBinary
			if tc.quant == DiskQuantInt8 {
				mode = DiskInt8
			}
			odd := func(id string) bool { return strings.HasSuffix(id, "1") || strings.HasSuffix(id, "3") }
			for _, c := range []struct {
				o DiskSearchOptions
				f Filter
			}{
				{DiskSearchOptions{Mode: mode, NProbe: 3, Oversample: 4}, nil},
				{DiskSearchOptions{Mode: mode, NProbe: 12, Oversample: 2, Prefilter: 2}, nil},
				{DiskSearchOptions{Mode: mode, NProbe: 5, Oversample: 3}, odd},
				{DiskSearchOptions{Mode: mode, NProbe: 4, Oversample: 5, Focus: 3}, nil},
			} {
				got, err := x.SearchBatchWith(ctx, qs, k, c.f, c.o)
				if err != nil {
					t.Fatal(err)
				}
				for i, q := range qs {
					want, err := x.SearchWith(ctx, q, k, c.f, c.o)
					if err != nil {
						t.Fatal(err)
					}
					if len(want) == 0 || !reflect.DeepEqual(got[i], want) {
						t.Fatalf("%+v filter %v, query %d: batch\n%v\nalone\n%v", c.o, c.f != nil, i, got[i], want)
					}
				}
			}
		})
	}
}

// loggingRows is a RowMap that records the ids of each call (searches call it
// concurrently).
type loggingRows struct {
	m     RowMap
	mu    sync.Mutex
	calls [][]string
}

func (l *loggingRows) Rows(ctx context.Context, ids []string, dst [][]float32) error {
	l.mu.Lock()
	l.calls = append(l.calls, slices.Clone(ids))
	l.mu.Unlock()
	return l.m.Rows(ctx, ids, dst)
}

// TestDiskBatchRowless: a batch over inverted lists of an index that reads its rows from a
// RowSource reads each row it rescores once for the batch, however many queries share it
// (the batch holds every query twice), a call's ids in increasing order, and answers each
// query exactly as a search of that query alone (ids and scores): ids whose order is not
// the rows' order, dead rows, rows in memory, a filter, Focus, a prefilter, calls of 1 to
// 64 rows. A row the source does not have fails the batch with ErrNoRow.
func TestDiskBatchRowless(t *testing.T) {
	ctx := context.Background()
	const n, d, nq, k = 3000, 24, 15, 10
	rng := rand.New(rand.NewPCG(21, 22))
	all := diskClustered(rng, n+40+nq, d, 30, 0.6)
	vecs, qs := all[:n+40], all[n+40:]
	qs = append(qs, qs...)
	ids := make([]string, n+40)
	for i := range ids { // key order is not the rows' order
		ids[i] = fmt.Sprintf("%d-%x", i%7, i*7919)
	}
	for _, quant := range []int{DiskQuantBinary, DiskQuantInt8} {
		t.Run(fmt.Sprint(quant), func(t *testing.T) {
			smallDiskWrites(t, 500)
			src := &loggingRows{m: RowMap{}}
			x := openDisk(t, IndexConfig{Dim: d, Dir: t.TempDir(), Rows: src,
				Params: map[string]int{"quant": quant, "segrows": 700, "nlist": 9, "threads": 2}})
			defer x.Close()
			for lo := 0; lo < n; lo += 1000 {
				if err := x.Add(ctx, ids[lo:lo+1000], vecs[lo:lo+1000]); err != nil {
					t.Fatal(err)
				}
				for i := lo; i < lo+1000; i++ {
					src.m[ids[i]] = vecs[i]
				}
				if err := x.Commit(uint64(lo + 1000)); err != nil {
					t.Fatal(err)
				}
			}
			if err := x.Delete(ctx, ids[50:300]...); err != nil {
				t.Fatal(err)
			}
			if err := x.Add(ctx, ids[n:], vecs[n:]); err != nil { // stay in memory
				t.Fatal(err)
			}
			if len(x.tailIDs) == 0 || x.lists == nil {
				t.Fatalf("setup: %d rows in memory, lists %v", len(x.tailIDs), x.lists != nil)
			}
			mode := DiskBinary
			if quant == DiskQuantInt8 {
				mode = DiskInt8
			}
			odd := func(id string) bool { return strings.HasSuffix(id, "1") || strings.HasSuffix(id, "a") }
			for ci, c := range []struct {
				o     DiskSearchOptions
				f     Filter
				fetch int
			}{
				{DiskSearchOptions{Mode: mode, NProbe: 3, Oversample: 4}, nil, 1},
				{DiskSearchOptions{Mode: mode, NProbe: 9, Oversample: 6, Prefilter: 2}, nil, 7},
				{DiskSearchOptions{Mode: mode, NProbe: 4, Oversample: 3}, odd, 64},
				{DiskSearchOptions{Mode: mode, NProbe: 4, Oversample: 5, Focus: 3}, nil, 13},
			} {
				old := diskBatchFetch
				diskBatchFetch = c.fetch
				src.calls = nil
				got, err := x.SearchBatchWith(ctx, qs, k, c.f, c.o)
				diskBatchFetch = old
				if err != nil {
					t.Fatal(err)
				}
				seen := map[string]bool{}
				for _, call := range src.calls {
					if len(call) > c.fetch || !slices.IsSorted(call) {
						t.Fatalf("case %d: a call of %d ids (at most %d), in order %v", ci, len(call), c.fetch, slices.IsSorted(call))
					}
					for _, id := range call {
						if seen[id] {
							t.Fatalf("case %d: %s read twice in one batch", ci, id)
						}
						seen[id] = true
					}
				}
				if len(seen) == 0 {
					t.Fatalf("case %d: no rows read", ci)
				}
				for i, q := range qs {
					want, err := x.SearchWith(ctx, q, k, c.f, c.o)
					if err != nil {
						t.Fatal(err)
					}
					if len(want) == 0 || !reflect.DeepEqual(got[i], want) {
						t.Fatalf("case %d, query %d: batch\n%v\nalone\n%v", ci, i, got[i], want)
					}
				}
			}
			// A row the source lost (one a query ranks, not one in memory): the batch fails,
			// naming it.
			hits, err := x.SearchWith(ctx, qs[0], k, nil, DiskSearchOptions{Mode: mode, NProbe: 3})
			if err != nil {
				t.Fatal(err)
			}
			lost := ""
			for _, h := range hits {
				if !slices.Contains(ids[n:], h.ID) {
					lost = h.ID
					break
				}
			}
			if lost == "" {
				t.Fatalf("setup: every hit of query 0 is a row in memory: %v", hits)
			}
			delete(src.m, lost)
			if _, err := x.SearchBatchWith(ctx, qs, k, nil, DiskSearchOptions{Mode: mode, NProbe: 3}); !errors.Is(err, ErrNoRow) || !strings.Contains(err.Error(), lost) {
				t.Fatalf("a lost row: %v", err)
			}
		})
	}
}
