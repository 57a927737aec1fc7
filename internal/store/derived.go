package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
)

// The seam between the store of record and the indexes derived from it.
//
// Each collection's derived indexes (BM25, vectors, and any other Kind the caller passes)
// are rebuilt from the store of record whenever they cannot be trusted. Writes and the
// catch-up on open go through the same loop over a collection's derived indexes:
//
//	open   -> Kind.Open (a failure or a panic: the index is reset and rebuilt)
//	verify -> its Seq against the collection's last change, its Count against the stored
//	          units, a sample of stored ids (the optional IDChecker ability)
//	catch  -> replay the change log after its Seq, or reset and reload every document
//	write  -> Apply(puts, dels, seq) after each durable transaction (DB.Apply)
//
// Adding a kind of derived index is one adapter (an Index and the Kind that opens it).

// Index is one collection's index of one kind, derived from the store of record.
type Index interface {
	// Seq is the sequence number of the last change the index reflects (0: none, or an
	// index that does not persist: it is loaded from the store of record on open).
	Seq() uint64
	// Apply puts (adds or replaces) and deletes index ids and records seq. A put's Vec
	// is nil when the writer did not compute it (catch-up): the index reads what it needs
	// from the store of record.
	Apply(ctx context.Context, puts []Unit, dels []string, seq uint64) error
	// Count is the number of index ids it holds.
	Count() (int, error)
	// Close persists what it must and releases the index.
	Close() error
}

// IDChecker is the optional ability of an Index to say which of some ids it lacks;
// open-time verification uses it on a sample of the stored ids.
type IDChecker interface {
	Missing(ids []string) ([]string, error)
}

// Unit is a live index id with its document's record and its chunk index (-1: the whole
// document).
type Unit struct {
	ID     string
	Record *Record
	Chunk  int
	Vec    []float32 // its vector when the writer has it (nil: read from the store)
}

// Kind is a kind of derived index, as one collection keeps it.
type Kind struct {
	// Name names the kind in logs and reports.
	Name string
	// Dir is where the collection keeps its index of this kind ("" in memory); a rebuild
	// removes it first.
	Dir string
	// Open opens the index in dir ("" in memory), empty when dir holds none. It returns
	// (nil, nil) when the kind does not apply to this store (vectors without an embedder).
	Open func(dir string) (Index, error)
}

// OpenIndexes opens, catches up and verifies c's indexes of kinds (see OpenIndex), which
// c keeps; on an error none stay open.
func (db *DB) OpenIndexes(c *Collection, kinds []Kind) error {
	return db.OpenIndexesOf(c, kinds, nil)
}

// OpenIndexesOf is OpenIndexes for the kinds want accepts (nil: all of them): the others
// stay closed, nil in Indexes, and Closed reports them, until a later call wants them. On
// a collection whose indexes are partly open it opens the wanted ones still closed (kinds
// is then ignored: c keeps its own); an error there leaves open what was. A closed index
// misses the writes applied meanwhile (Apply skips it) and catches up from the change log
// when it opens, so a caller that writes, or trims the log, opens every kind first.
func (db *DB) OpenIndexesOf(c *Collection, kinds []Kind, want func(Kind) bool) error {
	if want == nil {
		want = func(Kind) bool { return true }
	}
	if c.Indexes == nil {
		indexes, closed := make([]Index, len(kinds)), make([]bool, len(kinds))
		for i, k := range kinds {
			if !want(k) {
				closed[i] = true
				continue
			}
			ix, err := db.OpenIndex(c, k)
			if err != nil {
				for _, ix := range indexes {
					if ix != nil {
						Guard("close", ix.Close)
					}
				}
				return err
			}
			indexes[i] = ix
		}
		c.Indexes, c.Kinds, c.closed = indexes, kinds, nil
		if slices.Contains(closed, true) {
			c.closed = closed
		}
		return nil
	}
	for i, k := range c.Kinds {
		if i >= len(c.closed) || !c.closed[i] || !want(k) {
			continue
		}
		ix, err := db.OpenIndex(c, k)
		if err != nil {
			return err
		}
		c.Indexes[i], c.closed[i] = ix, false
	}
	if !slices.Contains(c.closed, true) {
		c.closed = nil
	}
	return nil
}

// Closed reports whether c's indexes are open (Indexes not nil) with some kinds left
// closed by OpenIndexesOf; want, when not nil, asks only about the kinds it accepts.
func (c *Collection) Closed(want func(Kind) bool) bool {
	for i, closed := range c.closed {
		if closed && (want == nil || want(c.Kinds[i])) {
			return true
		}
	}
	return false
}

