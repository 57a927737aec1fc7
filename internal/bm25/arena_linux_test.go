//go:build linux

package bm25

import (
	"slices"
	"testing"
	"unsafe"

	"github.com/agentmem/memory/internal/smaps"
)

// TestArenaNotAdvisedHuge: a large slab of the arena is aligned to hugePage and its
// mapping carries no MADV_HUGEPAGE advice ("hg" in /proc/self/smaps' VmFlags). Under
// Linux's default transparent huge page setting the advice makes every 2 MiB's first touch
// compact memory, which stalled first-seen queries by about 5 ms (BENCHMARKS.md §0zk).
func TestArenaNotAdvisedHuge(t *testing.T) {
	a := newSlabArena()
	const n = 2048 // 8 KiB slots: the first slab holds arenaFirstSlab/8 KiB of them
	var slots [][]uint32
	for range arenaFirstSlab/(4*n) + 1 { // the last one from the second, large slab
		slots = append(slots, a.alloc(n))
	}
	defer a.release(slots...)
	addr := uintptr(unsafe.Pointer(&slots[len(slots)-1][0]))
	if addr%hugePage != 0 {
		t.Fatalf("a large slab starts at %#x, not at a multiple of %d", addr, hugePage)
	}
	flags, err := smaps.VmFlags(addr)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(flags, "hg") {
		t.Fatalf("the slab's mapping is advised MADV_HUGEPAGE (VmFlags %q)", flags)
	}
}
