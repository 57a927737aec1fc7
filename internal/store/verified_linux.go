package store

import "syscall"

// fileID is what identifies a file's content to the census record (verified.go).
type fileID struct{ dev, ino, size, mtime, ctime uint64 }

// identify returns the identity of the file at path; false when it cannot be read.
func identify(path string) (fileID, bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return fileID{}, false
	}
	return fileID{
		dev: uint64(st.Dev), ino: st.Ino, size: uint64(st.Size),
		mtime: uint64(st.Mtim.Sec)*1e9 + uint64(st.Mtim.Nsec),
		ctime: uint64(st.Ctim.Sec)*1e9 + uint64(st.Ctim.Nsec),
	}, true
}
