// Package store is the store of record of a memory store and the seam to the indexes
// derived from it.
//
// The store of record is one bbolt file. Layout:
//
//	meta                      seq -> uint64 (last sequence number handed out)
//	col/<name>/docs           id  -> record (codec.go)
//	col/<name>/vecs           unit id -> vector (unit: the id, or id NUL i for chunk i)
//	col/<name>/changes        seq -> op byte + unit id   (replayed into indexes that lag behind)
//	col/<name>/info           trimmed -> uint64 (changes up to it were dropped)
//	                          ndocs, nunits -> uint64 (documents and index ids (chunks) stored;
//	                          updated by every write; a store made before them counts once on open)
//	                          nsum -> CRC-32C of ndocs and nunits (counters that fail it are
//	                          counted again, never carried forward)
//	                          cmeta -> the collection's metadata, CRC-framed JSON (colmeta.go;
//	                          absent: none)
//	                          srcs -> present while the sources index is complete and kept
//	col/<name>/srcs           's' source | 'n' (none) | 'x' (too long) -> document count + CRC-32C
//	                          (sources.go; derived; absent in a store made before it was kept)
//
// RenameCollection moves a collection's sub-buckets under its new name (bbolt's MoveBucket)
// in one transaction.
//
// Every write is one bbolt transaction (fsynced unless NoSync): a write that returned nil
// survives a crash, and a crash mid-write leaves the previous state. The indexes derived
// from it (derived.go) are caught up, verified and rebuilt from it.
package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

var (
	bkMeta    = []byte("meta")
	bkCols    = []byte("col")
	bkDocs    = []byte("docs")
	bkVecs    = []byte("vecs")
	bkChanges = []byte("changes")
	bkInfo    = []byte("info")
	keySeq    = []byte("seq")
	keyTrim   = []byte("trimmed")
	keyDocN   = []byte("ndocs")
	keyUnitN  = []byte("nunits")
	// keyCountSum is the CRC-32C of ndocs and nunits (counters.go).
	keyCountSum = []byte("nsum")
)

const (
	opPut byte = 'p'
	opDel byte = 'd'
)

// Options configure Open. The zero value opens a writable, fsynced store, waiting up to
// 200 ms for its lock.
type Options struct {
	// ReadOnly opens the file read-only under a shared lock: several processes may read it
	// at once, none while a writer holds it. Nothing is written (derived indexes that
	// cannot be trusted are rebuilt in memory).
	ReadOnly bool
	// NoSync skips the fsync of each write (tests, temporary stores).
	NoSync bool
	// Timeout is how long Open waits for the file's lock (0: 200 ms).
	Timeout time.Duration
	// Logger receives rebuilds and repairs (nil: slog.Default()).
	Logger *slog.Logger
	// HalfVectors stores the vectors written from now on in float16 (EncodeVectorHalf;
	// SetHalfVectors changes it on an open store): Precision PrecisionFloat16, kept for
	// callers that set it. Vectors are read in every layout.
	HalfVectors bool
	// Precision is the layout the vectors written from now on are stored in (SetPrecision
	// changes it on an open store); PrecisionFloat32 with HalfVectors is PrecisionFloat16.
	Precision Precision
}

// Precision is the layout a store writes its vectors in (Options.Precision). Every layout
// is read whatever the setting.
type Precision uint32

// The vector precisions of a store.
const (
	// PrecisionFloat32 stores 4 bytes a value (EncodeVector).
	PrecisionFloat32 Precision = iota
	// PrecisionFloat16 stores 2 bytes a value (EncodeVectorHalf).
	PrecisionFloat16
	// PrecisionInt8 stores 1 byte a value and a scale a vector (EncodeVectorInt8).
	PrecisionInt8
)

// ErrNoVector reports an index id without a stored vector where one is needed (FillVectors).
var ErrNoVector = errors.New("memory: no stored vector")

// DB is an open store of record.
type DB struct {
	bolt *bolt.DB
	path string
	ro   bool
	log  *slog.Logger
	prec atomic.Uint32 // the Precision vectors are written in

	dicts dictSet // compression dictionaries of records (zrecord.go)

	notesMu   sync.Mutex
	recounted map[string]Recount // collections whose counters were counted again (counters.go)

	censusOnce sync.Once
	census     *census // the page references counted at the first collection loaded (rawtree.go)
}

