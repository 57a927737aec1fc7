// Package memoryeino adapts a memory store to eino (github.com/cloudwego/eino): [Retriever]
// is a retriever.Retriever, [Indexer] an indexer.Indexer, and [FromEmbedding] and
// [ToEmbedding] turn an eino embedding.Embedder into the store's embedder and back. Each
// is a component eino's compose chains and graphs take (AppendRetriever, AppendIndexer,
// AppendEmbedding).
//
//	import (
//		"github.com/agentmem/memory"
//		memoryeino "github.com/agentmem/memory/adapters/eino"
//		"github.com/cloudwego/eino/components/retriever"
//	)
//
// Mapping of eino's options:
//   - retriever.WithTopK sets the number of documents (0 or none: the Retriever's TopK);
//   - retriever.WithScoreThreshold drops documents whose score is below it: the result's
//     Relevance, in [0, 1] in every mode (hybrid, BM25, dense, reranked; see
//     memory.Result), so 0.5 keeps exact and close matches and drops unrelated documents
//     (memory.WithMinRelevance);
//   - retriever.WithIndex and retriever.WithSubIndex name the collection (the sub-index
//     when both are given), as indexer.WithSubIndexes does for the Indexer (one name);
//   - filters go through this package's [WithWhere], [WithWhereDocument] and
//     [WithSearchOptions], eino implementation-specific options;
//   - retriever.WithEmbedding, retriever.WithDSLInfo and indexer.WithEmbedding are refused
//     with [ErrUnsupportedOption]: the store embeds with the embedder it was opened with
//     (see [FromEmbedding]).
package memoryeino

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/agentmem/memory"
	"github.com/cloudwego/eino/components/retriever"
	"github.com/cloudwego/eino/schema"
)

// Metadata keys with a meaning of their own: search results carry the result's title and
// collection under them, and the Indexer stores a string under TitleKey as the document's
// title (CollectionKey is not stored: the sub-index names the collection).
const (
	TitleKey      = "title"
	CollectionKey = "collection"
)

// ErrUnsupportedOption is returned for an eino option the store cannot honour.
var ErrUnsupportedOption = errors.New("memoryeino: unsupported option")

// RetrieverConfig configures a [Retriever].
type RetrieverConfig struct {
	// Collection is searched when a call names no index ("": the default collection).
	Collection string
	// TopK is the number of documents when a call gives none (0: a TopK in SearchOptions,
	// else 10).
	TopK int
	// SearchOptions apply to every search (the mode, a reranker, collapse...), before the
	// options of each call.
	SearchOptions []memory.SearchOption
}

// Retriever is an eino retriever that searches a memory store. It is safe for concurrent
// use, as the memory store is.
type Retriever struct {
	mem *memory.Memory
	cfg RetrieverConfig
}

var _ retriever.Retriever = (*Retriever)(nil)

// NewRetriever returns a Retriever on m (cfg nil: the defaults). The caller keeps ownership
// of m (and closes it).
func NewRetriever(m *memory.Memory, cfg *RetrieverConfig) (*Retriever, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: NewRetriever needs a store", ErrUnsupportedOption)
	}
	r := &Retriever{mem: m}
	if cfg != nil {
		r.cfg = *cfg
		r.cfg.SearchOptions = append([]memory.SearchOption(nil), cfg.SearchOptions...)
	}
	if r.cfg.TopK < 0 {
		return nil, fmt.Errorf("%w: TopK %d", memory.ErrInvalidOption, r.cfg.TopK)
	}
	return r, nil
}

// GetType names the component in eino's callbacks and graphs.
func (r *Retriever) GetType() string { return "Memory" }

// searchOptions are this package's implementation-specific retriever options.
type searchOptions struct {
	opts []memory.SearchOption
}

// WithWhere filters a retrieval on metadata (an eino implementation-specific option; pass
// it to Retrieve, or to a compiled chain with compose.WithRetrieverOption).
func WithWhere(w memory.Where) retriever.Option {
	return retriever.WrapImplSpecificOptFn(func(o *searchOptions) { o.opts = append(o.opts, memory.WithWhere(w)) })
}

// WithWhereDocument filters a retrieval on the documents' text.
func WithWhereDocument(w memory.WhereDocument) retriever.Option {
	return retriever.WrapImplSpecificOptFn(func(o *searchOptions) {
		o.opts = append(o.opts, memory.WithWhereDocument(w))
	})
}

// WithSearchOptions adds any of the store's search options to a retrieval.
func WithSearchOptions(opts ...memory.SearchOption) retriever.Option {
	return retriever.WrapImplSpecificOptFn(func(o *searchOptions) { o.opts = append(o.opts, opts...) })
}

// Retrieve returns the documents of the collection that best match query, best first.
// Each document's ID is the result's id, Content the matching chunk of its text, Score()
// the result's Relevance (0..1; the store's ranking score, RRF's in a hybrid search,
// orders the documents, so a hybrid search's scores need not decrease down the list), and
// MetaData the stored metadata with TitleKey (when it has a title) and CollectionKey.
func (r *Retriever) Retrieve(ctx context.Context, query string, opts ...retriever.Option) ([]*schema.Document, error) {
	co := retriever.GetCommonOptions(&retriever.Options{}, opts...)
	if co.Embedding != nil {
		return nil, fmt.Errorf("%w: WithEmbedding (the store embeds with the embedder it was opened with)", ErrUnsupportedOption)
	}
	if co.DSLInfo != nil {
		return nil, fmt.Errorf("%w: WithDSLInfo (use WithWhere and WithWhereDocument)", ErrUnsupportedOption)
	}
	so := r.cfg.SearchOptions[:len(r.cfg.SearchOptions):len(r.cfg.SearchOptions)]
	if r.cfg.TopK > 0 {
		so = append(so, memory.TopK(r.cfg.TopK))
	}
	if co.TopK != nil {
		if *co.TopK < 0 {
			return nil, fmt.Errorf("%w: TopK %d", memory.ErrInvalidOption, *co.TopK)
		}
		if *co.TopK > 0 {
			so = append(so, memory.TopK(*co.TopK))
		}
	}
	if th := co.ScoreThreshold; th != nil {
		if *th < 0 || math.IsNaN(*th) || math.IsInf(*th, 0) {
			return nil, fmt.Errorf("%w: score threshold %v", memory.ErrInvalidOption, *th)
		}
		so = append(so, memory.WithMinRelevance(*th))
	}
	impl := retriever.GetImplSpecificOptions(&searchOptions{}, opts...)
	so = append(so, impl.opts...)

	col := r.cfg.Collection
	if co.Index != nil && *co.Index != "" {
		col = *co.Index
	}
	if co.SubIndex != nil && *co.SubIndex != "" {
		col = *co.SubIndex
	}
	res, err := r.mem.Collection(col).Search(ctx, query, so...)
	if err != nil {
		return nil, err
	}
	out := make([]*schema.Document, len(res))
	for i, x := range res {
		md := make(map[string]any, len(x.Metadata)+3)
		for k, v := range x.Metadata {
			md[k] = v
		}
		md[CollectionKey] = x.Collection
		if x.Title != "" {
			md[TitleKey] = x.Title
		}
		d := &schema.Document{ID: x.ID, Content: x.Text, MetaData: md}
		out[i] = d.WithScore(x.Relevance)
	}
	return out, nil
}
