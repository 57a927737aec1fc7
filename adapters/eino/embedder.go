package memoryeino

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentmem/memory/vectorstore"
	"github.com/cloudwego/eino/components/embedding"
)

// ErrBadEmbedding is returned when an eino embedder returns the wrong number of vectors or
// a vector of the wrong length.
var ErrBadEmbedding = errors.New("memoryeino: embedder returned a wrong number or length of vectors")

// Embedder is an eino embedding.Embedder used as the store's embedder: give it to
// memory.Open with memory.WithEmbedder. Its float64 vectors are stored as float32.
type Embedder struct {
	e    embedding.Embedder
	id   string
	dim  int
	opts []embedding.Option
}

var _ vectorstore.Embedder = (*Embedder)(nil)

// FromEmbedding wraps e as the store's embedder; opts are passed to each EmbedStrings call
// (embedding.WithModel...). id names the model (the store records it and refuses to mix
// the vectors of two models, so give each model and version its own); the dimension is
// found by embedding one probe text.
func FromEmbedding(ctx context.Context, e embedding.Embedder, id string, opts ...embedding.Option) (*Embedder, error) {
	if e == nil || id == "" {
		return nil, fmt.Errorf("%w: FromEmbedding needs an embedder and a model id", ErrUnsupportedOption)
	}
	em := &Embedder{e: e, id: id, opts: opts}
	vs, err := e.EmbedStrings(ctx, []string{"dimension probe"}, opts...)
	if err != nil {
		return nil, fmt.Errorf("memoryeino: probing the embedder's dimension: %w", err)
	}
	if len(vs) != 1 || len(vs[0]) == 0 {
		return nil, fmt.Errorf("%w: the probe gave %d vectors", ErrBadEmbedding, len(vs))
	}
	em.dim = len(vs[0])
	return em, nil
}

// ID is the model id given to FromEmbedding.
func (e *Embedder) ID() string { return e.id }

// Dim is the vector length.
func (e *Embedder) Dim() int { return e.dim }

// Embed embeds texts with EmbedStrings.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	vs, err := e.e.EmbedStrings(ctx, texts, e.opts...)
	if err != nil {
		return nil, err
	}
	if len(vs) != len(texts) {
		return nil, fmt.Errorf("%w: %d vectors for %d texts", ErrBadEmbedding, len(vs), len(texts))
	}
	out := make([][]float32, len(vs))
	for i, v := range vs {
		if len(v) != e.dim {
			return nil, fmt.Errorf("%w: vector %d has length %d, want %d", ErrBadEmbedding, i, len(v), e.dim)
		}
		out[i] = toFloat32(v)
	}
	return out, nil
}

// Embedding is the store's embedder (any vectorstore.Embedder: ONNX, static, OpenAI...) as
// an eino embedding.Embedder, for eino's embedding nodes and other eino indexers.
type Embedding struct {
	e vectorstore.Embedder
}

var _ embedding.Embedder = (*Embedding)(nil)

// ToEmbedding wraps e as an eino embedder.
func ToEmbedding(e vectorstore.Embedder) *Embedding { return &Embedding{e: e} }

// GetType names the component in eino's callbacks and graphs.
func (e *Embedding) GetType() string { return "Memory" }

// EmbedStrings embeds texts as passages. embedding.WithModel is refused unless it names
// the wrapped model (its ID): the model is fixed.
func (e *Embedding) EmbedStrings(ctx context.Context, texts []string, opts ...embedding.Option) ([][]float64, error) {
	co := embedding.GetCommonOptions(&embedding.Options{}, opts...)
	if co.Model != nil && *co.Model != e.e.ID() {
		return nil, fmt.Errorf("%w: model %q (this embedder is %q)", ErrUnsupportedOption, *co.Model, e.e.ID())
	}
	vs, err := e.e.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	out := make([][]float64, len(vs))
	for i, v := range vs {
		out[i] = toFloat64(v)
	}
	return out, nil
}
