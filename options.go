package memory

import (
	"github.com/agentmem/memory/internal/bm25"
	"log/slog"
	"slices"
	"time"

	"github.com/agentmem/memory/hybrid"
	"github.com/agentmem/memory/rerank"
	"github.com/agentmem/memory/vectorstore"
)

// Options configure a store. The zero value is a working BM25-only store; see the With*
// functions for the common settings.
type Options struct {
	// Embedder makes the vectors of dense recall. nil: BM25 only (hybrid searches degrade to
	// BM25 and say so in each result).
	Embedder vectorstore.Embedder
	// Reranker reorders the top results when a search asks for it.
	Reranker rerank.Reranker
	// Index selects the dense index backend ("" = "disk", memory-mapped files searched
	// exactly while they fit in memory; "flat", "chromem", or "faiss" with the faiss build
	// tag) and its settings;
	// Dim is taken from the embedder. The manifest records the configuration a store's
	// vectors are indexed with: fields left zero take the recorded value on later opens,
	// and a field set to another value is ErrIndexMismatch (see RebuildIndex).
	Index vectorstore.IndexConfig
	// VectorPrecision is how store.db keeps the store's vectors: Float32 (the default) or
	// Float16 (half the bytes: a 384-value vector costs 776 bytes instead of 1,544, and
	// bbolt packs five of them to a 4 KiB page instead of two). It is fixed when the store
	// first records an embedder, and the manifest records it: "" takes the recorded one, and
	// another is ErrVectorPrecision. With Float16 every vector is rounded to float16 (to
	// nearest, relative error <= 2^-11) before it is stored, and the vector indexes hold the
	// same rounded values: exact search ranks by the rounded vectors (a cosine moves by at
	// most 2^-10), so a rebuild from store.db finds the same results. A value above 65504 in magnitude is ErrBadVector.
	// With Int8 each vector is kept as one float32 scale and an int8 a value (780 bytes
	// at 768 dimensions instead of 3,080; vecmath.QuantizeInt8: relative error <= 1/254
	// of the vector's largest value), rounded so before it is stored, and the default
	// dense index ("disk") keeps no float32 rows of its own: it scans its binary codes (or
	// int8 codes) and rescores the best k x oversample candidates with the vectors read
	// from store.db, so each vector is stored once.
	VectorPrecision VectorPrecision
	// RebuildIndex: when Index differs from the dense index configuration the store's
	// manifest records, rebuild the vector indexes with Index (and record it) instead of
	// failing with ErrIndexMismatch. A read-only store rebuilds them in memory only.
	RebuildIndex bool
	// ReEmbed: when the store's embedder differs from Embedder, re-embed every document
	// instead of failing with ErrEmbedderMismatch. Progress reports (done, total).
	ReEmbed         bool
	ReEmbedProgress func(done, total int)
	// BM25K1 and BM25B are the BM25 constants of this store. Both 0 (the zero value) selects
	// k1 0.9 and b 0.4, the Anserini/Pyserini defaults its BEIR scores were validated with
	// (bm25.DefaultK1, bm25.DefaultB). Each store keeps its own.
	BM25K1, BM25B float64
	// BM25Scoring is the BM25 formula: ScoringClassic the textbook one (exact document
	// lengths, the (k1+1) factor); ScoringLucene Lucene 8's BM25Similarity, as Anserini
	// and Pyserini score (no k1+1, lengths as Lucene's one-byte norms keep them). "" (the
	// default) is Lucene's for the collections whose analyzer is "en_lucene" (which gives
	// Lucene's EnglishAnalyzer terms) and textbook for the others, so such a collection
	// ranks as Lucene's EnglishAnalyzer + BM25 does; see [WithLuceneBM25]. The two
	// formulas rank alike but for length rounding. Read at query time: changing it needs
	// no rebuild.
	BM25Scoring string
	// MaxQueryTerms caps the distinct analysed terms of a keyword query (default 1,024) and
	// MaxQueryBytes its text (default 64 KiB); over either, Search fails with
	// ErrQueryTooLarge.
	MaxQueryTerms, MaxQueryBytes int
	// QueryWorkers lets one BM25 query score the index's segments on up to this many
	// goroutines (default 1): lower latency for one query on an idle machine. SearchBatch
	// already spreads its queries over every core.
	QueryWorkers int
	// PostingsCacheBytes bounds the cache of decoded posting blocks, and of the block
	// metadata, that BM25's dynamic pruning reads (default 448 MiB per collection; negative:
	// no cache of blocks). See
	// bm25.BM25Options.PostingsCacheBytes.
	PostingsCacheBytes int
	// MappedResidentBytes, when positive, bounds the file pages kept mapped into the process
	// (Linux): past it, after a search and (a writable store) every quarter second while the
	// BM25 index merges, the BM25 index's segment mappings and the store file's mapping drop
	// their resident pages, which stay in the OS page cache. It bounds the RSS of a process
	// that sweeps a large store, such as `memory eval` at 21M passages, or loads one
	// (`memory index` sets 1 GiB). 0: no bound. See bm25.BM25Options.MappedResidentBytes.
	MappedResidentBytes int64
	// Analyzer is the BM25 analyzer (one of bm25.Analyzers: "en", "cjk", "de", "fr", ...)
	// of the collections this handle creates without naming one ([WithCollectionAnalyzer]).
	// A new store records it as its default; "" takes the recorded default (English for a
	// store of an older version). Opening an existing store with another default fails with
	// ErrAnalyzerMismatch, an unknown name with ErrUnknownAnalyzer.
	Analyzer string
	// MaxDocumentBytes caps title+text+metadata of one document (default 16 MiB).
	MaxDocumentBytes int
	// NoSync skips fsync on writes: faster bulk loads, but a crash may lose recent writes.
	NoSync bool
	// EmbedBatch is how many texts go to the embedder per call (default 32).
	EmbedBatch int
	// Logger receives diagnostics (default: slog.Default()).
	Logger *slog.Logger
	// Chunking configures how long documents are split on add (see ChunkOptions).
	Chunking ChunkOptions
	// EmbedderResolver loads the embedder recorded in the manifest when Embedder is nil
	// (see WithEmbedderResolver). nil resolves it with vectorstore.ResolveEmbedder, unless
	// NoEmbedderResolver is set.
	EmbedderResolver EmbedderResolver
	// NoEmbedderResolver keeps Open from loading the recorded embedder when Embedder is
	// nil (WithoutEmbedderResolver).
	NoEmbedderResolver bool
	// ReadOnly opens an existing store for reading only (see ReadOnly): several processes
	// may hold it at once, no writer may; writes fail with ErrReadOnly.
	ReadOnly bool
	// MaxCollections caps the number of collections in the store (0: 10,000); creating one
	// more fails with ErrTooManyCollections.
	MaxCollections int
	// MaxOpenCollections is how many collections keep their indexes open (0: 64): the
	// least recently used beyond it are closed, and reopened when next searched or written.
	MaxOpenCollections int
	// LockTimeout is how long Open waits for another process's lock on the store (see
	// WithLockTimeout; 0: 200 ms).
	LockTimeout time.Duration
	// Cluster configures a store on a Weaviate cluster (see ClusterOptions).
	Cluster ClusterOptions

	extraKinds []derivedKind // derived indexes beyond the built-in ones (tests; see derived.go)
}

