//go:build !linux

package bm25

import "io/fs"

// changeTimeInode is not known here: a segment file is known by its name, size and
// modification time alone.
func changeTimeInode(fs.FileInfo) (ctime int64, ino uint64) { return 0, 0 }
