// Package memory gives AI agents long-term memory: a persistent, embedded document store
// with metadata filters and named collections, recalled by Bleve BM25 and dense vectors,
// fused with Reciprocal Rank Fusion, optionally reranked by a cross-encoder.
//
// # Basics
//
//	m, err := memory.Open("./agent-memory")          // "" keeps the store in a temp dir
//	defer m.Close()
//	err = m.Add(ctx, memory.Document{ID: "1", Title: "Go", Text: "Go is a language."})
//	res, err := m.Search(ctx, "what is go", memory.TopK(5))
//
// # Durability
//
// The store of record is one bbolt file in the store directory. Each Add, Upsert and Delete
// is one fsynced transaction: once it returns nil it survives a crash, and a crash in the
// middle of it leaves the store as it was before. The BM25 index (Bleve) and the vector
// index are derived from it; on open they are caught up or rebuilt, so they never disagree
// with it for long. The embedder's identity and dimension are recorded in manifest.json.
//
// # Concurrency
//
// A Memory is safe for concurrent use: any number of searches and reads run at once, and
// writes are serialised (one writer at a time). Searches see each write whole. One process
// at a time may open a store directory (a second Open fails with ErrLocked).
package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentmem/memory/hybrid"
	"github.com/agentmem/memory/sop"
	"github.com/agentmem/memory/vectorstore"
	bolt "go.etcd.io/bbolt"
)

// DefaultCollection is the name of the collection that Memory's own methods use.
const DefaultCollection = "default"

// Memory is an open store. Its document methods act on the default collection;
// [Memory.Collection] gives the others.
type Memory struct {
	dir     string
	tempDir bool
	opts    Options
	log     *slog.Logger
	db      *bolt.DB
	man     *manifest

	wmu    sync.Mutex // one writer at a time
	cmu    sync.RWMutex
	cols   map[string]*colState
	closed atomic.Bool
	sopMu  sync.Mutex
	sops   *sop.Library // loaded on first SOPs call
}

// Open opens the store in dir, creating it when dir is missing or empty. dir "" makes a
// store in a temporary directory that Close removes.
//
// Errors: ErrNotAStore when dir holds other files, ErrFormatVersion for a store of a newer
// format, ErrLocked when another process has it open, ErrEmbedderMismatch when its vectors
// come from another embedder (see WithReEmbed).
func Open(dir string, opts ...Option) (*Memory, error) {
	o := Options{}
	for _, fn := range opts {
		fn(&o)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxDocumentBytes <= 0 {
		o.MaxDocumentBytes = 16 << 20
	}
	if o.EmbedBatch <= 0 {
		o.EmbedBatch = 32
	}
	if o.BM25K1 == 0 && o.BM25B == 0 {
		o.BM25K1, o.BM25B = 0.9, 0.4
	}
	if o.BM25K1 < 0 || o.BM25B < 0 || o.BM25B > 1 {
		return nil, fmt.Errorf("%w: BM25 k1=%v b=%v (want k1 > 0, 0 <= b <= 1)", ErrInvalidOption, o.BM25K1, o.BM25B)
	}
	hybrid.SetBM25Params(hybrid.BM25Params{K1: o.BM25K1, B: o.BM25B})

	m := &Memory{dir: dir, opts: o, log: o.Logger, cols: map[string]*colState{}}
	if dir == "" {
		d, err := os.MkdirTemp("", "memory-*")
		if err != nil {
			return nil, err
		}
		m.dir, m.tempDir = d, true
		m.opts.NoSync = true
	}
	if err := m.open(); err != nil {
		if m.db != nil {
			m.db.Close()
		}
		for _, c := range m.cols {
			c.close()
		}
		if m.tempDir {
			os.RemoveAll(m.dir)
		}
		return nil, err
	}
	return m, nil
}

func (m *Memory) open() error {
	if err := os.MkdirAll(m.dir, 0o755); err != nil {
		return err
	}
	man, err := readManifest(m.dir)
	if err != nil {
		return err
	}
	// A process killed inside writeManifest leaves its temp file behind. It never
	// holds the live manifest (that is only ever renamed into place), so it is
	// removed, but only in a directory that is ours: one with a manifest (after
	// taking the lock, below) or one holding nothing else. A foreign directory is
	// left untouched.
	temps, others, err := manifestTemps(m.dir)
	if err != nil {
		return err
	}
	if man == nil {
		if len(others) > 0 {
			return fmt.Errorf("%w: %s is not empty and has no %s", ErrNotAStore, m.dir, manifestName)
		}
		if err := removeFiles(temps); err != nil {
			return err
		}
		temps = nil
		man = &manifest{Format: formatVersion, Created: time.Now().UTC()}
		if err := writeManifest(m.dir, man); err != nil {
			return err
		}
	}
	m.man = man
	db, err := bolt.Open(filepath.Join(m.dir, dbName), 0o644, &bolt.Options{Timeout: 200 * time.Millisecond, NoSync: m.opts.NoSync})
	if errors.Is(err, bolt.ErrTimeout) {
		return fmt.Errorf("%w: %s", ErrLocked, m.dir)
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, filepath.Join(m.dir, dbName), err)
	}
	m.db = db
	if err := removeFiles(temps); err != nil {
		return err
	}

	if err := m.checkEmbedder(); err != nil {
		return err
	}
	var names []string
	if err := db.View(func(tx *bolt.Tx) error {
		if cols := tx.Bucket(bkCols); cols != nil {
			return cols.ForEachBucket(func(k []byte) error {
				names = append(names, string(k))
				return nil
			})
		}
		return nil
	}); err != nil {
		return err
	}
	for _, n := range names {
		c, err := m.loadCollection(n)
		if err != nil {
			return err
		}
		m.cols[n] = c
	}
	return nil
}

