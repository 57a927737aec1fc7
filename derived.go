package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/agentmem/memory/hybrid"
	"github.com/agentmem/memory/vectorstore"
	bolt "go.etcd.io/bbolt"
)

// The seam between the store of record and the indexes derived from it.
//
// The store of record (bbolt, store.go) holds every document, vector and change; each
// collection's derived indexes (BM25, vectors, and any kind registered in derivedKinds)
// are rebuilt from it whenever they cannot be trusted. Add, Upsert, Delete and the
// catch-up on open all go through the same loop over a collection's derived indexes:
//
//	open   -> derivedKind.open (a failure or a panic: the index is reset and rebuilt)
//	verify -> its Seq against the collection's last change, its Count against the stored
//	          units, a sample of stored ids (the optional idChecker ability)
//	catch  -> replay the change log after its Seq, or reset and reload every document
//	write  -> Apply(puts, dels, seq) after each durable transaction
//
// Adding a kind of derived index is one file with a derivedKind and its derivedIndex,
// plus one line in derivedKinds (a test can pass one with withDerivedKind).

// derivedIndex is one collection's index of one kind, derived from the store of record.
type derivedIndex interface {
	// Seq is the sequence number of the last change the index reflects (0: none, or an
	// index that does not persist: it is loaded from the store of record on open).
	Seq() uint64
	// Apply puts (adds or replaces) and deletes index ids and records seq. A put's vec
	// is nil when the caller did not compute it (catch-up): the index reads what it
	// needs from the store of record.
	Apply(ctx context.Context, puts []unitDoc, dels []string, seq uint64) error
	// Count is the number of index ids it holds.
	Count() (int, error)
	// Close persists what it must and releases the index.
	Close() error
}

// idChecker is the optional ability of a derived index to say which of some ids it lacks;
// open-time verification uses it on a sample of the stored ids.
type idChecker interface {
	Missing(ids []string) ([]string, error)
}

// derivedKind is a kind of derived index.
type derivedKind struct {
	// name names the kind in logs and reports, and is its directory under the store.
	name string
	// open opens the index of collection s in dir ("" for a temporary store), empty when
	// dir holds none. It returns (nil, nil) when the kind does not apply to this store
	// (vectors without an embedder).
	open func(m *Memory, s *colState, dir string) (derivedIndex, error)
}

// derivedKinds are the derived indexes every collection keeps, in the order they are
// opened and written.
var derivedKinds = []derivedKind{
	{name: bm25Dir, open: openBM25Derived},
	{name: vecDir, open: openVectorDerived},
}

// kinds are the derived index kinds of this store.
func (m *Memory) kinds() []derivedKind {
	return append(slices.Clip(derivedKinds), m.opts.extraKinds...)
}

// withDerivedKind adds a kind of derived index to the store (tests use it).
func withDerivedKind(k derivedKind) Option {
	return func(o *Options) { o.extraKinds = append(o.extraKinds, k) }
}

// derivedDir is where collection col keeps its index of kind k ("" in memory).
func (m *Memory) derivedDir(k derivedKind, col string) string {
	if (m.tempDir || m.opts.ReadOnly) && k.name != bm25Dir {
		// A temporary store keeps its BM25 index in its temporary directory, not in
		// memory: scorch merges only persisted segments, so an in-memory index keeps one
		// segment per batch, and every query pays per segment. The others stay in memory,
		// as in a read-only store (loaded from the store of record, never written back).
		return ""
	}
	return m.colPath(k.name, col)
}

// guard runs fn, turning a panic (a damaged index file can make Bleve or zap panic, a
// damaged store.db page can make bbolt read out of bounds) into an error wrapping ErrCorrupt.
func guard(what string, fn func() error) (err error) {
	// A damaged bbolt page can send a read past the mapped file: a fault, which Go turns
	// into a recoverable panic only on a goroutine that asked for it.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %s: panic: %v", ErrCorrupt, what, p)
		}
	}()
	return fn()
}

