// Package rerank reorders retrieved passages with a cross-encoder.
package rerank

import "context"

// Reranker scores (query, passage) pairs. Scores are raw logits: higher is more relevant.
// Implementations must be safe for concurrent use.
type Reranker interface {
	Score(ctx context.Context, query string, passages []string) ([]float32, error)
}
