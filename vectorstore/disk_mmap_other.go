//go:build !unix

package vectorstore

import (
	"io"
	"os"
)

// diskMapFile reads the first size bytes of f into memory (no mmap on this platform).
func diskMapFile(f *os.File, size int) ([]byte, error) {
	if size == 0 {
		return nil, nil
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, int64(size)), b); err != nil {
		return nil, err
	}
	return b, nil
}

// diskUnmap releases a mapping of diskMapFile (nothing to do here).
func diskUnmap([]byte) error { return nil }

// diskDropResident does nothing here (the "mapping" is the process's own copy).
func diskDropResident([]byte) {}
