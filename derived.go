package memory

import (
	"cmp"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"

	"github.com/agentmem/memory/internal/bm25"
	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/internal/vecmath"
	"github.com/agentmem/memory/vectorstore"
)

// The store of record and the seam to the derived indexes live in internal/store: it opens,
// catches up, verifies and rebuilds every collection's derived indexes, and writes each
// durable change to them. This file holds the root's kinds of derived index (BM25 and
// vectors) as adapters of store.Index.
//
// Adding a kind of derived index is one file with a derivedKind and its store.Index,
// plus one line in derivedKinds (a test can pass one with withDerivedKind).

// derivedIndexes keeps the files of the store m's derived indexes (BM25 and vectors), which
// are rebuilt from the store of record when they are missing or damaged.
type derivedIndexes struct{ m *Memory }

// derivedKind is a kind of derived index.
type derivedKind struct {
	// name names the kind in logs and reports, and is its directory under the store.
	name string
	// open opens the index of collection s in dir ("" in memory), empty when dir holds
	// none. It returns (nil, nil) when the kind does not apply to this store (vectors
	// without an embedder).
	open func(m *Memory, s *colState, dir string) (store.Index, error)
}

// derivedKinds are the derived indexes every collection keeps, in the order they are
// opened and written.
var derivedKinds = []derivedKind{
	{name: bm25Dir, open: openBM25Derived},
	{name: vecDir, open: openVectorDerived},
}

// kinds are the derived index kinds of this store.
func (dv derivedIndexes) kinds() []derivedKind {
	m := dv.m
	return append(slices.Clip(derivedKinds), m.opts.extraKinds...)
}

// storeKinds are the derived index kinds of collection s, as the store opens them.
func (dv derivedIndexes) storeKinds(s *colState) []store.Kind {
	kinds := dv.kinds()
	out := make([]store.Kind, len(kinds))
	for i, k := range kinds {
		out[i] = dv.storeKind(s, k)
	}
	return out
}

// storeKind is kind k of collection s, as the store opens it.
func (dv derivedIndexes) storeKind(s *colState, k derivedKind) store.Kind {
	m := dv.m
	return store.Kind{Name: k.name, Dir: dv.derivedDir(k, s.Name), Open: func(dir string) (store.Index, error) {
		return k.open(m, s, dir)
	}}
}

// withDerivedKind adds a kind of derived index to the store (tests use it).
func withDerivedKind(k derivedKind) Option {
	return func(o *Options) { o.extraKinds = append(o.extraKinds, k) }
}

// derivedDir is where collection col keeps its index of kind k ("" in memory).
func (dv derivedIndexes) derivedDir(k derivedKind, col string) string {
	m := dv.m
	if m.opts.ReadOnly && k.name == vecDir && !m.indexChanged {
		// A read-only store uses the vector index persisted by a writer (FAISS), read-only
		// (IndexConfig.ReadOnly): it is opened, not rebuilt. A backend that does not
		// persist itself (the flat default) loads from the store of record, as below.
		if dir := dv.colPath(k.name, col); fileExists(dir) {
			return dir
		}
		return ""
	}
	if (m.tempDir || m.opts.ReadOnly) && k.name != bm25Dir {
		// A temporary store keeps its BM25 index in its temporary directory, not in
		// memory: scorch merges only persisted segments, so an in-memory index keeps one
		// segment per batch, and every query pays per segment. The others stay in memory,
		// as in a read-only store (loaded from the store of record, never written back).
		return ""
	}
	return dv.colPath(k.name, col)
}

// bm25Derived is the BM25 index as a derived index.
type bm25Derived struct {
	ix     *bm25.Index
	dir    string // "" in memory
	record bool   // record its segment files as checked on Close (not in a read-only store)
}

var (
	_ store.Index     = (*bm25Derived)(nil)
	_ store.IDChecker = (*bm25Derived)(nil)
)

