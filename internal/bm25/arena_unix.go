//go:build unix

package bm25

import (
	"log/slog"
	"syscall"
	"unsafe"
)

// hugePage is the alignment large slabs are mapped at, so that where transparent huge pages
// are on for every mapping (Linux's "always") the kernel can back them with huge pages.
//
// The slabs are not advised MADV_HUGEPAGE. Under Linux's default setting ("madvise", with
// defrag "madvise") the advice makes the first touch of each 2 MiB compact memory until a
// huge page is free, and on a machine whose page cache is full that stalled queries for
// about 5 ms: a fresh process's first round at 1M had a p99 of 1.8–5.2 ms with the advice
// and 1.96–2.10 ms without, and at 21M 23–27 ms against 19–20 ms; warm rounds were the same
// either way at both sizes (BENCHMARKS.md §0zk), so the TLB misses huge pages save did not
// show.
const hugePage = 2 << 20

// mapWords maps n words of anonymous memory outside the Go heap (from the heap when the
// map fails); when aligned, at a multiple of hugePage.
func mapWords(n int, aligned bool) []uint32 {
	size := 4 * n
	extra := 0
	if aligned {
		extra = hugePage
	}
	b, err := syscall.Mmap(-1, 0, size+extra, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		slog.Warn("hybrid: mapping memory for the postings cache failed; using the heap", "bytes", size, "err", err)
		return make([]uint32, n)
	}
	if !aligned {
		return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), n)
	}
	// Trim the mapping to an aligned start; the rest is given back at once.
	skip := int((hugePage - uintptr(unsafe.Pointer(&b[0]))%hugePage) % hugePage)
	if skip > 0 {
		syscall.Munmap(b[:skip:skip])
	}
	if tail := b[skip+size:]; len(tail) > 0 {
		syscall.Munmap(tail)
	}
	b = b[skip : skip+size : skip+size]
	return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), n)
}
