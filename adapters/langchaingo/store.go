// Package memorylc adapts a memory store to langchaingo: [Store] is a
// vectorstores.VectorStore (and, through [Store.Retriever], a schema.Retriever), and
// [FromEmbeddings] and [ToEmbeddings] turn a langchaingo embeddings.Embedder into the
// store's embedder and back.
//
// The package is named memorylc, not memory, so that it sits beside langchaingo's own
// memory package (conversation memory) and the core package in one import block:
//
//	import (
//		"github.com/agentmem/memory"
//		memorylc "github.com/agentmem/memory/adapters/langchaingo"
//		"github.com/tmc/langchaingo/chains"
//		"github.com/tmc/langchaingo/vectorstores"
//	)
//
// Mapping of langchaingo's options:
//   - vectorstores.WithNameSpace names the collection (default: the store's default
//     collection, or the one given to [New] with [WithCollection]);
//   - vectorstores.WithFilters takes a memory.Where, a map[string]any (read as a Where) or a
//     [Filter] (a Where and a WhereDocument);
//   - vectorstores.WithScoreThreshold drops documents whose score is below it: the
//     result's Relevance, in [0, 1] in every mode (hybrid, BM25, dense, reranked; see
//     memory.Result), so 0.5 keeps exact and close matches and drops unrelated documents
//     (memory.WithMinRelevance);
//   - vectorstores.WithDeduplicater skips, in AddDocuments, the documents it reports;
//   - vectorstores.WithEmbedder is refused with [ErrUnsupportedOption]: the store embeds
//     with the embedder it was opened with (see [FromEmbeddings]).
package memorylc

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"

	"github.com/agentmem/memory"
	"github.com/tmc/langchaingo/schema"
	"github.com/tmc/langchaingo/vectorstores"
)

// Metadata keys with a meaning of their own. In AddDocuments a string under IDKey becomes
// the document's ID and one under TitleKey its Title (neither is stored as metadata), and
// CollectionKey is dropped (the namespace names the collection). In search results the three
// are set from the result.
const (
	IDKey         = "id"
	TitleKey      = "title"
	CollectionKey = "collection"
)

var (
	// ErrUnsupportedOption is returned for a langchaingo option the store cannot honour
	// (vectorstores.WithEmbedder).
	ErrUnsupportedOption = errors.New("memorylc: unsupported option")
	// ErrInvalidID is returned by AddDocuments for a document whose IDKey metadata is not
	// a non-empty string.
	ErrInvalidID = errors.New("memorylc: invalid document id in metadata")
)

// Filter is the filter value of vectorstores.WithFilters when a search filters on the
// document's text as well as its metadata.
type Filter struct {
	Where         memory.Where
	WhereDocument memory.WhereDocument
}

// Store is a langchaingo vector store backed by a memory store. It is safe for concurrent
// use, as the memory store is.
type Store struct {
	mem        *memory.Memory
	collection string
	search     []memory.SearchOption
	upsert     bool
}

var _ vectorstores.VectorStore = (*Store)(nil)

// Option configures a [Store].
type Option func(*Store)

// WithCollection sets the collection used when a call gives no namespace ("": the store's
// default collection).
func WithCollection(name string) Option { return func(s *Store) { s.collection = name } }

// WithSearchOptions adds options to every search (the mode, a reranker, collapse...); the
// options of each call are applied after them.
func WithSearchOptions(opts ...memory.SearchOption) Option {
	return func(s *Store) { s.search = append(s.search, opts...) }
}

// WithUpsert makes AddDocuments replace documents whose id is already stored, rather than
// failing with memory.ErrDuplicateID.
func WithUpsert() Option { return func(s *Store) { s.upsert = true } }

