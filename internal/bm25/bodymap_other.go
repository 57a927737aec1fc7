//go:build !unix

package bm25

import (
	"fmt"
	"os"
)

// mapFile reads the file at path whole: this platform has no mmap here.
func mapFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil && len(b) == 0 {
		return nil, fmt.Errorf("%s: empty file", path)
	}
	return b, err
}

// unmapFile releases a mapping of mapFile (the garbage collector does).
func unmapFile([]byte) error { return nil }
