//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package store

import "os"

// mapFile maps nothing on this system: page walks read with ReadAt.
func mapFile(*os.File, int64) ([]byte, func()) { return nil, func() {} }

// adviseRandom does nothing on this system (see mapfile_unix.go).
func adviseRandom([]byte) {}
