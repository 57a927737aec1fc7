// Package atomicfile replaces files whole. The new content goes to a temporary file beside
// the target, which is synced, closed and renamed over the target; then the folder is
// synced. A crash at any instant leaves the old file or the new one, never a part of
// either, and once a call returns nil the new file survives power loss. Every file the
// module replaces whole goes through this package (the files it appends to, such as
// bbolt's store.db and the vector segments, have commit points of their own).
//
// Temporary files are named "." + the target's name + ".tmp" + a random suffix, in the
// target's folder (IsTemp recognises them), so that two writers never share one and a
// folder's owner can remove those a crash left behind.
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Options tunes a write; the zero value is the default: mode 0o644, synced.
type Options struct {
	// Perm is the new file's permission bits (0: 0o644).
	Perm os.FileMode
	// NoSync skips the fsyncs of the file and of its folder: the file is still replaced
	// whole for readers, but a crash of the machine may lose it. For tests and scratch
	// output only.
	NoSync bool
}

func (o Options) perm() os.FileMode {
	if o.Perm == 0 {
		return 0o644
	}
	return o.Perm
}

// TempPrefix starts the names of the temporary files written for a target named name.
func TempPrefix(name string) string { return "." + name + ".tmp" }

// IsTemp reports whether name (a base name) is one of this package's temporary files.
func IsTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp")
}

// WriteFile replaces path with data.
func WriteFile(path string, data []byte, o Options) error {
	return Write(path, o, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write replaces path with what fill writes (through a buffer). When fill fails, path is
// left as it was and its error is returned as is.
func Write(path string, o Options, fill func(w io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), TempPrefix(filepath.Base(path))+"*")
	if err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	err = fill(bw)
	if err == nil {
		err = bw.Flush()
		if err != nil {
			err = fmt.Errorf("atomicfile: %s: %w", path, err)
		}
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	return commit(f, path, o.perm(), o)
}

// Publish renames tmp, a closed file that another writer filled (a download, a library
// that writes only to a path), over path: tmp is synced first and its folder after, as
// Write does; its mode becomes o.Perm when that is set. On failure tmp is removed and path
// left as it was. tmp must be in path's folder.
func Publish(tmp, path string, o Options) error {
	if filepath.Dir(tmp) != filepath.Dir(path) {
		return fmt.Errorf("atomicfile: %s is not in the folder of %s", tmp, path)
	}
	f, err := os.OpenFile(tmp, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	return commit(f, path, o.Perm, o)
}

// commit sets the mode of f, a temporary file beside path, to perm (0: left as it is),
// syncs and closes it, renames it over path and syncs the folder; on failure f is removed
// and path left as it was.
func commit(f *os.File, path string, perm os.FileMode, o Options) error {
	var err error
	if perm != 0 {
		err = f.Chmod(perm)
	}
	if err == nil && !o.NoSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("atomicfile: %s: %w", path, err)
	}
	return rename(f.Name(), path, o)
}

func rename(tmp, path string, o Options) error {
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("atomicfile: %w", err)
	}
	if o.NoSync {
		return nil
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir syncs the folder dir, so that the names it holds (a file just created or renamed
// into it) survive a crash of the machine.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("atomicfile: sync %s: %w", dir, err)
	}
	return nil
}
