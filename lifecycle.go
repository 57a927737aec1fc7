package memory

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmem/memory/internal/store"
)

// Collections open lazily and idle ones close: a store holds the counters of every
// collection it has touched (a few words each), but the indexes (open files, mapped
// segments, caches) of at most Options.MaxOpenCollections. A search or write on a closed
// one opens its indexes again, catching them up from the change log.

// Open opens the collection's indexes now, as its first search or write would (catching
// them up with the store of record and verifying them), and computes what its first BM25
// query needs before it scores (the index's statistics). A process that serves queries
// calls it at start so that its first query does not pay for these (at 21M passages about
// 13 ms); without it they are paid by the first search instead. Indexes closed later for
// Options.MaxOpenCollections open again at their next use. A missing collection is
// ErrCollectionNotFound; on a cluster or remote store Open does nothing (their servers
// hold the indexes).
func (c *Collection) Open(ctx context.Context) error {
	m := c.m
	if m.cluster != nil || m.remote != nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s, err := c.state(false)
	if err != nil {
		return err
	}
	if s == nil {
		return fmt.Errorf("%w: %s", ErrCollectionNotFound, store.ShowKey(c.name))
	}
	prepare := func() error {
		unlock, err := m.reg.rlockOpen(s)
		if err != nil {
			return err
		}
		defer unlock()
		if s.bm25 == nil {
			return nil
		}
		return s.bm25.Warm(ctx)
	}
	return m.dx.retryRepaired(c.name, func() error { return store.Guard("open", prepare) })
}

// registry holds the collections a store has used since it opened, and opens and closes
// their indexes within Options.MaxOpenCollections.
type registry struct {
	m         *Memory
	mu        sync.RWMutex         // guards cols; a collection's own lock guards its state
	cols      map[string]*colState // collections used since open (their indexes may be closed)
	openCount atomic.Int64         // collections whose indexes are open
}

// Defaults of the collection limits.
const (
	// defaultMaxCollections is the default cap on the number of collections in a store.
	defaultMaxCollections = 10_000
	// defaultMaxOpenCollections is how many collections keep their indexes open by default.
	defaultMaxOpenCollections = 64
)

// collectionExists reports whether collection name is in the store of record.
func (rg *registry) collectionExists(name string) (bool, error) {
	return rg.m.db.CollectionExists(name)
}

// collectionNames lists the collections of the store of record, sorted.
func (rg *registry) collectionNames() ([]string, error) { return rg.m.db.CollectionNames() }

// createCollection makes a collection's bucket with metadata meta (its JSON; nil: none),
// within the cap on collections, and removes any index left by a deleted collection of that
// name (it must not be caught up). Its BM25 analyzer, ana ("": the store's,
// Options.Analyzer), is recorded in the manifest first, so a collection never exists with
// another than the one asked for. The caller holds rg.mu.
func (rg *registry) createCollection(name, ana string, meta []byte) error {
	m := rg.m
	if err := creatableCollectionName(name); err != nil {
		return err
	}
	if ana == "" {
		ana = m.opts.Analyzer
	}
	if err := m.recordAnalyzer(name, ana); err != nil {
		return err
	}
	if err := m.db.CreateCollection(name, rg.maxCollections(), meta); err != nil {
		return err
	}
	return m.dx.removeDerived(name)
}

// lockOpen write-locks collection s with its indexes open; the caller holds the writer
// lock. unlock releases it.
func (rg *registry) lockOpen(s *colState) (unlock func(), err error) {
	s.mu.Lock()
	held := true
	defer func() {
		if held {
			s.mu.Unlock()
		}
	}()
	if err := rg.openIndexes(s); err != nil {
		return nil, err
	}
	held = false // the caller releases it
	return s.mu.Unlock, nil
}

// ensureOpen opens the indexes of s before a write changes the store of record, so that
// they are caught up and verified against the state before it. The caller holds the writer
// lock, under which every opening (and so every closing of idle collections) happens: they
// stay open until it is released.
func (rg *registry) ensureOpen(s *colState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return rg.openIndexes(s)
}

// rlockOpen read-locks collection s with its indexes open, opening them (under the write
// lock) when they are closed. A collection deleted meanwhile is ErrCollectionNotFound.
func (rg *registry) rlockOpen(s *colState) (unlock func(), err error) { return rg.rlockOpenOf(s, nil) }

// rlockOpenOf is rlockOpen needing only the indexes of the kinds want accepts (nil: all):
// the others may stay closed (a BM25 search at 21M x 768 does not load the vector index).
func (rg *registry) rlockOpenOf(s *colState, want func(store.Kind) bool) (unlock func(), err error) {
	m := rg.m
	for {
		unlock, err := s.rlockIfOpen(want)
		if err != nil || unlock != nil {
			return unlock, err
		}
		// Open them under the writer lock too: catching up reads the change log, which
		// only writers change.
		if err := func() error {
			m.wmu.Lock()
			defer m.wmu.Unlock()
			s.mu.Lock()
			defer s.mu.Unlock()
			return rg.openIndexesOf(s, want)
		}(); err != nil {
			return nil, err
		}
	}
}

