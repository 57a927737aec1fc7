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
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/sop"
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

	wmu    sync.Mutex     // one writer at a time
	gq     groupQueue     // Adds and Upserts waiting for wmu, committed together (groupcommit.go)
	reg    registry       // the collections used since open (lifecycle.go)
	dx     derivedIndexes // the files of the collections' derived indexes (derived.go)
	em     embedding      // embedding documents and queries (embedder.go)
	wr     docWrites      // validating and chunking documents into writes (collection.go)
	rs     readService    // reads across processes (remote.go, remotestream.go)
	closed atomic.Bool
	sopMu  sync.Mutex
	sops   *sop.Library // loaded on first SOPs call

	resolveErr error // why the recorded embedder could not be resolved (nil: not tried or none)
	// indexChanged: WithIndexRebuild replaces the recorded dense index configuration, so
	// the persisted vector indexes (of the old one) are not used.
	indexChanged bool

	remote *remoteClient // a read-only store that reads through its writer (remote.go)
	srv    *readServer   // a writer's answers to other processes' reads

	cluster *clusterStore // a store on a Weaviate cluster (cluster.go)
}

// baseOptions applies opts to the zero Options and fills the defaults every store shares
// (embedded or on a cluster): the logger, document and embedding batch caps, BM25's k1
// and b, checked.
func baseOptions(opts []Option) (Options, error) {
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
		return o, fmt.Errorf("%w: BM25 k1=%v b=%v (want k1 > 0, 0 <= b <= 1)", ErrInvalidOption, o.BM25K1, o.BM25B)
	}
	return o, nil
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
	if isClusterAddress(dir) {
		return openCluster(dir, opts...)
	}
	o, err := baseOptions(opts)
	if err != nil {
		return nil, err
	}
	if o.BM25Scoring != "" && o.BM25Scoring != ScoringClassic && o.BM25Scoring != ScoringLucene {
		return nil, fmt.Errorf("%w: BM25 scoring %q (want %q, %q, or empty: by analyzer)", ErrInvalidOption, o.BM25Scoring, ScoringClassic, ScoringLucene)
	}
	if o.MaxQueryTerms < 0 || o.MaxQueryBytes < 0 || o.QueryWorkers < 0 {
		return nil, fmt.Errorf("%w: negative query cap (terms %d, bytes %d, workers %d)", ErrInvalidOption, o.MaxQueryTerms, o.MaxQueryBytes, o.QueryWorkers)
	}

	m := &Memory{dir: dir, opts: o, log: o.Logger}
	m.reg.m, m.reg.cols = m, map[string]*colState{}
	m.dx.m, m.em.m, m.wr.m, m.rs.m = m, m, m, m
	if dir == "" {
		d, err := os.MkdirTemp("", "memory-*")
		if err != nil {
			return nil, err
		}
		m.dir, m.tempDir = d, true
		m.opts.NoSync = true
	}
	op := opening{m}
	if err := op.open(); err != nil {
		if m.db != nil {
			m.db.Close()
		}
		if m.remote != nil {
			m.remote.close()
		}
		for _, c := range m.reg.cols {
			c.close()
		}
		if m.tempDir {
			os.RemoveAll(m.dir)
		}
		return nil, err
	}
	if !m.opts.ReadOnly {
		m.rs.serveReads()
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
func (op opening) open() error {
	return store.Guard("opening "+op.m.dir, op.openStore)
}

func (op opening) openStore() error {
	m := op.m
	dbPath := filepath.Join(m.dir, dbName)
	if m.opts.ReadOnly {
		if err := op.checkReadOnlyDir(); err != nil {
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
	creating, err := op.needsCreation(man, others, dbPath)
	if err != nil {
		return err
	}
	if creating && !m.tempDir {
		if _, err := os.Lstat(dbPath); errors.Is(err, fs.ErrNotExist) {
			if err := op.makeDB(dbPath); err != nil {
				return err
			}
		}
	}
	if err := op.openDB(dbPath); err != nil {
		return err
	}
	if m.remote != nil { // the writer answers: its indexes, its embedder
		m.man = man
		return op.checkRemoteEmbedder()
	}
	if creating {
		if man, temps, err = op.create(temps); err != nil {
			return err
		}
	}
	m.man = man
	if !m.opts.ReadOnly {
		if err := removeFiles(temps); err != nil {
			return err
		}
	}
	if err := op.checkPrecision(); err != nil {
		return err
	}
	if err := op.checkEmbedders(); err != nil {
		return err
	}
	if err := op.resolveIndex(); err != nil {
		return err
	}
	if err := op.checkAnalyzer(); err != nil {
		return err
	}
	// Collections are loaded when first used (lifecycle.go).
	if !m.opts.ReadOnly {
		return op.removeOrphanIndexes()
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
func (op opening) needsCreation(man *manifest, others []string, dbPath string) (creating bool, err error) {
	m := op.m
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
					return op.recoverCreation(dbPath)
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
func (op opening) openDB(dbPath string) error {
	m := op.m
	if m.opts.ReadOnly {
		return op.openReadOnlyDB(dbPath)
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
func (op opening) create(temps []string) (*manifest, []string, error) {
	m := op.m
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

// Dir is the store's directory.
func (m *Memory) Dir() string { return m.dir }

// Collection names become directory names: each derived index of a collection lives in
// <store>/<kind>/<the name, url.PathEscape'd>, and file systems allow at most nameMax bytes
// per name (NAME_MAX). A new collection's escaped name must leave colDirReserve bytes of
// it for a suffix a kind or a temporary directory may append.
const (
	nameMax       = 255
	colDirReserve = 16
	// maxCollectionDirName is the most bytes a new collection's name may take once escaped
	// for its index directories (url.PathEscape: a byte other than an ASCII letter, digit
	// or one of -._~ and a few others takes 3).
	maxCollectionDirName = nameMax - colDirReserve
)

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

// Count is the number of documents in the default collection, or why it cannot be read;
// see [Collection.Count].
func (m *Memory) Count(ctx context.Context) (int, error) { return m.Collection("").Count(ctx) }

// Search searches the default collection (or those named by InCollections).
func (m *Memory) Search(ctx context.Context, query string, opts ...SearchOption) ([]Result, error) {
	return m.Collection("").Search(ctx, query, opts...)
}

// closeCollection closes the indexes of c when the store closes.
func (rg *registry) closeCollection(c *colState) error {
	m := rg.m
	c.mu.Lock()
	defer c.mu.Unlock()
	open := c.Indexes != nil && !c.Closed(nil)
	if err := c.close(); err != nil || !open || m.tempDir || m.opts.ReadOnly {
		return err
	}
	// Every derived index was caught up and is now persisted up to c.LastSeq: the change
	// log is no longer needed. (A collection whose indexes were not all opened keeps its
	// log: those not opened may lag behind it.)
	return m.db.Trim(&c.Collection)
}

// Close persists the derived indexes and closes the store. A temporary store is removed.
func (m *Memory) Close() error {
	if m.closed.Swap(true) || m.cluster != nil {
		return nil
	}
	if m.remote != nil {
		return m.remote.close()
	}
	serr := m.rs.stopServing() // before the writer lock: the requests under way may take it
	m.wmu.Lock()
	defer m.wmu.Unlock()
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	errs := []error{serr}
	for _, c := range m.reg.cols {
		errs = append(errs, m.reg.closeCollection(c))
	}
	errs = append(errs, m.db.Close())
	if m.tempDir {
		errs = append(errs, os.RemoveAll(m.dir))
	}
	return errors.Join(errs...)
}

// opening opens, creates or recovers the store m: the work of Open before the store
// serves its first call (the manifest, the store of record, the recorded embedder, index
// configuration and analyzer, the collections' leftover files).
type opening struct{ m *Memory }
