//go:build !linux

package store

// DropResident does nothing on this system (see the Linux version).
func (db *DB) DropResident() {}
