//go:build linux

package bm25

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"
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
	flags, err := vmFlags(addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(flags) {
		if f == "hg" {
			t.Fatalf("the slab's mapping is advised MADV_HUGEPAGE (VmFlags %q)", flags)
		}
	}
}

// vmFlags returns the VmFlags line of the mapping of this process that holds addr.
func vmFlags(addr uintptr) (string, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if !strings.HasSuffix(fields[0], ":") { // a mapping's header: "lo-hi perms offset dev inode [path]"
			var lo, hi uintptr
			if _, err := fmt.Sscanf(fields[0], "%x-%x", &lo, &hi); err != nil {
				return "", fmt.Errorf("smaps header %q: %v", line, err)
			}
			in = lo <= addr && addr < hi
			continue
		}
		if in && fields[0] == "VmFlags:" {
			return strings.Join(fields[1:], " "), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("no mapping of /proc/self/smaps holds %#x", addr)
}