// writeMmapSize is the least a writable store maps of its file (address space: a page
// costs memory once read; the file itself then grows 16 MiB at a time, bbolt's AllocSize,
// past the pages in use, a sparse tail on Linux file systems: 40 KiB of disk for a
// two-document store whose store.db reads 16 MiB long). bbolt maps 32 KiB at first and
// maps the file again each time it doubles, copying every node of the write under way out
// of the old mapping first: a bulk ingest with vectors (2 KiB a vector) crossed fifteen
// such remaps before its first GiB (200k passages with 384-dim vectors: 0.53 s of the
// 1.39 s its writes took, in a CPU profile). Past 1 GiB bbolt grows the mapping a GiB at
// a time. Not on Windows, where bbolt extends the file to the size it maps.
const writeMmapSize = 1 << 30

// PageSize is the bbolt page size of a store created now (a store keeps the size it was
// created with). 16 KiB rather than bbolt's default (the OS page, 4 KiB) because stored
// vectors are big values: a 384-dim float32 vector (1,552 bytes stored) fits twice in a 4 KiB
// page, which leaves a quarter of the page empty, ten times in a 16 KiB one; a 768-dim one
// (3,088 bytes) fills a 4 KiB page alone and fits five times in 16 KiB (store.db with vectors
// at 1M x 384: 2,551 → 2,107 bytes a passage). bbolt writes a transaction's pages one
// system call each, so a bulk write makes a quarter of the calls (1M passages with vectors:
// the store's commits took 6.9 s instead of 11.9 s). A small write rewrites bigger pages
// (about 16 KiB a level of the tree it touches), which its fsync outweighs.
const PageSize = 16 << 10

// Open opens (creating when it is absent and o is writable) the store of record at path. A
// lock held by another process is ErrLocked; a file bbolt cannot open is ErrCorrupt naming it.
// Call CheckFile before it: bbolt maps a damaged file unchecked.
func Open(path string, o Options) (*DB, error) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 200 * time.Millisecond
	}
	bo := &bolt.Options{Timeout: timeout, NoSync: o.NoSync, ReadOnly: o.ReadOnly, PageSize: PageSize}
	if !o.ReadOnly && strconv.IntSize == 64 && runtime.GOOS != "windows" { // bbolt grows the file to its mapping there
		bo.InitialMmapSize = writeMmapSize
	}
	bdb, err := bolt.Open(path, 0o644, bo)
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s", ErrLocked, path)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	db := &DB{bolt: bdb, path: path, ro: o.ReadOnly, log: log}
	p := o.Precision
	if p == PrecisionFloat32 && o.HalfVectors {
		p = PrecisionFloat16
	}
	db.prec.Store(uint32(p))
	return db, nil
}

// SetHalfVectors sets whether the vectors written from now on are stored in float16
// (Options.HalfVectors), else float32.
func (db *DB) SetHalfVectors(half bool) {
	p := PrecisionFloat32
	if half {
		p = PrecisionFloat16
	}
	db.SetPrecision(p)
}

// SetPrecision sets the layout the vectors written from now on are stored in
// (Options.Precision): the store's owner sets it once it has read what the store records.
func (db *DB) SetPrecision(p Precision) { db.prec.Store(uint32(p)) }

// encodeVector is the stored form of vector v of index id uid in db's precision.
func (db *DB) encodeVector(uid string, v []float32) ([]byte, error) {
	switch Precision(db.prec.Load()) {
	case PrecisionFloat16:
		return EncodeVectorHalf(uid, v)
	case PrecisionInt8:
		return EncodeVectorInt8(uid, v)
	}
	return EncodeVector(uid, v), nil
}

