//go:build linux

package bm25

import (
	"io/fs"
	"syscall"
)

// changeTimeInode returns a file's change time (ns) and inode.
func changeTimeInode(fi fs.FileInfo) (ctime int64, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Ctim.Sec)*1e9 + int64(st.Ctim.Nsec), st.Ino //nolint:unconvert // (int32 fields on 32-bit Linux)
	}
	return 0, 0
}