// rlockIfOpen read-locks s when its indexes of the kinds want accepts (nil: all) are open
// and returns the unlock; (nil, nil) when they are closed (s is left unlocked).
func (s *colState) rlockIfOpen(want func(store.Kind) bool) (unlock func(), err error) {
	s.mu.RLock()
	held := true
	defer func() {
		if held {
			s.mu.RUnlock()
		}
	}()
	if s.deleted {
		return nil, fmt.Errorf("%w: %s", ErrCollectionNotFound, store.ShowKey(s.Name))
	}
	if s.Indexes == nil || s.Closed(want) {
		return nil, nil
	}
	s.lastUse.Store(time.Now().UnixNano())
	held = false // the caller releases it
	return s.mu.RUnlock, nil
}

// openIndexes opens, catches up and verifies the derived indexes of s when they are closed,
// then closes the least recently used collections beyond Options.MaxOpenCollections. The
// caller holds s.mu for writing.
func (rg *registry) openIndexes(s *colState) error { return rg.openIndexesOf(s, nil) }

// openIndexesOf is openIndexes for the kinds want accepts (nil: every kind, as a write
// needs): a collection opened for some kinds opens the others when they are wanted.
func (rg *registry) openIndexesOf(s *colState, want func(store.Kind) bool) error {
	m := rg.m
	if s.deleted {
		return fmt.Errorf("%w: %s", ErrCollectionNotFound, store.ShowKey(s.Name))
	}
	s.lastUse.Store(time.Now().UnixNano())
	if s.Indexes != nil {
		if !s.Closed(want) {
			return nil
		}
		// Opened for some kinds (a BM25 search): open the rest wanted now. Those open stay
		// open when one fails; the search fields of one that failed are cleared (its open
		// may have set them before its catch-up or rebuild failed and closed it).
		err := m.db.OpenIndexesOf(&s.Collection, nil, want)
		if s.Closed(func(k store.Kind) bool { return k.Name == bm25Dir }) {
			s.bm25 = nil
		}
		if s.Closed(func(k store.Kind) bool { return k.Name == vecDir }) {
			s.vec = nil
		}
		return err
	}
	if !colDirFits(s.Name) && !m.opts.ReadOnly { // (a read-only store indexes it in memory)
		return fmt.Errorf("%w: %s is too long for its index directories (%d bytes escaped, file systems allow %d): it was created by an older version; read its documents and delete it",
			ErrInvalidCollection, store.ShowKey(s.Name), len(url.PathEscape(s.Name)), nameMax)
	}
	if err := m.db.OpenIndexesOf(&s.Collection, m.dx.storeKinds(s), want); err != nil {
		s.bm25, s.vec = nil, nil
		return err
	}
	rg.openCount.Add(1)
	rg.closeIdle(s)
	return nil
}

// closeIdle closes the indexes of the least recently used collections while more than
// Options.MaxOpenCollections are open, skipping keep and any collection in use (its lock
// held).
func (rg *registry) closeIdle(keep *colState) {
	if int(rg.openCount.Load()) <= rg.maxOpen() {
		return
	}
	open := rg.loadedStates(keep)
	slices.SortFunc(open, func(a, b *colState) int { return int(a.lastUse.Load() - b.lastUse.Load()) })
	for _, s := range open {
		if int(rg.openCount.Load()) <= rg.maxOpen() {
			return
		}
		rg.closeIfIdle(s)
	}
}

// closeIfIdle closes the indexes of s unless it is in use (its lock held).
func (rg *registry) closeIfIdle(s *colState) {
	m := rg.m
	if !s.mu.TryLock() {
		return // in use: it is not idle
	}
	defer s.mu.Unlock()
	if err := rg.closeIndexes(s); err != nil {
		m.log.Warn("memory: closing an idle collection", "collection", s.Name, "err", err)
	}
}

// loadedStates lists the collections used since open, but skip.
func (rg *registry) loadedStates(skip *colState) []*colState {
	rg.mu.RLock()
	defer rg.mu.RUnlock()
	out := make([]*colState, 0, len(rg.cols))
	for _, s := range rg.cols {
		if s != skip {
			out = append(out, s)
		}
	}
	return out
}

// closeIndexes closes the open indexes of s; the caller holds s.mu for writing.
func (rg *registry) closeIndexes(s *colState) error {
	if s.Indexes == nil {
		return nil
	}
	rg.openCount.Add(-1)
	return s.close()
}

func (rg *registry) maxCollections() int {
	m := rg.m
	if m.opts.MaxCollections > 0 {
		return m.opts.MaxCollections
	}
	return defaultMaxCollections
}

func (rg *registry) maxOpen() int {
	m := rg.m
	if m.opts.MaxOpenCollections > 0 {
		return m.opts.MaxOpenCollections
	}
	return defaultMaxOpenCollections
}

// loadedState is the state of collection name when it has been used since open.
func (rg *registry) loadedState(name string) *colState {
	rg.mu.RLock()
	defer rg.mu.RUnlock()
	return rg.cols[name]
}
