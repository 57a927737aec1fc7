// Package bm25 is the store's keyword retriever: a Bleve index per collection, scored as
// Lucene's BM25 by an exact MaxScore evaluator over Bleve's segments, with the analyzers,
// metadata filters and integrity records it needs. Package hybrid fuses its lists with the
// dense retriever's.
package bm25

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/agentmem/memory/internal/rank"
	"github.com/agentmem/memory/internal/store"
	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
)

// bodyField is the one analysed field: title and text together, as Lucene's "flat" BEIR runs do.
const bodyField = "body"

// seqKey is the Bleve internal key holding the store sequence number the index reflects.
var seqKey = []byte("memory.seq")

// Errors of the keyword index.
var (
	// ErrBM25 wraps failures of the keyword index.
	ErrBM25 = errors.New("hybrid: bm25 index error")
	// ErrBM25Format: the index on disk was written by an older layout; rebuild it.
	ErrBM25Format = errors.New("hybrid: bm25 index has an old layout")
	// ErrBM25Option: an invalid BM25Options value.
	ErrBM25Option = errors.New("hybrid: invalid bm25 option")
	// ErrQueryTooLong: the query text is over BM25Options.MaxQueryBytes.
	ErrQueryTooLong = errors.New("hybrid: query too long")
	// ErrQueryTooManyTerms: the analysed query has more distinct terms than
	// BM25Options.MaxQueryTerms.
	ErrQueryTooManyTerms = errors.New("hybrid: query has too many terms")
	// ErrCorrupt: the index's files are damaged — Bleve or zap panicked reading them (a
	// flipped byte in a segment does that). The index is derived data: rebuild it.
	ErrCorrupt = errors.New("hybrid: bm25 index is corrupt")
)

// recoverCorrupt turns a panic of the deferring function into an error wrapping ErrCorrupt.
// It must be deferred directly.
func recoverCorrupt(err *error, what string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: %s: %s", ErrCorrupt, what, store.Recovered(r))
	}
}

// Scoring modes of [Options].Scoring.
const (
	// ScoringClassic is textbook BM25: idf·f·(k1+1)/(f + k1·(1 − b + b·dl/avgdl)) with
	// exact lengths.
	ScoringClassic = ""
	// ScoringLucene is Lucene 8's BM25Similarity: idf·f/(f + k1·(1 − b + b·L(dl)/avgdl)),
	// L(dl) the length its one-byte norm encodes (exact below 24, four significant bits
	// above), float32 arithmetic.
	ScoringLucene = "lucene"
)

// Defaults of [Options].
const (
	DefaultK1            = 0.9
	DefaultB             = 0.4
	DefaultMaxQueryTerms = 1024
	DefaultMaxQueryBytes = 64 << 10
	// DefaultPostingsCacheBytes is the default budget of the decoded-blocks cache (blocks and
	// block metadata together). At 256 MiB a 2,560-query batch at 1M passages ran 2.5x
	// slower than at 512 (BENCHMARKS.md §0g), 1.5x with blocks read straight from the
	// segment (§0q), and 13–15 % with postings read alone (§0t). 448 MiB holds what the 1M
	// batch decodes, and keeps a 2,560-query batch at 21M under 10^9 bytes of anonymous
	// memory (896–914 MiB; 948–999 MiB at 512) at the same throughput (§0t).
	DefaultPostingsCacheBytes = 448 << 20
)

// mergeFloorDocs is the merge planner's floor segment size, in documents: smaller segments
// count as this large when it sizes its tiers. With Bleve's 2,000 every index under 2,000
// documents was one tier allowed one segment, so each small write (an agent's Add) rewrote
// the whole index, and merging took about half the CPU of one-document Adds; at 64 a small
// index keeps up to ten segments a tier, each document rewritten a few times. Bulk loads
// write segments of thousands of documents, above either floor.
const mergeFloorDocs = 64

// testMergePlan, when set (by tests), is the merge plan writable opens give Bleve's merger.
var testMergePlan map[string]any

