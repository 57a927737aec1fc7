//go:build linux

package bm25

import (
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/agentmem/memory/internal/smaps"
	"golang.org/x/sys/unix"
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

// residentPages reports, for each page of the n bytes at p, whether it is in memory.
func residentPages(t *testing.T, p unsafe.Pointer, n int) []bool {
	t.Helper()
	vec := make([]byte, (n+pageSize-1)/pageSize)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(p), uintptr(n), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	in := make([]bool, len(vec))
	for i, v := range vec {
		in[i] = v&1 != 0
	}
	return in
}

// TestArenaPopulatesAhead: a slab's pages are in memory before its slots are touched, a
// popStep at a time as slots are cut (one madvise instead of a fault a page), the next
// step by the populator before any of its slots is cut, and the slab's pages past that
// are not (a slab is not populated whole up front).
func TestArenaPopulatesAhead(t *testing.T) {
	a := newSlabArena()
	const n = 2048 // 8 KiB slots
	var slots [][]uint32
	defer func() { a.release(slots...) }()
	for range arenaFirstSlab/(4*n) + 1 { // the last one the first of the second, large slab
		slots = append(slots, a.alloc(n))
	}
	if populateOff.Load() {
		t.Skip("this kernel does not know MADV_POPULATE_WRITE (Linux < 5.14)")
	}
	populatorIdle()
	first := unsafe.Pointer(&slots[0][0])
	for i, in := range residentPages(t, first, arenaFirstSlab) {
		if !in {
			t.Fatalf("page %d of the first slab (%d bytes, all cut into slots) is not in memory", i, arenaFirstSlab)
		}
	}
	// Where every mapping may get huge pages, a step's first touch can bring in its whole
	// 2 MiB: then only the pages that must be in memory are checked.
	thp, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	hugeAlways := strings.Contains(string(thp), "[always]")
	big := unsafe.Pointer(&slots[len(slots)-1][0])
	check := func(step int) {
		t.Helper()
		in := residentPages(t, big, arenaSlab)
		stepPages := popStep / pageSize
		for i, r := range in {
			if want := i < step*stepPages; r != want && (want || !hugeAlways) {
				t.Fatalf("after %d steps, page %d of the large slab: in memory %v, want %v", step, i, r, want)
			}
		}
	}
	populatorIdle()
	check(1) // one slot cut, never touched: its step is in memory, the rest of the slab not
	// Once less than half a step lies populated ahead of the slots cut, the next step is
	// populated by the populator, before any slot of it is cut.
	for range popStep / (8 * n) {
		slots = append(slots, a.alloc(n))
	}
	populatorIdle()
	check(2)
	for range popStep/(8*n) - 1 {
		slots = append(slots, a.alloc(n)) // the last one ends the first step
	}
	populatorIdle()
	check(2)
	slots = append(slots, a.alloc(n)) // the first slot of the second step
	populatorIdle()
	check(2)
}
