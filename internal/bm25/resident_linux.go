package bm25

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

// fileResidentBytes returns the process's resident file-backed and shared bytes
// (/proc/self/statm's third field, in pages).
func fileResidentBytes() (int64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := bytes.Fields(b)
	if len(f) < 3 {
		return 0, false
	}
	pages, err := strconv.ParseInt(string(f[2]), 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * int64(os.Getpagesize()), true
}

// dropResident drops the page-table entries of mem, a read-only file mapping; its pages
// stay in the page cache.
func dropResident(mem []byte) {
	page := uintptr(os.Getpagesize())
	skip := (page - uintptr(unsafe.Pointer(unsafe.SliceData(mem)))%page) % page
	if uintptr(len(mem)) <= skip {
		return
	}
	_ = syscall.Madvise(mem[skip:], syscall.MADV_DONTNEED)
}
