//go:build unix

package vectorstore

import (
	"os"

	"golang.org/x/sys/unix"
)

// diskMapFile maps the first size bytes of f read-only (nil for size 0). The mapping
// outlives f; release it with diskUnmap.
func diskMapFile(f *os.File, size int) ([]byte, error) {
	if size == 0 {
		return nil, nil
	}
	return unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
}

// diskUnmap releases a mapping of diskMapFile.
func diskUnmap(b []byte) error {
	if b == nil {
		return nil
	}
	return unix.Munmap(b)
}

// diskDropResident drops b's pages (a read-only mapping of diskMapFile) from the
// process's page tables: they stay in the page cache, the next read of one is a minor
// fault, and the process's resident size no longer counts them. A pass over more mapped
// bytes than the memory budget (OrderLists' copy) calls it as it goes.
func diskDropResident(b []byte) {
	if len(b) > 0 {
		_ = unix.Madvise(b, unix.MADV_DONTNEED) // advice: a refusal changes nothing read
	}
}