// FillVectors decodes the stored vectors of index ids ids of collection col into dst
// (dst[i] for ids[i], each of the collection's dimension), in one read transaction, the
// ids looked up in key order. An id without a vector is ErrNoVector, a vector of another
// length than len(dst[i]) or one that fails its checksum ErrCorrupt.
func (db *DB) FillVectors(col string, ids []string, dst [][]float32) error {
	if len(ids) != len(dst) {
		return fmt.Errorf("store: FillVectors of %d ids into %d vectors", len(ids), len(dst))
	}
	return inCollection(col, db.view(func(tx *bolt.Tx) error { return fillVectors(tx, col, ids, dst) }))
}

// VectorBytes is the bytes of the pages collection col's vectors take in the file: its
// vecs bucket's branch and leaf pages, overflow pages included, or the bytes of a small
// bucket kept inline in its parent's page (measurements).
func (db *DB) VectorBytes(col string) (int64, error) {
	var n int64
	err := db.view(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, col, false)
		if err != nil || b == nil {
			return err
		}
		st := b.Bucket(bkVecs).Stats()
		n = int64(st.BranchAlloc + st.LeafAlloc + st.InlineBucketInuse)
		return nil
	})
	return n, inCollection(col, err)
}

// FillVectors is DB.FillVectors in this transaction (a search that holds one reads the
// vectors it rescores in it: a second read transaction of the same goroutine could wait
// forever on a writer that grows the file, which waits for the first).
func (t *Tx) FillVectors(col string, ids []string, dst [][]float32) error {
	if len(ids) != len(dst) {
		return fmt.Errorf("store: FillVectors of %d ids into %d vectors", len(ids), len(dst))
	}
	return inCollection(col, Guard("store.db read", func() error { return fillVectors(t.tx, col, ids, dst) }))
}

// fillVectors is FillVectors in tx.
func fillVectors(tx *bolt.Tx, col string, ids []string, dst [][]float32) error {
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(ids[a], ids[b]) })
	b, err := colBucket(tx, col, false)
	if err != nil {
		return err
	}
	if b == nil {
		return fmt.Errorf("%w: %s", ErrCollectionNotFound, ShowKey(col))
	}
	vb := b.Bucket(bkVecs)
	keys := make([][]byte, len(order))
	for j, i := range order {
		keys[j] = []byte(ids[i])
	}
	// The leaves all asked for at once, not waited for one by one, and found on the way:
	// a vector found in the leaf bbolt would read, its value checked by its checksum
	// (which covers its key), is decoded there; every other id is left to bbolt's lookup,
	// which decides, after the shared mapping is released (a miss's checks take it again).
	rest := func() (rest []int) {
		leaves, done := descendKeys(vb, keys)
		defer done()
		for j, i := range order {
			if leaves != nil && leaves[j] != nil {
				if raw, ok := leafValue(leaves[j], keys[j]); ok && vectorTagged(raw) {
					if v, err := decodeVectorInto(ids[i], raw, dst[i][:0]); err == nil && len(v) == len(dst[i]) {
						continue
					}
				}
			}
			rest = append(rest, i)
		}
		return rest
	}()
	for _, i := range rest {
		id := ids[i]
		raw, err := lookupVector(vb, id)
		if err != nil {
			return err
		}
		if raw == nil {
			return fmt.Errorf("%w: index id %s", ErrNoVector, ShowKey(id))
		}
		want := len(dst[i])
		v, err := decodeVectorInto(id, raw, dst[i][:0])
		if err != nil {
			return err
		}
		if len(v) != want {
			return fmt.Errorf("%w: the stored vector of %s has %d values, want %d", ErrCorrupt, ShowKey(id), len(v), want)
		}
	}
	return nil
}

// Close closes the file and releases its lock. A writable store first takes the census of
// the file it leaves, and records it when clean (verified.go).
func (db *DB) Close() error {
	releaseLookupMap(db.bolt)
	if db.ro {
		return db.bolt.Close()
	}
	return db.closeVerified()
}

// ReadOnly reports whether db was opened read-only.
func (db *DB) ReadOnly() bool { return db.ro }

// Empty reports whether db holds nothing at all (a file just created).
func (db *DB) Empty() bool { return empty(db.bolt) }

// View runs a read transaction under Guard: a damaged page (bbolt checksums only its meta
// pages) can send bbolt past its mapping, and that must be ErrCorrupt, not a crash.
func (db *DB) View(fn func(*Tx) error) error {
	return Guard("store.db read", func() error {
		return db.bolt.View(func(tx *bolt.Tx) error { return fn(&Tx{tx: tx, db: db}) })
	})
}

