package main

import (
	"fmt"

	"github.com/agentmem/memory/rerank"
	"github.com/agentmem/memory/vectorstore"
)

// indexConfig builds the dense index configuration from the CLI flags.
func indexConfig(backend, factory string) vectorstore.IndexConfig {
	return vectorstore.IndexConfig{Backend: backend, Factory: factory}
}

func loadEmbedder(name string) (vectorstore.Embedder, error) {
	return nil, fmt.Errorf("embedder %q: model loading is not wired yet", name)
}

func loadReranker(name string) (rerank.Reranker, error) {
	return nil, fmt.Errorf("reranker %q: model loading is not wired yet", name)
}