// Option changes Options.
type Option func(*Options)

// WithEmbedder sets the embedder for dense recall.
func WithEmbedder(e vectorstore.Embedder) Option { return func(o *Options) { o.Embedder = e } }

// WithReranker sets the cross-encoder used when a search asks to rerank.
func WithReranker(r rerank.Reranker) Option { return func(o *Options) { o.Reranker = r } }

// VectorPrecision is the precision store.db keeps vectors in (Options.VectorPrecision).
type VectorPrecision string

// The vector precisions.
const (
	Float32 VectorPrecision = "float32"
	Float16 VectorPrecision = "float16"
	Int8    VectorPrecision = "int8"
)

// WithVectorPrecision sets the precision store.db keeps vectors in (Options.VectorPrecision).
func WithVectorPrecision(p VectorPrecision) Option {
	return func(o *Options) { o.VectorPrecision = p }
}

// WithIndex selects the dense index backend and its settings.
func WithIndex(cfg vectorstore.IndexConfig) Option { return func(o *Options) { o.Index = cfg } }

// WithIndexRebuild lets WithIndex replace the dense index configuration the store
// records: its vector indexes are rebuilt with the new one (see Options.RebuildIndex).
func WithIndexRebuild() Option { return func(o *Options) { o.RebuildIndex = true } }

// WithReEmbed allows opening a store made with another embedder: every document is embedded
// again with the configured one, reporting progress (progress may be nil).
func WithReEmbed(progress func(done, total int)) Option {
	return func(o *Options) { o.ReEmbed = true; o.ReEmbedProgress = progress }
}