// checkEmbedder compares the configured embedder with the one recorded in the manifest.
func (m *Memory) checkEmbedder() error {
	e := m.opts.Embedder
	if e == nil {
		return nil
	}
	if e.Dim() <= 0 {
		return fmt.Errorf("%w: embedder %q reports dimension %d", ErrInvalidOption, e.ID(), e.Dim())
	}
	rec := m.man.Embedder
	if rec != nil && rec.ID == e.ID() && rec.Dim == e.Dim() {
		return nil
	}
	n, err := m.countDocs()
	if err != nil {
		return err
	}
	if n > 0 {
		if !m.opts.ReEmbed {
			if rec == nil {
				return fmt.Errorf("%w: store has %d documents without vectors; open with WithReEmbed to embed them with %q",
					ErrEmbedderMismatch, n, e.ID())
			}
			return fmt.Errorf("%w: store was embedded with %q (dim %d), configured %q (dim %d); open with WithReEmbed to re-embed",
				ErrEmbedderMismatch, rec.ID, rec.Dim, e.ID(), e.Dim())
		}
		if err := m.reEmbed(context.Background(), n); err != nil {
			return err
		}
	}
	m.man.Embedder = &embInfo{ID: e.ID(), Dim: e.Dim()}
	// The vector indexes of the old embedder are useless now.
	if err := os.RemoveAll(filepath.Join(m.dir, vecDir)); err != nil {
		return err
	}
	return writeManifest(m.dir, m.man)
}

func (m *Memory) countDocs() (int, error) {
	n := 0
	err := m.db.View(func(tx *bolt.Tx) error {
		cols := tx.Bucket(bkCols)
		if cols == nil {
			return nil
		}
		return cols.ForEachBucket(func(k []byte) error {
			n += cols.Bucket(k).Bucket(bkDocs).Stats().KeyN
			return nil
		})
	})
	return n, err
}

