//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package store

import (
	"os"
	"syscall"
)

// mapFile maps the first size bytes of f read-only and shared, and returns them with the
// function that unmaps them; nil (and a no-op) when the file cannot be mapped (empty, or
// the system refuses): the caller reads with ReadAt then.
func mapFile(f *os.File, size int64) ([]byte, func()) {
	if size <= 0 || int64(int(size)) != size {
		return nil, func() {}
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, func() {}
	}
	return b, func() { syscall.Munmap(b) }
}