// WithBM25 sets BM25's k1 and b (default 0.9 and 0.4; see Options.BM25K1).
func WithBM25(k1, b float64) Option { return func(o *Options) { o.BM25K1, o.BM25B = k1, b } }

// BM25 scoring modes (Options.BM25Scoring).
const (
	ScoringClassic = "classic" // textbook BM25, exact lengths, the (k1+1) factor
	ScoringLucene  = "lucene"  // Lucene 8's BM25Similarity
)

// WithBM25Scoring sets the BM25 formula (Options.BM25Scoring): ScoringClassic,
// ScoringLucene, or "" (by analyzer).
func WithBM25Scoring(mode string) Option { return func(o *Options) { o.BM25Scoring = mode } }

// WithLuceneBM25 makes the store's keyword search Lucene 8's (Anserini's, Pyserini's):
// the "en_lucene" analyzer (Lucene's EnglishAnalyzer terms: its 33 stop words, Porter
// stemming) as the store's analyzer, and Lucene's BM25 scoring with k1 0.9, b 0.4. Like
// WithAnalyzer it must agree with the analyzer an existing store recorded.
func WithLuceneBM25() Option {
	return func(o *Options) {
		o.Analyzer, o.BM25Scoring, o.BM25K1, o.BM25B = bm25.LuceneEnglishAnalyzer, ScoringLucene, bm25.DefaultK1, bm25.DefaultB
	}
}

// WithLockTimeout makes Open wait up to d for another process's lock on the store instead
// of failing with ErrLocked (a *LockedError naming the holder) after 200 ms, the default
// (d <= 0). A writer waits for read-only readers or another writer to close it; a read-only
// open beside a writer reads through the writer (see ReadOnly) and waits only while the
// writer is still opening the store (its socket not up yet).
func WithLockTimeout(d time.Duration) Option { return func(o *Options) { o.LockTimeout = d } }

// WithAnalyzer sets the store's BM25 analyzer (Options.Analyzer): recorded when the store
// is created, the analyzer of its default collection and of collections created without
// their own; an existing store recorded with another fails to open with ErrAnalyzerMismatch.
func WithAnalyzer(name string) Option { return func(o *Options) { o.Analyzer = name } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(o *Options) { o.Logger = l } }

// WithNoSync trades durability of the most recent writes for write speed.
func WithNoSync() Option { return func(o *Options) { o.NoSync = true } }

// Mode selects the retrievers of a search.
type Mode string

const (
	// Hybrid fuses BM25 and dense recall (the default; BM25 alone without an embedder).
	Hybrid Mode = "hybrid"
	// BM25 uses the keyword index only.
	BM25 Mode = "bm25"
	// Dense uses the vector index only.
	Dense Mode = "dense"
)

// Weights weight the retrievers of a hybrid search in fusion. A weight of 0 leaves its
// retriever out; see SearchOptions.Weights.
type Weights struct {
	BM25, Dense float64
}

