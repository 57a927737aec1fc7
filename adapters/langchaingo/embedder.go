package memorylc

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentmem/memory/vectorstore"
	"github.com/tmc/langchaingo/embeddings"
)

// ErrBadEmbedding is returned when a langchaingo embedder returns the wrong number of
// vectors or a vector of the wrong length.
var ErrBadEmbedding = errors.New("memorylc: embedder returned a wrong number or length of vectors")

// Embedder is a langchaingo embeddings.Embedder used as the store's embedder: give it to
// memory.Open with memory.WithEmbedder. Passages go through EmbedDocuments and search
// queries through EmbedQuery.
type Embedder struct {
	e   embeddings.Embedder
	id  string
	dim int
}

var (
	_ vectorstore.Embedder      = (*Embedder)(nil)
	_ vectorstore.QueryEmbedder = (*Embedder)(nil)
)

// FromEmbeddings wraps e as the store's embedder. id names the model (the store records it
// and refuses to mix the vectors of two models, so give each model and version its own);
// the dimension is found by embedding one probe query.
func FromEmbeddings(ctx context.Context, e embeddings.Embedder, id string) (*Embedder, error) {
	if e == nil || id == "" {
		return nil, fmt.Errorf("%w: FromEmbeddings needs an embedder and a model id", ErrUnsupportedOption)
	}
	v, err := e.EmbedQuery(ctx, "dimension probe")
	if err != nil {
		return nil, fmt.Errorf("memorylc: probing the embedder's dimension: %w", err)
	}
	if len(v) == 0 {
		return nil, fmt.Errorf("%w: the probe vector is empty", ErrBadEmbedding)
	}
	return &Embedder{e: e, id: id, dim: len(v)}, nil
}

// ID is the model id given to FromEmbeddings.
func (e *Embedder) ID() string { return e.id }

// Dim is the vector length.
func (e *Embedder) Dim() int { return e.dim }

// Embed embeds passages with EmbedDocuments.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	vs, err := e.e.EmbedDocuments(ctx, texts)
	if err != nil {
		return nil, err
	}
	if len(vs) != len(texts) {
		return nil, fmt.Errorf("%w: %d vectors for %d texts", ErrBadEmbedding, len(vs), len(texts))
	}
	for i, v := range vs {
		if len(v) != e.dim {
			return nil, fmt.Errorf("%w: vector %d has length %d, want %d", ErrBadEmbedding, i, len(v), e.dim)
		}
	}
	return vs, nil
}

// EmbedQuery embeds a search query with EmbedQuery.
func (e *Embedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	v, err := e.e.EmbedQuery(ctx, text)
	if err != nil {
		return nil, err
	}
	if len(v) != e.dim {
		return nil, fmt.Errorf("%w: query vector has length %d, want %d", ErrBadEmbedding, len(v), e.dim)
	}
	return v, nil
}

// Embeddings is the store's embedder (any vectorstore.Embedder: ONNX, static, OpenAI...)
// as a langchaingo embeddings.Embedder.
type Embeddings struct {
	e vectorstore.Embedder
}

var _ embeddings.Embedder = (*Embeddings)(nil)

// ToEmbeddings wraps e as a langchaingo embedder.
func ToEmbeddings(e vectorstore.Embedder) *Embeddings { return &Embeddings{e: e} }

// EmbedDocuments embeds passages.
func (e *Embeddings) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	return e.e.Embed(ctx, texts)
}

// EmbedQuery embeds a search query (with the model's query form when it has one).
func (e *Embeddings) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	vs, err := vectorstore.EmbedQueries(ctx, e.e, []string{text})
	if err != nil {
		return nil, err
	}
	if len(vs) != 1 {
		return nil, fmt.Errorf("%w: %d vectors for one query", ErrBadEmbedding, len(vs))
	}
	return vs[0], nil
}
