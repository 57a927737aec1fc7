package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/agentmem/memory/internal/atomicfile"
	"github.com/agentmem/memory/internal/store"
)

// Creating a store survives a disk that fills up (issue 21): its store.db is initialised
// under a temporary name beside it (dbTempPrefix) and linked into place only whole, so a
// failed creation leaves at most that temporary file, which the next writer removes, and
// never a partial store.db that no command could open. A partial store.db left by an older
// version (bbolt's first write cut short) is recognised as holding nothing (store.NeverWritten)
// and made again.

// dbTempPrefix starts the names of the files a new store.db is initialised in.
var dbTempPrefix = atomicfile.TempPrefix(dbName)

// makeDB makes a new, empty store.db at dbPath atomically: bbolt initialises a temporary
// file beside it, which is then linked to dbPath (a link never replaces a file: when
// another process made store.db meanwhile, that one is kept, and opened like any other).
// On a file system without hard links, store.db is left to bbolt to make in place.
func (op opening) makeDB(dbPath string) error {
	m := op.m
	f, err := os.CreateTemp(m.dir, dbTempPrefix+"*")
	if err != nil {
		return fmt.Errorf("memory: creating %s: %w", dbPath, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // the link, when made, keeps the file
	if err := f.Close(); err != nil {
		return fmt.Errorf("memory: creating %s: %w", dbPath, err)
	}
	// bbolt writes its first pages and fsyncs them when it opens an empty file.
	db, err := bolt.Open(tmp, 0o644, &bolt.Options{Timeout: time.Second, PageSize: store.PageSize})
	if err != nil {
		return fmt.Errorf("memory: creating %s: %w", dbPath, err)
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("memory: creating %s: %w", dbPath, err)
	}
	if testHookMakeDB != nil {
		if err := testHookMakeDB(tmp); err != nil {
			return err
		}
	}
	err = os.Link(tmp, dbPath)
	switch {
	case err == nil:
		if m.opts.NoSync {
			return nil
		}
		return atomicfile.SyncDir(m.dir)
	case errors.Is(err, fs.ErrExist):
		return nil // another process made it first
	case fileExists(dbPath):
		return nil // ours was removed as a leftover by a writer of the store made meanwhile
	}
	if !linkUnsupported(err) {
		return fmt.Errorf("memory: creating %s: %w", dbPath, err)
	}
	m.log.Debug("memory: no hard links here; bbolt makes the new store.db in place", "dir", m.dir, "err", err)
	return nil
}

// testHookMakeDB, when set (tests), runs between the initialisation of a new store.db's
// temporary file and its link into place; an error ends the creation there.
var testHookMakeDB func(tmp string) error

// recoverCreation decides, for a store.db in a directory without a manifest that failed
// store.CheckFile and that no writer held a moment ago, whether the store can be created
// (creating true) or why not. It looks again under an exclusive lock on the file, so that
// no other process writes it meanwhile: a store.db that provably holds nothing
// (store.NeverWritten: a creation cut short) is emptied, for bbolt to initialise again; one that
// another process emptied, made whole or replaced meanwhile is left to the usual opening
// (a creation under way is ErrLocked there); anything else is ErrNotAStore, untouched.
func (op opening) recoverCreation(dbPath string) (creating bool, err error) {
	m := op.m
	notOurs := fmt.Errorf("%w: %s holds a %s that is not a store database and no %s", ErrNotAStore, m.dir, dbName, manifestName)
	f, err := os.OpenFile(dbPath, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close() // releases the lock
	locked, err := tryLockFile(f)
	if err != nil {
		return false, notOurs
	}
	if !locked {
		return false, lockedError(m.dir, false)
	}
	if man, err := readManifest(m.dir); err != nil || man != nil {
		return man != nil, err // made meanwhile: opened as usual
	}
	fi, err := os.Stat(dbPath)
	if err != nil || !sameFile(f, fi) || fi.Size() == 0 || store.CheckFile(dbPath) == nil {
		return true, nil // changed meanwhile: opened (or made) as usual
	}
	if !store.NeverWritten(dbPath) {
		return false, notOurs
	}
	m.log.Warn("memory: store.db of a creation cut short (it holds nothing): making it again", "path", dbPath)
	if err := f.Truncate(0); err != nil {
		return false, err
	}
	return true, f.Sync()
}

// sameFile reports whether the open file f is the file fi describes.
func sameFile(f *os.File, fi fs.FileInfo) bool {
	ffi, err := f.Stat()
	return err == nil && os.SameFile(ffi, fi)
}

// dbTemp reports whether name is a temporary file of makeDB.
func dbTemp(name string) bool { return strings.HasPrefix(name, dbTempPrefix) }

// unfinishedCreation reports whether the store.db at path, in a directory without a
// manifest, is one whose creation did not finish: empty, left partial by bbolt's first
// write (store.NeverWritten), being initialised (its creator holds the lock), or a whole
// database holding nothing.
func unfinishedCreation(path string) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	if fi.Size() == 0 || store.NeverWritten(path) {
		return true
	}
	if store.CheckFile(path) != nil {
		return false
	}
	empty := false
	err = store.Guard("reading "+path, func() error {
		db, err := store.Open(path, store.Options{ReadOnly: true, Timeout: 50 * time.Millisecond})
		if err != nil {
			return err
		}
		defer db.Close()
		empty = db.Empty()
		return nil
	})
	return empty || errors.Is(err, store.ErrLocked)
}
