//go:build !unix

package memory

import (
	"os"
	"path/filepath"
)

// lockHolder cannot tell readers from a writer on this platform.
func lockHolder(string) string { return "a writer or read-only readers" }

// processAlive cannot tell on this platform: every pid is taken for running.
func processAlive(pid int) bool { return pid > 0 }

// privateTempDir is <TempDir>/memory, the home of sockets whose store path is too long for
// a socket address.
func privateTempDir() (string, error) {
	dir := filepath.Join(os.TempDir(), "memory")
	return dir, os.MkdirAll(dir, 0o700)
}
