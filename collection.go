package memory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agentmem/memory/hybrid"
	"github.com/agentmem/memory/vectorstore"
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

	mu      sync.RWMutex // docs and the indexes: searches read-lock, writes lock
	docs    map[string]*record
	bm25    *hybrid.BM25Index
	vec     vectorstore.Index // nil without an embedder
	lastSeq uint64            // sequence number of the collection's last change
	changes int               // entries in its change log
	units   int               // index ids (chunks) of all documents
}

// maxChanges bounds the change log kept for index catch-up; past it the oldest half is
// dropped and an index that lags further is rebuilt from the documents on open.
const maxChanges = 200_000

func (c *colState) close() error {
	var errs []error
	if c.bm25 != nil {
		errs = append(errs, c.bm25.Close())
		c.bm25 = nil
	}
	if c.vec != nil {
		if d, ok := c.vec.(vectorstore.Durable); ok {
			errs = append(errs, d.Commit(c.lastSeq))
		}
		errs = append(errs, c.vec.Close())
		c.vec = nil
	}
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
	m.cmu.RLock()
	s := m.cols[c.name]
	m.cmu.RUnlock()
	if s != nil || !create {
		return s, nil
	}
	m.cmu.Lock()
	defer m.cmu.Unlock()
	if s := m.cols[c.name]; s != nil {
		return s, nil
	}
	if err := m.db.Update(func(tx *bolt.Tx) error {
		_, err := colBucket(tx, c.name, true)
		return err
	}); err != nil {
		return nil, err
	}
	// Indexes left by a deleted collection of that name must not be caught up.
	if err := errors.Join(os.RemoveAll(m.colPath(bm25Dir, c.name)), os.RemoveAll(m.colPath(vecDir, c.name))); err != nil {
		return nil, err
	}
	s, err := m.loadCollection(c.name)
	if err != nil {
		return nil, err
	}
	m.cols[c.name] = s
	return s, nil
}

// loadCollection reads a collection's documents and opens its indexes, replaying the
// changes they miss (or rebuilding them when the change log no longer reaches back).
func (m *Memory) loadCollection(name string) (*colState, error) {
	s := &colState{name: name, docs: map[string]*record{}}
	var trimmed uint64
	err := m.db.View(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, name, false)
		if err != nil || b == nil {
			return err
		}
		trimmed = u64(b.Bucket(bkInfo).Get(keyTrim))
		s.lastSeq = trimmed
		if err := b.Bucket(bkDocs).ForEach(func(k, v []byte) error {
			r, err := decodeRecord(string(k), v)
			if err != nil {
				return err
			}
			s.docs[string(k)] = r
			s.units += max(1, len(r.Chunks))
			return nil
		}); err != nil {
			return err
		}
		return b.Bucket(bkChanges).ForEach(func(k, _ []byte) error {
			s.changes++
			s.lastSeq = max(s.lastSeq, u64(k))
			return nil
		})
	})
	if err != nil {
		return nil, err
	}

	// BM25.
	path := m.colPath(bm25Dir, name)
	// A temporary store keeps its BM25 index in its temporary directory too, not in
	// memory: scorch merges only persisted segments, so an in-memory index keeps one
	// segment per batch (1,000 segments after 1M documents added 1,000 at a time), and
	// every query pays per segment.
	s.bm25, err = hybrid.OpenBM25With(path, m.bm25Options())
	if err != nil && path != "" {
		m.log.Warn("memory: BM25 index unreadable, rebuilding", "collection", name, "err", err)
		os.RemoveAll(path)
		s.bm25, err = hybrid.OpenBM25With(path, m.bm25Options())
	}
	if err != nil {
		return nil, err
	}
	if err := m.catchUp(s, s.bm25.Seq(), trimmed, func(puts []string, dels []string, seq uint64) error {
		docs := make([]hybrid.BM25Doc, len(puts))
		for i, uid := range puts {
			docs[i] = s.bm25Unit(uid)
		}
		return s.bm25.Apply(docs, dels, seq)
	}, func() error {
		s.bm25.Close()
		os.RemoveAll(path)
		var err error
		s.bm25, err = hybrid.OpenBM25With(path, m.bm25Options())
		return err
	}); err != nil {
		s.close()
		return nil, err
	}

	// Vectors.
	if e := m.opts.Embedder; e != nil {
		cfg := m.opts.Index
		cfg.Dim = e.Dim()
		if !m.tempDir {
			cfg.Dir = m.colPath(vecDir, name)
		}
		if s.vec, err = vectorstore.NewIndex(cfg); err != nil {
			s.close()
			return nil, err
		}
		var from uint64
		if d, ok := s.vec.(vectorstore.Durable); ok {
			from = d.Seq()
		}
		apply := func(puts, dels []string, _ uint64) error {
			if err := s.vec.Delete(context.Background(), dels...); err != nil {
				return err
			}
			return m.loadVectors(s, puts)
		}
		if err := m.catchUp(s, from, trimmed, apply, func() error {
			s.vec.Close()
			os.RemoveAll(cfg.Dir)
			var err error
			s.vec, err = vectorstore.NewIndex(cfg)
			return err
		}); err != nil {
			s.close()
			return nil, err
		}
	}
	return s, nil
}