// Options configures one index. The zero value selects the defaults: k1 0.9, b 0.4
// (Lucene/Anserini's BEIR settings), at most 1,024 distinct query terms and 64 KiB of query
// text.
type Options struct {
	// K1 and B are the BM25 constants. Both zero selects the defaults; otherwise both are
	// taken as given (b 0 turns length normalisation off). K1 must be >= 0, B in [0, 1].
	K1, B float64
	// Scoring is the BM25 formula: "" (ScoringClassic) the textbook one, with exact
	// document lengths and the (k1+1) factor; ScoringLucene Lucene 8's BM25Similarity
	// (no k1+1, lengths as its one-byte norms keep them, float32 idf and normalisation),
	// which with LuceneEnglishAnalyzer ranks as Lucene, Anserini and Pyserini do. Scoring
	// is read at query time: an index needs no rebuild to change it.
	Scoring string
	// MaxQueryTerms caps the distinct analysed terms of a query (0 = 1,024). A query over it
	// fails with ErrQueryTooManyTerms.
	MaxQueryTerms int
	// MaxQueryBytes caps the query text (0 = 64 KiB). A longer query fails with
	// ErrQueryTooLong before it is analysed.
	MaxQueryBytes int
	// PostingsCacheBytes is the budget of the cache of decoded posting blocks that dynamic
	// pruning reads (0 = 448 MiB): the blocks (zap chunks, about 1,024 postings at 4 bytes
	// a posting, 6 or 8 where documents, frequencies or lengths are large: see postBlock)
	// that recent queries scored, evicted in CLOCK order. It never holds more
	// than the blocks queries scored, so a small index keeps it small. Negative keeps none
	// (every query decodes the blocks it needs). The block metadata of queried terms (a few
	// bytes a block, persisted beside each segment file) counts within the same budget, up
	// to half of it, so the cache's memory in all stays within it (a budget under 32 MiB
	// still keeps up to 16 MiB of metadata, and half the budget for blocks).
	PostingsCacheBytes int
	// ReadOnly opens an existing index for searching only (path "" is an in-memory index
	// as without it): Bleve's scorch runs with its read_only setting (a shared lock on
	// root.bolt, no persister or merger), nothing is created or written, a missing path is
	// an error (ErrBM25 wrapping bleve.ErrorIndexPathDoesNotExist) and Apply fails with
	// ErrBM25. Several processes may hold one index read-only at once.
	ReadOnly bool
	// AsyncPersist lets a small Apply (under asyncMaxDocs documents) return once its
	// segment is searchable, before it is written to disk: for a caller whose store of
	// record replays what a crash left unpersisted (Seq says how far the disk is). Without
	// it each Apply waits for its segment file and root.bolt to be synced (about ten
	// fsyncs). Large Applies always wait, unpersisted Applies are capped
	// (asyncMaxPending; one past it waits), and Close persists everything first. Ignored
	// for read-only and in-memory indexes.
	AsyncPersist bool
	// Analyzer names the analyzer of the body field and of queries ("" = DefaultAnalyzer,
	// English): one of [Analyzers]. An unknown name fails with ErrUnknownAnalyzer. A new
	// index records it; an existing one built with another fails to open with
	// ErrAnalyzerMismatch (an index of an older version, which recorded none, was built
	// with English).
	Analyzer string
	// SegmentWorkers lets one query score the index's segments on up to this many goroutines
	// (0 or 1 = one). It lowers one query's latency on an idle machine; batches
	// ([BM25Index.SearchBatch]) already use every core, one query per worker.
	SegmentWorkers int
	// MappedResidentBytes, when positive, bounds the index files' pages that stay mapped
	// into the process (Linux): after a search, and every quarter second while a writable
	// index is open (its merges read whole segments), when the process's resident
	// file-backed pages (/proc/self/statm's shared) exceed it, the index drops its segment
	// mappings' page-table entries (madvise MADV_DONTNEED). The pages stay in the OS page cache, so
	// the next read of one is a minor fault, not disk I/O; what it bounds is the RSS a
	// process reports while it sweeps a large index (an evaluation over 21M passages maps
	// about 3.7 GB of it). 0 = no bound. Ignored on other systems.
	MappedResidentBytes int64
	// AlsoTrim, when set, runs each time the index trims its mappings for
	// MappedResidentBytes: the owner drops the resident pages of its own mappings (the
	// store of record's) at the same moment, since the bound is the process's.
	AlsoTrim func()
}

