package vectorstore

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/agentmem/memory/models"
)

// The embedder registry, the counterpart of [RegisterIndex] for embedders: each kind of
// embedder registers a loader under the prefix of the names it loads, so that a store's
// recorded identity (what [Embedder.ID] returned when the store was written) loads the same
// embedder again through [ResolveEmbedder], and the CLI's --embedder flag loads any kind.
//
// Registered here: "hash:" and "hash-bigram-v1/" ([HashEmbedder]), "openai:"
// ([OpenAIEmbedder]), "model2vec:" ([StaticEmbedder]) and the default, "" (a model name,
// a model folder, or an ONNX embedder's identity: a Model2Vec folder loads as a
// [StaticEmbedder], any other as an [ONNXEmbedder]).

// EmbedderLoader loads the embedder that name stands for: a recorded identity or a name a
// user gives for it. It reads from o what applies to its kind and refuses, with
// [ErrBadConfig], what contradicts it.
type EmbedderLoader func(ctx context.Context, name string, o LoadOptions) (Embedder, error)

// LoadOptions configure [LoadEmbedder]. The zero value loads a model with its own settings.
type LoadOptions struct {
	// ONNX sets the device, preset, prefixes and token caps of an ONNX model (a recorded
	// identity's preset, passage cap and passage prefix apply where these are unset);
	// setting a prefix, preset or cap for a model of another kind is ErrBadConfig.
	ONNX ONNXOptions
	// Recorded marks a name read from a store (an identity), which must name a model and
	// never a folder path. ResolveEmbedder sets it.
	Recorded bool
}

var (
	embMu      sync.RWMutex
	embLoaders = map[string]EmbedderLoader{}
)

// RegisterEmbedder makes loader load the names that start with prefix (or equal prefix
// without its trailing ":"); the longest registered prefix that matches wins, and prefix ""
// is the default. A later registration of a prefix replaces the earlier one.
func RegisterEmbedder(prefix string, loader EmbedderLoader) {
	embMu.Lock()
	defer embMu.Unlock()
	embLoaders[prefix] = loader
}

// Embedders lists the registered prefixes, sorted ("" is the default loader).
func Embedders() []string {
	embMu.RLock()
	defer embMu.RUnlock()
	out := make([]string, 0, len(embLoaders))
	for p := range embLoaders {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// LoadEmbedder loads the embedder name stands for with the loader of the longest
// registered prefix it matches (see [RegisterEmbedder]).
func LoadEmbedder(ctx context.Context, name string, o LoadOptions) (Embedder, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, fmt.Errorf("%w: no embedder name", ErrBadConfig)
	}
	embMu.RLock()
	best, found := "", false
	for p := range embLoaders {
		if matchesPrefix(name, p) && (!found || len(p) > len(best)) {
			best, found = p, true
		}
	}
	loader := embLoaders[best]
	embMu.RUnlock()
	if !found {
		return nil, fmt.Errorf("%w: no registered embedder loads %q", ErrBadConfig, name)
	}
	return loader(ctx, name, o)
}

// ResolveEmbedder loads the embedder a store recorded, by its identity and dimension, with
// the registered loaders; a loaded embedder of another dimension is ErrDimMismatch. Its
// signature is the one memory.WithEmbedderResolver takes.
func ResolveEmbedder(ctx context.Context, id string, dim int) (Embedder, error) {
	e, err := LoadEmbedder(ctx, id, LoadOptions{Recorded: true})
	if err != nil {
		return nil, err
	}
	if dim > 0 && e.Dim() != dim {
		if c, ok := e.(io.Closer); ok {
			c.Close()
		}
		return nil, fmt.Errorf("%w: embedder %q has dimension %d, the store recorded %d", ErrDimMismatch, id, e.Dim(), dim)
	}
	return e, nil
}

// matchesPrefix reports whether name is one of prefix's: it starts with prefix, or is
// prefix without its trailing ":". Every name matches "".
func matchesPrefix(name, prefix string) bool {
	if strings.HasPrefix(name, prefix) {
		return true
	}
	bare, ok := strings.CutSuffix(prefix, ":")
	return ok && name == bare
}

func init() { RegisterEmbedder("", loadModel) }

// loadModel is the default loader: a recorded ONNX identity (NAME@sha256:...), a model
// name (looked up in $MEMORY_MODELS and the model cache, see package models) or, unless
// the name was recorded in a store, a model folder's path.
func loadModel(ctx context.Context, name string, o LoadOptions) (Embedder, error) {
	model, opts := name, o.ONNX
	if rec, ok := ParseONNXIdentity(name); ok {
		model = rec.Model
		if opts.Preset == "" || opts.Preset == PresetAuto {
			opts.Preset = rec.Preset
			if opts.Preset == "" {
				opts.Preset = PresetNone // a store made without a preset
			}
		}
		if opts.PassageMaxLength == 0 {
			opts.PassageMaxLength = rec.PassageMaxLength
		}
		if opts.PassagePrefix == nil {
			p := rec.PassagePrefix
			opts.PassagePrefix = &p
		}
	} else if n, _, ok := strings.Cut(name, "@"); ok {
		model = n // another model's identity: its name, the digest is checked by the store
	}
	dir, err := modelFolder(model, o.Recorded)
	if err != nil {
		return nil, err
	}
	if IsModel2Vec(dir) {
		if err := onlyONNXDevice(name, o.ONNX); err != nil {
			return nil, err
		}
		return NewStaticEmbedder(dir, StaticOptions{})
	}
	return NewONNXEmbedder(ctx, dir, opts)
}

// modelFolder is the folder of model: a folder path as it is (unless recorded), else the
// ready copy package models resolves for the name.
func modelFolder(model string, recorded bool) (string, error) {
	if model == "" || model == "." || model == ".." {
		return "", fmt.Errorf("%w: %q is not a model name", ErrBadConfig, model)
	}
	if recorded && strings.ContainsAny(model, `/\`) {
		return "", fmt.Errorf("%w: the recorded model %q is a path, not a name", ErrBadConfig, model)
	}
	if st, err := os.Stat(model); !recorded && err == nil && st.IsDir() {
		return model, nil // a folder the caller named
	}
	dir, err := models.Resolve(model)
	if err != nil {
		return "", fmt.Errorf("model %q: %w (pull it with `memory models pull %s`, or point MEMORY_MODELS at a folder holding it)", model, err, model)
	}
	return dir, nil
}

// IsModel2Vec reports whether the model folder dir holds a Model2Vec (static) model, which
// LoadEmbedder loads as a StaticEmbedder: a model.safetensors file, or a config.json whose
// model_type is "model2vec". Such a model averages a text's word pieces and never sees
// [CLS] or [SEP].
func IsModel2Vec(dir string) bool {
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
	return json.Unmarshal(data, &cfg) == nil && strings.EqualFold(cfg.ModelType, "model2vec")
}

// onlyONNXDevice refuses, for the model of name that is no ONNX model, the ONNX options
// that would change its vectors (prefixes, a preset, token caps); the device is ignored.
func onlyONNXDevice(name string, o ONNXOptions) error {
	if o.QueryPrefix != nil || o.PassagePrefix != nil || (o.Preset != "" && o.Preset != PresetAuto) ||
		o.QueryMaxLength > 0 || o.PassageMaxLength > 0 {
		return fmt.Errorf("%w: embedder %q is no ONNX model: prefixes, presets and token caps apply to ONNX models only", ErrBadConfig, name)
	}
	return nil
}
