//go:build !unix

package hybrid

// mapWords takes n words from the heap: this platform has no anonymous mmap here.
func mapWords(n int) []uint32 { return make([]uint32, n) }
