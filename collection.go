package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/agentmem/memory/internal/bm25"
	"github.com/agentmem/memory/internal/docfilter"
	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/internal/vecmath"
	"github.com/agentmem/memory/vectorstore"
)

// docWrites turns the documents of a write into validated, chunked records of the store m.
type docWrites struct{ m *Memory }

// Collection is a named set of documents with its own indexes. It is a light handle:
// get one with [Memory.Collection] whenever needed.
type Collection struct {
	m    *Memory
	name string
}

// colState is the loaded state of a collection: the store's view of it (counters, change
// log reach, open derived indexes) and what searches need at hand.
type colState struct {
	// Documents are not held in memory: results, filters and catch-up read them from the
	// store of record. What is kept is O(1) per collection.
	mu sync.RWMutex // the indexes and counters: searches read-lock, writes lock
	store.Collection
	bm25     *bm25.Index       // the BM25 index (also in Indexes), for searches
	vec      vectorstore.Index // the vector index (also in Indexes); nil without an embedder
	analyzer string            // the BM25 analyzer the manifest records (analyzer.go)
	deleted  bool              // removed by DeleteCollection
	lastUse  atomic.Int64      // when a search or write last used its indexes (unix ns)
}

func (c *colState) close() error {
	err := c.CloseIndexes()
	c.bm25, c.vec = nil, nil
	return err
}

// Name is the collection's name.
func (c *Collection) Name() string { return c.name }

// state returns the loaded collection, creating its bucket and indexes when create is set;
// (nil, nil) when it does not exist and create is false.
func (c *Collection) state(create bool) (*colState, error) { return c.stateWith(create, "") }

// stateWith is state, creating a missing collection with BM25 analyzer ana ("": the
// store's, Options.Analyzer).
func (c *Collection) stateWith(create bool, ana string) (*colState, error) {
	m := c.m
	if m.closed.Load() {
		return nil, ErrClosed
	}
	if m.cluster != nil { // every method built for a cluster is answered before this
		return nil, m.clusterUnsupported(callerMethod())
	}
	if m.remote != nil { // every read a remote store serves is answered before this
		return nil, m.errNotRemote("this operation")
	}
	if err := validCollectionName(c.name); err != nil {
		return nil, err
	}
	if s := m.reg.loadedState(c.name); s != nil {
		return s, nil
	}
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	if s := m.reg.cols[c.name]; s != nil {
		return s, nil
	}
	exists, err := m.reg.collectionExists(c.name)
	if err != nil || (!exists && !create) {
		return nil, err
	}
	if !exists {
		if err := m.reg.createCollection(c.name, ana, nil); err != nil {
			return nil, err
		}
	}
	s, err := m.reg.loadCollection(c.name)
	if err != nil {
		return nil, err
	}
	m.reg.cols[c.name] = s
	return s, nil
}

// loadCollection reads a collection's counters and the reach of its change log. Its
// indexes are opened when a search or write first needs them (see lockOpen).
func (rg *registry) loadCollection(name string) (*colState, error) {
	m := rg.m
	c, err := m.db.LoadCollection(name)
	if err != nil {
		return nil, err
	}
	return &colState{Collection: *c, analyzer: m.collectionAnalyzer(name)}, nil
}

// MaxMetadataListItems caps the values of one list-valued metadata key.
const MaxMetadataListItems = 1024

// metadataScalar checks one metadata value (or list element) of document id's key k and
// normalises it (numbers to float64); n is what it adds to the document's size.
func metadataScalar(id, k string, v any) (s any, n int, err error) {
	s, ok := docfilter.Scalar(v)
	if !ok {
		return nil, 0, fmt.Errorf("%w: document %s key %s: %T is not a string, number, bool or a list of them", ErrInvalidMetadata, store.ShowKey(id), store.ShowKey(k), v)
	}
	if f, isNum := s.(float64); isNum && math.IsInf(f, 0) {
		return nil, 0, fmt.Errorf("%w: document %s key %s is infinite", ErrInvalidMetadata, store.ShowKey(id), store.ShowKey(k))
	}
	if str, isStr := s.(string); isStr {
		if !utf8.ValidString(str) {
			return nil, 0, fmt.Errorf("%w: document %s metadata %s", ErrInvalidUTF8, store.ShowKey(id), store.ShowKey(k))
		}
		return s, len(str) + 8, nil
	}
	return s, 8, nil
}

