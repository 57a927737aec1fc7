package bm25

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
	segment "github.com/blevesearch/scorch_segment_api/v2"
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
	// A merge reads every page of the segments it merges, and the block metadata every
	// page of the merged one, through their mappings: the process's RSS would count them
	// all (a 21M-passage index: 9.5 GB). They stay in the page cache; the mappings drop
	// their page-table entries as they pass compactResident.
	defer b.trimDuring(compactResident, compactTrimEvery)()
	// Everything written so far persisted first: a merge plans over persisted segments
	// only, and a tail still in memory (the persister behind a bulk load: at 21M passages
	// 1.45 GB of it) would be persisted during the merge and need a second pass over all.
	// One persist was not always enough: at 21M passages a segment of 2.4M documents
	// arrived on disk as the merge started, stayed out of it, and a second pass rewrote
	// everything to take it in (a 4 min 3 s compaction; 1 min 44 s in one pass once Compact
	// waited for it: BENCHMARKS.md §0zq). So persist until no segment of the snapshot is
	// held in memory (a bounded number of rounds; the loop below still merges again if
	// one arrives all the same).
	if err := b.persistWhile(1, func() bool { n, err := b.unpersistedSegments(); return err == nil && n > 0 }); err != nil {
		return err
	}
	// One ForceMerge merges up to SegmentsPerMergeTask segments a task: repeat while the
	// count falls.
	n, err := b.SegmentCount()
	if err != nil {
		return err
	}
	for n > 1 {
		// Every segment in one task: a merge rewrites every posting of what it merges, so
		// the default ten a task (two passes for 11–100 segments) wrote a bulk load's
		// postings twice. One pass: a 1M-passage compaction of 21 segments took 16.7 s
		// instead of 27.7 s, at the same peak RSS (BENCHMARKS.md §0zm).
		mo := mergeplan.SingleSegmentMergePlanOptions
		mo.SegmentsPerMergeTask = max(mo.SegmentsPerMergeTask, n)
		slog.Debug("bm25: compacting", "segments", n)
		compactPasses.Add(1)
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
	// persister removes the files merged away. Each persist ages the kept snapshots by one:
	// after two merge passes (a segment persisted while the first ran) two rounds left the
	// first pass's output on disk, 3.7 GB at 21M passages, until the next writable open.
	// So persist until the directory holds only the current snapshot's zap files (or rounds
	// run out: the next writable open removes the rest), then remove the body files whose
	// zap files are gone (Close would; a process that compacts and stays open keeps its
	// disk space).
	if err := b.persistWhile(2, b.mergedAwayOnDisk); err != nil {
		return err
	}
	removeBodyLeftovers(filepath.Join(b.dir, "store"), false)
	return nil
}

// compactPersistRounds bounds Compact's persists while a condition holds (persistWhile).
const compactPersistRounds = 8

// persistWhile persists everything written so far least times, then again while
// more reports true, at most compactPersistRounds times in all.
func (b *Index) persistWhile(least int, more func() bool) error {
	for round := 0; round < least || (round < compactPersistRounds && more()); round++ {
		if err := b.persistAll(); err != nil {
			return fmt.Errorf("%w: compact: %v", ErrBM25, err)
		}
	}
	return nil
}

// mergedAwayOnDisk reports whether the index's segment directory holds the zap file of a
// segment the current snapshot does not have.
func (b *Index) mergedAwayOnDisk() bool {
	live := map[string]bool{}
	if err := b.withSnapshot(func(snap *scorch.IndexSnapshot) error {
		for _, ss := range snap.Segments() {
			live[fmt.Sprintf("%012x.zap", ss.Id())] = true
		}
		return nil
	}); err != nil {
		return false
	}
	ents, err := os.ReadDir(filepath.Join(b.dir, "store"))
	if err != nil {
		return false
	}
	for _, e := range ents {
		name := e.Name()
		if strings.HasSuffix(name, ".zap") && !live[name] {
			return true
		}
	}
	return false
}

// unpersistedSegments is the number of the current snapshot's segments still in memory.
func (b *Index) unpersistedSegments() (n int, err error) {
	err = b.withSnapshot(func(snap *scorch.IndexSnapshot) error {
		for _, ss := range snap.Segments() {
			if _, ok := ss.Segment().(segment.PersistedSegment); !ok {
				n++
			}
		}
		return nil
	})
	return n, err
}

// compactPasses counts Compact's merge passes (ForceMerge calls), for tests.
var compactPasses atomic.Int64

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

// compactResident is the most resident bytes of file mappings that a compaction lets the
// process hold (MappedResidentBytes when smaller), and compactTrimEvery how often it
// looks: a merge reads about a GB a second here, so the RSS passes the bound by at most
// that rate times the period.
const (
	compactResident  = 1 << 30
	compactTrimEvery = 250 * time.Millisecond
)

// trimDuring starts dropping, every period, the resident pages of the index's segment
// mappings (and the owner's, AlsoTrim) while the process's resident file-backed bytes pass
// limit (MappedResidentBytes when smaller), and returns the function that stops it.
func (b *Index) trimDuring(limit int64, every time.Duration) (stop func()) {
	if l := b.trim.limit; l > 0 && l < limit {
		limit = l
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				b.trimMapped(limit)
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// trimMapped drops the resident pages of the mappings of the current snapshot's segments
// (and calls AlsoTrim) when the process's resident file-backed bytes pass limit. The
// reader it takes holds the segments mapped meanwhile; a merge under way reads segments of
// that snapshot.
func (b *Index) trimMapped(limit int64) {
	if n, ok := fileResidentBytes(); !ok || n <= limit {
		return
	}
	adv, err := b.idx.Advanced()
	if err != nil {
		return
	}
	r, err := adv.Reader()
	if err != nil {
		return
	}
	defer r.Close()
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		return
	}
	b.trim.mu.Lock() // one trim at a time (a search's trim: residentTrim.after)
	defer b.trim.mu.Unlock()
	dropSegmentsResident(snap)
	if b.trim.also != nil {
		b.trim.also()
	}
	b.trim.trims.Add(1)
}
