//go:build unix

package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
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

// processAlive reports whether a process with pid runs (one of another user's counts).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// privateTempDir is <TempDir>/memory-<uid>, a folder only this user may use (made 0700; one
// owned by another user or open to others is refused): the home of sockets whose store
// path is too long for a socket address.
func privateTempDir() (string, error) {
	uid := os.Getuid()
	dir := filepath.Join(os.TempDir(), "memory-"+strconv.Itoa(uid))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != uid || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("memory: %s is not a private folder of this user", dir)
	}
	return dir, nil
}