// reEmbed replaces every stored vector with one from the configured embedder.
func (m *Memory) reEmbed(ctx context.Context, total int) error {
	m.log.Info("memory: re-embedding store", "documents", total, "embedder", m.opts.Embedder.ID())
	done := 0
	var names []string
	if err := m.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bkCols).ForEachBucket(func(k []byte) error {
			names = append(names, string(k))
			return nil
		})
	}); err != nil {
		return err
	}
	for _, name := range names {
		var ids []string
		var texts []string
		if err := m.db.View(func(tx *bolt.Tx) error {
			return tx.Bucket(bkCols).Bucket([]byte(name)).Bucket(bkDocs).ForEach(func(k, v []byte) error {
				r, err := decodeRecord(string(k), v)
				if err != nil {
					return err
				}
				ids = append(ids, string(k))
				texts = append(texts, embedText(r.Title, r.Text))
				return nil
			})
		}); err != nil {
			return err
		}
		for i := 0; i < len(ids); i += 256 {
			j := min(i+256, len(ids))
			vecs, err := m.embed(ctx, texts[i:j])
			if err != nil {
				return err
			}
			if err := m.db.Update(func(tx *bolt.Tx) error {
				vb := tx.Bucket(bkCols).Bucket([]byte(name)).Bucket(bkVecs)
				for n, id := range ids[i:j] {
					if err := vb.Put([]byte(id), encodeVec(vecs[n])); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				return err
			}
			done += j - i
			if m.opts.ReEmbedProgress != nil {
				m.opts.ReEmbedProgress(done, total)
			}
		}
	}
	return nil
}

// embedText is what the embedder sees of a document.
func embedText(title, text string) string {
	if title == "" {
		return text
	}
	if text == "" {
		return title
	}
	return title + "\n" + text
}

// embed runs the embedder in batches and checks its output.
func (m *Memory) embed(ctx context.Context, texts []string) ([][]float32, error) {
	e := m.opts.Embedder
	out := make([][]float32, 0, len(texts))
	for i := 0; i < len(texts); i += m.opts.EmbedBatch {
		j := min(i+m.opts.EmbedBatch, len(texts))
		vecs, err := e.Embed(ctx, texts[i:j])
		if err != nil {
			return nil, fmt.Errorf("memory: embed with %q: %w", e.ID(), err)
		}
		if len(vecs) != j-i {
			return nil, fmt.Errorf("%w: embedder %q returned %d vectors for %d texts", ErrBadVector, e.ID(), len(vecs), j-i)
		}
		for _, v := range vecs {
			if err := checkVec(v, e.Dim()); err != nil {
				return nil, fmt.Errorf("embedder %q: %w", e.ID(), err)
			}
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// Dir is the store's directory.
func (m *Memory) Dir() string { return m.dir }

// Embedder is the configured embedder (nil when none).
func (m *Memory) Embedder() vectorstore.Embedder { return m.opts.Embedder }

// Collection returns the named collection, created on its first write. "" is the default
// collection. A name must be valid UTF-8 of 1 to 200 bytes without control characters;
// operations on an invalid one fail with ErrInvalidCollection.
func (m *Memory) Collection(name string) *Collection {
	if name == "" {
		name = DefaultCollection
	}
	return &Collection{m: m, name: name}
}

// Collections lists the collections that hold or held documents, sorted.
func (m *Memory) Collections() []string {
	m.cmu.RLock()
	defer m.cmu.RUnlock()
	out := make([]string, 0, len(m.cols))
	for n := range m.cols {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func validCollectionName(name string) error {
	if len(name) == 0 || len(name) > 200 || !utf8.ValidString(name) || name == "." || name == ".." {
		return fmt.Errorf("%w: %q", ErrInvalidCollection, name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: %q has a control character", ErrInvalidCollection, name)
		}
	}
	return nil
}

// colPath is the directory of a collection's derived index of the given kind.
func (m *Memory) colPath(kind, name string) string {
	return filepath.Join(m.dir, kind, url.PathEscape(name))
}

// Add stores new documents in the default collection. See [Collection.Add].
func (m *Memory) Add(ctx context.Context, docs ...Document) error {
	return m.Collection("").Add(ctx, docs...)
}

// Upsert stores documents in the default collection, replacing those with the same ids.
func (m *Memory) Upsert(ctx context.Context, docs ...Document) error {
	return m.Collection("").Upsert(ctx, docs...)
}

// Delete removes documents from the default collection; unknown ids are ignored.
func (m *Memory) Delete(ctx context.Context, ids ...string) error {
	return m.Collection("").Delete(ctx, ids...)
}

// Get returns a document of the default collection, or ErrNotFound.
func (m *Memory) Get(ctx context.Context, id string) (Document, error) {
	return m.Collection("").Get(ctx, id)
}

// Count is the number of documents in the default collection.
func (m *Memory) Count() int { return m.Collection("").Count() }

// Search searches the default collection (or those named by InCollections).
func (m *Memory) Search(ctx context.Context, query string, opts ...SearchOption) ([]Result, error) {
	return m.Collection("").Search(ctx, query, opts...)
}

// Close persists the derived indexes and closes the store. A temporary store is removed.
func (m *Memory) Close() error {
	if m.closed.Swap(true) {
		return nil
	}
	m.wmu.Lock()
	defer m.wmu.Unlock()
	m.cmu.Lock()
	defer m.cmu.Unlock()
	var errs []error
	for _, c := range m.cols {
		c.mu.Lock()
		err := c.close()
		if err == nil && !m.tempDir {
			// Every derived index is persisted up to c.lastSeq: the change log is no longer needed.
			err = m.trimChanges(c)
		}
		c.mu.Unlock()
		errs = append(errs, err)
	}
	errs = append(errs, m.db.Close())
	if m.tempDir {
		errs = append(errs, os.RemoveAll(m.dir))
	}
	return errors.Join(errs...)
}
