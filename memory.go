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
// # Chunks, sources and snippets
//
// A document longer than the chunk budget (see ChunkOptions: 1,000 non-whitespace
// characters of prose by default, fewer for an embedder with a short window) is split when
// it is added: prose by package chunker's markdown-aware text chunker (each chunk keeps its
// heading path), code (Metadata "language", or a Source whose extension names a language)
// by its tree-sitter code chunker. Each chunk is indexed and embedded on its own; the
// document stays the unit of Get, Delete, Upsert and filters, and replacing or deleting it
// replaces or deletes all its chunks in the same transaction. A search ranks chunks and
// returns the best chunk of each document (WithAllChunks: every chunk), with the chunk's
// text, byte offsets, heading path and index (Result.ChunkIndex, Start, End, Headings;
// Result.ID names the document) and a Snippet around the query terms. Document.Source
// (stored as the metadata value "source") names where a document came from:
// ReplaceSource(ctx, p, docs...) replaces its documents in one transaction,
// DeleteWhere(ctx, Where{"source": p}) removes them and Sources lists them.
//
// # Durability
//
// The store of record is one bbolt file in the store directory (package internal/store). Each Add, Upsert, Delete and Replace
// is one fsynced transaction: once it returns nil it survives a crash, and a crash in the
// middle of it leaves the store as it was before. The BM25 index (Bleve) and the vector
// index are derived from it; on open they are caught up or rebuilt, so they never disagree
// with it for long. The embedder's identity and dimension are recorded in manifest.json.
//
// # Concurrency
//
// A Memory is safe for concurrent use: any number of searches and reads run at once, and
// writes are serialised (one writer at a time). Searches see each write whole. One process
// at a time may open a store directory for writing; several may open it with ReadOnly, and
// while a writer has it they read through the writer (see ReadOnly). A writer kept out by
// another process gets ErrLocked (a *LockedError naming the holder), after waiting up to
// WithLockTimeout.
package memory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentmem/memory/hybrid"
	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/internal/vecmath"
	"github.com/agentmem/memory/sop"
	"github.com/agentmem/memory/vectorstore"
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
	db      *store.DB // the store of record
	man     *manifest
	anaMu   sync.Mutex // guards manifest changes after Open (analyzer.go)

	wmu       sync.Mutex // one writer at a time
	cmu       sync.RWMutex
	cols      map[string]*colState // collections used since open (their indexes may be closed)
	openCount atomic.Int64         // collections whose indexes are open
	closed    atomic.Bool
	sopMu     sync.Mutex
	sops      *sop.Library // loaded on first SOPs call

	resolveErr error // why the recorded embedder could not be resolved (nil: not tried or none)
	// indexChanged: WithIndexRebuild replaces the recorded dense index configuration, so
	// the persisted vector indexes (of the old one) are not used.
	indexChanged bool

	remote *remoteClient // a read-only store that reads through its writer (remote.go)
	srv    *readServer   // a writer's answers to other processes' reads
}

// EmbedderResolver loads the embedder with the given id and dimension (as recorded in a
// store's manifest). It returns an error when it does not know or cannot load it.
type EmbedderResolver func(ctx context.Context, id string, dim int) (vectorstore.Embedder, error)

// WithEmbedderResolver lets Open, when no embedder is configured, load the one the store
// was embedded with (its id and dimension are recorded in the manifest). The root package
// has no resolver of its own (it would pull in every model loader); the CLI supplies one
// that looks in its models directory and cache. When the resolver fails, the store opens
// anyway: BM25 searches work, while hybrid and dense searches and writes fail with
// ErrEmbedderNeeded, which names the model and wraps the resolver's error. A resolver that
// returns an embedder of another id or dimension makes Open fail with ErrEmbedderMismatch.
func WithEmbedderResolver(r EmbedderResolver) Option {
	return func(o *Options) { o.EmbedderResolver = r }
}