// catchUp brings an index that reflects sequence number from up to s.lastSeq: it replays
// the change log when it reaches back far enough, else it resets the index and loads every
// document. puts and dels are index ids (see unitID): a touched id that is live now is put
// again, one that is not is deleted.
func (m *Memory) catchUp(s *colState, from, trimmed uint64, apply func(puts, dels []string, seq uint64) error, reset func() error) error {
	if from >= s.lastSeq {
		return nil
	}
	var puts, dels []string
	if from < trimmed || from == 0 {
		if from > 0 {
			m.log.Warn("memory: index lags behind the change log, rebuilding", "collection", s.name)
		}
		if err := reset(); err != nil {
			return err
		}
		for id, r := range s.docs {
			puts = append(puts, r.unitIDs(id)...)
		}
		sort.Strings(puts)
	} else {
		touched := map[string]bool{}
		if err := m.db.View(func(tx *bolt.Tx) error {
			b, _ := colBucket(tx, s.name, false)
			cur := b.Bucket(bkChanges).Cursor()
			for k, v := cur.Seek(u64b(from + 1)); k != nil; k, v = cur.Next() {
				if len(v) > 1 {
					touched[string(v[1:])] = true
				}
			}
			return nil
		}); err != nil {
			return err
		}
		for id := range touched {
			if _, _, _, ok := s.unit(id); ok {
				puts = append(puts, id)
			} else {
				dels = append(dels, id)
			}
		}
		sort.Strings(puts)
		sort.Strings(dels)
	}
	const batch = 1000
	for i := 0; i < len(puts) || i == 0; i += batch {
		j := min(i+batch, len(puts))
		var d []string
		if i == 0 {
			d = dels
		}
		if err := apply(puts[i:j], d, s.lastSeq); err != nil {
			return err
		}
		if j >= len(puts) {
			break
		}
	}
	return nil
}

// loadVectors adds the stored vectors of ids to the collection's vector index.
func (m *Memory) loadVectors(s *colState, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	var vids []string
	var vecs [][]float32
	if err := m.db.View(func(tx *bolt.Tx) error {
		b, _ := colBucket(tx, s.name, false)
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
			vids = append(vids, id)
			vecs = append(vecs, v)
		}
		return nil
	}); err != nil {
		return err
	}
	if len(vids) == 0 {
		return nil
	}
	return s.vec.Add(context.Background(), vids, vecs)
}

