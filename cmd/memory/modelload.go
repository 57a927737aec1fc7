package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentmem/memory/models"
	"github.com/agentmem/memory/rerank"
	"github.com/agentmem/memory/vectorstore"
)

// indexConfig builds the dense index configuration from the CLI flags.
func indexConfig(backend, factory string) vectorstore.IndexConfig {
	return vectorstore.IndexConfig{Backend: backend, Factory: factory}
}

// modelDir resolves a model name or directory: an existing directory is used as it is,
// else the name is looked up in $MEMORY_MODELS and the model cache (see `memory models`).
func modelDir(name string) (string, error) {
	if st, err := os.Stat(name); err == nil && st.IsDir() {
		return name, nil
	}
	dir, err := models.Resolve(name)
	if err != nil {
		return "", fmt.Errorf("model %q: %w (pull it with `memory models pull %s`, or point MEMORY_MODELS at a folder holding it)", name, err, name)
	}
	return dir, nil
}

// loadEmbedder loads a Model2Vec folder (model.safetensors) as a static embedder and any
// other folder as an ONNX bi-encoder.
func loadEmbedder(name string) (vectorstore.Embedder, error) {
	dir, err := modelDir(name)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err == nil {
		return vectorstore.NewStaticEmbedder(dir)
	}
	return vectorstore.NewONNXEmbedder(context.Background(), dir, vectorstore.ONNXOptions{})
}

func loadReranker(name string) (rerank.Reranker, error) {
	dir, err := modelDir(name)
	if err != nil {
		return nil, err
	}
	return rerank.NewCrossEncoder(context.Background(), dir, rerank.CrossEncoderOptions{})
}