// Open opens the store in dir, creating it when dir is missing or empty. dir "" makes a
// store in a temporary directory that Close removes. [OpenExisting] never creates one.
//
// Without WithEmbedder, a store whose manifest records an embedder is opened with the one
// WithEmbedderResolver gives for it; when none resolves, hybrid and dense searches and
// writes fail with ErrEmbedderNeeded (BM25 searches work).
//
// Errors: ErrNotAStore when dir holds other files, ErrFormatVersion for a store of a newer
// format, ErrLocked (a *LockedError naming the holder) when another process has it open
// (for writing, or read-only: see [ReadOnly] and [WithLockTimeout]), ErrEmbedderMismatch when its vectors come from another embedder (see
// WithReEmbed), ErrCorrupt (naming the file) when its manifest or store.db is damaged, or
// store.db is missing, empty or truncated beside a manifest: never a silently empty store.
// Two processes creating one new store at once do not race: one creates it, the other
// gets ErrLocked (or opens the finished store once the first has closed it). A creation
// that fails (a full disk) or is killed leaves nothing that stops the next Open from
// creating the store; read-only opens of it meanwhile are ErrStoreNotFound.
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
	if !(o.BM25K1 >= 0) || math.IsInf(o.BM25K1, 0) || !(o.BM25B >= 0 && o.BM25B <= 1) {
		return nil, fmt.Errorf("%w: BM25 k1=%v b=%v (want k1 > 0, 0 <= b <= 1)", ErrInvalidOption, o.BM25K1, o.BM25B)
	}
	if o.MaxQueryTerms < 0 || o.MaxQueryBytes < 0 || o.QueryWorkers < 0 {
		return nil, fmt.Errorf("%w: negative query cap (terms %d, bytes %d, workers %d)", ErrInvalidOption, o.MaxQueryTerms, o.MaxQueryBytes, o.QueryWorkers)
	}

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
		if m.remote != nil {
			m.remote.close()
		}
		for _, c := range m.cols {
			c.close()
		}
		if m.tempDir {
			os.RemoveAll(m.dir)
		}
		return nil, err
	}
	if !m.opts.ReadOnly {
		m.serveReads()
	}
	return m, nil
}

// OpenExisting opens the store in dir like Open, but never creates one: a missing or empty
// directory, or one with nothing but a manifest, is ErrStoreNotFound, a directory holding
// other files ErrNotAStore, and a manifest whose store.db is missing, empty or truncated
// (while indexes are there) ErrCorrupt naming the file. Read-only tools use it so that a mistyped
// path fails instead of making an empty store.
func OpenExisting(dir string, opts ...Option) (*Memory, error) {
	if dir == "" {
		return nil, fmt.Errorf("%w: empty directory name", ErrStoreNotFound)
	}
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s does not exist", ErrStoreNotFound, dir)
	}
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory", ErrNotAStore, dir)
	}
	man, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	if man == nil {
		_, others, err := manifestTemps(dir)
		if err != nil {
			return nil, err
		}
		if len(others) == 1 && others[0] == dbName && unfinishedCreation(filepath.Join(dir, dbName)) {
			return nil, fmt.Errorf("%w: %s holds a store whose creation did not finish (opening it for writing finishes it)", ErrStoreNotFound, dir)
		}
		if len(others) > 0 {
			return nil, fmt.Errorf("%w: %s is not empty and has no %s", ErrNotAStore, dir, manifestName)
		}
		return nil, fmt.Errorf("%w: %s is empty", ErrStoreNotFound, dir)
	}
	if err := store.CheckFile(filepath.Join(dir, dbName)); err != nil {
		_, others, lerr := manifestTemps(dir)
		if lerr == nil && onlyManifest(others, filepath.Join(dir, dbName)) {
			return nil, fmt.Errorf("%w: %s has no %s", ErrStoreNotFound, dir, dbName)
		}
		return nil, err
	}
	return Open(dir, opts...)
}

// open opens or creates the store in m.dir. A damaged store.db can make bbolt panic, or
// fault on a page past the end of its mapping: both become ErrCorrupt (guard).
func (m *Memory) open() error {
	return store.Guard("opening "+m.dir, m.openStore)
}