// openDerived opens, catches up and verifies collection s's index of kind k (the caller
// holds the writer lock or is opening). An index that fails to open, panics, or disagrees
// with the store of record is reset and rebuilt from it, and the reason is logged.
func (m *Memory) openDerived(s *colState, k derivedKind, trimmed uint64) (derivedIndex, error) {
	dir := m.derivedDir(k, s.name)
	var ix derivedIndex
	err := guard(k.name+" open", func() error {
		var err error
		ix, err = k.open(m, s, dir)
		return err
	})
	if err == nil && ix == nil {
		return nil, nil
	}
	if err == nil {
		if err = m.catchUpDerived(s, k, ix, trimmed); err == nil {
			err = m.verifyDerived(s, ix, true)
		}
	}
	if err == nil {
		return ix, nil
	}
	if errors.Is(err, errNeedsRebuild) {
		m.log.Info("memory: building a derived index from the store of record", "collection", s.name, "index", k.name)
	} else {
		m.log.Warn("memory: derived index cannot be trusted, rebuilding it from the store of record",
			"collection", s.name, "index", k.name, "err", err)
	}
	if ix != nil {
		guard(k.name+" close", ix.Close) // its error says nothing more than err
	}
	return m.rebuildDerived(s, k)
}

// rebuildDerived removes collection s's index of kind k and loads every stored document
// into a new one.
func (m *Memory) rebuildDerived(s *colState, k derivedKind) (derivedIndex, error) {
	dir := m.derivedDir(k, s.name)
	if m.opts.ReadOnly {
		// A read-only store writes nothing: this process rebuilds the index in memory.
		m.log.Warn("memory: read-only store: rebuilding a derived index in memory (open the store writable or run memory check --repair to fix it on disk)",
			"collection", s.name, "index", k.name)
		dir = ""
	} else if dir != "" {
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
	}
	var ix derivedIndex
	err := guard(k.name+" rebuild", func() error {
		var err error
		if ix, err = k.open(m, s, dir); err != nil || ix == nil {
			return err
		}
		return m.rebuild(s, ix.Apply)
	})
	if err != nil {
		if ix != nil {
			guard(k.name+" close", ix.Close)
		}
		return nil, fmt.Errorf("memory: collection %q: rebuilding its %s index: %w", s.name, k.name, err)
	}
	if err := m.verifyDerived(s, ix, false); err != nil {
		guard(k.name+" close", ix.Close)
		return nil, fmt.Errorf("memory: collection %q: its rebuilt %s index: %w", s.name, k.name, err)
	}
	return ix, nil
}

// catchUpDerived brings ix from its Seq up to the collection's last change; an index that
// is ahead of the store (the store of record was replaced or lost writes) is an error,
// so the caller rebuilds it.
func (m *Memory) catchUpDerived(s *colState, k derivedKind, ix derivedIndex, trimmed uint64) error {
	from := ix.Seq()
	if from > s.lastSeq {
		return fmt.Errorf("%w: the %s index reflects change %d, the store of record ends at %d", ErrCorrupt, k.name, from, s.lastSeq)
	}
	if from < s.lastSeq && (from < trimmed || from == 0) {
		if from > 0 {
			m.log.Warn("memory: index lags behind the change log, rebuilding", "collection", s.name, "index", k.name)
		}
		return errNeedsRebuild
	}
	return guard(k.name+" catch-up", func() error { return m.catchUp(s, from, ix.Apply) })
}

// errNeedsRebuild: the index cannot be caught up from the change log.
var errNeedsRebuild = errors.New("the change log does not reach back to the index")

// sampleSize is how many stored ids open-time verification looks up in each index.
const sampleSize = 16