func (o Options) withDefaults() (Options, error) {
	if o.K1 == 0 && o.B == 0 {
		o.K1, o.B = DefaultK1, DefaultB
	}
	if o.MaxQueryTerms == 0 {
		o.MaxQueryTerms = DefaultMaxQueryTerms
	}
	if o.MaxQueryBytes == 0 {
		o.MaxQueryBytes = DefaultMaxQueryBytes
	}
	if o.PostingsCacheBytes == 0 {
		o.PostingsCacheBytes = DefaultPostingsCacheBytes
	}
	name, err := CheckAnalyzer(o.Analyzer)
	if err != nil {
		return o, err
	}
	o.Analyzer = name
	if o.Scoring != ScoringClassic && o.Scoring != ScoringLucene {
		return o, fmt.Errorf("%w: scoring %q (want %q or %q)", ErrBM25Option, o.Scoring, ScoringClassic, ScoringLucene)
	}
	switch {
	case math.IsNaN(o.K1) || math.IsInf(o.K1, 0) || o.K1 < 0:
		return o, fmt.Errorf("%w: k1 %v (want a finite value >= 0)", ErrBM25Option, o.K1)
	case math.IsNaN(o.B) || o.B < 0 || o.B > 1:
		return o, fmt.Errorf("%w: b %v (want 0..1)", ErrBM25Option, o.B)
	case o.MaxQueryTerms < 0 || o.MaxQueryBytes < 0 || o.SegmentWorkers < 0:
		return o, fmt.Errorf("%w: negative cap (terms %d, bytes %d, segment workers %d)", ErrBM25Option, o.MaxQueryTerms, o.MaxQueryBytes, o.SegmentWorkers)
	}
	return o, nil
}

// Doc is a document as the keyword index sees it.
type Doc struct {
	ID, Title, Text string
	// Meta is the metadata that filters ([MetaFilter]) select on: string, bool or number
	// values (numbers compare as float64), keys not empty.
	Meta map[string]any
	// Chunk is 0 for a unit that stands for its document (a whole document, or its first
	// chunk) and > 0 for the document's later chunks: [BM25Index.FilterCount] counts
	// documents as the units with Chunk 0.
	Chunk int
}

// Index is a Bleve index scored with BM25 over one of Bleve's analyzers
// (BM25Options.Analyzer; by default English: Unicode tokenizer, possessive filter, lower
// case, English stop words, Porter stemming). It is safe for
// concurrent searches; Apply calls must come from one writer at a time.
type Index struct {
	idx  bleve.Index
	opts Options
	// shadow is the temporary directory of links a read-only open gave Bleve instead of the
	// index's segment directory, removed on Close ("" when none: stray.go).
	shadow        string
	shadowCleanup runtime.Cleanup // removes shadow when the index is dropped unclosed
	trim          residentTrim    // MappedResidentBytes
	stopTrim      func()          // stops a writer's trimming (trimDuring); nil when none
	mu            sync.Mutex      // guards seq
	seq           uint64
	pending       atomic.Int64 // AsyncPersist: Applies' batches not yet persisted
	memOnly       bool         // an in-memory index (path "")
	dir           string       // the index's folder ("" in memory)
	scorchPath    string       // AsyncPersist: the key of persistWatch
	failMu        sync.Mutex
	persistFail   chan struct{} // AsyncPersist: closed (and replaced) when a persist fails
	persistErr    error         // the failure that closed the last persistFail

	// Test knobs (export_test.go): query through Bleve's own search instead of the default
	// path; score every posting (term at a time) instead of MaxScore.
	bleveScoring atomic.Bool
	exhaustive   atomic.Bool
	anaOnce      sync.Once
	analyzer     analysis.Analyzer
	bodyAna      *bodyAnalysis // one-pass analysis of indexed bodies (nil: the analyzer's own)
	prepMu       sync.Mutex
	prepared     map[string]preparedBody // bodies analysed ahead of Apply (Prepare), by id
	stats        statsCache
	postings     *postingsCache
	filters      filterCache
	held         deferred // AsyncPersist: small writes not yet given to Bleve (deferred.go)
}