// CloseIndexes closes c's open indexes.
func (c *Collection) CloseIndexes() error {
	var errs []error
	for _, ix := range c.Indexes {
		if ix != nil {
			errs = append(errs, Guard("close", ix.Close))
		}
	}
	c.Indexes, c.closed = nil, nil
	return errors.Join(errs...)
}

// OpenIndex opens, catches up and verifies collection c's index of kind k. An index that
// fails to open, panics, or disagrees with the store of record is reset and rebuilt from
// it, and the reason is logged. (nil, nil): the kind does not apply.
func (db *DB) OpenIndex(c *Collection, k Kind) (Index, error) {
	var ix Index
	err := Guard(k.Name+" open", func() error {
		var err error
		ix, err = k.Open(k.Dir)
		return err
	})
	if err == nil && ix == nil {
		return nil, nil
	}
	if err == nil {
		if err = db.catchUpIndex(c, k, ix); err == nil {
			if err = db.Verify(c, ix, true); err != nil {
				// The counters may be what is wrong: count the records before distrusting
				// the index.
				var changed bool
				if Guard(k.Name+" count", func() (rerr error) {
					changed, rerr = db.RecountIfDisagrees(c, ix)
					return rerr
				}) == nil && changed {
					err = db.Verify(c, ix, true)
				}
			}
		}
	}
	if err == nil {
		return ix, nil
	}
	if errors.Is(err, errNeedsRebuild) {
		db.log.Info("memory: building a derived index from the store of record", "collection", c.Name, "index", k.Name)
	} else {
		db.log.Warn("memory: derived index cannot be trusted, rebuilding it from the store of record",
			"collection", c.Name, "index", k.Name, "err", err)
	}
	if ix != nil {
		Guard(k.Name+" close", ix.Close) // its error says nothing more than err
	}
	return db.RebuildIndex(c, k)
}

// RebuildIndex removes collection c's index of kind k and loads every stored document into
// a new one. A read-only store rebuilds it in memory (writing nothing).
func (db *DB) RebuildIndex(c *Collection, k Kind) (Index, error) {
	dir := k.Dir
	if db.ro {
		// An index kept in memory by design (Dir "": the read-only store has no persisted
		// index of this kind to use) is loaded from the store of record on every open:
		// nothing is wrong, and there is nothing on disk to repair. Only a persisted index
		// that cannot be used is worth a warning.
		if dir != "" {
			db.log.Warn("memory: read-only store: rebuilding a derived index in memory (open the store writable or run memory check --repair to fix it on disk)",
				"collection", c.Name, "index", k.Name)
		}
		dir = ""
	} else if dir != "" {
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
	}
	var ix Index
	err := Guard(k.Name+" rebuild", func() error {
		var err error
		if ix, err = k.Open(dir); err != nil || ix == nil {
			return err
		}
		return db.rebuild(c, ix.Apply)
	})
	if err != nil {
		if ix != nil {
			Guard(k.Name+" close", ix.Close)
		}
		return nil, fmt.Errorf("memory: collection %s: rebuilding its %s index: %w", ShowKey(c.Name), k.Name, err)
	}
	if ix == nil {
		return nil, nil
	}
	if err := db.Verify(c, ix, false); err != nil {
		Guard(k.Name+" close", ix.Close)
		return nil, fmt.Errorf("memory: collection %s: its rebuilt %s index: %w", ShowKey(c.Name), k.Name, err)
	}
	return ix, nil
}

// RepairIndex closes c's i-th index and rebuilds it from the store of record (the caller
// holds c's lock, with the indexes open).
func (db *DB) RepairIndex(c *Collection, i int) error {
	k := c.Kinds[i]
	if old := c.Indexes[i]; old != nil {
		if err := Guard(k.Name+" close", old.Close); err != nil {
			db.log.Warn("memory: closing a derived index before its rebuild", "collection", c.Name, "index", k.Name, "err", err)
		}
		c.Indexes[i] = nil
	}
	ix, err := db.RebuildIndex(c, k)
	if err != nil {
		return err
	}
	c.Indexes[i] = ix
	return nil
}