// SearchOptions configure one search. The zero value means: hybrid, top 10, window 100,
// RRF k 60, equal weights, no filter, no rerank.
type SearchOptions struct {
	Mode   Mode
	TopK   int     // results returned (default 10)
	Window int     // candidates taken from each retriever (default max(100, TopK))
	RRFK   float64 // RRF rank constant (default 60)
	// FullDenseWindow: an approximate dense index (quantized codes, then exact rescoring)
	// picks the candidates it rescores for every one of the Window hits it gives fusion.
	// By default it picks them for the results the search keeps (TopK, or RerankTop when
	// reranking), and at least a quarter of the window (vectorstore.FocusSearcher), and fills
	// the rest of the window from the same rescored candidates: 4x fewer vectors read at the
	// defaults, and dense hits deeper in the window may miss some a full window would find.
	// Exact indexes ignore it.
	FullDenseWindow bool
	// Fusion combines the retrievers' lists of a hybrid search (nil: hybrid.RRF). Any
	// hybrid.FusionFunc serves, hybrid.WeightedScore or one of the caller's; the results'
	// explanations are read from its Contributions, whose lists are named "bm25" and "dense".
	Fusion hybrid.FusionFunc
	// Weights weight BM25 and dense recall in fusion (nil: 1 each). A weight of 0 leaves
	// its retriever out: a hybrid search with Dense 0 runs as a BM25 search, one with BM25 0
	// as a dense search, and each result's notes say so. A negative, NaN or infinite
	// weight, both weights 0, or 0 for the one retriever of a BM25 or dense search is
	// ErrInvalidOption.
	Weights       *Weights
	Where         Where
	WhereDocument WhereDocument
	// Rerank reorders the top RerankTop fused candidates with the store's reranker.
	Rerank    bool
	RerankTop int // default max(TopK, 50)
	// MinScore drops results whose final score is below it.
	MinScore float64
	// MinRelevance drops results whose Relevance (0..1, see Result.Relevance) is below it
	// (0: none); the search looks further down its candidates for the top k.
	MinRelevance float64
	// Collapse drops a result whose dense vector has cosine >= CollapseThreshold with a
	// better-ranked one (0 = off), and, across collections, repeats of the same id. It
	// needs the store's embedder: without one a search asking for it fails with
	// ErrNoEmbedder.
	CollapseThreshold float64
	// Collections searches these collections at once, each with a weight in the final
	// fusion (empty: the collection the search is called on). A collection of weight 0 is
	// left out; a negative, NaN or infinite weight, or every weight 0, is ErrInvalidOption.
	Collections map[string]float64
	// AllChunks returns every matching chunk rather than the best chunk of each document.
	AllChunks bool
	// Cascade searches these collections in order and stops after the first whose best
	// result scores at least CascadeThreshold (see WithCascade).
	Cascade          []string
	CascadeThreshold float64
	// SourceDedup keeps only the best result of each Source (see WithSourceDedup).
	SourceDedup bool

	// QueryVector, when set, is the query's embedding, made by the caller: dense recall
	// searches with it and the query's text is not embedded (see WithQueryVector).
	QueryVector []float32
	// QueryVectors are a SearchBatch's query vectors, one per query (see
	// WithQueryVectors).
	QueryVectors [][]float32
	// QueryEmbedder names the embedder that made QueryVector or QueryVectors ("": not
	// stated); see WithQueryVectorEmbedder.
	QueryEmbedder string

	// Snippets fills each result's Snippet (see WithSnippets).
	Snippets bool
	// NoText leaves results without their title and text (see WithoutText).
	NoText bool

	stats     *SearchStats      // filled when set (WithStats)
	statsFunc func(SearchStats) // called when the search ends (WithStatsFunc)
	windowSet bool              // Window was given explicitly
	notes     []string          // set by normalise: what every result's explanation reports

	dense *denseBatch // set by SearchBatch: this query's vector and dense hits, computed with its batch
	// noEmbed: the search runs without the retrievers that embed (hybrid without an embedder).
	noEmbed bool
}

// SearchOption changes SearchOptions.
type SearchOption func(*SearchOptions)

// WithMode selects hybrid, bm25 or dense.
func WithMode(m Mode) SearchOption { return func(s *SearchOptions) { s.Mode = m } }

// TopK sets how many results are returned.
func TopK(k int) SearchOption { return func(s *SearchOptions) { s.TopK = k } }

// WithWindow sets how many candidates each retriever contributes to fusion.
func WithWindow(w int) SearchOption { return func(s *SearchOptions) { s.Window = w } }

// WithFullDenseWindow makes an approximate dense index rescore candidates for the whole
// fusion window (see SearchOptions.FullDenseWindow).
func WithFullDenseWindow() SearchOption { return func(s *SearchOptions) { s.FullDenseWindow = true } }

// WithRRFK sets the RRF rank constant.
func WithRRFK(k float64) SearchOption { return func(s *SearchOptions) { s.RRFK = k } }

// WithFusion sets how a hybrid search combines its retrievers' lists: hybrid.RRF (the
// default), hybrid.WeightedScore, or any hybrid.FusionFunc (nil: the default).
func WithFusion(f hybrid.FusionFunc) SearchOption { return func(s *SearchOptions) { s.Fusion = f } }

// WithWeights sets the fusion weights of BM25 and dense recall; 0 leaves that retriever
// out (see SearchOptions.Weights).
func WithWeights(bm25, dense float64) SearchOption {
	return func(s *SearchOptions) { s.Weights = &Weights{BM25: bm25, Dense: dense} }
}

// WithWhere filters on metadata before ranking.
func WithWhere(w Where) SearchOption { return func(s *SearchOptions) { s.Where = w } }

// WithWhereDocument filters on the document text before ranking.
func WithWhereDocument(w WhereDocument) SearchOption {
	return func(s *SearchOptions) { s.WhereDocument = w }
}