// newMapping is the index mapping of an index whose body field is analysed by the analyzer
// named ana.
func newMapping(ana string) mapping.IndexMapping {
	im := bleve.NewIndexMapping()
	im.ScoringModel = index.BM25Scoring
	im.DefaultAnalyzer = ana
	body := bleve.NewTextFieldMapping()
	body.Analyzer = ana
	body.Store = false
	body.IncludeInAll = false
	body.IncludeTermVectors = false
	body.DocValues = false
	dm := bleve.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt(bodyField, body)
	im.DefaultMapping = dm
	im.StoreDynamic = false
	im.IndexDynamic = false
	im.DocValuesDynamic = false
	return im
}

// formatKey is the Bleve internal key holding the index layout version. Version 2 indexes
// every document's analysed body length as a term of lenField; version 3 adds its metadata
// as terms of metaField (see bm25_meta.go); version 4 keeps the body's postings in a file
// of their own beside each segment (bodyseg.go). An index of an earlier layout cannot give BM25
// its statistics or filters without a pass over every record, so OpenBM25 refuses it with
// ErrBM25Format and the store rebuilds it from its records.
var formatKey = []byte("memory.bm25.format")

// analyzerKey is the Bleve internal key holding the name of the body field's analyzer
// (absent in an index of an older version: English).
var analyzerKey = []byte("memory.bm25.analyzer")

const formatVersion = "4"

// Open opens the index at path with default options, creating it when missing. path ""
// keeps it in memory.
func Open(path string) (*Index, error) { return OpenWith(path, Options{}) }