func (m *Memory) openStore() error {
	dbPath := filepath.Join(m.dir, dbName)
	if m.opts.ReadOnly {
		if err := m.checkReadOnlyDir(); err != nil {
			return err
		}
	} else if err := os.MkdirAll(m.dir, 0o755); err != nil {
		return err
	}
	// A process killed inside writeManifest leaves its temp file behind. It never holds
	// the live manifest (that is only ever renamed into place), so it is removed, but only
	// after taking the lock (another process may be writing it right now) and only in a
	// directory that is ours. A foreign directory is left untouched.
	// The directory is listed before the manifest is read: a store being created gets its
	// manifest before anything but store.db, so a listing without the manifest saw at most
	// store.db of a creation in progress, however far it has got since.
	temps, others, err := manifestTemps(m.dir)
	if err != nil {
		return err
	}
	man, err := readManifest(m.dir)
	if err != nil {
		return err
	}
	creating, err := m.needsCreation(man, others, dbPath)
	if err != nil {
		return err
	}
	if creating && !m.tempDir {
		if _, err := os.Lstat(dbPath); errors.Is(err, fs.ErrNotExist) {
			if err := m.makeDB(dbPath); err != nil {
				return err
			}
		}
	}
	if err := m.openDB(dbPath); err != nil {
		return err
	}
	if m.remote != nil { // the writer answers: its indexes, its embedder
		m.man = man
		return m.checkRemoteEmbedder()
	}
	if creating {
		if man, temps, err = m.create(temps); err != nil {
			return err
		}
	}
	m.man = man
	if !m.opts.ReadOnly {
		if err := removeFiles(temps); err != nil {
			return err
		}
	}
	if err := m.checkPrecision(); err != nil {
		return err
	}
	if err := m.checkEmbedders(); err != nil {
		return err
	}
	if err := m.resolveIndex(); err != nil {
		return err
	}
	if err := m.checkAnalyzer(); err != nil {
		return err
	}
	// Collections are loaded when first used (lifecycle.go).
	if !m.opts.ReadOnly {
		return m.removeOrphanIndexes()
	}
	return nil
}

// needsCreation decides, from the manifest (nil: none) and the other files of the
// directory, whether the store must be created, or why it cannot be opened.
//
// Creation is race-free between processes: a new store's store.db is made whole (makeDB)
// and locked (bbolt's flock) before its manifest is written, so a directory holding only a
// store.db is a store being created (or whose creation was killed or failed): whoever gets
// the lock next decides, reading the manifest again under it (create). A store.db that
// bbolt's first write left partial (a full disk, in a version that made it in place) holds
// nothing and is made again (recoverCreation).
func (m *Memory) needsCreation(man *manifest, others []string, dbPath string) (creating bool, err error) {
	switch {
	case man == nil && (len(others) == 0 || len(others) == 1 && others[0] == dbName):
		if m.opts.ReadOnly {
			return false, fmt.Errorf("%w: %s has no %s (a store not created yet, or being created)", ErrStoreNotFound, m.dir, manifestName)
		}
		creating = true
		if len(others) == 1 {
			if fi, err := os.Stat(dbPath); err == nil && fi.Size() > 0 {
				if err := store.CheckFile(dbPath); err != nil {
					if lockHolder(dbPath) == "a writer" { // still being written by its creator
						return false, lockedError(m.dir, false)
					}
					return m.recoverCreation(dbPath)
				}
			}
		}
	case man == nil && slices.Contains(others, dbName):
		return false, fmt.Errorf("%w: %s has a %s but no %s (restore it from a backup)", ErrCorrupt, m.dir, dbName, filepath.Join(m.dir, manifestName))
	case man == nil:
		return false, fmt.Errorf("%w: %s is not empty and has no %s", ErrNotAStore, m.dir, manifestName)
	default:
		if err := store.CheckFile(dbPath); err != nil {
			// A store created by an older version wrote its manifest before its database:
			// a kill between the two leaves the manifest alone. Nothing was ever stored.
			if !onlyManifest(others, dbPath) {
				return false, err
			}
			if m.opts.ReadOnly {
				return false, fmt.Errorf("%w: %s has no %s", ErrStoreNotFound, m.dir, dbName)
			}
			creating = true
		}
	}
	return creating, nil
}