func openBM25Derived(m *Memory, s *colState, dir string) (store.Index, error) {
	record := dir != "" && !m.opts.ReadOnly
	if dir != "" {
		// Bleve maps root.bolt unchecked and its background goroutines fault on a page past
		// the end of a truncated one: check its meta pages first, as store.db's.
		if rb := filepath.Join(dir, "store", "root.bolt"); fileExists(rb) {
			if err := store.CheckFileDeep(rb); err != nil {
				return nil, err
			}
		}
		// Zap reads its segments unchecked: check those of the index's snapshot not
		// checked before (a damaged one is rebuilt, not trusted). Files no snapshot names,
		// left by a kill during a segment write, are not read; Bleve removes them when a
		// writer opens the index.
		n, err := bm25.VerifySegments(dir)
		if err != nil {
			return nil, err
		}
		if n > 0 && record {
			if err := bm25.RecordSegments(dir); err != nil {
				return nil, err
			}
		}
	}
	o := m.dx.bm25Options()
	o.Analyzer = s.analyzer // the manifest's: an index built with another is rebuilt
	o.Scoring = bm25Scoring(m.opts.BM25Scoring, s.analyzer)
	ix, err := bm25.OpenWith(dir, o)
	if err != nil {
		return nil, err
	}
	s.bm25 = ix
	return &bm25Derived{ix: ix, dir: dir, record: record}, nil
}

func (d *bm25Derived) Seq() uint64 { return d.ix.Seq() }

