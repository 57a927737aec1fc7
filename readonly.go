package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrReadOnly: a write (Add, Upsert, Delete, DeleteWhere, Replace, BeginReplace,
// CreateCollection, DeleteCollection, SaveSOPs) on a store opened with ReadOnly.
var ErrReadOnly = errors.New("memory: store is opened read-only")

// ReadOnly opens an existing store for reading only. Several processes may open one store
// read-only at once (bbolt's shared lock: `memory serve` replicas and CLI searches sharing a
// store), while no process has it open for writing; a writer and readers at once fail with
// ErrLocked, which says whether a writer or readers hold it.
//
// A read-only open never creates a store (a missing or empty directory is
// ErrStoreNotFound) and never writes to it: no manifest rewrite, no clean-up of temporary
// files, no catch-up of a derived index on disk. A derived index that lags behind the store
// of record or cannot be read is rebuilt in memory for this process only (logged: open the
// store writable once, or run `memory check --repair`, to rebuild it on disk). A dense
// index that persists itself (FAISS) is opened read-only as its writer left it, with the
// configuration the manifest records; one that does not (the flat default) is loaded from
// the store of record. An
// embedder that differs from the store's is ErrEmbedderMismatch (re-embedding writes).
// Every write fails with ErrReadOnly.
func ReadOnly() Option { return func(o *Options) { o.ReadOnly = true } }

// writable is the guard at the top of every write: ErrReadOnly on a read-only store.
func (m *Memory) writable() error {
	if m.opts.ReadOnly {
		return fmt.Errorf("%w: %s", ErrReadOnly, m.dir)
	}
	return nil
}

// lockedError is the error of an Open that could not take store.db's lock: it names the
// directory and the kind of holder. A read-only open is only ever kept out by a writer; a
// writer asks the lock whether readers or a writer hold it.
func lockedError(dir string, readOnly bool) error {
	holder := "a writer"
	if !readOnly {
		holder = lockHolder(filepath.Join(dir, dbName))
	}
	return fmt.Errorf("%w: %s is held by another process (%s)", ErrLocked, dir, holder)
}

// checkReadOnlyDir: a read-only open needs an existing directory (it creates nothing).
func (m *Memory) checkReadOnlyDir() error {
	fi, err := os.Stat(m.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s does not exist", ErrStoreNotFound, m.dir)
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrNotAStore, m.dir)
	}
	return nil
}

// checkEmbedderReadOnly is checkEmbedder for a read-only store, which must not write: the
// configured embedder must be the recorded one, or the store must hold no document (the
// embedder's identity is then kept in memory only); re-embedding writes, so WithReEmbed
// cannot help here. checkEmbedder writes nothing when the embedders match, when none is
// configured, and when it refuses a store holding documents, so those cases go to it.
func (m *Memory) checkEmbedderReadOnly() error {
	e, rec := m.opts.Embedder, m.man.Embedder
	if e == nil || e.Dim() <= 0 || rec != nil && embedderMatches(rec, e) {
		return m.checkEmbedder()
	}
	n, err := m.countDocs()
	if err != nil {
		return err
	}
	if n > 0 {
		if m.opts.ReEmbed {
			return fmt.Errorf("%w: %w: re-embedding %d documents with %q writes to the store", ErrEmbedderMismatch, ErrReadOnly, n, e.ID())
		}
		return m.checkEmbedder()
	}
	man := *m.man
	man.Embedder = &embInfo{ID: e.ID(), Dim: e.Dim(), Precomputed: vectorsOnly(e)}
	m.man = &man
	return nil
}