// openDB opens store.db, taking its lock (shared when read-only), waiting up to
// Options.LockTimeout. A read-only open kept out by a writer reads through it (m.remote).
func (m *Memory) openDB(dbPath string) error {
	if m.opts.ReadOnly {
		return m.openReadOnlyDB(dbPath)
	}
	db, err := store.Open(dbPath, store.Options{NoSync: m.opts.NoSync, Logger: m.log, Timeout: m.opts.LockTimeout})
	if errors.Is(err, store.ErrLocked) {
		return lockedError(m.dir, m.opts.ReadOnly)
	}
	if err != nil {
		return err
	}
	m.db = db
	return nil
}

// create finishes creating a store under store.db's lock: another process may have
// finished creating it meanwhile (its manifest is read again); else the leftover temp files
// go and the manifest is written. It returns the manifest and the temp files still to
// remove.
func (m *Memory) create(temps []string) (*manifest, []string, error) {
	man, err := readManifest(m.dir)
	if err != nil || man != nil {
		return man, temps, err
	}
	if !m.db.Empty() {
		return nil, nil, fmt.Errorf("%w: %s has a %s with data but no %s (restore it from a backup)", ErrCorrupt, m.dir, dbName, filepath.Join(m.dir, manifestName))
	}
	if err := removeFiles(temps); err != nil {
		return nil, nil, err
	}
	man = &manifest{Format: formatVersion, Created: time.Now().UTC()}
	if err := writeManifest(m.dir, man); err != nil {
		return nil, nil, err
	}
	return man, nil, nil
}

// checkPrecision compares the configured vector precision with the one the manifest
// records and sets store.db's. A store that has recorded no embedder yet (it holds no
// vector) takes the configured one, recorded when writable; otherwise another one is
// ErrVectorPrecision.
func (m *Memory) checkPrecision() error {
	want := m.opts.VectorPrecision
	if want != "" && want != Float32 && want != Float16 {
		return fmt.Errorf("%w: %q (want %q or %q)", ErrVectorPrecision, want, Float32, Float16)
	}
	rec := cmpOr(m.man.VectorPrecision, Float32)
	if want != "" && want != rec {
		if m.man.Embedder != nil {
			return fmt.Errorf("%w: the store keeps its vectors in %s, configured %s", ErrVectorPrecision, rec, want)
		}
		man := *m.man
		man.VectorPrecision = want
		if want == Float32 {
			man.VectorPrecision = ""
		}
		if !m.opts.ReadOnly {
			if err := writeManifest(m.dir, &man); err != nil {
				return err
			}
		}
		m.man, rec = &man, want
	}
	m.db.SetHalfVectors(rec == Float16)
	return nil
}

// halfVectors reports whether the store keeps its vectors in float16.
func (m *Memory) halfVectors() bool { return m.man.VectorPrecision == Float16 }

// roundVectors rounds vecs (one per index id) to the store's precision: with float16,
// each to new float16-rounded values (the caller's slices are not changed), so that the
// vector indexes hold what store.db holds.
func (m *Memory) roundVectors(vecs [][]float32) error {
	if !m.halfVectors() {
		return nil
	}
	for i, v := range vecs {
		if v == nil {
			continue
		}
		r, err := vecmath.RoundHalf(v)
		if err != nil {
			return fmt.Errorf("%w: this store keeps float16 vectors: %w", ErrBadVector, err)
		}
		vecs[i] = r
	}
	return nil
}

// checkEmbedders resolves the recorded embedder (WithEmbedderResolver) and checks the
// configured one against the manifest.
func (m *Memory) checkEmbedders() error {
	if err := m.resolveEmbedder(); err != nil {
		return err
	}
	if m.opts.ReadOnly {
		return m.checkEmbedderReadOnly()
	}
	return m.checkEmbedder()
}

