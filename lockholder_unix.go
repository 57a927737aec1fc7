//go:build unix

package memory

import (
	"errors"
	"os"
	"syscall"
)

// lockHolder says who holds the flock of the bbolt file at path, which a writer could not
// take: when a shared lock can be had, only readers (read-only opens) hold it; when it
// cannot, a writer does. The probe's shared lock is released at once.
func lockHolder(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "a writer or read-only readers"
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if err == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return "read-only readers"
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return "a writer"
	}
	return "a writer or read-only readers"
}
