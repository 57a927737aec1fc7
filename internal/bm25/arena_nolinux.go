//go:build unix && !linux

package bm25

// adviseHuge does nothing: transparent huge pages are Linux's.
func adviseHuge([]byte) {}