// update runs a write transaction under Guard (see View).
func (db *DB) update(fn func(*bolt.Tx) error) error {
	return Guard("store.db write", func() error { return db.bolt.Update(fn) })
}

// view runs a read transaction under Guard (see View).
func (db *DB) view(fn func(*bolt.Tx) error) error {
	return Guard("store.db read", func() error { return db.bolt.View(fn) })
}

// Begin starts a read transaction that the caller ends with Rollback: a search reads its
// filter and its results' records in one, so a result always matches the filter.
func (db *DB) Begin() (*Tx, error) {
	tx, err := db.bolt.Begin(false)
	if err != nil {
		return nil, err
	}
	return &Tx{tx: tx, db: db}, nil
}

// Tx is a read transaction.
type Tx struct {
	tx *bolt.Tx
	db *DB
	// the docs bucket last looked up (a search reads many records of one collection)
	lastCol  string
	lastDocs *bolt.Bucket
	lastErr  error
	// gap is the neighbourhood of the last honest miss in a docs bucket (RecordMeta,
	// read-only transactions only): missGap.
	gap missGap
}

// missGap is where an honest miss of a read-only transaction landed in a docs bucket: the
// keys of the elements either side of the key (nil: none that side), adjacent, their
// neighbourhood checked (honestMiss). Another key between them is not stored either, on
// the same evidence, in the same transaction (its pages cannot change): a writer checking
// its batch's new ids, which land side by side (the end of the bucket, for rising ids),
// checks the neighbourhood once rather than once an id.
type missGap struct {
	docs   *bolt.Bucket // nil: none
	lo, hi []byte
}

// holds reports whether key lies strictly between the gap's elements.
func (g *missGap) holds(docs *bolt.Bucket, key []byte) bool {
	return g.docs != nil && g.docs == docs && (g.lo == nil || bytes.Compare(g.lo, key) < 0) && (g.hi == nil || bytes.Compare(key, g.hi) < 0)
}

// checkDocsMiss is honestMiss for a docs bucket (a variable: tests count the checks).
var checkDocsMiss = func(docs *bolt.Bucket, key []byte) error {
	return honestMiss(docs, key, "document", "docs", verifyRecordElem)
}

// lookupMeta is lookupRecord for RecordMeta (the lookup a writer makes for each document
// of its batch): a miss between the elements around the last honest miss of this
// read-only transaction is honest without a second check (missGap).
func (t *Tx) lookupMeta(docs *bolt.Bucket, id string) ([]byte, error) {
	if docs == nil {
		return nil, nil
	}
	key := []byte(id)
	if v := docs.Get(key); v != nil {
		return v, nil
	}
	if t.gap.holds(docs, key) {
		return nil, nil
	}
	t.gap = missGap{}
	if err := checkDocsMiss(docs, key); err != nil {
		return nil, err
	}
	if !t.tx.Writable() {
		c := docs.Cursor()
		hi, _ := c.Seek(key)
		var lo []byte
		if hi == nil {
			lo, _ = c.Last()
		} else {
			lo, _ = c.Prev()
		}
		t.gap = missGap{docs: docs, lo: lo, hi: hi} // (the keys are the mapped pages': valid while tx is)
	}
	return nil, nil
}

// Rollback ends the transaction.
func (t *Tx) Rollback() error { return t.tx.Rollback() }

// docs is the docs bucket of collection col; nil when there is none (ErrCorrupt when the
// collection is stored without it: colBucket).
func (t *Tx) docs(col string) (*bolt.Bucket, error) {
	if (t.lastDocs == nil && t.lastErr == nil) || t.lastCol != col {
		t.lastDocs, t.lastErr = docsBucket(t.tx, col)
		t.lastCol = col
	}
	return t.lastDocs, t.lastErr
}

// Record reads document id of collection col; nil when it is not stored.
func (t *Tx) Record(col, id string) (*Record, error) {
	docs, err := t.docs(col)
	if err != nil {
		return nil, err
	}
	r, err := t.db.getRecord(t.tx, docs, id)
	return r, inCollection(col, err)
}