// validate checks a document and normalises its metadata (numbers to float64, lists to
// []any of those).
func (dw docWrites) validate(d *Document) error {
	m := dw.m
	if d.ID == "" {
		return ErrEmptyID
	}
	if !utf8.ValidString(d.ID) {
		return fmt.Errorf("%w: id %s", ErrInvalidUTF8, store.ShowKey(d.ID))
	}
	if len(d.ID) > 1024 {
		return fmt.Errorf("%w: id of %d bytes (max 1024)", ErrInvalidOption, len(d.ID))
	}
	if strings.IndexByte(d.ID, 0) >= 0 {
		return fmt.Errorf("%w: id %s holds a NUL byte", ErrInvalidOption, store.ShowKey(d.ID))
	}
	if d.Source != "" {
		if !utf8.ValidString(d.Source) {
			return fmt.Errorf("%w: document %s source", ErrInvalidUTF8, store.ShowKey(d.ID))
		}
		if v, ok := d.Metadata[sourceKey]; ok && v != d.Source {
			return fmt.Errorf("%w: document %s has Source %s and metadata source %v", ErrInvalidMetadata, store.ShowKey(d.ID), store.ShowKey(d.Source), v)
		}
		md := make(map[string]any, len(d.Metadata)+1)
		for k, v := range d.Metadata {
			md[k] = v
		}
		md[sourceKey] = d.Source
		d.Metadata = md
	}
	if d.Title == "" && d.Text == "" {
		return fmt.Errorf("%w: document %s", ErrEmptyText, store.ShowKey(d.ID))
	}
	if !utf8.ValidString(d.Title) || !utf8.ValidString(d.Text) {
		return fmt.Errorf("%w: document %s title or text", ErrInvalidUTF8, store.ShowKey(d.ID))
	}
	size := len(d.Title) + len(d.Text)
	if len(d.Metadata) > 0 {
		md := make(map[string]any, len(d.Metadata))
		for k, v := range d.Metadata {
			if k == "" {
				return fmt.Errorf("%w: document %s has an empty metadata key", ErrInvalidMetadata, store.ShowKey(d.ID))
			}
			if !utf8.ValidString(k) {
				return fmt.Errorf("%w: document %s metadata key %s", ErrInvalidUTF8, store.ShowKey(d.ID), store.ShowKey(k))
			}
			size += len(k)
			if list, isList := bm25.MetaList(v); isList {
				if k == sourceKey {
					return fmt.Errorf("%w: document %s: metadata %q is a list (the source is one string)", ErrInvalidMetadata, store.ShowKey(d.ID), sourceKey)
				}
				if len(list) > MaxMetadataListItems {
					return fmt.Errorf("%w: document %s key %s: a list of %d values (max %d)", ErrInvalidMetadata, store.ShowKey(d.ID), store.ShowKey(k), len(list), MaxMetadataListItems)
				}
				vals := make([]any, len(list))
				for i, e := range list {
					s, n, err := metadataScalar(d.ID, k, e)
					if err != nil {
						return err
					}
					vals[i] = s
					size += n
				}
				md[k] = vals
				continue
			}
			s, n, err := metadataScalar(d.ID, k, v)
			if err != nil {
				return err
			}
			size += n
			md[k] = s
		}
		d.Metadata = md
	}
	if size > m.opts.MaxDocumentBytes {
		return fmt.Errorf("%w: document %s has %d bytes (max %d; split it, e.g. with package chunker)",
			ErrTooLarge, store.ShowKey(d.ID), size, m.opts.MaxDocumentBytes)
	}
	if d.Embedding != nil {
		e := m.opts.Embedder
		if e == nil {
			return fmt.Errorf("%w: document %s has an embedding but the store has no embedder to embed queries", ErrNoEmbedder, store.ShowKey(d.ID))
		}
		if err := checkVec(d.Embedding, e.Dim()); err != nil {
			return fmt.Errorf("document %s: %w", store.ShowKey(d.ID), err)
		}
	} else if vectorsOnly(m.opts.Embedder) {
		return fmt.Errorf("%w: %w: document %s has no embedding, and the store's embedder %q is only the identity of vectors computed elsewhere (%w)",
			ErrEmbedderNeeded, ErrNoEmbedder, store.ShowKey(d.ID), m.opts.Embedder.ID(), vectorstore.ErrNoModel)
	}
	return nil
}