// removeOrphanIndexes deletes the derived index directories of collections that no longer
// exist (left by a DeleteCollection interrupted after its transaction).
func (m *Memory) removeOrphanIndexes() error {
	if m.tempDir {
		return nil
	}
	names, err := m.collectionNames()
	if err != nil {
		return err
	}
	live := make(map[string]bool, len(names))
	for _, n := range names {
		live[n] = true
	}
	for _, k := range m.kinds() {
		kind := k.name
		entries, err := os.ReadDir(filepath.Join(m.dir, kind))
		if err != nil {
			continue
		}
		for _, e := range entries {
			name, err := url.PathUnescape(e.Name())
			if err != nil || live[name] {
				continue
			}
			if err := os.RemoveAll(filepath.Join(m.dir, kind, e.Name())); err != nil {
				m.log.Warn("memory: cannot remove the index of a deleted collection", "path", e.Name(), "err", err)
			}
		}
	}
	return nil
}

// resolveEmbedder loads the recorded embedder through the resolver when none is configured.
func (m *Memory) resolveEmbedder() error {
	rec, r := m.man.Embedder, m.opts.EmbedderResolver
	if m.opts.Embedder != nil || rec == nil {
		return nil
	}
	if r == nil {
		m.vectorsOnlyFallback(rec)
		return nil
	}
	e, err := r(context.Background(), rec.ID, rec.Dim)
	if err == nil && e == nil {
		err = errors.New("the resolver returned no embedder")
	}
	if err != nil {
		m.resolveErr = err
		m.log.Warn("memory: the store's embedder could not be resolved; only BM25 searches work",
			"embedder", rec.ID, "dim", rec.Dim, "err", err)
		m.vectorsOnlyFallback(rec)
		return nil
	}
	if !embedderMatches(rec, e) {
		return fmt.Errorf("%w: the resolver gave %q (dim %d) for %q (dim %d)", ErrEmbedderMismatch, e.ID(), e.Dim(), rec.ID, rec.Dim)
	}
	m.opts.Embedder = e
	return nil
}

// vectorsOnlyFallback lets a writable store whose vectors were imported (rec.Precomputed)
// take more imported vectors while the model that made them is not loaded: its embedder is
// their identity only (vectorstore.VectorsOnly), so documents that bring their vector can
// be written, while searches that embed a query fail with ErrEmbedderNeeded. A read-only
// store keeps no embedder (its dense index is not opened: nothing could query it).
func (m *Memory) vectorsOnlyFallback(rec *embInfo) {
	if rec.Precomputed && !m.opts.ReadOnly {
		m.opts.Embedder = vectorstore.NewVectorsOnly(rec.ID, rec.Dim)
	}
}

// vectorsOnly reports whether e is only the identity of vectors computed elsewhere.
func vectorsOnly(e vectorstore.Embedder) bool {
	_, ok := e.(*vectorstore.VectorsOnly)
	return ok
}

// queryModel reports whether the store has a model to embed queries with.
func (m *Memory) queryModel() bool { return m.opts.Embedder != nil && !vectorsOnly(m.opts.Embedder) }

// embedderMatches reports whether embedder e made (or can query) the vectors rec records:
// the same id and dimension or, where one side names vectors computed elsewhere
// (rec.Precomputed, a VectorsOnly e), the same dimension and model name (the id without
// the "@sha256:..." digest a loaded model adds: "e5-base-v2" names "e5-base-v2@sha256:...").
func embedderMatches(rec *embInfo, e vectorstore.Embedder) bool {
	if rec.Dim != e.Dim() {
		return false
	}
	if rec.ID == e.ID() {
		return true
	}
	return (rec.Precomputed || vectorsOnly(e)) && modelName(rec.ID) == modelName(e.ID())
}