// RecordMeta reads what filters and chunk bookkeeping need of document id of collection
// col: its metadata and chunks (title and text may be left empty; DecodeMeta). nil when
// it is not stored.
func (t *Tx) RecordMeta(col, id string) (*Record, error) {
	docs, err := t.docs(col)
	if err != nil {
		return nil, err
	}
	v, err := t.lookupMeta(docs, id)
	if err != nil || v == nil {
		return nil, inCollection(col, err)
	}
	return t.db.decodeRecord(t.tx, id, v, true)
}

// Has reports whether document id is stored in collection col. Writers ask it before
// adding: a miss is not checked for damage around it (Record and RecordMeta are), nor is
// the collection's bucket (a writer has loaded the collection, which checks it).
func (t *Tx) Has(col, id string) bool {
	d, _ := t.docs(col)
	return d != nil && d.Get([]byte(id)) != nil
}

// Vector reads the stored vector of index id uid in collection col (nil when none).
func (t *Tx) Vector(col, uid string) ([]float32, error) {
	b, err := colBucket(t.tx, col, false)
	if err != nil || b == nil {
		return nil, err
	}
	raw, err := lookupVector(b.Bucket(bkVecs), uid)
	if err != nil || raw == nil {
		return nil, inCollection(col, err)
	}
	return DecodeVector(uid, raw)
}

// EachRecord calls fn with every document of collection col, in id order. With metaOnly the
// records have their metadata and chunks but not always their title and text (DecodeMeta).
// An error from fn ends the iteration and is returned.
func (t *Tx) EachRecord(col string, metaOnly bool, fn func(id string, r *Record) error) error {
	return t.EachRecordAfter(col, "", metaOnly, fn)
}

// EachRecordAfter is EachRecord from the first id after after ("" = from the first id):
// a page of documents starts where the previous one ended without reading those before.
func (t *Tx) EachRecordAfter(col, after string, metaOnly bool, fn func(id string, r *Record) error) error {
	docs, err := t.docs(col)
	if err != nil || docs == nil {
		return err
	}
	cur := docs.Cursor()
	k, v := cur.First()
	if after != "" {
		if k, v = cur.Seek([]byte(after)); k != nil && string(k) == after {
			k, v = cur.Next()
		}
	}
	for ; k != nil; k, v = cur.Next() {
		id := string(k)
		r, err := t.db.decodeRecord(t.tx, id, v, metaOnly)
		if err != nil {
			return err
		}
		if err := fn(id, r); err != nil {
			return err
		}
	}
	return nil
}

// getRecord reads the record of document id from a docs bucket; nil when it is not stored
// (a miss where the store is damaged is ErrCorrupt: lookupRecord).
func (db *DB) getRecord(tx *bolt.Tx, docs *bolt.Bucket, id string) (*Record, error) {
	v, err := lookupRecord(docs, id)
	if err != nil || v == nil {
		return nil, err
	}
	return db.decodeRecord(tx, id, v, false)
}

// docsBucket is the docs bucket of collection name in tx; nil when the collection does not
// exist, ErrCorrupt when it is stored without one (colBucket).
func docsBucket(tx *bolt.Tx, name string) (*bolt.Bucket, error) {
	b, err := colBucket(tx, name, false)
	if err != nil || b == nil {
		return nil, err
	}
	return b.Bucket(bkDocs), nil
}

// nextSeq increments and returns the store sequence number inside tx.
func nextSeq(tx *bolt.Tx) (uint64, error) {
	meta, err := tx.CreateBucketIfNotExists(bkMeta)
	if err != nil {
		return 0, err
	}
	s, err := u64Stored(meta.Get(keySeq), "the store's sequence number")
	if err != nil {
		return 0, err
	}
	s++
	return s, meta.Put(keySeq, u64b(s))
}

// u64Stored reads a stored 8-byte number; absent is 0, any other length ErrCorrupt (a
// damaged sequence number or trim point read as 0 would send the derived indexes' catch-up
// to the wrong place: silently wrong answers). what names the number in the error.
func u64Stored(b []byte, what string) (uint64, error) {
	switch len(b) {
	case 0:
		return 0, nil
	case 8:
		return binary.BigEndian.Uint64(b), nil
	}
	return 0, fmt.Errorf("%w: %s is %d bytes, not 8", ErrCorrupt, what, len(b))
}

