//go:build unix

package bm25

import (
	"log/slog"
	"syscall"
	"unsafe"
)

// hugePage is the alignment slabs are mapped at, so that on Linux their memory can be
// backed by transparent huge pages (a cache of hundreds of MiB read at random is otherwise
// a TLB miss per block).
const hugePage = 2 << 20

// mapWords maps n words of anonymous memory outside the Go heap (from the heap when the
// map fails); when huge, aligned to hugePage and advised to be backed by huge pages.
func mapWords(n int, huge bool) []uint32 {
	size := 4 * n
	extra := 0
	if huge {
		extra = hugePage
	}
	b, err := syscall.Mmap(-1, 0, size+extra, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		slog.Warn("hybrid: mapping memory for the postings cache failed; using the heap", "bytes", size, "err", err)
		return make([]uint32, n)
	}
	if !huge {
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
	adviseHuge(b)
	return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), n)
}