// OpenWith opens the index at path, creating it when missing; path "" keeps it in
// memory. An existing index of an older layout fails with ErrBM25Format (the caller
// rebuilds it: it is derived data). Opening reads no postings: the statistics BM25 needs
// are kept in the index as it is written.
func OpenWith(path string, o Options) (_ *Index, err error) {
	o, err = o.withDefaults()
	if err != nil {
		return nil, err
	}
	var (
		idx     bleve.Index
		created bool
		shadow  string // a read-only open's shadow of the segment directory (stray.go)
	)
	defer func() {
		if err != nil && shadow != "" {
			_ = os.RemoveAll(shadow)
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			if idx != nil {
				func() {
					defer func() { _ = recover() }()
					idx.Close()
				}()
			}
			err = fmt.Errorf("%w: open %q: %s", ErrCorrupt, path, store.Recovered(r))
		}
	}()
	if path == "" {
		o.ReadOnly = false // an in-memory index is this process's own
		idx, err = bleve.NewUsing("", newMapping(o.Analyzer), scorch.Name, scorch.Name, nil)
		created = true
	} else {
		// The runtime configuration, given at every open: it overrides what the index
		// recorded when it was created (which is nothing: NewUsing gets nil), so that an
		// index opened without AsyncPersist never runs with unsafe batches.
		var rc map[string]interface{}
		if o.ReadOnly {
			// bolt_timeout: never wait forever for a writer's lock on root.bolt.
			rc = map[string]interface{}{"read_only": true, "bolt_timeout": "1s"}
		} else {
			// AsyncPersist: batches return before they are persisted; applyPart waits
			// where it must, and learns of a failed persist from the async error callback.
			rc = map[string]interface{}{"unsafe_batch": o.AsyncPersist, "asyncErrorCallbackName": "",
				"scorchMergePlanOptions": map[string]any{"FloorSegmentSize": mergeFloorDocs}}
			if testMergePlan != nil {
				rc["scorchMergePlanOptions"] = testMergePlan
			}
			if o.AsyncPersist {
				rc["asyncErrorCallbackName"] = persistErrorsName
			}
		}
		// Files Bleve cannot number (a stray "zzz.zap") fail its open: a writer removes
		// them, a reader opens the index through links to every other file.
		if !o.ReadOnly {
			removeBodyLeftovers(filepath.Join(path, "store"), true)
		}
		if strays := strayZapFiles(path); len(strays) > 0 {
			if !o.ReadOnly {
				removeStrays(path, strays)
			} else if shadow = shadowStore(path, strays); shadow != "" {
				rc["path"] = shadow
			}
		}
		idx, err = bleve.OpenUsing(path, rc)
		if errors.Is(err, bleve.ErrorIndexPathDoesNotExist) && !o.ReadOnly {
			// Created with no recorded configuration (NewUsing would record rc), then, for
			// AsyncPersist, opened again with its runtime configuration.
			idx, err = bleve.NewUsing(path, newMapping(o.Analyzer), scorch.Name, scorch.Name, nil)
			created = true
			if err == nil && o.AsyncPersist {
				if err = idx.Close(); err == nil {
					idx, err = bleve.OpenUsing(path, rc)
				}
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: open %q: %v", ErrBM25, path, err)
	}
	b := &Index{idx: idx, opts: o, memOnly: path == "", dir: path, persistFail: make(chan struct{}), postings: newPostingsCache(max(o.PostingsCacheBytes, 0)),
		trim: residentTrim{limit: o.MappedResidentBytes, also: o.AlsoTrim}, shadow: shadow}
	b.stats.onChange = b.postings.dropSegments
	if b.async() {
		b.scorchPath = filepath.Join(path, "store")
		persistWatch.Store(b.scorchPath, b)
	}
	// An index dropped without Close gives its cached blocks back to the arena.
	runtime.AddCleanup(b, (*postingsCache).release, b.postings)
	if shadow != "" {
		b.shadowCleanup = runtime.AddCleanup(b, func(dir string) { _ = os.RemoveAll(dir) }, shadow)
	}
	if created {
		if err := idx.SetInternal(formatKey, []byte(formatVersion)); err != nil {
			idx.Close()
			return nil, fmt.Errorf("%w: write format: %v", ErrBM25, err)
		}
		if err := idx.SetInternal(analyzerKey, []byte(o.Analyzer)); err != nil {
			idx.Close()
			return nil, fmt.Errorf("%w: write analyzer: %v", ErrBM25, err)
		}
	} else {
		v, err := idx.GetInternal(formatKey)
		if err != nil {
			idx.Close()
			return nil, fmt.Errorf("%w: read format: %v", ErrBM25, err)
		}
		if string(v) != formatVersion {
			idx.Close()
			return nil, fmt.Errorf("%w: %q has layout %q, want %q", ErrBM25Format, path, v, formatVersion)
		}
		a, err := idx.GetInternal(analyzerKey)
		if err != nil {
			idx.Close()
			return nil, fmt.Errorf("%w: read analyzer: %v", ErrBM25, err)
		}
		if len(a) == 0 {
			a = []byte(DefaultAnalyzer) // written before the setting: English
		}
		if string(a) != o.Analyzer {
			idx.Close()
			return nil, fmt.Errorf("%w: %q was built with %q, not %q (rebuild it)", ErrAnalyzerMismatch, path, a, o.Analyzer)
		}
	}
	v, err := idx.GetInternal(seqKey)
	if err != nil {
		idx.Close()
		return nil, fmt.Errorf("%w: read sequence: %v", ErrBM25, err)
	}
	if len(v) == 8 {
		b.seq = binary.BigEndian.Uint64(v)
	}
	if !o.ReadOnly && !b.memOnly && o.MappedResidentBytes > 0 {
		// A writer's merges (the merger's, during a bulk load) read every page of the
		// segments they merge through their mappings: bounded while it is open, not only
		// after searches. Stopped by Close.
		b.stopTrim = b.trimDuring(o.MappedResidentBytes, compactTrimEvery)
	}
	return b, nil
}

// Seq is the store sequence number of the last applied change.
func (b *Index) Seq() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seq
}

// Apply indexes puts, removes deletes and records seq (see apply in bm25_apply.go).
func (b *Index) Apply(puts []Doc, deletes []string, seq uint64) (err error) {
	defer recoverCorrupt(&err, "apply")
	if b.opts.ReadOnly {
		return fmt.Errorf("%w: the index is opened read-only", ErrBM25)
	}
	if ok, err := b.deferApply(puts, deletes, seq); ok {
		return err
	}
	if err := b.flushHeld(); err != nil { // the held changes come first
		return err
	}
	return b.apply(puts, deletes, seq)
}

// Hit is one entry of a ranked list: an id and its retriever's raw score.
// (Declared in fusion.go.)

// Search returns up to k documents matching any term of q, best BM25 score first.
// allow, when non-nil, restricts the candidates before ranking: only those ids can be
// returned (an empty non-nil allow returns nothing). [Index.SearchFiltered] restricts
// them by metadata instead.
func (b *Index) Search(ctx context.Context, q string, k int, allow []string) ([]Hit, error) {
	return b.search(ctx, q, k, restriction{ids: allow})
}

// restriction is what a search may return: the listed ids (when ids is not nil), the
// documents a metadata filter matches (when filter is not nil), or every document.
type restriction struct {
	ids    []string
	filter *MetaFilter
}

// search is Search and SearchFiltered. A panic inside Bleve (a damaged segment) becomes
// an error wrapping ErrCorrupt.
func (b *Index) search(ctx context.Context, q string, k int, r restriction) (hits []Hit, err error) {
	defer recoverCorrupt(&err, "search")
	if k <= 0 || (r.ids != nil && len(r.ids) == 0) {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !b.bleveScoring.Load() {
		hits, ok, err := b.searchPostings(ctx, q, k, r)
		if ok {
			return hits, err
		}
	}
	if len(q) > b.opts.MaxQueryBytes {
		return nil, fmt.Errorf("%w: %d bytes, the cap is %d", ErrQueryTooLong, len(q), b.opts.MaxQueryBytes)
	}
	allow := r.ids
	if r.filter != nil {
		if allow, err = b.FilterIDs(ctx, r.filter); err != nil || len(allow) == 0 {
			return nil, err
		}
	}
	return b.searchBleve(ctx, q, k, allow)
}

// searchBleve is Search through Bleve's own query execution and scoring.
func (b *Index) searchBleve(ctx context.Context, q string, k int, allow []string) ([]Hit, error) {
	mq := bleve.NewMatchQuery(q)
	mq.SetField(bodyField)
	mq.Analyzer = b.opts.Analyzer
	mq.SetOperator(query.MatchQueryOperatorOr)
	var qq query.Query = mq
	if allow != nil {
		qq = bleve.NewConjunctionQuery(mq, bleve.NewDocIDQuery(allow))
	}
	req := bleve.NewSearchRequestOptions(qq, k, 0, false)
	if err := b.flushHeld(); err != nil {
		return nil, err
	}
	res, err := b.idx.SearchInContext(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: search: %v", ErrBM25, err)
	}
	hits := make([]Hit, len(res.Hits))
	for i, h := range res.Hits {
		hits[i] = Hit{ID: h.ID, Score: h.Score}
	}
	return hits, nil
}

// Count is the number of indexed documents.
func (b *Index) Count() (n uint64, err error) {
	defer recoverCorrupt(&err, "count")
	if err := b.flushHeld(); err != nil {
		return 0, err
	}
	return b.idx.DocCount()
}

// Close persists and closes the index.
func (b *Index) Close() (err error) {
	defer recoverCorrupt(&err, "close")
	defer b.postings.release()
	if err := b.closeHeld(); err != nil {
		slog.Warn("hybrid: cannot index the last writes before closing (the store replays them at the next open)", "err", err)
	}
	if b.async() {
		defer persistWatch.Delete(b.scorchPath)
		if err := b.persistAll(); err != nil {
			slog.Warn("hybrid: cannot persist the last changes before closing (the store replays them at the next open)", "err", err)
		}
	}
	if stop := b.stopTrim; stop != nil {
		b.stopTrim = nil
		stop()
	}
	if b.shadow != "" {
		b.shadowCleanup.Stop()
		defer os.RemoveAll(b.shadow)
	}
	err = b.idx.Close()
	if !b.opts.ReadOnly && !b.memOnly {
		// Bleve removed the files of segments merged away; their body files go too.
		removeBodyLeftovers(filepath.Join(b.dir, "store"), false)
	}
	return err
}

// Options returns the index's options, defaults filled in.
func (b *Index) Options() Options { return b.opts }

// Stats reports Bleve's index statistics (segment counts and so on), for diagnostics.
func (b *Index) Stats() map[string]any {
	st := b.idx.StatsMap()
	out := map[string]any{}
	if idx, ok := st["index"].(map[string]interface{}); ok {
		for _, k := range []string{"num_root_segments", "num_persisted_segments", "TotFileMergeSegments", "num_files_on_disk"} {
			out[k] = idx[k]
		}
	}
	return out
}

// Hit is one entry of a ranked list, best first (the one hit type every retriever returns).
type Hit = rank.Hit