// trimChanges drops the change log of a collection whose indexes are all persisted.
func (m *Memory) trimChanges(s *colState) error {
	if s.changes == 0 {
		return nil
	}
	return m.db.Update(func(tx *bolt.Tx) error {
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

func checkVec(v []float32, dim int) error {
	if len(v) != dim {
		return fmt.Errorf("%w: length %d, want %d", ErrBadVector, len(v), dim)
	}
	for _, f := range v {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return fmt.Errorf("%w: NaN or Inf component", ErrBadVector)
		}
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
	if len(in) == 0 {
		return nil
	}
	if m.closed.Load() {
		return ErrClosed
	}
	if err := validCollectionName(c.name); err != nil {
		return err
	}
	docs := make([]Document, len(in))
	copy(docs, in)
	seen := make(map[string]bool, len(docs))
	for i := range docs {
		if err := m.validate(&docs[i]); err != nil {
			return err
		}
		if seen[docs[i].ID] {
			return fmt.Errorf("%w: %q appears twice in one call", ErrDuplicateID, docs[i].ID)
		}
		seen[docs[i].ID] = true
	}
	if m.opts.Embedder == nil && m.man.Embedder != nil {
		return m.embedderNeeded("write")
	}

	// Chunk before taking the writer lock.
	recs := make([]*record, len(docs))
	for i, d := range docs {
		recs[i] = &record{Title: d.Title, Text: d.Text, Metadata: d.Metadata, Chunks: m.chunkDoc(&docs[i])}
	}

	m.wmu.Lock()
	defer m.wmu.Unlock()
	s, err := c.state(true)
	if err != nil {
		return err
	}
	// The index ids each document replaces: those of its stored version that it does not
	// reuse (a document that shrinks drops its last chunks).
	stale := make([][]string, len(docs))
	oldUnits := 0
	s.mu.RLock()
	for i, d := range docs {
		old := s.docs[d.ID]
		if old != nil && !upsert {
			s.mu.RUnlock()
			return fmt.Errorf("%w: %q is already stored in collection %q (use Upsert to replace)", ErrDuplicateID, d.ID, c.name)
		}
		if old == nil {
			continue
		}
		oldUnits += max(1, len(old.Chunks))
		keep := make(map[string]bool)
		for _, u := range recs[i].unitIDs(d.ID) {
			keep[u] = true
		}
		for _, u := range old.unitIDs(d.ID) {
			if !keep[u] {
				stale[i] = append(stale[i], u)
			}
		}
	}
	s.mu.RUnlock()

	// Embed outside any lock that readers need: one vector per chunk.
	units := make([][]string, len(docs))
	nUnits := 0
	for i, d := range docs {
		units[i] = recs[i].unitIDs(d.ID)
		nUnits += len(units[i])
	}
	var vecs [][][]float32
	if m.opts.Embedder != nil {
		vecs = make([][][]float32, len(docs))
		var texts []string
		type at struct{ doc, unit int }
		var where []at
		for i, d := range docs {
			vecs[i] = make([][]float32, len(units[i]))
			if d.Embedding != nil {
				vecs[i][0] = d.Embedding
				continue
			}
			for u := range units[i] {
				texts = append(texts, recs[i].unitEmbedText(unitIndex(recs[i], u)))
				where = append(where, at{i, u})
			}
		}
		if len(texts) > 0 {
			out, err := m.embed(ctx, texts)
			if err != nil {
				return err
			}
			for n, w := range where {
				vecs[w.doc][w.unit] = out[n]
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	var seq uint64
	nChanges := 0
	err = m.db.Update(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, c.name, true)
		if err != nil {
			return err
		}
		db, vb, cb := b.Bucket(bkDocs), b.Bucket(bkVecs), b.Bucket(bkChanges)
		change := func(op byte, uid string) error {
			var err error
			if seq, err = nextSeq(tx); err != nil {
				return err
			}
			nChanges++
			return cb.Put(u64b(seq), append([]byte{op}, uid...))
		}
		for i, d := range docs {
			enc, err := jsonMarshal(recs[i])
			if err != nil {
				return err
			}
			if err := db.Put([]byte(d.ID), enc); err != nil {
				return err
			}
			for _, u := range stale[i] {
				if err := vb.Delete([]byte(u)); err != nil {
					return err
				}
				if err := change(opDel, u); err != nil {
					return err
				}
			}
			for n, u := range units[i] {
				if vecs != nil {
					if err := vb.Put([]byte(u), encodeVec(vecs[i][n])); err != nil {
						return err
					}
				}
				if err := change(opPut, u); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("memory: write: %w", err)
	}

	// The write is durable; now the in-memory view and the indexes.
	s.mu.Lock()
	defer s.mu.Unlock()
	bdocs := make([]hybrid.BM25Doc, 0, nUnits)
	ids := make([]string, 0, nUnits)
	var flat [][]float32
	var dels []string
	for i, d := range docs {
		s.docs[d.ID] = recs[i]
		dels = append(dels, stale[i]...)
		for n, u := range units[i] {
			bdocs = append(bdocs, s.bm25Unit(u))
			ids = append(ids, u)
			if vecs != nil {
				flat = append(flat, vecs[i][n])
			}
		}
	}
	s.units += nUnits - oldUnits
	s.lastSeq = seq
	s.changes += nChanges
	var errs []error
	errs = append(errs, s.bm25.Apply(bdocs, dels, seq))
	if s.vec != nil {
		if len(dels) > 0 {
			errs = append(errs, s.vec.Delete(ctx, dels...))
		}
		errs = append(errs, s.vec.Add(ctx, ids, flat))
		if d, ok := s.vec.(vectorstore.Durable); ok {
			errs = append(errs, d.Commit(seq))
		}
	}
	errs = append(errs, m.maybeTrim(s))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("memory: documents stored, but an index update failed (it is rebuilt on reopen): %w", err)
	}
	return nil
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
	return m.db.Update(func(tx *bolt.Tx) error {
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
		return b.Bucket(bkInfo).Put(keyTrim, last)
	})
}

// Delete removes documents (with all their chunks); unknown ids are ignored.
func (c *Collection) Delete(ctx context.Context, ids ...string) error {
	m := c.m
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
	s.mu.RLock()
	for _, id := range ids {
		if _, ok := s.docs[id]; ok {
			gone = append(gone, id)
		}
	}
	s.mu.RUnlock()
	return c.deleteDocs(ctx, s, gone)
}

// deleteDocs removes stored documents and their chunks in one transaction; the caller holds
// the writer lock and ids are distinct and stored.
func (c *Collection) deleteDocs(ctx context.Context, s *colState, ids []string) error {
	m := c.m
	if len(ids) == 0 {
		return nil
	}
	var units []string
	s.mu.RLock()
	for _, id := range ids {
		units = append(units, s.docs[id].unitIDs(id)...)
	}
	s.mu.RUnlock()
	var seq uint64
	if err := m.db.Update(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, c.name, false)
		if err != nil {
			return err
		}
		if b == nil {
			return fmt.Errorf("%w: %q", ErrCollectionNotFound, c.name)
		}
		for _, id := range ids {
			if err := b.Bucket(bkDocs).Delete([]byte(id)); err != nil {
				return err
			}
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
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		delete(s.docs, id)
	}
	s.units -= len(units)
	s.lastSeq = seq
	s.changes += len(units)
	errs := []error{s.bm25.Apply(nil, units, seq)}
	if s.vec != nil {
		errs = append(errs, s.vec.Delete(ctx, units...))
		if d, ok := s.vec.(vectorstore.Durable); ok {
			errs = append(errs, d.Commit(seq))
		}
	}
	errs = append(errs, m.maybeTrim(s))
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
	s.mu.RLock()
	for id, r := range s.docs {
		if pred(r) {
			gone = append(gone, id)
		}
	}
	s.mu.RUnlock()
	sort.Strings(gone)
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
	s.mu.RLock()
	for _, r := range s.docs {
		if src := r.source(); src != "" {
			set[src] = true
		}
	}
	s.mu.RUnlock()
	out := make([]string, 0, len(set))
	for src := range set {
		out = append(out, src)
	}
	sort.Strings(out)
	return out, nil
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
		s.mu.RLock()
		r := s.docs[id]
		s.mu.RUnlock()
		if r != nil {
			d := Document{ID: id, Title: r.Title, Text: r.Text, Metadata: cloneMeta(r.Metadata), Source: r.source()}
			if len(r.Chunks) == 0 {
				d.Embedding, err = c.m.vector(c.name, id)
			}
			return d, err
		}
	}
	return Document{}, fmt.Errorf("%w: %q in collection %q", ErrNotFound, id, c.name)
}

// vector reads a stored vector (nil when none).
func (m *Memory) vector(col, id string) ([]float32, error) {
	var v []float32
	err := m.db.View(func(tx *bolt.Tx) error {
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
	return len(s.docs)
}

// IDs lists the collection's document ids, sorted.
func (c *Collection) IDs() []string {
	s, err := c.state(false)
	if err != nil || s == nil {
		return nil
	}
	s.mu.RLock()
	ids := make([]string, 0, len(s.docs))
	for id := range s.docs {
		ids = append(ids, id)
	}
	s.mu.RUnlock()
	sort.Strings(ids)
	return ids
}
