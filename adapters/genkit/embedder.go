package memorygk

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentmem/memory/vectorstore"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
)

// ErrBadEmbedding is returned when a Genkit embedder returns the wrong number of vectors or
// a vector of the wrong length.
var ErrBadEmbedding = errors.New("memorygk: embedder returned a wrong number or length of vectors")

// Embedder is a Genkit ai.Embedder used as the store's embedder: give it to memory.Open with
// memory.WithEmbedder.
type Embedder struct {
	e    ai.Embedder
	id   string
	dim  int
	opts any
}

var _ vectorstore.Embedder = (*Embedder)(nil)

// FromEmbedder wraps e as the store's embedder; options go with each request (the
// embedder's config). id names the model (the store records it and refuses to mix the
// vectors of two models, so give each model and version its own); the dimension is found
// by embedding one probe text.
func FromEmbedder(ctx context.Context, e ai.Embedder, id string, options any) (*Embedder, error) {
	if e == nil || id == "" {
		return nil, fmt.Errorf("%w: FromEmbedder needs an embedder and a model id", ErrUnsupportedOption)
	}
	em := &Embedder{e: e, id: id, opts: options}
	vs, err := em.embed(ctx, []string{"dimension probe"})
	if err != nil {
		return nil, fmt.Errorf("memorygk: probing the embedder's dimension: %w", err)
	}
	if len(vs[0]) == 0 {
		return nil, fmt.Errorf("%w: the probe vector is empty", ErrBadEmbedding)
	}
	em.dim = len(vs[0])
	return em, nil
}

// ID is the model id given to FromEmbedder.
func (e *Embedder) ID() string { return e.id }

// Dim is the vector length.
func (e *Embedder) Dim() int { return e.dim }

// Embed embeds texts, one Genkit text document each.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	vs, err := e.embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	for i, v := range vs {
		if len(v) != e.dim {
			return nil, fmt.Errorf("%w: vector %d has length %d, want %d", ErrBadEmbedding, i, len(v), e.dim)
		}
	}
	return vs, nil
}

func (e *Embedder) embed(ctx context.Context, texts []string) ([][]float32, error) {
	req := &ai.EmbedRequest{Input: make([]*ai.Document, len(texts)), Options: e.opts}
	for i, t := range texts {
		req.Input[i] = ai.DocumentFromText(t, nil)
	}
	resp, err := e.e.Embed(ctx, req)
	if err != nil {
		return nil, err
	}
	if resp == nil || len(resp.Embeddings) != len(texts) {
		n := 0
		if resp != nil {
			n = len(resp.Embeddings)
		}
		return nil, fmt.Errorf("%w: %d embeddings for %d texts", ErrBadEmbedding, n, len(texts))
	}
	out := make([][]float32, len(texts))
	for i, x := range resp.Embeddings {
		if x == nil {
			return nil, fmt.Errorf("%w: embedding %d is nil", ErrBadEmbedding, i)
		}
		out[i] = x.Embedding
	}
	return out, nil
}

// DefineEmbedder registers, in g, the store's embedder e (any vectorstore.Embedder: ONNX,
// static, OpenAI...) as a Genkit embedder named name, and returns it. Each input document
// is embedded as a passage from its text parts; media parts are ErrUnsupportedContent.
func DefineEmbedder(g *genkit.Genkit, name string, e vectorstore.Embedder) (ai.Embedder, error) {
	if e == nil || name == "" {
		return nil, fmt.Errorf("%w: DefineEmbedder needs a name and an embedder", ErrUnsupportedOption)
	}
	fn := func(ctx context.Context, req *ai.EmbedRequest) (*ai.EmbedResponse, error) {
		texts := make([]string, len(req.Input))
		for i, d := range req.Input {
			if d == nil {
				return nil, fmt.Errorf("%w: input %d is nil", ErrUnsupportedContent, i)
			}
			t, err := text(d)
			if err != nil {
				return nil, fmt.Errorf("input %d: %w", i, err)
			}
			texts[i] = t
		}
		vs, err := e.Embed(ctx, texts)
		if err != nil {
			return nil, err
		}
		resp := &ai.EmbedResponse{Embeddings: make([]*ai.Embedding, len(vs))}
		for i, v := range vs {
			resp.Embeddings[i] = &ai.Embedding{Embedding: v}
		}
		return resp, nil
	}
	return genkit.DefineEmbedder(g, name, &ai.EmbedderOptions{Label: e.ID(), Dimensions: e.Dim()}, fn), nil
}