// verifyDerived checks an index against the store of record (compareDerived): its
// sequence number and, when full, its number of index ids and (when it can tell) a sample of
// stored ids. What disagrees is an error wrapping ErrCorrupt.
func (m *Memory) verifyDerived(s *colState, ix derivedIndex, full bool) error {
	return guard("verify", func() error {
		want, ch, ids := -1, idChecker(nil), []string(nil)
		if full {
			want = s.units
			if c, ok := ix.(idChecker); ok && s.units > 0 {
				var err error
				if ids, err = m.sampleUnits(s.name, sampleSize); err != nil {
					return err
				}
				ch = c
			}
		}
		if c := compareDerived(s, ix, want, ch, ids); len(c.problems) > 0 {
			return fmt.Errorf("%w: %s", ErrCorrupt, strings.Join(c.problems, "; "))
		}
		return nil
	})
}

// comparison is what a derived index says against the store of record.
type comparison struct {
	seq      uint64   // the change it reflects
	count    int      // the ids it holds (-1: not counted)
	sampled  int      // sampled ids looked up
	missing  []string // sampled ids it lacks
	problems []string // what disagrees, in words
}

// compareDerived compares index ix of collection s with the store of record: the change
// it reflects with s's last, the ids it holds with want (< 0: not counted) and, through ch
// (nil: not sampled), the stored ids ids. Verification on open and memory check share it.
func compareDerived(s *colState, ix derivedIndex, want int, ch idChecker, ids []string) comparison {
	c := comparison{seq: ix.Seq(), count: -1}
	if c.seq != 0 && c.seq != s.lastSeq {
		c.problems = append(c.problems, fmt.Sprintf("index at change %d, the store of record at %d", c.seq, s.lastSeq))
	}
	if want >= 0 {
		n, err := ix.Count()
		switch {
		case err != nil:
			c.problems = append(c.problems, "cannot count its ids: "+oneLine(err))
		case n != want:
			c.problems = append(c.problems, fmt.Sprintf("holds %d ids, the store of record %d", n, want))
		}
		if err == nil {
			c.count = n
		}
	}
	if ch == nil || len(ids) == 0 {
		return c
	}
	missing, err := ch.Missing(ids)
	if err != nil {
		c.problems = append(c.problems, "cannot look ids up: "+oneLine(err))
		return c
	}
	c.sampled, c.missing = len(ids), missing
	if len(missing) > 0 {
		c.problems = append(c.problems, fmt.Sprintf("lacks %d of %d sampled ids (e.g. %q)", len(missing), len(ids), missing[0]))
	}
	return c
}

