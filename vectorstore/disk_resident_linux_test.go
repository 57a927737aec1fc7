package vectorstore

import (
	"context"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/smaps"
	"github.com/agentmem/memory/internal/vectest"
)

// TestDiskDropResident: the id table a commit writes is not left resident, and a pass over every segment (the check before OrderLists or a
// compaction copies them) leaves none of their pages in the process's resident set, and
// the mappings read the same bytes afterwards (file mappings: the pages come back from
// the page cache, never as zeros).
func TestDiskDropResident(t *testing.T) {
	ctx := context.Background()
	smallDiskWrites(t, 500)
	const n, d, k = 4000, 64, 10
	rng := rand.New(rand.NewPCG(3, 4))
	all := diskClustered(rng, n+20, d, 30, 0.5)
	vecs, qs := all[:n], all[n:]
	dir := t.TempDir()
	x := openDisk(t, IndexConfig{Dim: d, Dir: dir, Params: map[string]int{"quant": DiskQuantBinary, "segrows": 1000, "nlist": 8}})
	defer x.Close()
	if err := x.Add(ctx, vectest.IDs(n), vecs); err != nil {
		t.Fatal(err)
	}
	if err := x.Commit(1); err != nil {
		t.Fatal(err)
	}
	if len(x.segs) < 4 || len(x.tailIDs) != 0 {
		t.Fatalf("%d segments, %d rows in memory", len(x.segs), len(x.tailIDs))
	}
	residentOf := func(prefix string) int {
		t.Helper()
		kb, err := smaps.ResidentKB(func(p string) bool { return strings.HasPrefix(p, dir) && strings.Contains(p, prefix) })
		if err != nil {
			t.Fatal(err)
		}
		return kb
	}
	resident := func() int { return residentOf("seg-") }
	// The id table written (and read back to check it) by the commit is not resident.
	if kb := residentOf("ids-"); kb != 0 {
		t.Fatalf("%d kB of the id table resident after its commit", kb)
	}
	if got := x.ids.find(vectest.IDs(n)[7]); len(got) != 1 || got[0] != 7 {
		t.Fatal("an id is not found after its table's pages were dropped")
	}
	o := DiskSearchOptions{Mode: DiskBinary, NProbe: 8, Oversample: 4}
	want, err := x.SearchBatchWith(ctx, qs, k, nil, o) // reads every list's codes and rows
	if err != nil {
		t.Fatal(err)
	}
	if kb := resident(); kb < 100 {
		t.Fatalf("%d kB of the segments resident after a search of every list, want their pages", kb)
	}
	if err := x.checkAllRows(); err != nil {
		t.Fatal(err)
	}
	if err := x.checkAllCodes(); err != nil {
		t.Fatal(err)
	}
	if kb := resident(); kb != 0 {
		t.Fatalf("%d kB of the segments still resident after a pass over them", kb)
	}
	got, err := x.SearchBatchWith(ctx, qs, k, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal("results differ after the pages were dropped")
	}
}
