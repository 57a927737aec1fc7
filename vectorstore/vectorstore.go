// Package vectorstore holds what turns text into vectors and what searches them:
// the [Embedder] interface with its ONNX bi-encoder and static (Model2Vec) implementations,
// and the [Index] interface with its backends: "disk" (the default: rows in memory-mapped
// segment files, exact search with the flat kernel, int8 or binary codes with exact
// rescoring for stores beyond memory), "flat", an exact in-memory scan with an AVX2 kernel,
// "chromem" (chromem-go's exact search) and "faiss" (behind the "faiss" build tag).
//
// Indexes are derived data: the memory store keeps every vector in its store of record and
// rebuilds or catches up an index when it opens. Backends that persist themselves implement
// [Durable].
package vectorstore

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/agentmem/memory/internal/parallel"
	"github.com/agentmem/memory/internal/rank"
)

// Embedder turns texts into vectors. Implementations must be safe for concurrent use.
type Embedder interface {
	// Embed returns one vector of length Dim() per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Dim is the vector length.
	Dim() int
	// ID identifies the model (name and a digest of its weights); the store records it and
	// refuses to mix vectors of two models.
	ID() string
}

// QueryEmbedder is an optional ability of an Embedder whose models embed queries and
// passages differently (for example with an instruction prefix). The store uses it for
// search queries when present.
type QueryEmbedder interface {
	EmbedQuery(ctx context.Context, text string) ([]float32, error)
}

// BatchQueryEmbedder is an optional ability of a [QueryEmbedder] that embeds many search
// queries in one call (batched inference or requests). Use the package function
// [EmbedQueries] to ask any Embedder.
type BatchQueryEmbedder interface {
	EmbedQueries(ctx context.Context, texts []string) ([][]float32, error)
}

