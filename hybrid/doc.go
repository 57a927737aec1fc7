// Package hybrid fuses the ranked lists of several retrievers (BM25, dense vectors, any
// other) into one: Reciprocal Rank Fusion ([RRF]) and weighted score fusion
// ([WeightedScore]) as pure functions that explain every fused score, and [Fuse] for a
// fusion of your own. The store's BM25 engine itself is internal to the module.
package hybrid
