package memory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/agentmem/memory/hybrid"
	"github.com/agentmem/memory/internal/vecmath"
	"github.com/agentmem/memory/vectorstore"
	segjson "github.com/segmentio/encoding/json"
	bolt "go.etcd.io/bbolt"
)

// Collection is a named set of documents with its own indexes. It is a light handle:
// get one with [Memory.Collection] whenever needed.
type Collection struct {
	m    *Memory
	name string
}

// colState is the loaded state of a collection.
type colState struct {
	name string

	// Documents are not held in memory: results, filters and catch-up read them from the
	// store of record. What is kept is O(1) per collection.
	mu      sync.RWMutex      // the indexes and counters: searches read-lock, writes lock
	indexes []derivedIndex    // by kind (Memory.kinds); nil where a kind does not apply
	bm25    *hybrid.BM25Index // the BM25 index (also in indexes), for searches
	vec     vectorstore.Index // the vector index (also in indexes); nil without an embedder
	lastSeq uint64            // sequence number of the collection's last change
	trimmed uint64            // the change log was trimmed up to this sequence number
	deleted bool              // removed by DeleteCollection
	lastUse atomic.Int64      // when a search or write last used its indexes (unix ns)
	changes int               // entries in its change log
	ndocs   int               // documents stored (persisted as info/ndocs)
	units   int               // index ids (chunks) of all documents (info/nunits)
}

// maxChanges bounds the change log kept for index catch-up; past it the oldest half is
// dropped and an index that lags further is rebuilt from the documents on open.
const maxChanges = 200_000

func (c *colState) close() error {
	var errs []error
	for _, ix := range c.indexes {
		if ix != nil {
			errs = append(errs, guard("close", ix.Close))
		}
	}
	c.indexes, c.bm25, c.vec = nil, nil, nil
	return errors.Join(errs...)
}

// Name is the collection's name.
func (c *Collection) Name() string { return c.name }

// state returns the loaded collection, creating its bucket and indexes when create is set;
// (nil, nil) when it does not exist and create is false.
func (c *Collection) state(create bool) (*colState, error) {
	m := c.m
	if m.closed.Load() {
		return nil, ErrClosed
	}
	if err := validCollectionName(c.name); err != nil {
		return nil, err
	}
	if s := m.loadedState(c.name); s != nil {
		return s, nil
	}
	m.cmu.Lock()
	defer m.cmu.Unlock()
	if s := m.cols[c.name]; s != nil {
		return s, nil
	}
	exists, err := m.collectionExists(c.name)
	if err != nil || (!exists && !create) {
		return nil, err
	}
	if !exists {
		if err := m.createCollection(c.name); err != nil {
			return nil, err
		}
	}
	s, err := m.loadCollection(c.name)
	if err != nil {
		return nil, err
	}
	m.cols[c.name] = s
	return s, nil
}

// loadCollection reads a collection's counters and the reach of its change log. Its
// indexes are opened when a search or write first needs them (see lockOpen).
func (m *Memory) loadCollection(name string) (*colState, error) {
	s := &colState{name: name}
	haveCounts := true
	err := m.view(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, name, false)
		if err != nil || b == nil {
			return err
		}
		s.trimmed = u64(b.Bucket(bkInfo).Get(keyTrim))
		s.lastSeq = s.trimmed
		s.ndocs, s.units, haveCounts = counts(b)
		cur := b.Bucket(bkChanges).Cursor()
		for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
			s.changes++
			s.lastSeq = max(s.lastSeq, u64(k))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !haveCounts {
		if err := m.countCollection(s); err != nil {
			return nil, err
		}
	}
	if m.opts.ReadOnly {
		s.changes = 0 // nothing to trim on Close: a read-only store writes nothing
	}
	return s, nil
}

