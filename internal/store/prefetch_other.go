//go:build !linux

package store

// canReadAhead: no readahead on this system (descendKeys only finds leaves).
const canReadAhead = false

// readAhead does nothing on this system.
func readAhead([]byte) {}

// resident cannot tell on this system.
func resident([]byte) bool { return false }