// checkVec checks a vector's length and values (vecmath.Check) as ErrBadVector.
func checkVec(v []float32, dim int) error {
	if err := vecmath.Check(v, dim); err != nil {
		return fmt.Errorf("%w: %w", ErrBadVector, err)
	}
	return nil
}

// Add stores new documents. It fails with ErrDuplicateID, without writing anything, when
// an id repeats or is already stored; all documents are written or none.
func (c *Collection) Add(ctx context.Context, docs ...Document) error {
	return c.put(ctx, docs, false)
}

// Upsert stores documents, replacing those with the same ids; all or none are written.
func (c *Collection) Upsert(ctx context.Context, docs ...Document) error {
	return c.put(ctx, docs, true)
}

func (c *Collection) put(ctx context.Context, in []Document, upsert bool) error {
	if c.m.cluster != nil {
		return c.m.cluster.put(ctx, c.m, c.name, in, upsert)
	}
	if len(in) == 0 {
		if err := c.m.writable(); err != nil {
			return err
		}
		return nil
	}
	_, err := c.write(ctx, in, upsert, nil)
	return err
}

// write stores the documents in (an Add, or an Upsert when upsert is set) in one
// transaction and, when remove is set, removes in that same transaction the stored
// documents it lists (called under the writer lock, with the indexes open; the ids it
// returns are distinct and none is among in). It returns how many documents it removed.
// Without documents, a collection that does not exist is not created (nothing is removed
// from it; a named one is ErrCollectionNotFound).
func (c *Collection) write(ctx context.Context, in []Document, upsert bool, remove func(*colState, *docWrite) ([]string, error)) (int, error) {
	if c.m.cluster != nil {
		return 0, c.m.clusterUnsupported(callerMethod())
	}
	m := c.m
	if err := m.writable(); err != nil {
		return 0, err
	}
	if m.closed.Load() {
		return 0, ErrClosed
	}
	if err := validCollectionName(c.name); err != nil {
		return 0, err
	}
	w := &docWrite{}
	if len(in) > 0 {
		var err error
		if w, err = m.wr.newWrite(in); err != nil { // validated and chunked before taking the writer lock
			return 0, err
		}
		// Embedded before taking the writer lock too: the embedder has every core to itself
		// (the BM25 analysis, which starts under the lock, then overlaps the store's
		// transaction and its fsync rather than the embedding), and a concurrent writer's
		// embedding overlaps this one's write.
		if err := w.embed(ctx, m); err != nil {
			return 0, err
		}
		if remove == nil { // an Add or Upsert: committed with the others waiting (groupcommit.go)
			return 0, m.groupWrite(ctx, c, w, upsert)
		}
	}
	m.wmu.Lock()
	defer m.wmu.Unlock()
	var s *colState
	var err error
	if len(in) > 0 {
		s, err = c.state(true)
	} else {
		s, err = c.existing()
	}
	if err != nil || s == nil {
		return 0, err
	}
	if err := m.reg.ensureOpen(s); err != nil {
		return 0, err
	}
	prepared := w.prepareBM25(s)
	defer prepared(false)
	var gone []string
	if remove != nil {
		if gone, err = remove(s, w); err != nil {
			return 0, err
		}
	}
	// Read under the writer lock, so the stored versions cannot change before the write.
	if err := w.readStored(m, c.name, upsert); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	removed := 0
	if remove == nil {
		err = w.store(m, c.name)
	} else {
		w.commit, removed, err = m.db.Replace(c.name, w.puts(), gone, w.added, w.nUnits-w.oldUnits)
	}
	if err != nil {
		return 0, fmt.Errorf("memory: write: %w", err)
	}
	prepared(true)

	// The write is durable; now the in-memory view and the indexes.
	unlock, err := m.reg.lockOpen(s)
	if err != nil {
		return removed, fmt.Errorf("%w: their collection's indexes cannot be opened: %w", ErrIndexUpdate, err)
	}
	defer unlock()
	s.Committed(w.commit)
	if w.commit.Changes == 0 {
		return removed, nil
	}
	errs := []error{m.db.Apply(ctx, &s.Collection, w.commit), m.db.MaybeTrim(&s.Collection)}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("%w: %w", ErrIndexUpdate, err)
	}
	return removed, nil
}