// countCollection counts the documents and index ids of a collection stored before the
// counts were persisted, once, and persists them.
func (m *Memory) countCollection(s *colState) error {
	m.log.Info("memory: counting the documents of a collection stored by an older version (once)", "collection", s.name)
	txn := m.update
	if m.opts.ReadOnly {
		txn = m.view // counted for this process only: a read-only store writes nothing
	}
	return txn(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, s.name, false)
		if err != nil || b == nil {
			return err
		}
		docs, units := 0, 0
		cur := b.Bucket(bkDocs).Cursor()
		for k, v := cur.First(); k != nil; k, v = cur.Next() {
			var c struct {
				Chunks []struct{} `json:"c"`
			}
			js, err := recordJSON(string(k), v)
			if err != nil {
				return err
			}
			if err := segjson.Unmarshal(js, &c); err != nil {
				return fmt.Errorf("%w: document %q: %v", ErrCorrupt, k, err)
			}
			docs++
			units += max(1, len(c.Chunks))
		}
		info := b.Bucket(bkInfo)
		s.ndocs, s.units = docs, units
		if !tx.Writable() {
			return nil
		}
		if err := info.Put(keyDocN, u64b(uint64(docs))); err != nil {
			return err
		}
		return info.Put(keyUnitN, u64b(uint64(units)))
	})
}

// unitDoc is a live index id with its document's record and its chunk index (-1: the
// whole document).
type unitDoc struct {
	uid string
	r   *record
	idx int
	vec []float32 // its vector when the writer has it (nil: read from the store)
}

// catchUpBatch is how many index ids catch-up reads (in one read transaction) and applies
// at a time.
// Large enough that a rebuild's BM25 batches are built on all cores (see hybrid's
// minPartDocs), small enough to bound the memory of one step (~10 MB of records).
const catchUpBatch = 8192

// catchUp brings an index that reflects sequence number from up to s.lastSeq by replaying
// the change log after from (the caller checked that it reaches back that far). puts and
// dels are index ids (see unitID): a touched id that is live now is put again, one that is
// not is deleted. The caller holds the writer lock or is opening.
func (m *Memory) catchUp(s *colState, from uint64, apply applyFunc) error {
	if from >= s.lastSeq {
		return nil
	}
	touched := map[string]bool{}
	var puts []unitDoc
	var dels []string
	if err := m.view(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, s.name, false)
		if err != nil || b == nil {
			return err
		}
		cur := b.Bucket(bkChanges).Cursor()
		for k, v := cur.Seek(u64b(from + 1)); k != nil; k, v = cur.Next() {
			if len(v) > 1 {
				touched[string(v[1:])] = true
			}
		}
		ids := make([]string, 0, len(touched))
		for id := range touched {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		docs := b.Bucket(bkDocs)
		for _, id := range ids {
			_, r, idx, ok, err := liveUnit(docs, id)
			if err != nil {
				return err
			}
			if ok {
				puts = append(puts, unitDoc{uid: id, r: r, idx: idx})
			} else {
				dels = append(dels, id)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	for i := 0; i < len(puts) || i == 0; i += catchUpBatch {
		j := min(i+catchUpBatch, len(puts))
		var d []string
		if i == 0 {
			d = dels
		}
		if err := apply(context.Background(), puts[i:j], d, s.lastSeq); err != nil {
			return err
		}
		if j >= len(puts) {
			break
		}
	}
	return nil
}

// rebuild loads every document of a collection into a reset index: a batch of index ids
// per read transaction, so neither the collection nor a long transaction is held.
func (m *Memory) rebuild(s *colState, apply applyFunc) error {
	var after []byte
	applied := false
	for {
		var puts []unitDoc
		done := true
		if err := m.view(func(tx *bolt.Tx) error {
			docs := docsBucket(tx, s.name)
			if docs == nil {
				return nil
			}
			cur := docs.Cursor()
			k, v := cur.First()
			if after != nil {
				if k, v = cur.Seek(after); k != nil && bytes.Equal(k, after) {
					k, v = cur.Next()
				}
			}
			for ; k != nil; k, v = cur.Next() {
				id := string(k)
				r, err := decodeRecord(id, v)
				if err != nil {
					return err
				}
				for u, uid := range r.unitIDs(id) {
					puts = append(puts, unitDoc{uid: uid, r: r, idx: unitIndex(r, u)})
				}
				if len(puts) >= catchUpBatch {
					after, done = []byte(id), false
					return nil
				}
			}
			return nil
		}); err != nil {
			return err
		}
		if len(puts) > 0 || !applied {
			// The first call also records the sequence number in an empty collection.
			if err := apply(context.Background(), puts, nil, s.lastSeq); err != nil {
				return err
			}
			applied = true
		}
		if done {
			return nil
		}
	}
}

// applyFunc applies puts and deletes to a derived index (derivedIndex.Apply).
type applyFunc func(ctx context.Context, puts []unitDoc, dels []string, seq uint64) error

// storedVectors reads the stored vectors of ids in collection col; ids without one are
// left out.
func (m *Memory) storedVectors(col string, ids []string) (vids []string, vecs [][]float32, err error) {
	err = m.view(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, col, false)
		if err != nil || b == nil {
			return err
		}
		vb := b.Bucket(bkVecs)
		for _, id := range ids {
			raw := vb.Get([]byte(id))
			if raw == nil {
				continue
			}
			v, err := decodeVec(raw)
			if err != nil {
				return err
			}
			if e := m.opts.Embedder; e != nil && len(v) != e.Dim() {
				return fmt.Errorf("%w: the stored vector of %q has %d values, want %d", ErrCorrupt, id, len(v), e.Dim())
			}
			vids = append(vids, id)
			vecs = append(vecs, v)
		}
		return nil
	})
	return vids, vecs, err
}

// trimChanges drops the change log of a collection whose indexes are all persisted.
func (m *Memory) trimChanges(s *colState) error {
	if s.changes == 0 {
		return nil
	}
	return m.update(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, s.name, false)
		if err != nil || b == nil {
			return err
		}
		if err := b.DeleteBucket(bkChanges); err != nil {
			return err
		}
		if _, err := b.CreateBucket(bkChanges); err != nil {
			return err
		}
		s.changes = 0
		s.trimmed = s.lastSeq
		return b.Bucket(bkInfo).Put(keyTrim, u64b(s.lastSeq))
	})
}

