//go:build unix

package vecfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestOpenFIFO: Open reads a named pipe as a stream (its size is not the data's): an .npy
// written into it by another writer arrives whole.
func TestOpenFIFO(t *testing.T) {
	m := matrix(7, 5)
	data := npyBytes(t, m, 5)
	fifo := filepath.Join(t.TempDir(), "vecs.npy")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			done <- err
			return
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		done <- err
	}()
	r, err := Open(fifo)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rows, err := readAll(r)
	if err != nil || len(rows) != 7 || rows[6][4] != m[6][4] {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