func u64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

func u64b(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

// colBucket returns the bucket of collection name, creating it when create is set; nil
// when it is not stored (and not created). A stored collection is a bucket holding its four
// sub-buckets (docs, vecs, changes, info: every version made all four with the
// collection): one missing, or a value where a bucket belongs, is damage (a flipped bit in
// a name or an element's flags) and ErrCorrupt, for every reader and writer; read as "no
// documents" it would answer "not found" beside counters that say otherwise.
func colBucket(tx *bolt.Tx, name string, create bool) (*bolt.Bucket, error) {
	cols := tx.Bucket(bkCols)
	if cols == nil {
		if tx.Cursor().Bucket().Get(bkCols) != nil {
			return nil, fmt.Errorf("%w: the store's collections are a value, not a bucket", ErrCorrupt)
		}
		if !create {
			return nil, checkMissingCollection(tx, name)
		}
		var err error
		if cols, err = tx.CreateBucketIfNotExists(bkCols); err != nil {
			return nil, err
		}
	}
	b := cols.Bucket([]byte(name))
	if b != nil {
		return b, checkColBucket(b, name)
	}
	if cols.Get([]byte(name)) != nil {
		return nil, fmt.Errorf("%w: collection %s is stored as a value, not a bucket", ErrCorrupt, ShowKey(name))
	}
	if !create {
		// A miss is honest only if the pages it was looked up in are whole (rawtree.go):
		// a damaged count on them hides collections.
		if err := checkMissingCollection(tx, name); err != nil {
			return nil, err
		}
		return nil, nil
	}
	b, err := cols.CreateBucket([]byte(name))
	if err != nil {
		return nil, err
	}
	for _, sub := range colSubBuckets {
		if _, err := b.CreateBucket(sub); err != nil {
			return nil, err
		}
	}
	if _, _, err := addCounts(b, 0, 0); err != nil {
		return nil, err
	}
	return b, startSources(b)
}

// colSubBuckets are the sub-buckets every collection holds.
var colSubBuckets = [][]byte{bkDocs, bkVecs, bkChanges, bkInfo}

// checkColBucket checks that the bucket b of collection name holds its four sub-buckets.
func checkColBucket(b *bolt.Bucket, name string) error {
	for _, sub := range colSubBuckets {
		if b.Bucket(sub) == nil {
			return fmt.Errorf("%w: collection %s has no %s bucket (its name or flags are damaged): its documents cannot be read",
				ErrCorrupt, ShowKey(name), sub)
		}
	}
	return nil
}

// counts reads a collection's persisted document and index id counts and says whether
// they can be trusted (countsOK; see countState).
func counts(b *bolt.Bucket) (docs, units int, st countState) {
	info := b.Bucket(bkInfo)
	d, u, sum := info.Get(keyDocN), info.Get(keyUnitN), info.Get(keyCountSum)
	switch {
	case d == nil && u == nil:
		return 0, 0, countsMissing
	case len(d) != 8 || len(u) != 8:
		return 0, 0, countsDamaged
	}
	docs, units = int(u64(d)), int(u64(u))
	switch {
	case sum == nil:
		st = countsUnchecked
	case len(sum) != 4 || binary.BigEndian.Uint32(sum) != countSum(d, u) || docs < 0 || units < 0:
		st = countsDamaged
	}
	return docs, units, st
}

// addCounts adds to a collection's persisted counts (inside the write that changes them)
// and returns the new values. Counts that cannot be trusted are not carried forward: the
// collection is counted again (after the write's own changes, so the deltas are not added).
func addCounts(b *bolt.Bucket, docs, units int) (int, int, error) {
	d, u, st := counts(b)
	if st == countsOK {
		d, u = max(0, d+docs), max(0, u+units)
	} else {
		var err error
		if d, u, err = recount(b); err != nil {
			return 0, 0, err
		}
	}
	return d, u, putCounts(b, d, u)
}
