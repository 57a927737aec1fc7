// Package memorygk adapts a memory store to Genkit for Go (github.com/firebase/genkit/go):
// [DefineRetriever] registers an ai.Retriever that searches a memory store, [Index] stores
// Genkit documents in it (Genkit 1.x has no indexer action; its own plugins index with a
// function, as this one does), and [FromEmbedder] and [DefineEmbedder] turn a Genkit
// ai.Embedder into the store's embedder and back.
//
//	import (
//		"github.com/agentmem/memory"
//		memorygk "github.com/agentmem/memory/adapters/genkit"
//		"github.com/firebase/genkit/go/ai"
//		"github.com/firebase/genkit/go/genkit"
//	)
//
// A retrieval's options (ai.WithConfig, or a retriever reference's config) are a
// [RetrieverOptions], a pointer to one, or its JSON form as a map (what the Genkit developer
// UI sends): the number of documents, the collection, metadata and text filters and a
// minimum score.
package memorygk

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/agentmem/memory"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
)

// Metadata keys with a meaning of their own. Index takes a string under IDKey as the
// document's id and one under TitleKey as its title, and does not store CollectionKey or
// ScoreKey; retrieved documents carry the result's id, collection, title and Relevance
// (0..1, see memory.Result) under them.
const (
	IDKey         = "id"
	TitleKey      = "title"
	CollectionKey = "collection"
	ScoreKey      = "score"
)

var (
	// ErrUnsupportedOption is returned for options of a type or value the adapter cannot
	// honour.
	ErrUnsupportedOption = errors.New("memorygk: unsupported option")
	// ErrUnsupportedContent is returned for a document with a part other than text (media).
	ErrUnsupportedContent = errors.New("memorygk: document part is not text")
	// ErrInvalidID is returned by Index for a document whose IDKey metadata is not a
	// non-empty string.
	ErrInvalidID = errors.New("memorygk: invalid document id in metadata")
)

// RetrieverOptions are the options of one retrieval.
type RetrieverOptions struct {
	// K is the number of documents (0: the retriever's default).
	K int `json:"k,omitempty"`
	// Collection is searched instead of the retriever's.
	Collection string `json:"collection,omitempty"`
	// Where filters on metadata, WhereDocument on the text (Chroma's operators).
	Where         memory.Where         `json:"where,omitempty"`
	WhereDocument memory.WhereDocument `json:"whereDocument,omitempty"`
	// MinScore drops documents whose score, the result's Relevance, is below it: in
	// [0, 1] in every mode (hybrid, BM25, dense, reranked), so 0.5 keeps exact and close
	// matches and drops unrelated documents (memory.WithMinRelevance).
	MinScore float64 `json:"minScore,omitempty"`
}

// Config configures a retriever defined by [DefineRetriever].
type Config struct {
	// Collection is searched when a retrieval names none ("": the default collection).
	Collection string
	// K is the number of documents when a retrieval gives none (0: a TopK in SearchOptions,
	// else 10).
	K int
	// SearchOptions apply to every search (the mode, a reranker, collapse...).
	SearchOptions []memory.SearchOption
}

// DefineRetriever registers, in g, a retriever named name (for example "memory/wiki")
// that searches m, and returns it. The caller keeps ownership of m (and closes it).
func DefineRetriever(g *genkit.Genkit, name string, m *memory.Memory, cfg Config) (ai.Retriever, error) {
	if m == nil || name == "" {
		return nil, fmt.Errorf("%w: DefineRetriever needs a name and a store", ErrUnsupportedOption)
	}
	if cfg.K < 0 {
		return nil, fmt.Errorf("%w: K %d", memory.ErrInvalidOption, cfg.K)
	}
	cfg.SearchOptions = append([]memory.SearchOption(nil), cfg.SearchOptions...)
	r := &retriever{mem: m, cfg: cfg}
	return genkit.DefineRetriever(g, name, &ai.RetrieverOptions{
		Label:        "memory: " + name,
		ConfigSchema: retrieverSchema,
	}, r.retrieve), nil
}

// retrieverSchema is the JSON schema of RetrieverOptions, shown by Genkit's tools.
var retrieverSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"k":             map[string]any{"type": "integer", "minimum": 0},
		"collection":    map[string]any{"type": "string"},
		"where":         map[string]any{"type": "object"},
		"whereDocument": map[string]any{"type": "object"},
		"minScore":      map[string]any{"type": "number", "minimum": 0, "description": "drop documents whose score (relevance, 0..1) is below it; 0.5 drops unrelated ones"},
	},
}

type retriever struct {
	mem *memory.Memory
	cfg Config
}

