//go:build !unix

package bm25

// mapWords takes n words from the heap: this platform has no anonymous mmap here.
func mapWords(n int, _ bool) []uint32 { return make([]uint32, n) }