// docWrite is one Add or Upsert on its way to the store of record and the indexes.
type docWrite struct {
	docs  []Document
	recs  []*store.Record // the stored form of each document (chunked)
	units [][]string      // each document's index ids
	stale [][]string      // the index ids of each document's stored version that it drops
	vecs  [][][]float32   // one vector per index id (nil without an embedder)
	// was[i]: the stored version of document i (its metadata; nil: none), read by
	// readStored: the sources index moves a replaced document from its old source.
	was []*store.Record

	nUnits, oldUnits, added int
	commit                  store.Commit // set by store
}

// newWrite validates docs (copied: metadata is normalised) and chunks them.
func (dw docWrites) newWrite(in []Document) (*docWrite, error) {
	m := dw.m
	docs := make([]Document, len(in))
	copy(docs, in)
	seen := make(map[string]bool, len(docs))
	for i := range docs {
		if err := dw.validate(&docs[i]); err != nil {
			return nil, err
		}
		if seen[docs[i].ID] {
			return nil, fmt.Errorf("%w: %s appears twice in one call", ErrDuplicateID, store.ShowKey(docs[i].ID))
		}
		seen[docs[i].ID] = true
	}
	if m.opts.Embedder == nil && m.man.Embedder != nil {
		return nil, m.em.embedderNeeded("write")
	}
	w := &docWrite{docs: docs, recs: make([]*store.Record, len(docs)), units: make([][]string, len(docs)), stale: make([][]string, len(docs))}
	for i, d := range docs {
		w.recs[i] = &store.Record{Title: d.Title, Text: d.Text, Metadata: d.Metadata, Chunks: dw.chunkDoc(&docs[i])}
		w.units[i] = w.recs[i].UnitIDs(d.ID)
		w.nUnits += len(w.units[i])
	}
	return w, nil
}

// prepareMinUnits is the smallest write whose BM25 analysis is done ahead (prepareBM25).
const prepareMinUnits = 1000

// prepareBM25 starts the analysis of a large write's units for the BM25 index of s
// (hybrid's Prepare) on goroutines of their own, to overlap the reading of the stored
// versions and the store's transaction, and returns the function that waits for it:
// done(true) once the write is durable (Apply takes the analyses), done(false) otherwise
// (they are dropped; a second call does nothing). The caller holds the writer lock, under
// which the indexes of s stay open.
func (w *docWrite) prepareBM25(s *colState) (done func(durable bool)) {
	s.mu.RLock()
	ix := s.bm25
	s.mu.RUnlock()
	if ix == nil || w.nUnits < prepareMinUnits {
		return func(bool) {}
	}
	docs := make([]bm25.Doc, 0, w.nUnits)
	for i, rec := range w.recs {
		for n, u := range w.units[i] {
			docs = append(docs, bm25Doc(u, rec, rec.UnitIndex(n)))
		}
	}
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		ix.Prepare(docs)
	}()
	var once sync.Once
	return func(durable bool) {
		once.Do(func() {
			<-ch
			if !durable {
				ix.Unprepare()
			}
		})
	}
}

// readStored reads the stored versions of the documents: without upsert one is
// ErrDuplicateID; with it, the index ids each document drops (those of its stored version
// that it does not reuse: a document that shrinks drops its last chunks) are noted.
func (w *docWrite) readStored(m *Memory, col string, upsert bool) error {
	return m.db.View(func(tx *store.Tx) error {
		for i, d := range w.docs {
			if !upsert {
				if tx.Has(col, d.ID) {
					return fmt.Errorf("%w: %s is already stored in collection %s (use Upsert to replace)", ErrDuplicateID, store.ShowKey(d.ID), store.ShowKey(col))
				}
				w.added++
				continue
			}
			old, err := tx.RecordMeta(col, d.ID) // its chunks and source
			if err != nil {
				return err
			}
			if old == nil {
				w.added++
				continue
			}
			if w.was == nil {
				w.was = make([]*store.Record, len(w.docs))
			}
			w.was[i] = old
			w.oldUnits += max(1, len(old.Chunks))
			keep := make(map[string]bool, len(w.units[i]))
			for _, u := range w.units[i] {
				keep[u] = true
			}
			for _, u := range old.UnitIDs(d.ID) {
				if !keep[u] {
					w.stale[i] = append(w.stale[i], u)
				}
			}
		}
		return nil
	})
}

