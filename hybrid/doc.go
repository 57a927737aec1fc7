// Package hybrid composes retrievers (BM25, dense vectors, any other) and fuses their ranked
// lists into one: [Retrieve] runs a set of [Retriever]s for a query, and Reciprocal Rank
// Fusion ([RRF]) and weighted score fusion ([WeightedScore]) fuse the lists as pure
// functions that explain every fused score; [Fuse] builds a fusion of your own. The
// store's BM25 engine is internal to the module (internal/bm25).
package hybrid