// sampleUnits returns up to n index ids of stored documents, spread over the id space (the
// first, the last, and ids sought at evenly spaced byte prefixes), deterministically.
func (m *Memory) sampleUnits(col string, n int) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	err := m.view(func(tx *bolt.Tx) error {
		docs := docsBucket(tx, col)
		if docs == nil {
			return nil
		}
		cur := docs.Cursor()
		add := func(k, v []byte) error {
			if k == nil || seen[string(k)] {
				return nil
			}
			seen[string(k)] = true
			r, err := decodeMeta(string(k), v)
			if err != nil {
				return err
			}
			out = append(out, r.unitIDs(string(k))...)
			return nil
		}
		if err := add(cur.First()); err != nil {
			return err
		}
		if err := add(cur.Last()); err != nil {
			return err
		}
		for i := 1; i < n-1; i++ {
			k, v := cur.Seek([]byte{byte(i * 256 / n)})
			if err := add(k, v); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// applyDerived writes one durable change to every derived index of s (the caller holds
// s.mu). An index that fails is reported; it is caught up or rebuilt when the store is
// next opened.
func (m *Memory) applyDerived(ctx context.Context, s *colState, puts []unitDoc, dels []string, seq uint64) error {
	var errs []error
	for i, ix := range s.indexes {
		if ix == nil {
			continue
		}
		if err := guard(m.kinds()[i].name+" update", func() error { return ix.Apply(ctx, puts, dels, seq) }); err != nil {
			errs = append(errs, fmt.Errorf("%s index: %w", m.kinds()[i].name, err))
		}
	}
	return errors.Join(errs...)
}

// bm25Derived is the BM25 index as a derived index.
type bm25Derived struct {
	ix     *hybrid.BM25Index
	dir    string // "" in memory
	record bool   // record its segment files as checked on Close (not in a read-only store)
}

var (
	_ derivedIndex = (*bm25Derived)(nil)
	_ idChecker    = (*bm25Derived)(nil)
)

func openBM25Derived(m *Memory, s *colState, dir string) (derivedIndex, error) {
	record := dir != "" && !m.opts.ReadOnly
	if dir != "" {
		// Bleve maps root.bolt unchecked and its background goroutines fault on a page past
		// the end of a truncated one: check its meta pages first, as store.db's.
		if rb := filepath.Join(dir, "store", "root.bolt"); fileExists(rb) {
			if err := checkBoltFileDeep(rb); err != nil {
				return nil, err
			}
		}
		// Zap reads its segments unchecked: check those not checked before (a damaged
		// one is rebuilt, not trusted).
		n, err := hybrid.VerifySegments(dir)
		if err != nil {
			return nil, err
		}
		if n > 0 && record {
			if err := hybrid.RecordSegments(dir); err != nil {
				return nil, err
			}
		}
	}
	ix, err := hybrid.OpenBM25With(dir, m.bm25Options())
	if err != nil {
		return nil, err
	}
	s.bm25 = ix
	return &bm25Derived{ix: ix, dir: dir, record: record}, nil
}

func (d *bm25Derived) Seq() uint64 { return d.ix.Seq() }

func (d *bm25Derived) Apply(_ context.Context, puts []unitDoc, dels []string, seq uint64) error {
	docs := make([]hybrid.BM25Doc, len(puts))
	for i, p := range puts {
		docs[i] = bm25Doc(p.uid, p.r, p.idx)
	}
	return d.ix.Apply(docs, dels, seq)
}

func (d *bm25Derived) Count() (int, error) {
	n, err := d.ix.Count()
	return int(n), err
}

func (d *bm25Derived) Missing(ids []string) ([]string, error) { return d.ix.Missing(ids) }

// Close closes the index and records its segment files, all written or checked by this
// process, as checked.
func (d *bm25Derived) Close() error {
	if err := d.ix.Close(); err != nil || !d.record {
		return err
	}
	return hybrid.RecordSegments(d.dir)
}

// vectorDerived is the vector index as a derived index: vectors come from the write, or
// from the store of record when catching up.
type vectorDerived struct {
	m  *Memory
	s  *colState
	ix vectorstore.Index
}

var (
	_ derivedIndex = (*vectorDerived)(nil)
	_ idChecker    = (*vectorDerived)(nil)
)

func openVectorDerived(m *Memory, s *colState, dir string) (derivedIndex, error) {
	e := m.opts.Embedder
	if e == nil {
		return nil, nil
	}
	cfg := m.opts.Index
	cfg.Dim = e.Dim()
	cfg.Dir = dir
	ix, err := vectorstore.NewIndex(cfg)
	if err != nil {
		return nil, err
	}
	s.vec = ix
	return &vectorDerived{m: m, s: s, ix: ix}, nil
}

func (d *vectorDerived) Seq() uint64 {
	if du, ok := d.ix.(vectorstore.Durable); ok {
		return du.Seq()
	}
	return 0
}

func (d *vectorDerived) Apply(ctx context.Context, puts []unitDoc, dels []string, seq uint64) error {
	if len(dels) > 0 {
		if err := d.ix.Delete(ctx, dels...); err != nil {
			return err
		}
	}
	ids := make([]string, 0, len(puts))
	vecs := make([][]float32, 0, len(puts))
	var load []string
	for _, p := range puts {
		if p.vec == nil {
			load = append(load, p.uid)
			continue
		}
		ids = append(ids, p.uid)
		vecs = append(vecs, p.vec)
	}
	if len(load) > 0 {
		lids, lvecs, err := d.m.storedVectors(d.s.name, load)
		if err != nil {
			return err
		}
		ids, vecs = append(ids, lids...), append(vecs, lvecs...)
	}
	if len(ids) > 0 {
		if err := d.ix.Add(ctx, ids, vecs); err != nil {
			return err
		}
	}
	if du, ok := d.ix.(vectorstore.Durable); ok {
		return du.Commit(seq)
	}
	return nil
}

func (d *vectorDerived) Count() (int, error) { return d.ix.Len(), nil }

// vectorSampleOnOpen is how many sampled ids a persisted vector index is probed with on
// open (a search each).
const vectorSampleOnOpen = 4

// Missing probes a persisted vector index (FAISS) with the stored vectors of a few sampled
// ids, each of which must find itself (check.go's vectorProbe): an index of another store,
// or one whose files were damaged, fails it. An index loaded from the store of record on
// every open (the flat default) needs no probe.
func (d *vectorDerived) Missing(ids []string) ([]string, error) {
	if _, ok := d.ix.(vectorstore.Durable); !ok {
		return nil, nil
	}
	return vectorProbe{m: d.m, col: d.s.name, ix: d.ix}.Missing(ids[:min(len(ids), vectorSampleOnOpen)])
}

func (d *vectorDerived) Close() error {
	var errs []error
	if du, ok := d.ix.(vectorstore.Durable); ok {
		errs = append(errs, du.Commit(d.s.lastSeq))
	}
	return errors.Join(append(errs, d.ix.Close())...)
}

// removeDerived deletes the on-disk indexes of every kind of collection col.
func (m *Memory) removeDerived(col string) error {
	var errs []error
	for _, k := range m.kinds() {
		if dir := m.derivedDir(k, col); dir != "" {
			errs = append(errs, os.RemoveAll(dir))
		}
	}
	return errors.Join(errs...)
}

// repairDerived closes collection s's i-th derived index and rebuilds it from the store of
// record (memory check --repair, and a search that found it corrupt). The caller holds the
// writer lock and s.mu for writing, with the indexes open.
func (m *Memory) repairDerived(s *colState, i int) error {
	k := m.kinds()[i]
	if old := s.indexes[i]; old != nil {
		if err := guard(k.name+" close", old.Close); err != nil {
			m.log.Warn("memory: closing a derived index before its rebuild", "collection", s.name, "index", k.name, "err", err)
		}
		s.indexes[i] = nil
	}
	ix, err := m.rebuildDerived(s, k)
	if err != nil {
		return err
	}
	s.indexes[i] = ix
	return nil
}

// repairBM25 rebuilds collection col's BM25 index from the store of record after a search
// found it corrupt (cause), so the search can be answered again.
func (m *Memory) repairBM25(col string, cause error) error {
	m.log.Error("memory: the BM25 index is corrupt, rebuilding it from the store of record", "collection", col, "err", cause)
	m.wmu.Lock()
	defer m.wmu.Unlock()
	s, err := m.Collection(col).state(false)
	if err != nil || s == nil {
		return cmp.Or(err, ErrCollectionNotFound)
	}
	unlock, err := m.lockOpen(s)
	if err != nil {
		return err
	}
	defer unlock()
	for i, k := range m.kinds() {
		if k.name == bm25Dir {
			return m.repairDerived(s, i)
		}
	}
	return nil
}

// bm25Damaged reports whether a search error says the BM25 index's files are damaged: a
// panic inside Bleve (hybrid.ErrCorrupt) or a failure reading its postings or ids (any
// other hybrid.ErrBM25; query errors are hybrid.ErrQueryTooLong/TooManyTerms).
func bm25Damaged(err error) bool {
	return errors.Is(err, hybrid.ErrCorrupt) || errors.Is(err, hybrid.ErrBM25)
}

// fileExists reports whether path names an existing file.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// view runs a read transaction of the store of record under guard: a damaged store.db page
// (bbolt checksums only its meta pages) can send bbolt past its mapping, and that must be
// ErrCorrupt, not a crash.
func (m *Memory) view(fn func(*bolt.Tx) error) error {
	return guard(dbName+" read", func() error { return m.db.View(fn) })
}

// update runs a write transaction of the store of record under guard (see view).
func (m *Memory) update(fn func(*bolt.Tx) error) error {
	return guard(dbName+" write", func() error { return m.db.Update(fn) })
}