// options reads a retrieval's options.
func options(v any) (RetrieverOptions, error) {
	switch o := v.(type) {
	case nil:
		return RetrieverOptions{}, nil
	case RetrieverOptions:
		return o, nil
	case *RetrieverOptions:
		if o == nil {
			return RetrieverOptions{}, nil
		}
		return *o, nil
	case map[string]any:
		b, err := json.Marshal(o)
		if err != nil {
			return RetrieverOptions{}, fmt.Errorf("%w: %w", ErrUnsupportedOption, err)
		}
		var ro RetrieverOptions
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ro); err != nil {
			return RetrieverOptions{}, fmt.Errorf("%w: %w", ErrUnsupportedOption, err)
		}
		return ro, nil
	}
	return RetrieverOptions{}, fmt.Errorf("%w: options of type %T (want memorygk.RetrieverOptions)", ErrUnsupportedOption, v)
}

func (r *retriever) retrieve(ctx context.Context, req *ai.RetrieverRequest) (*ai.RetrieverResponse, error) {
	o, err := options(req.Options)
	if err != nil {
		return nil, err
	}
	if o.K < 0 {
		return nil, fmt.Errorf("%w: k %d", memory.ErrInvalidOption, o.K)
	}
	if o.MinScore < 0 || math.IsNaN(o.MinScore) || math.IsInf(o.MinScore, 0) {
		return nil, fmt.Errorf("%w: minScore %v", memory.ErrInvalidOption, o.MinScore)
	}
	if req.Query == nil {
		return nil, fmt.Errorf("%w: no query document", memory.ErrInvalidOption)
	}
	query, err := text(req.Query)
	if err != nil {
		return nil, err
	}
	so := r.cfg.SearchOptions[:len(r.cfg.SearchOptions):len(r.cfg.SearchOptions)]
	if r.cfg.K > 0 {
		so = append(so, memory.TopK(r.cfg.K))
	}
	if o.K > 0 {
		so = append(so, memory.TopK(o.K))
	}
	if o.MinScore > 0 {
		so = append(so, memory.WithMinRelevance(o.MinScore))
	}
	if o.Where != nil {
		so = append(so, memory.WithWhere(o.Where))
	}
	if o.WhereDocument != nil {
		so = append(so, memory.WithWhereDocument(o.WhereDocument))
	}
	col := r.cfg.Collection
	if o.Collection != "" {
		col = o.Collection
	}
	res, err := r.mem.Collection(col).Search(ctx, query, so...)
	if err != nil {
		return nil, err
	}
	out := &ai.RetrieverResponse{Documents: make([]*ai.Document, len(res))}
	for i, x := range res {
		md := make(map[string]any, len(x.Metadata)+4)
		for k, v := range x.Metadata {
			md[k] = v
		}
		md[IDKey] = x.ID
		md[CollectionKey] = x.Collection
		md[ScoreKey] = x.Relevance
		if x.Title != "" {
			md[TitleKey] = x.Title
		}
		out.Documents[i] = ai.DocumentFromText(x.Text, md)
	}
	return out, nil
}

// text is a document's text: its text parts, joined.
func text(d *ai.Document) (string, error) {
	var b strings.Builder
	for _, p := range d.Content {
		if p == nil {
			continue
		}
		if !p.IsText() {
			return "", fmt.Errorf("%w: %s part", ErrUnsupportedContent, p.ContentType)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// Index stores docs in collection ("": the default collection) of m, in one transaction
// (on error none is stored), replacing the documents of the same ids, and returns their
// ids in order: a document's IDKey metadata string, or a new random id. A string under
// TitleKey becomes its title; CollectionKey and ScoreKey are not stored (so retrieved
// documents can be indexed again); the rest of the metadata is stored.
func Index(ctx context.Context, m *memory.Memory, collection string, docs []*ai.Document) ([]string, error) {
	out := make([]memory.Document, len(docs))
	ids := make([]string, len(docs))
	for i, d := range docs {
		if d == nil {
			return nil, fmt.Errorf("%w: document %d is nil", memory.ErrEmptyText, i)
		}
		t, err := text(d)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		md := memory.Document{Text: t}
		for k, v := range d.Metadata {
			switch k {
			case IDKey:
				id, ok := v.(string)
				if !ok || id == "" {
					return nil, fmt.Errorf("document %d: %w: %q is %T %v", i, ErrInvalidID, IDKey, v, v)
				}
				md.ID = id
				continue
			case TitleKey:
				if s, ok := v.(string); ok {
					md.Title = s
					continue
				}
			case CollectionKey, ScoreKey:
				continue
			}
			if md.Metadata == nil {
				md.Metadata = make(map[string]any, len(d.Metadata))
			}
			md.Metadata[k] = v
		}
		if md.ID == "" {
			md.ID = rand.Text()
		}
		out[i], ids[i] = md, md.ID
	}
	if len(out) == 0 {
		return ids, nil
	}
	if err := m.Collection(collection).Upsert(ctx, out...); err != nil {
		return nil, err
	}
	return ids, nil
}
