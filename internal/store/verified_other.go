//go:build !linux

package store

// fileID is what identifies a file's content to the census record (verified.go).
type fileID struct{ dev, ino, size, mtime, ctime uint64 }

// identify never vouches for a file here (its change time is not read): every process
// takes the census.
func identify(string) (fileID, bool) { return fileID{}, false }
