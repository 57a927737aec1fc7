//go:build !linux

package store

// canReadAhead: no readahead on this system (prefetchKeys does nothing).
const canReadAhead = false

// readAhead does nothing on this system.
func readAhead([]byte) {}
