package store

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// canReadAhead: readAhead asks the kernel for pages here.
const canReadAhead = true

// resident reports whether the first page of b (a page-aligned part of a file mapping) is
// in the page cache (mincore); false when the system cannot say.
func resident(b []byte) bool {
	var vec [1]byte
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(min(len(b), os.Getpagesize())), uintptr(unsafe.Pointer(&vec[0])))
	return e == 0 && vec[0]&1 != 0
}

// readAhead asks the kernel to read b's pages (a page-aligned part of a file mapping)
// into the page cache, without waiting, when they are not all resident (mincore).
func readAhead(b []byte) {
	if len(b) == 0 {
		return
	}
	var vec [64]byte // 64 system pages: a bbolt page of up to 256 KiB; larger ones are asked for as they are
	ps := os.Getpagesize()
	n := min(len(vec), (len(b)+ps-1)/ps)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(min(len(b), n*ps)), uintptr(unsafe.Pointer(&vec[0]))); e == 0 {
		all := true
		for _, v := range vec[:n] {
			all = all && v&1 != 0
		}
		if all {
			return
		}
	}
	_ = unix.Madvise(b, unix.MADV_WILLNEED) // a hint: a refusal changes nothing read
}
