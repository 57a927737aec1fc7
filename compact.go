package memory

import (
	"context"
	"fmt"

	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/vectorstore"
)

// Compact merges the BM25 index of the collection into one segment, as few as the index
// format allows, and writes the merged segment's block metadata; a dense index with
// inverted lists is written again with each list's rows together
// (vectorstore.ListOrderer), so that a search reads a list's codes in one run. A bulk load leaves tens
// of segments (one per ingest batch, then the merger's tiers), and every query pays for
// each: a dictionary lookup per term, and, the first time a term is asked for, a pass over
// each list too short to have persisted metadata. After a load of a million passages,
// compacting took first-seen queries from 1.5–1.8 ms to 0.8–1.0 ms at the median and the
// index from 505 to 446 MB (BENCHMARKS.md §0za).
//
// It takes the writer lock for the merge (writes wait; searches go on, on the segments they
// started with) and costs about as much as writing the index once more (40 s at a million
// passages on two cores). A read-only store gets ErrReadOnly; a missing collection
// ErrCollectionNotFound. Cancelling ctx stops between merge rounds; what was merged stays.
func (c *Collection) Compact(ctx context.Context) error {
	m := c.m
	if err := m.writable(); err != nil {
		return err
	}
	m.wmu.Lock()
	defer m.wmu.Unlock()
	s, err := c.state(false)
	if err != nil {
		return err
	}
	if s == nil {
		return fmt.Errorf("%w: %s", ErrCollectionNotFound, store.ShowKey(c.name))
	}
	if err := m.reg.ensureOpen(s); err != nil { // (they stay open: we hold the writer lock)
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.deleted {
		return fmt.Errorf("%w: %s", ErrCollectionNotFound, store.ShowKey(c.name))
	}
	if s.bm25 != nil {
		if err := s.bm25.Compact(ctx); err != nil {
			return err
		}
	}
	if o, ok := s.vec.(vectorstore.ListOrderer); ok {
		return o.OrderLists(ctx)
	}
	return nil
}

// Compact compacts every collection of the store (Collection.Compact), one after another.
func (m *Memory) Compact(ctx context.Context) error {
	names, err := m.Collections(ctx)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := m.Collection(n).Compact(ctx); err != nil {
			return err
		}
	}
	return nil
}
