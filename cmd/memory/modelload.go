package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

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

// hashPrefix names the model-free hashing embedder on the command line.
const hashPrefix = "hash"

// loadEmbedder loads an embedder by name (see embedderSpec).
func loadEmbedder(name string) (vectorstore.Embedder, error) {
	return loadEmbedderSpec(context.Background(), embedderSpec{name: name})
}

// isStaticModelDir reports whether dir holds a Model2Vec (static) model: a
// model.safetensors file, or a config.json whose model_type is "model2vec". Such a model
// averages the word pieces of a text: it never sees [CLS] or [SEP].
func isStaticModelDir(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err == nil {
		return true
	}
	data, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return false
	}
	var cfg struct {
		ModelType string `json:"model_type"`
	}
	return json.Unmarshal(data, &cfg) == nil && cfg.ModelType == "model2vec"
}

// loadEmbedderSpec loads "hash[:DIM]" as the hashing embedder, a Model2Vec folder (see
// isStaticModelDir) as a static embedder and any other folder as an ONNX bi-encoder.
func loadEmbedderSpec(ctx context.Context, spec embedderSpec) (vectorstore.Embedder, error) {
	if spec.name == hashPrefix || strings.HasPrefix(spec.name, hashPrefix+":") {
		dim := 0
		if d, ok := strings.CutPrefix(spec.name, hashPrefix+":"); ok {
			n, err := strconv.Atoi(d)
			if err != nil || n <= 0 || n > 1<<16 {
				return nil, fmt.Errorf("embedder %q: want hash or hash:DIM with 0 < DIM <= 65536", spec.name)
			}
			dim = n
		}
		return vectorstore.NewHashEmbedder(dim), nil
	}
	if spec.queryMaxTokens < 0 || spec.passageMaxTokens < 0 {
		return nil, fmt.Errorf("embedder %q: --query-max-tokens/--passage-max-tokens must not be negative", spec.name)
	}
	dir, err := modelDir(spec.name)
	if err != nil {
		return nil, err
	}
	if isStaticModelDir(dir) {
		if spec.queryPrefix != nil || spec.passagePrefix != nil {
			return nil, fmt.Errorf("embedder %q: --query-prefix/--passage-prefix apply to ONNX models only", spec.name)
		}
		if (spec.preset != "" && spec.preset != "auto") || spec.queryMaxTokens > 0 || spec.passageMaxTokens > 0 {
			return nil, fmt.Errorf("embedder %q: --model-preset/--query-max-tokens/--passage-max-tokens apply to ONNX models only", spec.name)
		}
		return vectorstore.NewStaticEmbedder(dir, vectorstore.StaticOptions{})
	}
	opts := vectorstore.ONNXOptions{Device: spec.device, Preset: spec.preset,
		QueryMaxLength: spec.queryMaxTokens, PassageMaxLength: spec.passageMaxTokens}
	setPrefixes(&opts, spec.queryPrefix, spec.passagePrefix)
	return vectorstore.NewONNXEmbedder(ctx, dir, opts)
}

// loadReranker loads a cross-encoder by name on device ("", "cpu", "cuda" or "auto").
func loadReranker(name, device string) (rerank.Reranker, error) {
	dir, err := modelDir(name)
	if err != nil {
		return nil, err
	}
	return rerank.NewCrossEncoder(context.Background(), dir, rerank.CrossEncoderOptions{Device: device})
}

// recordedModel maps an embedder identity recorded in a store's manifest back to the name
// the CLI loads it by: "hash-bigram-v1/DIM" -> "hash:DIM", "model2vec:NAME@sha256:..." and
// "NAME@sha256:..." -> NAME.
func recordedModel(id string) (string, bool) {
	if d, ok := strings.CutPrefix(id, "hash-bigram-v1/"); ok {
		if n, err := strconv.Atoi(d); err == nil && n > 0 {
			return hashPrefix + ":" + d, true
		}
		return "", false
	}
	id = strings.TrimPrefix(id, "model2vec:")
	name, _, ok := strings.Cut(id, "@")
	if !ok || name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return "", false
	}
	return name, true
}

// plainModelName reports whether id is a bare model name (no digest, no path), as
// `index --embedder-id` records it for vectors imported without their model.
func plainModelName(id string) bool {
	return id != "" && id != "." && id != ".." && !strings.ContainsAny(id, `/\@`)
}

// resolveEmbedder loads the embedder a store recorded (its identity and dimension), with
// the query prefix of spec (the preset's or the model folder's own when unset) and the
// preset, passage cap and passage prefix the identity records (unless the flags say
// otherwise; an identity without a preset is a store made without one, so none is used).
// The store checks that the loaded embedder's identity and dimension match the record.
func resolveEmbedder(ctx context.Context, id string, dim int, spec embedderSpec) (vectorstore.Embedder, error) {
	name, ok := recordedModel(id)
	if !ok && plainModelName(id) {
		name, ok = id, true // vectors imported under the model name the user gave (index --embedder-id)
	}
	if !ok {
		return nil, fmt.Errorf("the store was built with embedder %q (dimension %d), which the CLI cannot load by name: pass --embedder", id, dim)
	}
	spec.name = name
	if p, ok := recordedPassagePrefix(id); ok && spec.passagePrefix == nil {
		spec.passagePrefix = &p
	}
	if rec, ok := vectorstore.ParseONNXIdentity(id); ok {
		if spec.preset == "" || spec.preset == "auto" {
			spec.preset = rec.Preset
			if spec.preset == "" {
				spec.preset = vectorstore.PresetNone
			}
		}
		if spec.passageMaxTokens == 0 {
			spec.passageMaxTokens = rec.PassageMaxLength
		}
	}
	e, err := loadEmbedderSpec(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("the store was built with embedder %q (dimension %d): %w", id, dim, err)
	}
	return e, nil
}
