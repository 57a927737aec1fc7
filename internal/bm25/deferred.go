package bm25

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Small writes of an AsyncPersist index are deferred: an Apply of fewer than deferMaxDocs
// changes is held in memory (its sequence number taken as applied, the store of record
// holding it durably) and applied with the others held, as one Bleve batch, when
// deferMaxDocs are held, deferDelay after the first, or before anything reads the index
// (every search, count, filter, id check, compaction and Close flushes first), so a reader
// always sees every write acknowledged before it. One segment then holds many agents'
// one-document Adds instead of one each: each segment costs a dictionary, files and merges
// (at 8 writers about half the CPU of a one-document Add went to merging such segments).
// A crash loses nothing: what was held is in the store's change log, replayed from the
// sequence number the index persisted. The window (100 ms, 1,024 changes) sets how many
// writes a segment holds: at 8 writers and 20 ms it was about 100, and segment building
// and merging were a third of a one-document Add's CPU; at 100 ms that CPU fell by about
// 40 % (bench/writes, BENCHMARKS §0zb). A search that comes while changes are held pays
// their flush first: on the 2-core machine, loaded, 17 ms with 100 short notes held and
// 33 ms with 1,000 (a segment's fixed cost is most of it).
const (
	deferMaxDocs = 1024
	deferDelay   = 100 * time.Millisecond
)

// deferred holds the changes not yet given to Bleve, at most one per id: the last one
// (a document, or nil for a delete).
type deferred struct {
	mu      sync.Mutex
	ops     map[string]*Doc
	seq     uint64 // the sequence number of the last change held
	applied uint64 // the sequence number Bleve has (what Seq falls back to on a failure)
	timer   *time.Timer
	err     error // a failed background flush, reported by the next call
	closed  bool
	flushMu sync.Mutex // one flush at a time, in order
	// dirty is set while changes are held (or a failure waits to be reported), and cleared
	// only once a flush has given them to Bleve: a reader that finds it clear has nothing
	// to wait for, and takes no lock (every search comes through flushHeld).
	dirty atomic.Bool
}

// deferApply holds puts and deletes when the index defers small writes; ok is false when
// the caller must apply them now (a large write, bodies prepared ahead, no deferral).
func (b *Index) deferApply(puts []Doc, deletes []string, seq uint64) (ok bool, err error) {
	if !b.async() || len(puts)+len(deletes) >= deferMaxDocs {
		return false, nil
	}
	b.prepMu.Lock()
	prepared := b.prepared != nil
	b.prepMu.Unlock()
	if prepared {
		return false, nil
	}
	d := &b.held
	d.mu.Lock()
	if d.err != nil {
		err := d.err
		d.err = nil
		d.mu.Unlock()
		return true, err
	}
	if d.closed {
		d.mu.Unlock()
		return false, nil
	}
	if d.ops == nil {
		d.ops = map[string]*Doc{}
	}
	if len(d.ops) == 0 {
		b.mu.Lock()
		d.applied = b.seq
		b.mu.Unlock()
	}
	for i := range puts {
		doc := puts[i]
		d.ops[doc.ID] = &doc
	}
	for _, id := range deletes {
		d.ops[id] = nil
	}
	d.seq = seq
	d.dirty.Store(true)
	n := len(d.ops)
	if n < deferMaxDocs && d.timer == nil {
		d.timer = time.AfterFunc(deferDelay, func() {
			if err := b.flushHeld(); err != nil {
				d.mu.Lock()
				if d.err == nil {
					d.err = err
				}
				d.dirty.Store(true)
				d.mu.Unlock()
			}
		})
	}
	d.mu.Unlock()
	b.mu.Lock()
	b.seq = seq
	b.mu.Unlock()
	if n >= deferMaxDocs {
		return true, b.flushHeld()
	}
	return true, nil
}

// flushHeld gives the held changes to Bleve as one batch, recording their last sequence
// number. A failure is returned (and Seq falls back to what Bleve has, so the store
// catches the index up or rebuilds it).
func (b *Index) flushHeld() error {
	d := &b.held
	if !d.dirty.Load() {
		return nil
	}
	d.flushMu.Lock()
	defer d.flushMu.Unlock()
	defer func() {
		d.mu.Lock()
		if len(d.ops) == 0 && d.err == nil {
			d.dirty.Store(false)
		}
		d.mu.Unlock()
	}()
	d.mu.Lock()
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	ops, seq, applied := d.ops, d.seq, d.applied
	d.ops = nil
	err := d.err
	d.err = nil
	d.mu.Unlock()
	if err != nil {
		return err
	}
	if len(ops) == 0 {
		return nil
	}
	ids := make([]string, 0, len(ops))
	for id := range ops {
		ids = append(ids, id)
	}
	slices.Sort(ids) // one order whatever the map's
	var puts []Doc
	var dels []string
	for _, id := range ids {
		if p := ops[id]; p != nil {
			puts = append(puts, *p)
		} else {
			dels = append(dels, id)
		}
	}
	ana := b.bodyAnalyzer()
	if ana == nil {
		err = fmt.Errorf("%w: analyzer %q not registered", ErrBM25, b.opts.Analyzer)
	} else {
		err = func() (err error) {
			defer recoverCorrupt(&err, "apply")
			return b.applyPart(ana, puts, dels, &seq, nil)
		}()
	}
	if err != nil {
		b.mu.Lock()
		b.seq = applied
		b.mu.Unlock()
	}
	return err
}

// closeHeld flushes what is held and defers nothing more (Close).
func (b *Index) closeHeld() error {
	err := b.flushHeld()
	d := &b.held
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	return err
}