// catchUpIndex brings ix from its Seq up to the collection's last change; an index that is
// ahead of the store (the store of record was replaced or lost writes) is an error, so the
// caller rebuilds it.
func (db *DB) catchUpIndex(c *Collection, k Kind, ix Index) error {
	from := ix.Seq()
	if from > c.LastSeq {
		return fmt.Errorf("%w: the %s index reflects change %d, the store of record ends at %d", ErrCorrupt, k.Name, from, c.LastSeq)
	}
	if from < c.LastSeq && (from < c.Trimmed || from == 0) {
		if from > 0 {
			db.log.Warn("memory: index lags behind the change log, rebuilding", "collection", c.Name, "index", k.Name)
		}
		return errNeedsRebuild
	}
	return Guard(k.Name+" catch-up", func() error { return db.catchUp(c, from, ix.Apply) })
}

// Apply writes one durable change to every open index of c (the caller holds c's lock).
// An index that fails is reported; it is caught up or rebuilt when next opened.
//
// The indexes are updated at the same time, each on its own goroutine (they share only the
// read-only commit): a bulk write with vectors adds its rows to the vector index while
// BM25 builds its segment, instead of after it.
func (db *DB) Apply(ctx context.Context, c *Collection, w Commit) error {
	errs := make([]error, len(c.Indexes))
	apply := func(i int) {
		name := c.Kinds[i].Name
		ix := c.Indexes[i]
		if err := Guard(name+" update", func() error { return ix.Apply(ctx, w.Puts, w.Dels, w.Seq) }); err != nil {
			errs[i] = fmt.Errorf("%s index: %w", name, err)
		}
	}
	var wg sync.WaitGroup
	last := -1
	for i, ix := range c.Indexes {
		if ix == nil {
			continue
		}
		if last >= 0 {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				apply(i)
			}(last)
		}
		last = i
	}
	if last >= 0 {
		apply(last) // the last one on this goroutine
	}
	wg.Wait()
	return errors.Join(errs...)
}

// SampleSize is how many stored documents open-time verification looks up in each index.
const SampleSize = 16

// Verify checks index ix of c against the store of record (Compare): its sequence number
// and, when full, its number of index ids and (when it can tell) a sample of stored ids.
// What disagrees is an error wrapping ErrCorrupt.
func (db *DB) Verify(c *Collection, ix Index, full bool) error {
	return Guard("verify", func() error {
		want, ch, ids := -1, IDChecker(nil), []string(nil)
		if full {
			want = c.Units
			if chk, ok := ix.(IDChecker); ok && c.Units > 0 {
				var err error
				if ids, err = db.SampleUnits(c.Name, SampleSize); err != nil {
					return err
				}
				ch = chk
			}
		}
		if r := Compare(c, ix, want, ch, ids); len(r.Problems) > 0 {
			return fmt.Errorf("%w: %s", ErrCorrupt, strings.Join(r.Problems, "; "))
		}
		return nil
	})
}

// Comparison is what a derived index says against the store of record.
type Comparison struct {
	Seq      uint64   // the change it reflects
	Count    int      // the ids it holds (-1: not counted)
	Sampled  int      // sampled ids looked up
	Missing  []string // sampled ids it lacks
	Problems []string // what disagrees, in words
}

// Compare compares index ix of collection c with the store of record: the change it
// reflects with c's last, the ids it holds with want (< 0: not counted) and, through ch
// (nil: not sampled), the stored ids ids. Verification on open and the store check share it.
func Compare(c *Collection, ix Index, want int, ch IDChecker, ids []string) Comparison {
	r := Comparison{Seq: ix.Seq(), Count: -1}
	if r.Seq != 0 && r.Seq != c.LastSeq {
		r.Problems = append(r.Problems, fmt.Sprintf("index at change %d, the store of record at %d", r.Seq, c.LastSeq))
	}
	if want >= 0 {
		n, err := ix.Count()
		switch {
		case err != nil:
			r.Problems = append(r.Problems, "cannot count its ids: "+firstLine(err))
		case n != want:
			r.Problems = append(r.Problems, fmt.Sprintf("holds %d ids, the store of record %d", n, want))
		}
		if err == nil {
			r.Count = n
		}
	}
	if ch == nil || len(ids) == 0 {
		return r
	}
	missing, err := ch.Missing(ids)
	if err != nil {
		r.Problems = append(r.Problems, "cannot look ids up: "+firstLine(err))
		return r
	}
	r.Sampled, r.Missing = len(ids), missing
	if len(missing) > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("lacks %d of %d sampled ids (e.g. %s)", len(missing), len(ids), ShowKey(missing[0])))
	}
	return r
}