// modelName is an embedder id without its "model2vec:" kind and "@..." digest.
func modelName(id string) string {
	id = strings.TrimPrefix(id, "model2vec:")
	if name, _, ok := strings.Cut(id, "@"); ok {
		return name
	}
	return id
}

// embedderNeeded is the error of an operation that needs the store's unresolved embedder.
func (m *Memory) embedderNeeded(op string) error {
	rec := m.man.Embedder
	why := ""
	if m.resolveErr != nil {
		why = fmt.Sprintf(" (resolving it failed: %v)", m.resolveErr)
	} else if vectorsOnly(m.opts.Embedder) {
		why = fmt.Sprintf(" (%v)", vectorstore.ErrNoModel)
	}
	return fmt.Errorf("%w: %w: %s needs embedder %q (dim %d), which made this store's vectors; open with WithEmbedder or a WithEmbedderResolver that loads it%s",
		ErrEmbedderNeeded, ErrNoEmbedder, op, rec.ID, rec.Dim, why)
}

// StoredEmbedder returns the id and dimension of the embedder recorded in the store's
// manifest (ok false when the store has none).
func (m *Memory) StoredEmbedder() (id string, dim int, ok bool) {
	if e := m.man.Embedder; e != nil {
		return e.ID, e.Dim, true
	}
	return "", 0, false
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
	if rec != nil && embedderMatches(rec, e) {
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
	m.man.Embedder = &embInfo{ID: e.ID(), Dim: e.Dim(), Precomputed: vectorsOnly(e)}
	// The vector indexes of the old embedder are useless now.
	if err := os.RemoveAll(filepath.Join(m.dir, vecDir)); err != nil {
		return err
	}
	return writeManifest(m.dir, m.man)
}

func (m *Memory) countDocs() (int, error) { return m.db.CountDocs() }

// reEmbed replaces every stored vector with one from the configured embedder.
func (m *Memory) reEmbed(ctx context.Context, total int) error {
	m.log.Info("memory: re-embedding store", "documents", total, "embedder", m.opts.Embedder.ID())
	done := 0
	names, err := m.db.CollectionNames()
	if err != nil {
		return err
	}
	for _, name := range names {
		var ids []string // index ids: one per chunk
		var texts []string
		var owner []int // the document (counted from 0 in this collection) of each id
		ndocs := 0
		if err := m.forEachRecord(name, func(id string, r *store.Record) {
			for u, uid := range r.UnitIDs(id) {
				ids = append(ids, uid)
				texts = append(texts, unitEmbedText(r, r.UnitIndex(u)))
				owner = append(owner, ndocs)
			}
			ndocs++
		}); err != nil {
			return err
		}
		for i := 0; i < len(ids); i += 256 {
			j := min(i+256, len(ids))
			vecs, err := m.embed(ctx, texts[i:j])
			if err != nil {
				return err
			}
			if err := m.roundVectors(vecs); err != nil {
				return err
			}
			if err := m.db.PutVectors(name, ids[i:j], vecs); err != nil {
				return err
			}
			// Documents whose every chunk is embedded.
			docsDone := owner[j-1] + 1
			if j < len(ids) && owner[j] == owner[j-1] {
				docsDone--
			}
			if m.opts.ReEmbedProgress != nil {
				m.opts.ReEmbedProgress(done+docsDone, total)
			}
		}
		done += ndocs
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

// Collection returns a handle on the named collection, created on its first write (reads of
// a named collection that does not exist fail with ErrCollectionNotFound; see also
// GetCollection and CreateCollection). "" is the default collection. A name must be valid UTF-8 of 1 to 200 bytes without control characters;
// operations on an invalid one fail with ErrInvalidCollection. Creating a collection also
// needs its name to take at most MaxCollectionDirName bytes once escaped for a directory
// name (url.PathEscape), which its indexes are stored under.
func (m *Memory) Collection(name string) *Collection {
	if name == "" {
		name = DefaultCollection
	}
	return &Collection{m: m, name: name}
}

// GetCollection returns the named collection ("" is the default collection) when it exists,
// else ErrCollectionNotFound. The default collection always exists (empty until written).
func (m *Memory) GetCollection(name string) (*Collection, error) {
	c := m.Collection(name)
	if _, err := c.existing(); err != nil {
		return nil, err
	}
	return c, nil
}

// CreateCollection returns the named collection, creating it (durably, empty) when it does
// not exist yet, with the metadata of WithCollectionMetadata in the same transaction (an
// existing collection keeps its own; see SetCollectionMetadata) and the BM25 analyzer of
// WithCollectionAnalyzer (default: the store's, Options.Analyzer). An existing collection
// recorded with another analyzer than the one named is ErrAnalyzerMismatch; an unknown one
// ErrUnknownAnalyzer.
func (m *Memory) CreateCollection(name string, opts ...CollectionOption) (*Collection, error) {
	if err := m.writable(); err != nil {
		return nil, err
	}
	var cfg collectionConfig
	for _, o := range opts {
		o(&cfg)
	}
	var meta []byte
	if cfg.meta != nil {
		var err error
		if meta, err = encodeCollectionMeta(cfg.meta); err != nil {
			return nil, err
		}
	}
	ana := ""
	if cfg.analyzer != "" {
		var err error
		if ana, err = hybrid.CheckAnalyzer(cfg.analyzer); err != nil {
			return nil, err
		}
	}
	c := m.Collection(name)
	m.wmu.Lock()
	defer m.wmu.Unlock()
	if meta != nil {
		if err := m.createWithMeta(c.name, ana, meta); err != nil {
			return nil, err
		}
	}
	s, err := c.stateWith(true, ana)
	if err != nil {
		return nil, err
	}
	if ana != "" && s.analyzer != ana {
		return nil, fmt.Errorf("%w: collection %q has analyzer %q, asked for %q", ErrAnalyzerMismatch, c.name, s.analyzer, ana)
	}
	return c, nil
}

// lockCollection begins a change to collection name in the set of collections (a delete,
// a rename): it checks that ctx is live, the store open and not read through its writer
// (what names the change in that error), takes the writer and collection locks, which
// unlock releases, and reports whether the collection exists. The caller has checked
// m.writable() and the name.
func (m *Memory) lockCollection(ctx context.Context, name, what string) (unlock func(), exists bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if m.closed.Load() {
		return nil, false, ErrClosed
	}
	if m.remote != nil {
		return nil, false, m.errNotRemote(what)
	}
	m.wmu.Lock()
	m.cmu.Lock()
	unlock = func() {
		m.cmu.Unlock()
		m.wmu.Unlock()
	}
	if exists, err = m.collectionExists(name); err != nil {
		unlock()
		return nil, false, err
	}
	return unlock, exists, nil
}

// DeleteCollection removes a collection with all its documents and indexes, in one
// transaction. A named collection that does not exist is ErrCollectionNotFound; deleting the
// default collection empties it. Searches running on it finish first; later ones of the
// name fail with ErrCollectionNotFound until it is written again.
func (m *Memory) DeleteCollection(ctx context.Context, name string) error {
	if err := m.writable(); err != nil {
		return err
	}
	c := m.Collection(name)
	if err := validCollectionName(c.name); err != nil {
		return err
	}
	unlock, exists, err := m.lockCollection(ctx, c.name, "deleting a collection")
	if err != nil {
		return err
	}
	defer unlock()
	if !exists {
		if c.name == DefaultCollection {
			return nil
		}
		return fmt.Errorf("%w: %q", ErrCollectionNotFound, c.name)
	}
	if err := m.db.DeleteCollection(c.name); err != nil {
		return fmt.Errorf("memory: delete collection %q: %w", c.name, err)
	}
	var errs []error
	if c.name != DefaultCollection { // (emptied, the default collection keeps its analyzer)
		errs = append(errs, m.recordAnalyzer(c.name, m.man.storeAnalyzer()))
	}
	if s := m.cols[c.name]; s != nil {
		delete(m.cols, c.name)
		s.mu.Lock()
		defer s.mu.Unlock()
		errs = append(errs, m.closeIndexes(s))
		s.deleted = true
		s.Docs, s.Units = 0, 0
	}
	if colDirFits(c.name) { // else it has no index directory
		errs = append(errs, m.removeDerived(c.name))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("memory: collection %q deleted, but removing its indexes failed (retried on open): %w", c.name, err)
	}
	return nil
}

// Collections lists the collections that exist (created by CreateCollection or a write, and
// not deleted), sorted.
func (m *Memory) Collections() []string {
	if m.closed.Load() {
		return nil
	}
	if m.remote != nil {
		resp, err := m.remote.call(context.Background(), &wireReq{Op: "collections"})
		if err != nil {
			m.log.Error("memory: listing collections", "err", err)
			return []string{}
		}
		return append([]string{}, resp.Names...)
	}
	out, err := m.collectionNames()
	if err != nil {
		m.log.Error("memory: listing collections", "err", err)
	}
	if out == nil {
		out = []string{}
	}
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

// Collection names become directory names: each derived index of a collection lives in
// <store>/<kind>/<the name, url.PathEscape'd>, and file systems allow at most nameMax bytes
// per name (NAME_MAX). A new collection's escaped name must leave colDirReserve bytes of
// it for a suffix a kind or a temporary directory may append.
const (
	nameMax       = 255
	colDirReserve = 16
	// MaxCollectionDirName is the most bytes a new collection's name may take once escaped
	// for its index directories (url.PathEscape: a byte other than an ASCII letter, digit
	// or one of -._~ and a few others takes 3).
	MaxCollectionDirName = nameMax - colDirReserve
)

// creatableCollectionName checks, beyond validCollectionName, that a new collection's
// indexes can be stored under its name.
func creatableCollectionName(name string) error {
	if err := validCollectionName(name); err != nil {
		return err
	}
	if n := len(url.PathEscape(name)); n > MaxCollectionDirName {
		return fmt.Errorf("%w: %q takes %d bytes as a directory name (escaped), more than the %d allowed (file systems allow %d per name)",
			ErrInvalidCollection, name, n, MaxCollectionDirName, nameMax)
	}
	return nil
}

// colDirFits reports whether collection name's index directories can exist: false for a
// name too long once escaped (accepted by versions before the check on creation), whose
// collection can be read, listed and deleted, but not indexed.
func colDirFits(name string) bool { return len(url.PathEscape(name)) <= nameMax }

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

// Len is the number of documents in the default collection, or why it cannot be read; see
// [Collection.Len].
func (m *Memory) Len(ctx context.Context) (int, error) { return m.Collection("").Len(ctx) }

// Search searches the default collection (or those named by InCollections).
func (m *Memory) Search(ctx context.Context, query string, opts ...SearchOption) ([]Result, error) {
	return m.Collection("").Search(ctx, query, opts...)
}

// closeCollection closes the indexes of c when the store closes.
func (m *Memory) closeCollection(c *colState) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	open := c.Indexes != nil
	if err := c.close(); err != nil || !open || m.tempDir || m.opts.ReadOnly {
		return err
	}
	// Every derived index was caught up and is now persisted up to c.LastSeq: the change
	// log is no longer needed. (A collection whose indexes were not opened keeps its log:
	// they may lag behind it.)
	return m.db.Trim(&c.Collection)
}

// Close persists the derived indexes and closes the store. A temporary store is removed.
func (m *Memory) Close() error {
	if m.closed.Swap(true) {
		return nil
	}
	if m.remote != nil {
		return m.remote.close()
	}
	serr := m.stopServing() // before the writer lock: the requests under way may take it
	m.wmu.Lock()
	defer m.wmu.Unlock()
	m.cmu.Lock()
	defer m.cmu.Unlock()
	errs := []error{serr}
	for _, c := range m.cols {
		errs = append(errs, m.closeCollection(c))
	}
	errs = append(errs, m.db.Close())
	if m.tempDir {
		errs = append(errs, os.RemoveAll(m.dir))
	}
	return errors.Join(errs...)
}