// EmbedQueries embeds search queries with emb: in one call when it is a
// [BatchQueryEmbedder], one EmbedQuery per text when it is only a [QueryEmbedder], else as
// passages through Embed (symmetric models embed both alike).
func EmbedQueries(ctx context.Context, emb Embedder, texts []string) ([][]float32, error) {
	switch e := emb.(type) {
	case BatchQueryEmbedder:
		return e.EmbedQueries(ctx, texts)
	case QueryEmbedder:
		out := make([][]float32, len(texts))
		for i, t := range texts {
			v, err := e.EmbedQuery(ctx, t)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	return emb.Embed(ctx, texts)
}

// Hit is one search result of an Index: Score is the similarity (cosine or inner product,
// higher is better), computed in float32 and widened exactly to float64. It is an alias of
// [rank.Hit], the one hit type every retriever returns.
type Hit = rank.Hit

// Filter accepts the ids a search may return; a nil Filter accepts every id.
// It is evaluated before ranking: an Index returns the best k among accepted ids.
type Filter func(id string) bool

// Index maps string ids to vectors and finds the nearest ones. Implementations are safe for
// concurrent searches; Add and Delete are called by one writer at a time.
type Index interface {
	// Add inserts or replaces the vectors of ids.
	Add(ctx context.Context, ids []string, vecs [][]float32) error
	// Delete removes ids; unknown ids are ignored.
	Delete(ctx context.Context, ids ...string) error
	// Search returns up to k hits accepted by f, best first. k larger than the number of
	// accepted vectors returns them all (never an error).
	Search(ctx context.Context, q []float32, k int, f Filter) ([]Hit, error)
	// Len is the number of vectors held.
	Len() int
	// Close releases resources (and, for a Durable index, persists it).
	Close() error
}

// BatchSearcher is an optional ability of an Index that answers many queries at once
// faster than one Search per query (the flat index reads its vectors once per batch). The
// result for qs[i] is what Search(ctx, qs[i], k, f) returns. Use the package function
// [SearchBatch] to ask any Index.
type BatchSearcher interface {
	SearchBatch(ctx context.Context, qs [][]float32, k int, f Filter) ([][]Hit, error)
}

// SearchBatch answers every query of qs against idx: through idx's own [BatchSearcher] when
// it has one, otherwise by calling idx.Search per query over GOMAXPROCS goroutines. Result i
// is the answer to qs[i]; the first error (a bad query, a cancelled ctx) fails the batch.
func SearchBatch(ctx context.Context, idx Index, qs [][]float32, k int, f Filter) ([][]Hit, error) {
	if bs, ok := idx.(BatchSearcher); ok {
		return bs.SearchBatch(ctx, qs, k, f)
	}
	return parallel.Map(ctx, len(qs), 0, func(ctx context.Context, i int) ([]Hit, error) {
		return idx.Search(ctx, qs[i], k, f)
	})
}

// Durable is implemented by indexes that persist themselves in IndexConfig.Dir.
// Seq reports the store sequence number their persisted state reflects (0: nothing);
// the store replays later changes or rebuilds from its store of record when an index is
// behind. Commit asks the index to persist its state as of seq; it may defer the write, but
// must have written it by Close.
type Durable interface {
	Seq() uint64
	Commit(seq uint64) error
}

// BackgroundCommitter is an optional ability of a Durable index: CommitBackground is
// Commit, except that the files it writes, if any, are written on a goroutine of its own
// while the caller goes on; the index's next call (an add, a search, Commit, Close) waits
// for them. A write that fails is reported by that next call and by Close. A bulk ingest
// embeds and stores its next batch while the vectors of the last are written.
type BackgroundCommitter interface {
	CommitBackground(seq uint64) error
}

// AllowSearcher is an optional ability of an Index that searches among a list of ids
// resolved once into its own row numbers (a bitmap over ordinals), rather than calling a
// [Filter] per stored row. The result is what Search returns with a filter accepting
// exactly the ids of allow.
type AllowSearcher interface {
	SearchAllowed(ctx context.Context, q []float32, k int, allow []string) ([]Hit, error)
}

// FocusSearcher is an optional ability of an approximate Index (quantized codes, then
// exact rescoring): SearchFocus returns up to k hits as Search does, but picks the
// candidates it rescores for the best focus of them, so the first focus hits are what
// Search(ctx, q, focus, f) returns and those past focus are exactly scored but may miss
// vectors Search(ctx, q, k, f) would find. Hybrid search asks for its whole fusion window
// and focuses on the results it returns. SearchBatchFocus is the same for a batch. Use the
// package functions [SearchFocus] and [SearchBatchFocus] to ask any Index (one without the
// ability answers with Search).
type FocusSearcher interface {
	SearchFocus(ctx context.Context, q []float32, k, focus int, f Filter) ([]Hit, error)
	SearchBatchFocus(ctx context.Context, qs [][]float32, k, focus int, f Filter) ([][]Hit, error)
}

// SearchFocus is idx's FocusSearcher.SearchFocus when it has one, otherwise idx.Search.
func SearchFocus(ctx context.Context, idx Index, q []float32, k, focus int, f Filter) ([]Hit, error) {
	if fs, ok := idx.(FocusSearcher); ok && focus > 0 && focus < k {
		return fs.SearchFocus(ctx, q, k, focus, f)
	}
	return idx.Search(ctx, q, k, f)
}

// SearchBatchFocus is idx's FocusSearcher.SearchBatchFocus when it has one, otherwise
// [SearchBatch].
func SearchBatchFocus(ctx context.Context, idx Index, qs [][]float32, k, focus int, f Filter) ([][]Hit, error) {
	if fs, ok := idx.(FocusSearcher); ok && focus > 0 && focus < k {
		return fs.SearchBatchFocus(ctx, qs, k, focus, f)
	}
	return SearchBatch(ctx, idx, qs, k, f)
}

// SearchPlanner is an optional ability of an Index to say how a search is answered and
// why (for Explain.Notes); approximate reports a scan that may miss exact hits (quantized
// codes).
type SearchPlanner interface {
	SearchPlan() (note string, approximate bool)
}

// VectorLookup is an optional ability of an Index to return the vector it holds for id
// (normalised for Cosine) without a search; open-time verification compares it with the
// store of record's.
type VectorLookup interface {
	Vector(id string) ([]float32, bool)
}

// Verifier is an optional ability of an Index that keeps its vectors in files it does not
// read whole when opened (the disk index): Verify reads every vector and code back and
// checks them against their checksums, and returns an error matching ErrCorrupt naming
// what is damaged (the store rebuilds the index from the store of record). memory check
// calls it.
type Verifier interface {
	Verify(ctx context.Context) error
}

// Discarder is an optional ability of a Durable index that, when opened, ignores files it
// cannot use and starts empty with Seq 0 for the store to rebuild (the FAISS index):
// Discarded says why the files were not used, matching ErrCorrupt when they are damaged,
// and is nil when they were used or there were none. memory check reports it, which a
// rebuild that leaves nothing to see would otherwise hide.
type Discarder interface {
	Discarded() error
}

// Metric is the similarity an Index ranks by.
type Metric string

const (
	// Cosine similarity (vectors are normalised on insert and query). The default.
	Cosine Metric = "cosine"
	// InnerProduct ranks by the raw dot product.
	InnerProduct Metric = "ip"
)

// IndexConfig describes an Index to build. The zero value of each field is a sensible default.
type IndexConfig struct {
	Backend string // registered backend name; "" = "flat"
	Dim     int    // vector length (required)
	Metric  Metric // "" = Cosine
	Dir     string // where a Durable backend persists itself; "" = in memory
	// Factory is a FAISS index factory string ("Flat", "IVF1024,Flat", "HNSW32"); "" = "Flat".
	Factory string
	// Params are backend-specific tuning knobs (for example "nprobe", "efSearch").
	Params map[string]int
	// GPU asks a backend that can use a GPU to do so (FAISS with the "faissgpu" build tag).
	GPU bool
	// ReadOnly: a Durable backend reads the state persisted in Dir but never writes there
	// (a read-only store: other processes share the files). Changes stay in memory, and
	// Commit and Close keep nothing but the sequence number.
	ReadOnly bool
	// Rows, when set, is where a disk index with a Dir reads the float32 vectors it
	// rescores: it keeps no float32 rows of its own on disk (only codes, lists and ids;
	// the rows added since its last write stay in memory), so each vector is stored once,
	// by the caller. A runtime setting, not a build parameter: the store's manifest does
	// not record it. Other backends ignore it.
	Rows RowSource
}

// DefaultBackend is the backend used when IndexConfig.Backend is empty: the disk index,
// which persists itself in memory-mapped files (a store opens without reading its vectors)
// and searches exactly, with the flat index's results, while its rows fit comfortably in
// memory (binary codes and exact rescoring beyond; see [DiskIndex]).
const DefaultBackend = "disk"

// IndexFactory builds an Index from its configuration.
type IndexFactory func(cfg IndexConfig) (Index, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]IndexFactory{}
)

// RegisterIndex makes a backend available by name. It panics on an empty name, a nil factory
// or a duplicate, like database/sql.Register.
func RegisterIndex(name string, f IndexFactory) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if name == "" || f == nil {
		panic("vectorstore: RegisterIndex with empty name or nil factory")
	}
	if _, dup := registry[name]; dup {
		panic("vectorstore: RegisterIndex called twice for " + name)
	}
	registry[name] = f
}

// Backends lists the registered backend names, sorted.
func Backends() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NewIndex builds an Index with the backend cfg names.
func NewIndex(cfg IndexConfig) (Index, error) {
	if cfg.Backend == "" {
		cfg.Backend = DefaultBackend
	}
	if cfg.Metric == "" {
		cfg.Metric = Cosine
	}
	if cfg.Dim <= 0 {
		return nil, fmt.Errorf("%w: dim %d", ErrBadConfig, cfg.Dim)
	}
	registryMu.RLock()
	f := registry[cfg.Backend]
	registryMu.RUnlock()
	if f == nil {
		if cfg.Backend == FaissBackend && !faissBuilt {
			return nil, fmt.Errorf("%w %q (have %v): %w", ErrUnknownBackend, cfg.Backend, Backends(), ErrFaissNotBuilt)
		}
		return nil, fmt.Errorf("%w %q (have %v)", ErrUnknownBackend, cfg.Backend, Backends())
	}
	return f(cfg)
}
