//go:build !linux

package vectorstore

// diskMemBytes is the machine's physical memory (0: unknown).
func diskMemBytes() uint64 { return 0 }