// WithRerank reranks the top n fused candidates with the store's reranker (n <= 0: the
// default, max(TopK, 50)).
func WithRerank(n int) SearchOption {
	return func(s *SearchOptions) { s.Rerank = true; s.RerankTop = max(n, 0) }
}

// WithMinScore drops results scoring below min.
func WithMinScore(min float64) SearchOption { return func(s *SearchOptions) { s.MinScore = min } }

// WithMinRelevance drops results whose Relevance is below min: the threshold to use when
// the cut must mean the same in every mode (hybrid, BM25, dense, reranked), as a framework's
// score threshold does; 0.5 keeps exact and close matches and drops unrelated documents.
// NaN is ErrInvalidOption.
func WithMinRelevance(min float64) SearchOption {
	return func(s *SearchOptions) { s.MinRelevance = min }
}

// WithCollapse drops near-duplicates (dense cosine >= threshold) from the final list. It
// needs the store's embedder (else the search fails with ErrNoEmbedder).
func WithCollapse(threshold float64) SearchOption {
	return func(s *SearchOptions) { s.CollapseThreshold = threshold }
}

// InCollections searches several collections, each with a weight.
func InCollections(weights map[string]float64) SearchOption {
	return func(s *SearchOptions) { s.Collections = weights }
}

// WithSnippets fills each result's Snippet: at most 200 bytes of its text around
// the query's terms. Off by default: it analyses every result's text, which costs more
// than the BM25 search itself at k=100.
func WithSnippets() SearchOption { return func(s *SearchOptions) { s.Snippets = true } }

// WithoutText returns results without their Title, Text and Snippet (and, for a document of
// one chunk, with End 0): ids, scores, metadata, chunk positions and headings only, for a
// caller that needs no text (an evaluation's run file). Their records' texts are then not
// read: a store that keeps its records compressed does not unpack them. A search that
// reranks still reads the texts its reranker scores.
func WithoutText() SearchOption { return func(s *SearchOptions) { s.NoText = true } }

// WithCollectionAnalyzer sets the BM25 analyzer of a new collection (one of
// [Analyzers]: "en", "cjk", "de", "fr", ...; "" the store's default). An unknown name
// is ErrUnknownAnalyzer; a collection that exists with another analyzer is
// ErrAnalyzerMismatch.
func WithCollectionAnalyzer(name string) CollectionOption {
	return func(o *collectionConfig) { o.analyzer = name }
}

// WithCascade searches collections in order, each with the search's other options, and
// stops after the first whose best result scores at least threshold: a gold collection
// (curated answers, say) first, then the knowledge collections it falls back to. The
// results are those of every collection searched, best score first (a tie keeps the
// cascade's order), cut to TopK; each names the collection that answered it
// (Result.Collection) and its step (Explain.Cascade, 1-based), and each result's notes say
// where the cascade stopped and why.
//
// The threshold is compared with Result.Score, so it needs a score that means the same in
// every collection: a reranked search's probability (WithRerank: 0..1), a dense search's
// cosine, or BM25's score. A hybrid search's score is RRF's, which says only a rank (at
// most 2/61 with the default k). A collection that does not exist fails the search
// (ErrCollectionNotFound, naming it); an empty list, a repeated name, more than
// 64 collections, a NaN threshold, or InCollections with a cascade is
// ErrInvalidOption.
func WithCascade(threshold float64, collections ...string) SearchOption {
	cols := slices.Clone(collections)
	if cols == nil {
		cols = []string{} // asked for, with no collection: an error, not "no cascade"
	}
	return func(s *SearchOptions) { s.Cascade, s.CascadeThreshold = cols, threshold }
}

// WithSourceDedup keeps only the best result of each Source (Document.Source: the file or
// URL a document came from), so that one long source does not fill the results with its
// documents; results without a Source are all kept. It looks among each retriever's Window
// candidates (WithWindow; default 100), so other sources are found even when one source
// holds all of the top k. It applies after rerank and collapse
// (WithCollapse drops near-duplicates by their vectors; the two compose), across the
// collections of a multi-collection or cascade search too.
func WithSourceDedup() SearchOption { return func(s *SearchOptions) { s.SourceDedup = true } }

// WithChunking sets how long documents are split into chunks on add.
func WithChunking(c ChunkOptions) Option { return func(o *Options) { o.Chunking = c } }

