package store

import "syscall"

// DropResident drops the page-table entries of the store file's read-only mapping (Linux,
// madvise MADV_DONTNEED): its pages stay in the page cache, and the next read of one is a
// minor fault. It bounds the resident size of a process that reads records all over a
// large store (Options.MappedResidentBytes at the root). The mapping cannot move meanwhile:
// a read transaction holds it.
func (db *DB) DropResident() {
	if db == nil || db.bolt == nil {
		return
	}
	tx, err := db.bolt.Begin(false)
	if err != nil {
		return
	}
	defer tx.Rollback()
	addr, size := db.bolt.Info().Data, uintptr(tx.Size())
	if addr == 0 || size == 0 {
		return
	}
	syscall.Syscall(syscall.SYS_MADVISE, addr, size, syscall.MADV_DONTNEED)
	dropLookupResident(db.bolt, func(b []byte) { syscall.Madvise(b, syscall.MADV_DONTNEED) })
}