// validate checks a document and normalises its metadata (numbers to float64).
func (m *Memory) validate(d *Document) error {
	if d.ID == "" {
		return ErrEmptyID
	}
	if !utf8.ValidString(d.ID) {
		return fmt.Errorf("%w: id %q", ErrInvalidUTF8, d.ID)
	}
	if len(d.ID) > 1024 {
		return fmt.Errorf("%w: id of %d bytes (max 1024)", ErrInvalidOption, len(d.ID))
	}
	if strings.IndexByte(d.ID, 0) >= 0 {
		return fmt.Errorf("%w: id %q holds a NUL byte", ErrInvalidOption, d.ID)
	}
	if d.Source != "" {
		if !utf8.ValidString(d.Source) {
			return fmt.Errorf("%w: document %q source", ErrInvalidUTF8, d.ID)
		}
		if v, ok := d.Metadata[sourceKey]; ok && v != d.Source {
			return fmt.Errorf("%w: document %q has Source %q and metadata source %v", ErrInvalidMetadata, d.ID, d.Source, v)
		}
		md := make(map[string]any, len(d.Metadata)+1)
		for k, v := range d.Metadata {
			md[k] = v
		}
		md[sourceKey] = d.Source
		d.Metadata = md
	}
	if d.Title == "" && d.Text == "" {
		return fmt.Errorf("%w: document %q", ErrEmptyText, d.ID)
	}
	if !utf8.ValidString(d.Title) || !utf8.ValidString(d.Text) {
		return fmt.Errorf("%w: document %q title or text", ErrInvalidUTF8, d.ID)
	}
	size := len(d.Title) + len(d.Text)
	if len(d.Metadata) > 0 {
		md := make(map[string]any, len(d.Metadata))
		for k, v := range d.Metadata {
			if k == "" {
				return fmt.Errorf("%w: document %q has an empty metadata key", ErrInvalidMetadata, d.ID)
			}
			if !utf8.ValidString(k) {
				return fmt.Errorf("%w: document %q metadata key %q", ErrInvalidUTF8, d.ID, k)
			}
			s, ok := scalar(v)
			if !ok {
				return fmt.Errorf("%w: document %q key %q: %T is not a string, number or bool", ErrInvalidMetadata, d.ID, k, v)
			}
			if f, isNum := s.(float64); isNum && math.IsInf(f, 0) {
				return fmt.Errorf("%w: document %q key %q is infinite", ErrInvalidMetadata, d.ID, k)
			}
			if str, isStr := s.(string); isStr {
				if !utf8.ValidString(str) {
					return fmt.Errorf("%w: document %q metadata %q", ErrInvalidUTF8, d.ID, k)
				}
				size += len(str)
			}
			size += len(k) + 8
			md[k] = s
		}
		d.Metadata = md
	}
	if size > m.opts.MaxDocumentBytes {
		return fmt.Errorf("%w: document %q has %d bytes (max %d; split it, e.g. with package chunker)",
			ErrTooLarge, d.ID, size, m.opts.MaxDocumentBytes)
	}
	if d.Embedding != nil {
		e := m.opts.Embedder
		if e == nil {
			return fmt.Errorf("%w: document %q has an embedding but the store has no embedder to embed queries", ErrNoEmbedder, d.ID)
		}
		if err := checkVec(d.Embedding, e.Dim()); err != nil {
			return fmt.Errorf("document %q: %w", d.ID, err)
		}
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
	m := c.m
	if err := m.writable(); err != nil {
		return err
	}
	if len(in) == 0 {
		return nil
	}
	if m.closed.Load() {
		return ErrClosed
	}
	if err := validCollectionName(c.name); err != nil {
		return err
	}
	w, err := m.newWrite(in) // validated and chunked before taking the writer lock
	if err != nil {
		return err
	}
	m.wmu.Lock()
	defer m.wmu.Unlock()
	s, err := c.state(true)
	if err != nil {
		return err
	}
	if err := m.ensureOpen(s); err != nil {
		return err
	}
	// Read under the writer lock, so the stored versions cannot change before the write.
	if err := w.readStored(m, c.name, upsert); err != nil {
		return err
	}
	if err := w.embed(ctx, m); err != nil { // outside any lock that readers need
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := w.store(m, c.name); err != nil {
		return fmt.Errorf("memory: write: %w", err)
	}

	// The write is durable; now the in-memory view and the indexes.
	unlock, err := m.lockOpen(s)
	if err != nil {
		return fmt.Errorf("memory: documents stored, but their collection's indexes cannot be opened: %w", err)
	}
	defer unlock()
	puts, dels := w.unitDocs()
	s.ndocs, s.units = w.ndocs, w.nunits
	s.lastSeq = w.seq
	s.changes += w.nChanges
	errs := []error{m.applyDerived(ctx, s, puts, dels, w.seq)}
	errs = append(errs, m.maybeTrim(s))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("memory: documents stored, but an index update failed (it is rebuilt on reopen): %w", err)
	}
	return nil
}

// docWrite is one Add or Upsert on its way to the store of record and the indexes.
type docWrite struct {
	docs  []Document
	recs  []*record     // the stored form of each document (chunked)
	units [][]string    // each document's index ids
	stale [][]string    // the index ids of each document's stored version that it drops
	vecs  [][][]float32 // one vector per index id (nil without an embedder)

	nUnits, oldUnits, added int
	// Set by store: the last sequence number, the change log entries written and the
	// collection's counters after the write.
	seq                     uint64
	nChanges, ndocs, nunits int
}

// newWrite validates docs (copied: metadata is normalised) and chunks them.
func (m *Memory) newWrite(in []Document) (*docWrite, error) {
	docs := make([]Document, len(in))
	copy(docs, in)
	seen := make(map[string]bool, len(docs))
	for i := range docs {
		if err := m.validate(&docs[i]); err != nil {
			return nil, err
		}
		if seen[docs[i].ID] {
			return nil, fmt.Errorf("%w: %q appears twice in one call", ErrDuplicateID, docs[i].ID)
		}
		seen[docs[i].ID] = true
	}
	if m.opts.Embedder == nil && m.man.Embedder != nil {
		return nil, m.embedderNeeded("write")
	}
	w := &docWrite{docs: docs, recs: make([]*record, len(docs)), units: make([][]string, len(docs)), stale: make([][]string, len(docs))}
	for i, d := range docs {
		w.recs[i] = &record{Title: d.Title, Text: d.Text, Metadata: d.Metadata, Chunks: m.chunkDoc(&docs[i])}
		w.units[i] = w.recs[i].unitIDs(d.ID)
		w.nUnits += len(w.units[i])
	}
	return w, nil
}

// readStored reads the stored versions of the documents: without upsert one is
// ErrDuplicateID; with it, the index ids each document drops (those of its stored version
// that it does not reuse: a document that shrinks drops its last chunks) are noted.
func (w *docWrite) readStored(m *Memory, col string, upsert bool) error {
	return m.view(func(tx *bolt.Tx) error {
		db := docsBucket(tx, col)
		for i, d := range w.docs {
			var v []byte
			if db != nil {
				v = db.Get([]byte(d.ID))
			}
			if v == nil {
				w.added++
				continue
			}
			if !upsert {
				return fmt.Errorf("%w: %q is already stored in collection %q (use Upsert to replace)", ErrDuplicateID, d.ID, col)
			}
			old, err := decodeRecord(d.ID, v)
			if err != nil {
				return err
			}
			w.oldUnits += max(1, len(old.Chunks))
			keep := make(map[string]bool, len(w.units[i]))
			for _, u := range w.units[i] {
				keep[u] = true
			}
			for _, u := range old.unitIDs(d.ID) {
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
			texts = append(texts, w.recs[i].unitEmbedText(unitIndex(w.recs[i], u)))
			where = append(where, at{i, u})
		}
	}
	if len(texts) == 0 {
		return nil
	}
	out, err := m.embed(ctx, texts)
	if err != nil {
		return err
	}
	for n, a := range where {
		w.vecs[a.doc][a.unit] = out[n]
	}
	return nil
}

// store writes the records, vectors and change log entries in one transaction.
func (w *docWrite) store(m *Memory, col string) error {
	return m.update(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, col, true)
		if err != nil {
			return err
		}
		db, vb, cb := b.Bucket(bkDocs), b.Bucket(bkVecs), b.Bucket(bkChanges)
		change := func(op byte, uid string) error {
			var err error
			if w.seq, err = nextSeq(tx); err != nil {
				return err
			}
			w.nChanges++
			return cb.Put(u64b(w.seq), append([]byte{op}, uid...))
		}
		for i, d := range w.docs {
			enc, err := encodeRecord(w.recs[i])
			if err != nil {
				return err
			}
			if err := db.Put([]byte(d.ID), enc); err != nil {
				return err
			}
			for _, u := range w.stale[i] {
				if err := vb.Delete([]byte(u)); err != nil {
					return err
				}
				if err := change(opDel, u); err != nil {
					return err
				}
			}
			for n, u := range w.units[i] {
				if w.vecs != nil {
					if err := vb.Put([]byte(u), encodeVec(w.vecs[i][n])); err != nil {
						return err
					}
				}
				if err := change(opPut, u); err != nil {
					return err
				}
			}
		}
		w.ndocs, w.nunits, err = addCounts(b, w.added, w.nUnits-w.oldUnits)
		return err
	})
}

// unitDocs are the write's puts and deletes for the derived indexes.
func (w *docWrite) unitDocs() (puts []unitDoc, dels []string) {
	puts = make([]unitDoc, 0, w.nUnits)
	for i := range w.docs {
		dels = append(dels, w.stale[i]...)
		for n, u := range w.units[i] {
			p := unitDoc{uid: u, r: w.recs[i], idx: unitIndex(w.recs[i], n)}
			if w.vecs != nil {
				p.vec = w.vecs[i][n]
			}
			puts = append(puts, p)
		}
	}
	return puts, dels
}

// unitIndex is the chunk index of a record's u-th index id (-1 for an unchunked record).
func unitIndex(r *record, u int) int {
	if len(r.Chunks) == 0 {
		return -1
	}
	return u
}

// maybeTrim drops the oldest half of a change log that grew past maxChanges.
func (m *Memory) maybeTrim(s *colState) error {
	if s.changes <= maxChanges {
		return nil
	}
	return m.update(func(tx *bolt.Tx) error {
		b, _ := colBucket(tx, s.name, false)
		cb := b.Bucket(bkChanges)
		cur := cb.Cursor()
		var last []byte
		n := 0
		for k, _ := cur.First(); k != nil && n < s.changes/2; k, _ = cur.Next() {
			last = bytes.Clone(k)
			if err := cur.Delete(); err != nil {
				return err
			}
			n++
		}
		s.changes -= n
		if last == nil {
			return nil
		}
		s.trimmed = u64(last)
		return b.Bucket(bkInfo).Put(keyTrim, last)
	})
}

// Delete removes documents (with all their chunks); unknown ids are ignored.
func (c *Collection) Delete(ctx context.Context, ids ...string) error {
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
	if err := m.view(func(tx *bolt.Tx) error {
		db := docsBucket(tx, c.name)
		if db == nil {
			return nil
		}
		seen := make(map[string]bool, len(ids))
		for _, id := range ids {
			if !seen[id] && db.Get([]byte(id)) != nil {
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
	if err := m.ensureOpen(s); err != nil {
		return err
	}
	var units []string
	var seq uint64
	ndocs, nunits := 0, 0
	if err := m.update(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, c.name, false)
		if err != nil {
			return err
		}
		if b == nil {
			return fmt.Errorf("%w: %q", ErrCollectionNotFound, c.name)
		}
		db := b.Bucket(bkDocs)
		gone := 0
		for _, id := range ids {
			r, err := getRecord(db, id)
			if err != nil {
				return err
			}
			if r == nil {
				continue
			}
			gone++
			units = append(units, r.unitIDs(id)...)
			if err := db.Delete([]byte(id)); err != nil {
				return err
			}
		}
		if ndocs, nunits, err = addCounts(b, -gone, -len(units)); err != nil {
			return err
		}
		for _, u := range units {
			if err := b.Bucket(bkVecs).Delete([]byte(u)); err != nil {
				return err
			}
			if seq, err = nextSeq(tx); err != nil {
				return err
			}
			if err := b.Bucket(bkChanges).Put(u64b(seq), append([]byte{opDel}, u...)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("memory: delete: %w", err)
	}
	unlock, err := m.lockOpen(s)
	if err != nil {
		return fmt.Errorf("memory: documents deleted, but their collection's indexes cannot be opened: %w", err)
	}
	defer unlock()
	s.ndocs, s.units = ndocs, nunits
	if len(units) == 0 {
		return nil
	}
	s.lastSeq = seq
	s.changes += len(units)
	errs := []error{m.applyDerived(ctx, s, nil, units, seq), m.maybeTrim(s)}
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
	m := c.m
	if err := m.writable(); err != nil {
		return 0, err
	}
	if len(where) == 0 {
		return 0, fmt.Errorf("%w: DeleteWhere needs a filter (DeleteCollection empties a collection)", ErrInvalidFilter)
	}
	pred, err := compileWhere(where)
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
	var gone []string
	if err := m.forEachMeta(c.name, func(id string, r *record) { // a Where reads metadata only
		if pred(r) {
			gone = append(gone, id)
		}
	}); err != nil {
		return 0, err
	}
	if err := c.deleteDocs(ctx, s, gone); err != nil {
		return 0, err
	}
	return len(gone), nil
}

// DeleteWhere removes the documents of the default collection that match where; see
// [Collection.DeleteWhere].
func (m *Memory) DeleteWhere(ctx context.Context, where Where) (int, error) {
	return m.Collection("").DeleteWhere(ctx, where)
}

// Sources lists the distinct Source values of the collection's documents, sorted (a
// document without one is not listed). With DeleteWhere it syncs a collection with a
// folder: delete the sources that are no longer there.
func (c *Collection) Sources(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s, err := c.existing()
	if err != nil || s == nil {
		return nil, err
	}
	set := map[string]bool{}
	if err := c.m.forEachMeta(c.name, func(_ string, r *record) {
		if src := r.source(); src != "" {
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
func (m *Memory) forEachRecord(col string, fn func(id string, r *record)) error {
	return m.view(func(tx *bolt.Tx) error { return eachRecord(docsBucket(tx, col), decodeRecord, fn) })
}

// forEachMeta is forEachRecord for metadata filters: the records passed to fn have their
// metadata and chunks, but not always their title and text (see decodeMeta).
func (m *Memory) forEachMeta(col string, fn func(id string, r *record)) error {
	return m.view(func(tx *bolt.Tx) error { return eachRecord(docsBucket(tx, col), decodeMeta, fn) })
}

// eachRecord calls fn with every document of a docs bucket (nil: none), in id order,
// decoded by decode.
func eachRecord(docs *bolt.Bucket, decode func(id string, v []byte) (*record, error), fn func(id string, r *record)) error {
	if docs == nil {
		return nil
	}
	cur := docs.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		id := string(k)
		r, err := decode(id, v)
		if err != nil {
			return err
		}
		fn(id, r)
	}
	return nil
}

// existing returns the loaded collection; ErrCollectionNotFound when a named collection
// does not exist, (nil, nil) for the default collection before its first write.
func (c *Collection) existing() (*colState, error) {
	s, err := c.state(false)
	if err != nil {
		return nil, err
	}
	if s == nil && c.name != DefaultCollection {
		return nil, fmt.Errorf("%w: %q", ErrCollectionNotFound, c.name)
	}
	return s, nil
}

// Get returns the whole document with id (not a chunk), or ErrNotFound (which, in a named
// collection that does not exist, also matches ErrCollectionNotFound). Its Embedding is
// filled when one vector is stored for it (a chunked document has one per chunk: nil).
func (c *Collection) Get(ctx context.Context, id string) (Document, error) {
	s, err := c.state(false)
	if err != nil {
		return Document{}, err
	}
	if s == nil && c.name != DefaultCollection {
		return Document{}, fmt.Errorf("%w: %q: %w: %q", ErrNotFound, id, ErrCollectionNotFound, c.name)
	}
	if s != nil {
		var r *record
		var vec []float32
		if err := guard("get", func() error {
			return c.m.view(func(tx *bolt.Tx) error {
				b, err := colBucket(tx, c.name, false)
				if err != nil || b == nil {
					return err
				}
				if r, err = getRecord(b.Bucket(bkDocs), id); err != nil || r == nil || len(r.Chunks) > 0 {
					return err
				}
				if raw := b.Bucket(bkVecs).Get([]byte(id)); raw != nil {
					vec, err = decodeVec(raw)
				}
				return err
			})
		}); err != nil {
			return Document{}, err
		}
		if r != nil {
			return Document{ID: id, Title: r.Title, Text: r.Text, Metadata: r.Metadata, Source: r.source(), Embedding: vec}, nil
		}
	}
	return Document{}, fmt.Errorf("%w: %q in collection %q", ErrNotFound, id, c.name)
}

// vector reads a stored vector (nil when none).
func (m *Memory) vector(col, id string) ([]float32, error) {
	var v []float32
	err := m.view(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, col, false)
		if err != nil || b == nil {
			return err
		}
		if raw := b.Bucket(bkVecs).Get([]byte(id)); raw != nil {
			v, err = decodeVec(raw)
		}
		return err
	})
	return v, err
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

// Count is the number of documents in the collection.
func (c *Collection) Count() int {
	s, err := c.state(false)
	if err != nil || s == nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ndocs
}

// IDs lists the collection's document ids, sorted.
func (c *Collection) IDs() []string {
	s, err := c.state(false)
	if err != nil || s == nil {
		return nil
	}
	var ids []string
	if err := c.m.view(func(tx *bolt.Tx) error {
		db := docsBucket(tx, c.name)
		if db == nil {
			return nil
		}
		cur := db.Cursor()
		for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
			ids = append(ids, string(k))
		}
		return nil
	}); err != nil {
		c.m.log.Error("memory: listing ids", "collection", c.name, "err", err)
		return nil
	}
	if ids == nil {
		ids = []string{}
	}
	return ids
}
