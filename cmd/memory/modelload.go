package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/agentmem/memory/models"
	"github.com/agentmem/memory/rerank"
	"github.com/agentmem/memory/vectorstore"
)

// indexConfig builds the dense index configuration from the CLI flags.
func indexConfig(backend, factory string) vectorstore.IndexConfig {
	return vectorstore.IndexConfig{Backend: backend, Factory: factory}
}

// indexParams are the keys --index-param accepts: the disk index's lists (nlist, nprobe,
// probecut) and candidates (oversample, prefilter), FAISS's nprobe and efSearch.
var indexParams = []string{"nlist", "nprobe", "probecut", "oversample", "prefilter", "efSearch"}

// checkIndexParams refuses a key --index-param does not know and a negative value.
func checkIndexParams(p map[string]int) error {
	for _, k := range slices.Sorted(maps.Keys(p)) {
		if !slices.Contains(indexParams, k) {
			return usagef("--index-param %s: unknown parameter (one of %s)", k, strings.Join(indexParams, ", "))
		}
		if p[k] < 0 && k != "prefilter" && k != "probecut" { // (negative: off)
			return usagef("--index-param %s=%d: negative", k, p[k])
		}
	}
	return nil
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

// embedderSpec says which embedder to load and how.
type embedderSpec struct {
	// name is a model name, a directory, or "hash" / "hash:DIM" for the hashing embedder.
	name string
	// queryPrefix and passagePrefix override the model folder's prompts
	// (config_sentence_transformers.json) when set; nil keeps the folder's.
	queryPrefix, passagePrefix *string
	// device is where an ONNX model runs: "" or "cpu", "cuda" (an error without CUDA) or
	// "auto" (CUDA when ONNX Runtime has it, else the CPU).
	device string
	// preset is the ONNX model preset ("" or "auto": by the folder's name; e5, bge, none);
	// queryMaxTokens and passageMaxTokens override its token caps when > 0.
	preset                           string
	queryMaxTokens, passageMaxTokens int
}

// loadEmbedder loads an embedder by name (see embedderSpec).
func loadEmbedder(name string) (vectorstore.Embedder, error) {
	return loadEmbedderSpec(context.Background(), embedderSpec{name: name})
}

// loadOptions are the flags of spec as the embedder registry takes them.
func (spec embedderSpec) loadOptions() (vectorstore.LoadOptions, error) {
	if spec.queryMaxTokens < 0 || spec.passageMaxTokens < 0 {
		return vectorstore.LoadOptions{}, fmt.Errorf("embedder %q: --query-max-tokens/--passage-max-tokens must not be negative", spec.name)
	}
	// nil prefixes keep the model folder's prompts (config_sentence_transformers.json).
	return vectorstore.LoadOptions{ONNX: vectorstore.ONNXOptions{Device: spec.device, Preset: spec.preset,
		QueryMaxLength: spec.queryMaxTokens, PassageMaxLength: spec.passageMaxTokens,
		QueryPrefix: spec.queryPrefix, PassagePrefix: spec.passagePrefix}}, nil
}

// loadEmbedderSpec loads spec.name with the embedder registry (vectorstore.LoadEmbedder):
// "hash[:DIM]", "openai:MODEL/DIM", a model name or folder (a Model2Vec folder as a static
// embedder, any other as an ONNX bi-encoder), or any kind another package registered.
func loadEmbedderSpec(ctx context.Context, spec embedderSpec) (vectorstore.Embedder, error) {
	o, err := spec.loadOptions()
	if err != nil {
		return nil, err
	}
	return vectorstore.LoadEmbedder(ctx, spec.name, o)
}

// loadReranker loads a cross-encoder by name on device ("", "cpu", "cuda" or "auto").
func loadReranker(name, device string) (rerank.Reranker, error) {
	dir, err := modelDir(name)
	if err != nil {
		return nil, err
	}
	return rerank.NewCrossEncoder(context.Background(), dir, rerank.CrossEncoderOptions{Device: device})
}

// resolveEmbedder loads the embedder a store recorded (its identity and dimension) with the
// embedder registry, the flags of spec overriding what the identity records (an ONNX
// identity's preset, passage cap and passage prefix apply where the flags are unset). The
// store checks that the loaded embedder's identity and dimension match the record.
func resolveEmbedder(ctx context.Context, id string, dim int, spec embedderSpec) (vectorstore.Embedder, error) {
	spec.name = id
	o, err := spec.loadOptions()
	if err != nil {
		return nil, err
	}
	o.Recorded = true
	e, err := vectorstore.LoadEmbedder(ctx, id, o)
	if err != nil {
		return nil, fmt.Errorf("the store was built with embedder %q (dimension %d): %w", id, dim, err)
	}
	return e, nil
}