func (d *bm25Derived) Apply(_ context.Context, puts []store.Unit, dels []string, seq uint64) error {
	docs := make([]bm25.Doc, len(puts))
	for i, p := range puts {
		docs[i] = bm25Doc(p.ID, p.Record, p.Chunk)
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
	return bm25.RecordSegments(d.dir)
}

// vectorDerived is the vector index as a derived index: vectors come from the write, or
// from the store of record when catching up.
type vectorDerived struct {
	m  *Memory
	s  *colState
	ix vectorstore.Index
}

var (
	_ store.Index     = (*vectorDerived)(nil)
	_ store.IDChecker = (*vectorDerived)(nil)
)

func openVectorDerived(m *Memory, s *colState, dir string) (store.Index, error) {
	e := m.opts.Embedder
	if e == nil {
		return nil, nil
	}
	cfg := m.opts.Index
	cfg.Dim = e.Dim()
	cfg.Dir = dir
	cfg.ReadOnly = m.opts.ReadOnly
	if m.rowlessIndex(dir) {
		cfg.Rows = storeRows{db: m.db, s: s, prec: m.em.precision()} // each vector stored once (vecrows.go)
	}
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

func (d *vectorDerived) Apply(ctx context.Context, puts []store.Unit, dels []string, seq uint64) error {
	if len(dels) > 0 {
		if err := d.ix.Delete(ctx, dels...); err != nil {
			return err
		}
	}
	ids := make([]string, 0, len(puts))
	vecs := make([][]float32, 0, len(puts))
	var load []string
	for _, p := range puts {
		if p.Vec == nil {
			load = append(load, p.ID)
			continue
		}
		ids = append(ids, p.ID)
		vecs = append(vecs, p.Vec)
	}
	if len(load) > 0 {
		lids, lvecs, err := d.m.db.StoredVectors(d.s.Name, load, d.m.opts.Embedder.Dim())
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
	if bc, ok := d.ix.(vectorstore.BackgroundCommitter); ok {
		// The rows are written while the next write embeds and stores its documents (the
		// store of record holds them: a crash before they are written is caught up on open).
		return bc.CommitBackground(seq)
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
// every open (the flat index) needs no probe.
//
// An index that returns the vector it holds (vectorstore.VectorLookup, the disk index) is
// checked without a search: each sampled id's vector, normalised as the index stores it,
// must equal the stored one bit for bit.
func (d *vectorDerived) Missing(ids []string) ([]string, error) {
	if _, ok := d.ix.(vectorstore.Durable); !ok {
		return nil, nil
	}
	if vl, ok := d.ix.(vectorstore.VectorLookup); ok {
		return vectorLookupMissing(d.m, d.s.Name, vl, ids)
	}
	return vectorProbe{m: d.m, col: d.s.Name, ix: d.ix}.Missing(ids[:min(len(ids), vectorSampleOnOpen)])
}

// vectorLookupMissing returns the ids whose vector in vl is absent or differs from the
// store of record's (normalised when the index ranks by cosine).
func vectorLookupMissing(m *Memory, col string, vl vectorstore.VectorLookup, ids []string) ([]string, error) {
	var missing []string
	for _, id := range ids {
		v, err := m.db.Vector(col, id)
		if err != nil {
			return nil, err
		}
		got, ok := vl.Vector(id)
		if v == nil || !ok || len(got) != len(v) {
			missing = append(missing, id)
			continue
		}
		want := v
		if m.opts.Index.Metric == "" || m.opts.Index.Metric == vectorstore.Cosine {
			want = make([]float32, len(v))
			vecmath.NormalizeInto(want, v)
		}
		if !slices.Equal(got, want) {
			missing = append(missing, id)
		}
	}
	return missing, nil
}

func (d *vectorDerived) Close() error {
	var errs []error
	if du, ok := d.ix.(vectorstore.Durable); ok {
		errs = append(errs, du.Commit(d.s.LastSeq))
	}
	return errors.Join(append(errs, d.ix.Close())...)
}

// removeDerived deletes the on-disk indexes of every kind of collection col.
func (dv derivedIndexes) removeDerived(col string) error {
	var errs []error
	for _, k := range dv.kinds() {
		if dir := dv.derivedDir(k, col); dir != "" {
			errs = append(errs, os.RemoveAll(dir))
		}
	}
	return errors.Join(errs...)
}

// repairBM25 rebuilds collection col's BM25 index from the store of record after a search
// found it corrupt (cause), so the search can be answered again.
func (dv derivedIndexes) repairBM25(col string, cause error) error {
	return dv.repairKind(col, bm25Dir, cause)
}

// retryRepaired runs fn and, when it fails on collection col's damaged BM25 or vector
// index, rebuilds that index from the store of record and runs fn once more (on the
// rebuilt index): what a search, a batch and Collection.Open do on damage.
func (dv derivedIndexes) retryRepaired(col string, fn func() error) error {
	err := fn()
	if bm25Damaged(err) && dv.repairBM25(col, err) == nil ||
		vectorsDamaged(err) && dv.repairKind(col, vecDir, err) == nil {
		err = fn()
	}
	return err
}

// vectorsDamaged reports whether a search error says the vector index's files are damaged
// (a disk index block that failed its checksum).
func vectorsDamaged(err error) bool { return errors.Is(err, vectorstore.ErrCorrupt) }

// repairKind rebuilds collection col's derived index of kind name from the store of
// record after a search found it damaged (cause), so the search can be answered again.
func (dv derivedIndexes) repairKind(col, name string, cause error) error {
	m := dv.m
	m.log.Error("memory: a derived index is damaged, rebuilding it from the store of record", "collection", col, "index", name, "err", cause)
	m.wmu.Lock()
	defer m.wmu.Unlock()
	s, err := m.Collection(col).state(false)
	if err != nil || s == nil {
		return cmp.Or(err, ErrCollectionNotFound)
	}
	unlock, err := m.reg.lockOpen(s)
	if err != nil {
		return err
	}
	defer unlock()
	for i, k := range s.Kinds {
		if k.Name == name {
			return m.db.RepairIndex(&s.Collection, i)
		}
	}
	return nil
}

// bm25Damaged reports whether a search error says the BM25 index's files are damaged: a
// panic inside Bleve (bm25.ErrCorrupt) or a failure reading its postings or ids (any
// other bm25.ErrBM25; query errors are bm25.ErrQueryTooLong/TooManyTerms).
func bm25Damaged(err error) bool {
	return errors.Is(err, bm25.ErrCorrupt) || errors.Is(err, bm25.ErrBM25)
}

// fileExists reports whether path names an existing file.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// bm25Options are the keyword index options of this store.
func (dv derivedIndexes) bm25Options() bm25.Options {
	m := dv.m
	return bm25.Options{
		K1:                  m.opts.BM25K1,
		B:                   m.opts.BM25B,
		MaxQueryTerms:       m.opts.MaxQueryTerms,
		MaxQueryBytes:       m.opts.MaxQueryBytes,
		SegmentWorkers:      m.opts.QueryWorkers,
		PostingsCacheBytes:  m.opts.PostingsCacheBytes,
		MappedResidentBytes: m.opts.MappedResidentBytes,
		AlsoTrim:            m.dx.dropStoreResident,
		ReadOnly:            m.opts.ReadOnly,
		// The store of record replays what a kill left unpersisted (catch-up from the
		// change log), so a small write need not wait for the index's own fsyncs.
		AsyncPersist: true,
	}
}

// dropStoreResident drops the store file's resident mapped pages (MappedResidentBytes).
func (dv derivedIndexes) dropStoreResident() {
	m := dv.m
	if m.db != nil {
		m.db.DropResident()
	}
}

// bm25Scoring is the bm25 scoring mode of a collection with analyzer ana under the store's
// Options.BM25Scoring: Lucene's for the en_lucene analyzer unless "classic" is asked for,
// Lucene's everywhere with "lucene".
func bm25Scoring(opt, ana string) string {
	switch {
	case opt == ScoringLucene, opt == "" && ana == bm25.LuceneEnglishAnalyzer:
		return bm25.ScoringLucene
	}
	return bm25.ScoringClassic
}
