// Package rank holds what every retriever returns: a ranked hit. The keyword index
// (hybrid's BM25), the vector indexes (vectorstore) and fusion all speak in [Hit], so a
// retriever's answer is a fusion list's input with no conversion.
package rank

// Hit is one entry of a ranked list, best first: its rank is its index plus one.
type Hit struct {
	// ID names the hit: a document or unit id, or whatever key the retriever ranks.
	ID string
	// Score is the retriever's raw score (BM25, cosine, inner product, ...); higher is
	// better. Retrievers that compute in float32 (the vector indexes) widen exactly.
	Score float64
}
