package vectorstore

import (
	"context"
	"math/rand/v2"
	"reflect"
	"strings"
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