// embed computes one vector per index id (a document's own Embedding when it has one).
func (w *docWrite) embed(ctx context.Context, m *Memory) error {
	if m.opts.Embedder == nil {
		return nil
	}
	w.vecs = make([][][]float32, len(w.docs))
	var texts []string
	type at struct{ doc, unit int }
	var where []at
	for i, d := range w.docs {
		w.vecs[i] = make([][]float32, len(w.units[i]))
		if d.Embedding != nil {
			w.vecs[i][0] = d.Embedding
			continue
		}
		for u := range w.units[i] {
			texts = append(texts, unitEmbedText(w.recs[i], w.recs[i].UnitIndex(u)))
			where = append(where, at{i, u})
		}
	}
	if len(texts) == 0 {
		return w.roundVectors(m)
	}
	out, err := m.em.embed(ctx, texts)
	if err != nil {
		return err
	}
	for n, a := range where {
		w.vecs[a.doc][a.unit] = out[n]
	}
	return w.roundVectors(m)
}

// roundVectors rounds the write's vectors to the store's precision (Memory.roundVectors).
func (w *docWrite) roundVectors(m *Memory) error {
	if !m.em.halfVectors() {
		return nil
	}
	for _, vs := range w.vecs {
		if err := m.em.roundVectors(vs); err != nil {
			return err
		}
	}
	return nil
}

// puts is the stored form of the documents.
func (w *docWrite) puts() []store.Put {
	puts := make([]store.Put, len(w.docs))
	for i, d := range w.docs {
		puts[i] = store.Put{ID: d.ID, Record: w.recs[i], Units: w.units[i], Stale: w.stale[i]}
		if w.was != nil && w.was[i] != nil {
			puts[i].Replaces, puts[i].OldSource = true, store.RecordSource(w.was[i])
		}
		if w.vecs != nil {
			puts[i].Vecs = w.vecs[i]
		}
	}
	return puts
}

// store writes the records, vectors and change log entries in one transaction.
func (w *docWrite) store(m *Memory, col string) error {
	var err error
	w.commit, err = m.db.Write(col, w.puts(), w.added, w.nUnits-w.oldUnits)
	return err
}

