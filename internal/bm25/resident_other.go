//go:build !linux

package bm25

// fileResidentBytes is not known on this system: MappedResidentBytes is ignored.
func fileResidentBytes() (int64, bool) { return 0, false }

// dropResident does nothing on this system.
func dropResident([]byte) {}