// WithAllChunks makes a search return every matching chunk instead of the best chunk of
// each document (several results may then share an ID, told apart by ChunkIndex).
func WithAllChunks() SearchOption { return func(s *SearchOptions) { s.AllChunks = true } }

// WithCollectionMetadata gives a collection created by CreateCollection, or renamed by
// RenameCollection, metadata md (string keys; string, number or bool values; see
// MaxCollectionMetadataKeys and MaxCollectionMetadataBytes). nil or empty: none (a rename
// with it clears the collection's metadata).
func WithCollectionMetadata(md map[string]any) CollectionOption {
	return func(c *collectionConfig) {
		c.meta = md
		if c.meta == nil {
			c.meta = map[string]any{}
		}
	}
}

// WithEmbedderResolver sets how Open, when no embedder is configured, loads the one the
// store was embedded with (its id and dimension are recorded in the manifest). The default
// is vectorstore.ResolveEmbedder, which loads any kind the embedder registry knows (the
// hashing, Model2Vec, ONNX and OpenAI-compatible embedders, and any a package registers
// with vectorstore.RegisterEmbedder), models from $MEMORY_MODELS or the model cache
// (nothing is downloaded): a store reopened with no options searches as it was built to.
// When resolving fails, the store opens anyway: BM25 searches work, a hybrid search runs
// as BM25 and says why in its results' Explain.Notes, while dense searches and writes
// fail with ErrEmbedderNeeded, which names the model and the resolver's error. A resolver
// that returns an embedder of another id or dimension makes Open fail with
// ErrEmbedderMismatch.
func WithEmbedderResolver(r EmbedderResolver) Option {
	return func(o *Options) { o.EmbedderResolver = r }
}

// WithoutEmbedderResolver keeps Open from loading the store's recorded embedder when none
// is configured (a tool that only reads BM25, or must never load a model): searches then
// behave as when resolving fails (see WithEmbedderResolver).
func WithoutEmbedderResolver() Option {
	return func(o *Options) { o.NoEmbedderResolver, o.EmbedderResolver = true, nil }
}

// ReadOnly opens an existing store for reading only. Several processes may open one store
// read-only at once (bbolt's shared lock: `memory serve` replicas and CLI searches sharing a
// store). While another process has it open for writing, a read-only open reads through
// that writer instead: a writable Memory answers other processes' reads on a unix socket
// (see remote.go), and the read-only Memory's Search, SearchBatch, Get, Vectors, Len, Count,
// IDs, Sources, Collections, GetCollection, Backup and Export are the writer's answers (run
// with the writer's embedder, reranker and indexes, except that a reader opened
// WithReranker reranks the writer's candidates with its own; a backup or export streamed
// from it). Its writes fail with ErrReadOnly, Check with
// ErrLocked (it reads the files itself), and every read with ErrWriterGone once the writer
// has closed the store or exited: open it again. A writer that finds readers waits up to
// WithLockTimeout for them to close, then fails with ErrLocked (a *LockedError naming the
// holder).
//
// A read-only open never creates a store (a missing or empty directory is
// ErrStoreNotFound) and never writes to it: no manifest rewrite, no clean-up of temporary
// files, no catch-up of a derived index on disk. A derived index that lags behind the store
// of record or cannot be read is rebuilt in memory for this process only (logged: open the
// store writable once, or run `memory check --repair`, to rebuild it on disk). A dense
// index that persists itself (FAISS) is opened read-only as its writer left it, with the
// configuration the manifest records; one that does not (the flat default) is loaded from
// the store of record. An
// embedder that differs from the store's is ErrEmbedderMismatch (re-embedding writes).
// Every write fails with ErrReadOnly.
func ReadOnly() Option { return func(o *Options) { o.ReadOnly = true } }

// WithStats makes the search fill st with its per-stage timings.
func WithStats(st *SearchStats) SearchOption {
	return func(s *SearchOptions) { s.stats = st }
}

// WithStatsFunc makes each search call fn with its per-stage timings when it ends, failed
// or not (a search refused before it began, for an invalid option or an empty query, does
// not call it). Unlike WithStats it can be given to SearchBatch: fn is then called once
// per query, from the batch's workers at once, so it must be safe for concurrent use. A
// query of a batch whose queries were embedded and searched in the vector index together
// reports its share of that work (the batch's time divided by its queries) as its Embed
// and Dense. A nil fn is ignored.
func WithStatsFunc(fn func(SearchStats)) SearchOption {
	return func(s *SearchOptions) { s.statsFunc = fn }
}
