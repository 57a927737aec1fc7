package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/agentmem/memory/internal/store"
)

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
	return newLockedError(dir, holder)
}

// openReadOnlyDB takes store.db's shared lock, or, while a writer holds it, connects to the
// writer (m.remote), trying both until Options.LockTimeout (at least 200 ms) has passed: a
// writer still opening the store has its lock but no socket yet, and one closing has
// removed its socket but may still hold the lock.
func (op opening) openReadOnlyDB(dbPath string) error {
	m := op.m
	deadline := time.Now().Add(max(m.opts.LockTimeout, 200*time.Millisecond))
	for {
		db, err := store.Open(dbPath, store.Options{ReadOnly: true, Logger: m.log, Timeout: 50 * time.Millisecond})
		if err == nil {
			m.db = db
			return nil
		}
		if !errors.Is(err, store.ErrLocked) {
			return err
		}
		rc, rerr := dialRemote(m.dir)
		if rerr == nil {
			m.remote = rc
			return nil
		}
		if time.Now().After(deadline) {
			e := newLockedError(m.dir, "a writer")
			e.Detail = "reading through the writer failed: " + rerr.Error()
			return e
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkRemoteEmbedder: a store that reads through its writer embeds queries with the
// writer's embedder, so a configured one must be the store's.
func (op opening) checkRemoteEmbedder() error {
	m := op.m
	e, rec := m.opts.Embedder, m.man.Embedder
	if e == nil || e.Dim() <= 0 || rec == nil || embedderMatches(rec, e) {
		return nil
	}
	return fmt.Errorf("%w: %s is embedded with %q (dim %d), not the configured %q (dim %d); its writer answers the searches with its own",
		ErrEmbedderMismatch, m.dir, rec.ID, rec.Dim, e.ID(), e.Dim())
}

// errNotRemote is the error of an operation a store that reads through its writer cannot
// do (it needs the files themselves).
func (m *Memory) errNotRemote(op string) error {
	e := newLockedError(m.dir, "a writer")
	e.Detail = op + " reads the store's files, which only the writer may while it has them open"
	return e
}

// checkReadOnlyDir: a read-only open needs an existing directory (it creates nothing).
func (op opening) checkReadOnlyDir() error {
	m := op.m
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
func (op opening) checkEmbedderReadOnly() error {
	m := op.m
	e, rec := m.opts.Embedder, m.man.Embedder
	if e == nil || e.Dim() <= 0 || rec != nil && embedderMatches(rec, e) {
		return op.checkEmbedder()
	}
	n, err := m.countDocs()
	if err != nil {
		return err
	}
	if n > 0 {
		if m.opts.ReEmbed {
			return fmt.Errorf("%w: %w: re-embedding %d documents with %q writes to the store", ErrEmbedderMismatch, ErrReadOnly, n, e.ID())
		}
		return op.checkEmbedder()
	}
	man := *m.man
	man.Embedder = &embInfo{ID: e.ID(), Dim: e.Dim(), Precomputed: vectorsOnly(e)}
	m.man = &man
	return nil
}