// Delete removes documents (with all their chunks); unknown ids are ignored.
func (c *Collection) Delete(ctx context.Context, ids ...string) error {
	if c.m.cluster != nil {
		return c.m.cluster.delete(ctx, c.m, c.name, ids)
	}
	m := c.m
	if err := m.writable(); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	m.wmu.Lock()
	defer m.wmu.Unlock()
	s, err := c.state(false)
	if err != nil || s == nil {
		return err
	}
	var gone []string
	if err := m.db.View(func(tx *store.Tx) error {
		seen := make(map[string]bool, len(ids))
		for _, id := range ids {
			if !seen[id] && tx.Has(c.name, id) {
				seen[id] = true
				gone = append(gone, id)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	return c.deleteDocs(ctx, s, gone)
}

// deleteDocs removes stored documents and their chunks in one transaction; the caller holds
// the writer lock and ids are distinct (one that is not stored is skipped).
func (c *Collection) deleteDocs(ctx context.Context, s *colState, ids []string) error {
	m := c.m
	if len(ids) == 0 {
		return nil
	}
	if err := m.reg.ensureOpen(s); err != nil {
		return err
	}
	w, err := m.db.Delete(c.name, ids)
	if err != nil {
		return fmt.Errorf("memory: delete: %w", err)
	}
	unlock, err := m.reg.lockOpen(s)
	if err != nil {
		return fmt.Errorf("memory: documents deleted, but their collection's indexes cannot be opened: %w", err)
	}
	defer unlock()
	s.Committed(w)
	if w.Changes == 0 {
		return nil
	}
	errs := []error{m.db.Apply(ctx, &s.Collection, w), m.db.MaybeTrim(&s.Collection)}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("memory: documents deleted, but an index update failed (it is rebuilt on reopen): %w", err)
	}
	return nil
}

// DeleteWhere removes every document whose metadata matches where (with all its chunks),
// in one transaction, and returns how many it removed. Document.Source is the metadata key
// "source": DeleteWhere(ctx, Where{"source": path}) removes what was indexed from path. An
// empty filter is ErrInvalidFilter (use DeleteCollection to empty a collection); a named
// collection that does not exist is ErrCollectionNotFound (the default collection is
// always there, empty until written).
func (c *Collection) DeleteWhere(ctx context.Context, where Where) (int, error) {
	if c.m.cluster != nil {
		return c.m.cluster.deleteWhere(ctx, c.m, c.name, where)
	}
	m := c.m
	if err := m.writable(); err != nil {
		return 0, err
	}
	if len(where) == 0 {
		return 0, fmt.Errorf("%w: DeleteWhere needs a filter (DeleteCollection empties a collection)", ErrInvalidFilter)
	}
	cw, err := docfilter.Compile(where)
	if err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.wmu.Lock()
	defer m.wmu.Unlock()
	s, err := c.existing()
	if err != nil || s == nil {
		return 0, err
	}
	gone, err := c.matching(ctx, s, cw)
	if err != nil {
		return 0, err
	}
	if err := c.deleteDocs(ctx, s, gone); err != nil {
		return 0, err
	}
	return len(gone), nil
}

// matching lists the ids of the documents of s that the compiled filter cw matches, sorted;
// the caller holds the writer lock. A Where the BM25 index can evaluate runs there (its
// metadata terms: O(matches), not O(documents)), and each document it names is checked
// against its stored record; any other Where scans the records' metadata.
func (c *Collection) matching(ctx context.Context, s *colState, cw docfilter.Compiled) ([]string, error) {
	units, ok, err := c.filterUnits(ctx, s, cw)
	if err != nil {
		return nil, err
	}
	if ok {
		return c.checkedIDs(ctx, units, cw.Pred)
	}
	var ids []string
	err = c.m.forEachMeta(c.name, func(id string, r *store.Record) { // a Where reads metadata only
		if cw.Pred(r) {
			ids = append(ids, id)
		}
	})
	return ids, err
}

// filterUnits returns the index ids (sorted; the caller must not modify them) of the units
// whose metadata the compiled filter cw matches, evaluated by the BM25 index: ok is false
// when the index cannot evaluate cw (no metadata part, or damage: the caller scans the
// store of record, and the next open or search rebuilds the index).
func (c *Collection) filterUnits(ctx context.Context, s *colState, cw docfilter.Compiled) (units []string, ok bool, err error) {
	mf := cw.Meta
	if mf == nil || filterScan.Load() {
		return nil, false, nil
	}
	m := c.m
	if err := m.reg.ensureOpen(s); err != nil {
		return nil, false, err
	}
	units, err = func() ([]string, error) {
		s.mu.RLock() // the writer lock keeps the indexes open
		defer s.mu.RUnlock()
		return s.bm25.FilterIDs(ctx, mf)
	}()
	if err == nil {
		return units, true, nil
	}
	if !bm25Damaged(err) {
		return nil, false, err
	}
	m.log.Warn("memory: the BM25 index cannot evaluate a filter, scanning the store of record", "collection", c.name, "err", err)
	return nil, false, nil
}

// checkedIDs are the documents of index ids units (sorted) whose stored records pred
// matches, sorted: a write commits its records before it updates the index, and an index
// update that failed leaves it behind until it is caught up.
func (c *Collection) checkedIDs(ctx context.Context, units []string, pred docfilter.Pred) ([]string, error) {
	var ids []string
	err := c.m.db.View(func(tx *store.Tx) error {
		return eachUnitDoc(ctx, units, "", func(id string) error {
			r, err := tx.RecordMeta(c.name, id) // a Where reads metadata only
			if err != nil {
				return err
			}
			if r != nil && pred(r) {
				ids = append(ids, id)
			}
			return nil
		})
	})
	return ids, err
}

// unitsVisited counts the unit ids eachUnitDoc has looked at (tests: a page's cost).
var unitsVisited atomic.Int64

// eachUnitDoc calls fn with each document id of units (index ids, sorted) after after,
// once each and in id order: unit ids sort in document id order, a document's chunks
// right after it (a chunk's unit id is its document's id, a NUL byte and the chunk's
// number, and ids hold no NUL). It starts at after by binary search, so a page of a Find
// reads the units of its page, not every match's.
func eachUnitDoc(ctx context.Context, units []string, after string, fn func(id string) error) error {
	from, _ := slices.BinarySearch(units, after)
	last := after
	n := 0
	defer func() { unitsVisited.Add(int64(n)) }()
	for _, u := range units[from:] {
		n++
		if n&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		id, _ := store.SplitUnit(u)
		if id <= last {
			continue
		}
		last = id
		if err := fn(id); err != nil {
			return err
		}
	}
	return nil
}

// DeleteWhere removes the documents of the default collection that match where; see
// [Collection.DeleteWhere].
func (m *Memory) DeleteWhere(ctx context.Context, where Where) (int, error) {
	return m.Collection("").DeleteWhere(ctx, where)
}

// Sources lists the distinct Source values of the collection's documents, sorted (a
// document without one is not listed). With DeleteWhere it syncs a collection with a
// folder: delete the sources that are no longer there. The store keeps a count of
// documents per source, written with the documents, so a listing costs O(sources), not
// O(documents); a collection stored by a version before it was kept is read whole once, on
// its first listing by a writable store, to build it (a read-only store reads the records
// at each listing until then). On a cluster it reads every document's record.
func (c *Collection) Sources(ctx context.Context) ([]string, error) {
	if c.m.cluster != nil {
		return c.m.cluster.sources(ctx, c.m, c.name)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.m.remote != nil {
		resp, err := c.remoteCall(ctx, "sources", "")
		if err != nil {
			return nil, err
		}
		return append([]string{}, resp.Names...), nil
	}
	s, err := c.existing()
	if err != nil || s == nil {
		return nil, err
	}
	// The sources index answers in O(sources); a store made before it was kept builds it
	// once (reading every record), a read-only one reads the records each time.
	srcs, ans, err := c.m.db.Sources(c.name)
	if err != nil {
		return nil, err
	}
	if ans == store.SourcesNotKept && !c.m.opts.ReadOnly {
		c.m.log.Info("memory: indexing the sources of a collection (once: it reads every record)", "collection", c.name)
		if err := c.m.db.BuildSources(c.name); err != nil {
			return nil, err
		}
		if srcs, ans, err = c.m.db.Sources(c.name); err != nil {
			return nil, err
		}
	}
	if ans == store.SourcesListed {
		return srcs, nil
	}
	set := map[string]bool{}
	if err := c.m.forEachMeta(c.name, func(_ string, r *store.Record) {
		if src := recordSource(r); src != "" {
			set[src] = true
		}
	}); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(set))
	for src := range set {
		out = append(out, src)
	}
	sort.Strings(out)
	return out, nil
}

// forEachRecord calls fn with every document of a collection, in id order, in one read
// transaction (fn must not write to the store).
func (m *Memory) forEachRecord(col string, fn func(id string, r *store.Record)) error {
	return m.db.View(func(tx *store.Tx) error {
		return tx.EachRecord(col, false, func(id string, r *store.Record) error { fn(id, r); return nil })
	})
}

// forEachMeta is forEachRecord for metadata filters: the records passed to fn have their
// metadata and chunks, but not always their title and text (see store.DecodeMeta).
func (m *Memory) forEachMeta(col string, fn func(id string, r *store.Record)) error {
	return m.db.View(func(tx *store.Tx) error {
		return tx.EachRecord(col, true, func(id string, r *store.Record) error { fn(id, r); return nil })
	})
}

// existing returns the loaded collection; ErrCollectionNotFound when a named collection
// does not exist, (nil, nil) for the default collection before its first write.
func (c *Collection) existing() (*colState, error) {
	if c.m.remote != nil {
		if err := validCollectionName(c.name); err != nil {
			return nil, err
		}
		_, err := c.remoteCall(context.Background(), "exists", "")
		return nil, err
	}
	s, err := c.state(false)
	if err != nil {
		return nil, err
	}
	if s == nil && c.name != DefaultCollection {
		return nil, fmt.Errorf("%w: %s", ErrCollectionNotFound, store.ShowKey(c.name))
	}
	return s, nil
}

// Get returns the whole document with id (not a chunk), or ErrNotFound (which, in a named
// collection that does not exist, also matches ErrCollectionNotFound). Its Embedding is
// filled when one vector is stored for it (a chunked document has one per chunk: nil).
func (c *Collection) Get(ctx context.Context, id string) (Document, error) {
	if c.m.cluster != nil {
		return c.m.cluster.get(ctx, c.m, c.name, id)
	}
	if c.m.remote != nil {
		return c.remoteGet(ctx, id)
	}
	s, err := c.state(false)
	if err != nil {
		return Document{}, err
	}
	if s == nil && c.name != DefaultCollection {
		return Document{}, fmt.Errorf("%w: %s: %w: %s", ErrNotFound, store.ShowKey(id), ErrCollectionNotFound, store.ShowKey(c.name))
	}
	if s != nil {
		r, vec, err := c.m.db.Document(c.name, id)
		if err != nil {
			return Document{}, err
		}
		if r != nil {
			return Document{ID: id, Title: r.Title, Text: r.Text, Metadata: r.Metadata, Source: recordSource(r), Embedding: vec}, nil
		}
	}
	return Document{}, fmt.Errorf("%w: %s in collection %s", ErrNotFound, store.ShowKey(id), store.ShowKey(c.name))
}

// Vectors returns the stored vectors of a document, one per chunk in order (one for a
// document stored whole); nil vectors in a store without an embedder. ErrNotFound when the
// collection has no such document.
func (c *Collection) Vectors(ctx context.Context, id string) ([][]float32, error) {
	if c.m.cluster != nil {
		return c.m.cluster.vectors(ctx, c.m, c.name, id)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.m.remote != nil {
		resp, err := c.remoteCall(ctx, "vectors", id)
		if err != nil {
			return nil, err
		}
		return resp.Vectors, nil
	}
	s, err := c.state(false)
	if err != nil {
		return nil, err
	}
	if s != nil {
		var r *store.Record
		if err := c.m.db.View(func(tx *store.Tx) error {
			var err error
			r, err = tx.RecordMeta(c.name, id)
			return err
		}); err != nil {
			return nil, err
		}
		if r != nil {
			uids := r.UnitIDs(id)
			out := make([][]float32, len(uids))
			dim := 0
			if e := c.m.man.Embedder; e != nil {
				dim = e.Dim
			}
			vids, vecs, err := c.m.db.StoredVectors(c.name, uids, dim)
			if err != nil {
				return nil, err
			}
			at := make(map[string][]float32, len(vids))
			for i, v := range vids {
				at[v] = vecs[i]
			}
			for i, u := range uids {
				out[i] = at[u]
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("%w: %s in collection %s", ErrNotFound, store.ShowKey(id), store.ShowKey(c.name))
}

func cloneMeta(md map[string]any) map[string]any {
	if md == nil {
		return nil
	}
	out := make(map[string]any, len(md))
	for k, v := range md {
		out[k] = v
	}
	return out
}

// Count is the number of documents in the collection, or the error that keeps it from
// being read: ErrCorrupt when the store of record is damaged there, ErrClosed, ErrInvalidCollection,
// ErrCollectionNotFound for a named collection that does not exist (the default collection
// counts 0 before its first write).
func (c *Collection) Count(ctx context.Context) (int, error) {
	if c.m.cluster != nil {
		return c.m.cluster.count(ctx, c.m, c.name)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if c.m.remote != nil {
		resp, err := c.remoteCall(ctx, "len", "")
		if err != nil {
			return 0, err
		}
		return resp.N, nil
	}
	s, err := c.existing()
	if err != nil || s == nil {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.Docs, nil
}

// IDs lists the collection's document ids, sorted, or the error that keeps them from
// being read (as Count's; an empty default collection lists none).
func (c *Collection) IDs(ctx context.Context) ([]string, error) {
	if c.m.cluster != nil {
		return c.m.cluster.ids(ctx, c.m, c.name)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.m.remote != nil {
		resp, err := c.remoteCall(ctx, "ids", "")
		if err != nil {
			return nil, err
		}
		return resp.Names, nil
	}
	s, err := c.state(false)
	if err != nil || s == nil {
		return nil, err
	}
	return c.m.db.IDs(c.name)
}
