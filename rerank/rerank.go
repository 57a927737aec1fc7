// Package rerank reorders retrieved passages with a cross-encoder (ONNX) or a chat model
// behind an OpenAI-compatible endpoint (LLMReranker, pointwise or listwise).
package rerank

import "context"

// Reranker scores (query, passage) pairs. Scores are raw logits: higher is more relevant.
// Implementations must be safe for concurrent use.
type Reranker interface {
	Score(ctx context.Context, query string, passages []string) ([]float32, error)
}
