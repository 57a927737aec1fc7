//go:build unix

package bm25

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps the file at path read-only (an empty file is an error).
func mapFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	if size <= 0 || int64(int(size)) != size {
		return nil, fmt.Errorf("%s: cannot map %d bytes", path, size)
	}
	return syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
}

// unmapFile releases a mapping of mapFile.
func unmapFile(b []byte) error { return syscall.Munmap(b) }
