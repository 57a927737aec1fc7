package bm25

import (
	"context"
	"fmt"

	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
)

// Compact merges the index's persisted segments into as few as mergeplan allows for
// one tier (one, unless a segment would pass zap's size limits), then writes the merged
// segments' block metadata. A bulk load leaves tens of segments (ingest batches and the
// merger's tiers); each costs every query a dictionary lookup and, for lists too short
// to have persisted metadata, a pass the first time a term is asked for. Nothing on a
// read-only or in-memory index.
func (b *Index) Compact(ctx context.Context) (err error) {
	defer recoverCorrupt(&err, "compact")
	if b.opts.ReadOnly || b.memOnly {
		return nil
	}
	adv, err := b.idx.Advanced()
	if err != nil {
		return fmt.Errorf("%w: compact: %v", ErrBM25, err)
	}
	s, ok := adv.(*scorch.Scorch)
	if !ok {
		return nil
	}
	// One ForceMerge merges up to SegmentsPerMergeTask segments a task: repeat while the
	// count falls.
	n, err := b.SegmentCount()
	if err != nil {
		return err
	}
	for n > 1 {
		mo := mergeplan.SingleSegmentMergePlanOptions
		if err := s.ForceMerge(ctx, &mo); err != nil {
			return fmt.Errorf("%w: compact: %v", ErrBM25, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		m, err := b.SegmentCount()
		if err != nil {
			return err
		}
		if m >= n {
			break
		}
		n = m
	}
	// The merged snapshot is in memory: persist it (a batch carrying the sequence number
	// again, persisted after it), so that a Close right after keeps it; and once more, so
	// that the snapshot before the merge leaves the one Bleve keeps for rollback and the
	// persister removes the files merged away.
	for range 2 {
		if err := b.persistAll(); err != nil {
			return fmt.Errorf("%w: compact: %v", ErrBM25, err)
		}
	}
	_, err = b.WriteBlockMeta(ctx)
	return err
}

// SegmentCount is the number of segments of the index's current snapshot.
func (b *Index) SegmentCount() (n int, err error) {
	err = b.withSnapshot(func(snap *scorch.IndexSnapshot) error {
		n = len(snap.Segments())
		return nil
	})
	if err == errNotScorch {
		return 0, nil
	}
	return n, err
}
