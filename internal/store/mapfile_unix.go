//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package store

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
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

// adviseRandom tells the system that b, a mapping of mapFile, is read at scattered pages (a
// lookup's path, the branch pages of a census): without it each fault reads the device's
// whole read-ahead window around its page (8 MiB on this project's VM disks: a cold
// writable open and close of a 21M-passage store read 9 GB of its 13 GB for the 170 MB
// of branch pages its census needed). bbolt advises its own mapping the same way. Walks
// of every page of a tree keep the read-ahead (a sequential read of the file is faster
// than a fault a page).
func adviseRandom(b []byte) {
	if len(b) > 0 {
		_ = unix.Madvise(b, unix.MADV_RANDOM) // (syscall has no Madvise on every unix)
	}
}
