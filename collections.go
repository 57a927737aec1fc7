package memory

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/agentmem/memory/internal/bm25"
	"github.com/agentmem/memory/internal/store"
)

// removeOrphanIndexes deletes the derived index directories of collections that no longer
// exist (left by a DeleteCollection interrupted after its transaction). When the store of
// record cannot list its collections (damaged: ErrCorrupt) nothing is removed, and the
// store opens: each command on a collection then meets the damage itself, and check
// reports it.
func (op opening) removeOrphanIndexes() error {
	m := op.m
	if m.tempDir {
		return nil
	}
	names, err := m.reg.collectionNames()
	if errors.Is(err, ErrCorrupt) {
		m.log.Warn("memory: the store's collections cannot be listed: no orphan index removed", "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	live := make(map[string]bool, len(names))
	for _, n := range names {
		live[n] = true
	}
	for _, k := range m.dx.kinds() {
		kind := k.name
		entries, err := os.ReadDir(filepath.Join(m.dir, kind))
		if err != nil {
			continue
		}
		for _, e := range entries {
			name, err := url.PathUnescape(e.Name())
			if err != nil || live[name] {
				continue
			}
			if err := os.RemoveAll(filepath.Join(m.dir, kind, e.Name())); err != nil {
				m.log.Warn("memory: cannot remove the index of a deleted collection", "path", e.Name(), "err", err)
			}
		}
	}
	return nil
}

// Collection returns a handle on the named collection, created on its first write (reads of
// a named collection that does not exist fail with ErrCollectionNotFound; see also
// GetCollection and CreateCollection). "" is the default collection. A name must be valid UTF-8 of 1 to 200 bytes without control characters;
// operations on an invalid one fail with ErrInvalidCollection. Creating a collection also
// needs its name to take at most 239 bytes once escaped for a directory
// name (url.PathEscape), which its indexes are stored under.
func (m *Memory) Collection(name string) *Collection {
	if name == "" {
		name = DefaultCollection
	}
	return &Collection{m: m, name: name}
}

// GetCollection returns the named collection ("" is the default collection) when it exists,
// else ErrCollectionNotFound. The default collection always exists (empty until written).
func (m *Memory) GetCollection(name string) (*Collection, error) {
	if m.cluster != nil {
		return m.cluster.getCollection(m, name)
	}
	c := m.Collection(name)
	if _, err := c.existing(); err != nil {
		return nil, err
	}
	return c, nil
}

// CreateCollection returns the named collection, creating it (durably, empty) when it does
// not exist yet, with the metadata of WithCollectionMetadata in the same transaction (an
// existing collection keeps its own; see SetCollectionMetadata) and the BM25 analyzer of
// WithCollectionAnalyzer (default: the store's, Options.Analyzer). An existing collection
// recorded with another analyzer than the one named is ErrAnalyzerMismatch; an unknown one
// ErrUnknownAnalyzer.
func (m *Memory) CreateCollection(name string, opts ...CollectionOption) (*Collection, error) {
	if m.cluster != nil {
		return m.cluster.createCollection(m, name, opts)
	}
	if err := m.writable(); err != nil {
		return nil, err
	}
	var cfg collectionConfig
	for _, o := range opts {
		o(&cfg)
	}
	var meta []byte
	if cfg.meta != nil {
		var err error
		if meta, err = encodeCollectionMeta(cfg.meta); err != nil {
			return nil, err
		}
	}
	ana := ""
	if cfg.analyzer != "" {
		var err error
		if ana, err = bm25.CheckAnalyzer(cfg.analyzer); err != nil {
			return nil, err
		}
	}
	c := m.Collection(name)
	m.wmu.Lock()
	defer m.wmu.Unlock()
	if meta != nil {
		if err := m.createWithMeta(c.name, ana, meta); err != nil {
			return nil, err
		}
	}
	s, err := c.stateWith(true, ana)
	if err != nil {
		return nil, err
	}
	if ana != "" && s.analyzer != ana {
		return nil, fmt.Errorf("%w: collection %s has analyzer %q, asked for %q", ErrAnalyzerMismatch, store.ShowKey(c.name), s.analyzer, ana)
	}
	return c, nil
}

// lockCollection begins a change to collection name in the set of collections (a delete,
// a rename): it checks that ctx is live, the store open and not read through its writer
// (what names the change in that error), takes the writer and collection locks, which
// unlock releases, and reports whether the collection exists. The caller has checked
// m.writable() and the name.
func (rg *registry) lockCollection(ctx context.Context, name, what string) (unlock func(), exists bool, err error) {
	m := rg.m
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if m.closed.Load() {
		return nil, false, ErrClosed
	}
	if m.cluster != nil {
		return nil, false, m.clusterUnsupported(callerMethod())
	}
	if m.remote != nil {
		return nil, false, m.errNotRemote(what)
	}
	m.wmu.Lock()
	rg.mu.Lock()
	unlock = func() {
		rg.mu.Unlock()
		m.wmu.Unlock()
	}
	if exists, err = rg.collectionExists(name); err != nil {
		unlock()
		return nil, false, err
	}
	return unlock, exists, nil
}

// DeleteCollection removes a collection with all its documents and indexes, in one
// transaction. A named collection that does not exist is ErrCollectionNotFound; deleting the
// default collection empties it. Searches running on it finish first; later ones of the
// name fail with ErrCollectionNotFound until it is written again.
func (m *Memory) DeleteCollection(ctx context.Context, name string) error {
	if m.cluster != nil {
		return m.cluster.deleteCollection(ctx, m, name)
	}
	if err := m.writable(); err != nil {
		return err
	}
	c := m.Collection(name)
	if err := validCollectionName(c.name); err != nil {
		return err
	}
	unlock, exists, err := m.reg.lockCollection(ctx, c.name, "deleting a collection")
	if err != nil {
		return err
	}
	defer unlock()
	if !exists {
		if c.name == DefaultCollection {
			return nil
		}
		return fmt.Errorf("%w: %s", ErrCollectionNotFound, store.ShowKey(c.name))
	}
	if err := m.db.DeleteCollection(c.name); err != nil {
		return fmt.Errorf("memory: delete collection %s: %w", store.ShowKey(c.name), err)
	}
	var errs []error
	if c.name != DefaultCollection { // (emptied, the default collection keeps its analyzer)
		errs = append(errs, m.recordAnalyzer(c.name, m.man.storeAnalyzer()))
	}
	if s := m.reg.cols[c.name]; s != nil {
		delete(m.reg.cols, c.name)
		s.mu.Lock()
		defer s.mu.Unlock()
		errs = append(errs, m.reg.closeIndexes(s))
		s.deleted = true
		s.Docs, s.Units = 0, 0
	}
	if colDirFits(c.name) { // else it has no index directory
		errs = append(errs, m.dx.removeDerived(c.name))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("memory: collection %s deleted, but removing its indexes failed (retried on open): %w", store.ShowKey(c.name), err)
	}
	return nil
}

// Collections lists the collections that exist (created by CreateCollection or a write, and
// not deleted), sorted, or the error that keeps them from being read (ErrClosed,
// ErrCorrupt).
func (m *Memory) Collections(ctx context.Context) ([]string, error) {
	if m.cluster != nil {
		return m.cluster.collections(ctx, m)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if m.closed.Load() {
		return nil, ErrClosed
	}
	if m.remote != nil {
		resp, err := m.remote.call(ctx, &wireReq{Op: "collections"})
		if err != nil {
			return nil, err
		}
		return append([]string{}, resp.Names...), nil
	}
	out, err := m.reg.collectionNames()
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []string{}
	}
	return out, nil
}

// maxCollectionName is the most bytes a collection name may take.
const maxCollectionName = 200

// collectionNameRules says, in ErrInvalidCollection's errors, what a name may be.
const collectionNameRules = "a collection name is 1 to 200 bytes of valid UTF-8 without control characters, other than \".\" and \"..\""

// validCollectionName checks name against collectionNameRules; the error names what is
// wrong and shows at most the name's first 64 bytes (a name of megabytes is not echoed).
func validCollectionName(name string) error {
	bad := func(what string) error {
		return fmt.Errorf("%w: %s (%s)", ErrInvalidCollection, what, collectionNameRules)
	}
	switch {
	case len(name) == 0:
		return bad("the name is empty")
	case len(name) > maxCollectionName:
		return bad(fmt.Sprintf("%s is %d bytes long", store.ShowKey(name), len(name)))
	case !utf8.ValidString(name):
		return bad(fmt.Sprintf("%s is not valid UTF-8", store.ShowKey(name)))
	case name == "." || name == "..":
		return bad(fmt.Sprintf("%q names a directory", name))
	}
	for i, r := range name {
		if r < 0x20 || r == 0x7f {
			return bad(fmt.Sprintf("%s has a control character (%U at byte %d)", store.ShowKey(name), r, i))
		}
	}
	return nil
}

// creatableCollectionName checks, beyond validCollectionName, that a new collection's
// indexes can be stored under its name.
func creatableCollectionName(name string) error {
	if err := validCollectionName(name); err != nil {
		return err
	}
	if n := len(url.PathEscape(name)); n > maxCollectionDirName {
		return fmt.Errorf("%w: %s takes %d bytes as a directory name (escaped), more than the %d allowed (file systems allow %d per name): a new collection's name may take at most %d bytes once escaped for a directory name (url.PathEscape: each byte other than a letter, a digit and -._~ takes 3)",
			ErrInvalidCollection, store.ShowKey(name), n, maxCollectionDirName, nameMax, maxCollectionDirName)
	}
	return nil
}

// colDirFits reports whether collection name's index directories can exist: false for a
// name too long once escaped (accepted by versions before the check on creation), whose
// collection can be read, listed and deleted, but not indexed.
func colDirFits(name string) bool { return len(url.PathEscape(name)) <= nameMax }

// colPath is the directory of a collection's derived index of the given kind.
func (dv derivedIndexes) colPath(kind, name string) string {
	m := dv.m
	return filepath.Join(m.dir, kind, url.PathEscape(name))
}