// New returns a Store on m. The caller keeps ownership of m (and closes it).
func New(m *memory.Memory, opts ...Option) *Store {
	s := &Store{mem: m}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Memory is the store s reads and writes.
func (s *Store) Memory() *memory.Memory { return s.mem }

// Retriever returns a schema.Retriever that searches the store for numDocs documents with
// the given options (langchaingo's vectorstores.ToRetriever).
func (s *Store) Retriever(numDocs int, opts ...vectorstores.Option) vectorstores.Retriever {
	return vectorstores.ToRetriever(s, numDocs, opts...)
}

func (s *Store) options(opts []vectorstores.Option) (vectorstores.Options, error) {
	var o vectorstores.Options
	for _, fn := range opts {
		fn(&o)
	}
	if o.Embedder != nil {
		return o, fmt.Errorf("%w: WithEmbedder (the store embeds with the embedder it was opened with)", ErrUnsupportedOption)
	}
	return o, nil
}

func (s *Store) coll(o vectorstores.Options) *memory.Collection {
	if o.NameSpace != "" {
		return s.mem.Collection(o.NameSpace)
	}
	return s.mem.Collection(s.collection)
}

// AddDocuments stores docs in the namespace's collection and returns their ids, in order
// (the documents skipped by a Deduplicater have none). A document's id is its IDKey
// metadata string when it has one, else a new random id. The documents are stored in one
// transaction: on error none is.
func (s *Store) AddDocuments(ctx context.Context, docs []schema.Document, opts ...vectorstores.Option) ([]string, error) {
	o, err := s.options(opts)
	if err != nil {
		return nil, err
	}
	out := make([]memory.Document, 0, len(docs))
	ids := make([]string, 0, len(docs))
	for i, d := range docs {
		if o.Deduplicater != nil && o.Deduplicater(ctx, d) {
			continue
		}
		md, err := toDocument(d)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		out = append(out, md)
		ids = append(ids, md.ID)
	}
	if len(out) == 0 {
		return ids, nil
	}
	c := s.coll(o)
	if s.upsert {
		err = c.Upsert(ctx, out...)
	} else {
		err = c.Add(ctx, out...)
	}
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// toDocument converts a langchaingo document (see IDKey, TitleKey, CollectionKey).
func toDocument(d schema.Document) (memory.Document, error) {
	md := memory.Document{Text: d.PageContent}
	if len(d.Metadata) > 0 {
		md.Metadata = make(map[string]any, len(d.Metadata))
	}
	for k, v := range d.Metadata {
		switch k {
		case IDKey:
			id, ok := v.(string)
			if !ok || id == "" {
				return md, fmt.Errorf("%w: %q is %T %v", ErrInvalidID, IDKey, v, v)
			}
			md.ID = id
		case TitleKey:
			t, ok := v.(string)
			if !ok {
				md.Metadata[k] = v // not a title: kept as metadata
				continue
			}
			md.Title = t
		case CollectionKey:
		default:
			md.Metadata[k] = v
		}
	}
	if md.ID == "" {
		md.ID = rand.Text()
	}
	return md, nil
}

// SimilaritySearch returns up to numDocuments documents of the namespace's collection for
// query, best first (numDocuments 0: a TopK given to WithSearchOptions, else 10). Each
// document's Score is the result's Relevance (0..1; the store's ranking score, RRF's in a
// hybrid search, orders the documents, so a hybrid search's Scores need not decrease
// down the list) and its metadata holds the stored metadata with
// IDKey, CollectionKey and (when it has one) TitleKey. PageContent is the matching chunk of
// a long document.
func (s *Store) SimilaritySearch(ctx context.Context, query string, numDocuments int, opts ...vectorstores.Option) ([]schema.Document, error) {
	o, err := s.options(opts)
	if err != nil {
		return nil, err
	}
	if numDocuments < 0 {
		return nil, fmt.Errorf("%w: numDocuments %d", memory.ErrInvalidOption, numDocuments)
	}
	th := float64(o.ScoreThreshold)
	if th < 0 || math.IsNaN(th) || math.IsInf(th, 0) {
		return nil, fmt.Errorf("%w: score threshold %v", memory.ErrInvalidOption, o.ScoreThreshold)
	}
	so := s.search[:len(s.search):len(s.search)]
	if numDocuments > 0 {
		so = append(so, memory.TopK(numDocuments))
	}
	if th > 0 {
		so = append(so, memory.WithMinRelevance(th))
	}
	fo, err := filterOptions(o.Filters)
	if err != nil {
		return nil, err
	}
	so = append(so, fo...)
	res, err := s.coll(o).Search(ctx, query, so...)
	if err != nil {
		return nil, err
	}
	out := make([]schema.Document, len(res))
	for i, r := range res {
		out[i] = fromResult(r)
	}
	return out, nil
}

// filterOptions maps WithFilters' value to the store's filter options.
func filterOptions(f any) ([]memory.SearchOption, error) {
	switch f := f.(type) {
	case nil:
		return nil, nil
	case memory.Where:
		return []memory.SearchOption{memory.WithWhere(f)}, nil
	case map[string]any:
		return []memory.SearchOption{memory.WithWhere(f)}, nil
	case Filter:
		return []memory.SearchOption{memory.WithWhere(f.Where), memory.WithWhereDocument(f.WhereDocument)}, nil
	case *Filter:
		if f == nil {
			return nil, nil
		}
		return filterOptions(*f)
	}
	return nil, fmt.Errorf("%w: filters of type %T (want memory.Where, map[string]any or memorylc.Filter)", memory.ErrInvalidFilter, f)
}

// fromResult converts a search result (see SimilaritySearch).
func fromResult(r memory.Result) schema.Document {
	md := make(map[string]any, len(r.Metadata)+3)
	for k, v := range r.Metadata {
		md[k] = v
	}
	md[IDKey] = r.ID
	md[CollectionKey] = r.Collection
	if r.Title != "" {
		md[TitleKey] = r.Title
	}
	return schema.Document{PageContent: r.Text, Metadata: md, Score: float32(r.Relevance)}
}
