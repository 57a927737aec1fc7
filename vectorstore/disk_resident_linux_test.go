package vectorstore

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
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

// TestDiskCopyNotResident: the copy OrderLists and a compaction make of an index without
// rows of its own (codes and list numbers, in list order) reads the old segments with
// pread, not through their mappings, so none of their pages become resident while it runs
// (nothing drops them during the copy), and it copies each row's
// codes and list number exactly.
func TestDiskCopyNotResident(t *testing.T) {
	ctx := context.Background()
	smallDiskWrites(t, 500)
	const n, d = 3000, 64
	rng := rand.New(rand.NewPCG(5, 6))
	vecs := diskClustered(rng, n, d, 30, 0.5)
	ids := vectest.IDs(n)
	src := RowMap{}
	for i, id := range ids {
		src[id] = vecs[i]
	}
	dir := t.TempDir()
	x := openDisk(t, IndexConfig{Dim: d, Dir: dir, Rows: src, Params: map[string]int{"segrows": 700, "nlist": 8, "code": DiskCodeRotated}})
	defer x.Close()
	for lo := 0; lo < n; lo += 500 {
		if err := x.Add(ctx, ids[lo:lo+500], vecs[lo:lo+500]); err != nil {
			t.Fatal(err)
		}
		if err := x.Commit(uint64(lo + 500)); err != nil {
			t.Fatal(err)
		}
	}
	if x.rows == nil || len(x.segs) < 4 || len(x.tailIDs) != 0 || x.listsInOrder() {
		t.Fatalf("setup: rowless %v, %d segments, %d rows in memory, lists in order %v", x.rows != nil, len(x.segs), len(x.tailIDs), x.listsInOrder())
	}
	old := map[string]bool{}
	for _, s := range x.segs {
		for k := range s.maps {
			if fm := s.file(k); fm != nil {
				old[filepath.Join(dir, fm.Name)] = true
			}
		}
	}
	oldResident := func() int {
		t.Helper()
		kb, err := smaps.ResidentKB(func(p string) bool { return old[p] })
		if err != nil {
			t.Fatal(err)
		}
		return kb
	}
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	order = x.listOrder(order) // reads the list numbers through the mappings
	if err := x.checkAllCodes(); err != nil {
		t.Fatal(err)
	}
	if kb := oldResident(); kb != 0 {
		t.Fatalf("%d kB of the segments resident after their check", kb)
	}
	m := x.meta
	segs, err := x.writeRowsFrom(&m, nil, n, func(int) []float32 { return nil }, func(i int) int32 { return order[i] })
	if err != nil {
		t.Fatal(err)
	}
	defer closeSegs(segs)
	if kb := oldResident(); kb != 0 {
		t.Fatalf("%d kB of the old segments resident after a copy of every row", kb)
	}
	W := x.codeWords()
	i := 0
	for _, s := range segs {
		for j := range s.rows {
			o := order[i]
			os, oj := x.segs[int(o)/x.segRows], int(o)%x.segRows
			if !slices.Equal(s.b1[j*W:(j+1)*W], os.b1[oj*W:(oj+1)*W]) || s.ivl[j] != os.ivl[oj] {
				t.Fatalf("new row %d (old %d): codes or list number differ", i, o)
			}
			i++
		}
	}
	if i != n {
		t.Fatalf("%d rows copied, want %d", i, n)
	}
}
