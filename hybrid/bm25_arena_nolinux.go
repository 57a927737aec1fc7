//go:build unix && !linux

package hybrid

// adviseHuge does nothing: transparent huge pages are Linux's.
func adviseHuge([]byte) {}
