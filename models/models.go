// Package models downloads, verifies and locates the pretrained models memory uses:
// the all-MiniLM-L6-v2 bi-encoder, the ms-marco-MiniLM-L-6-v2 cross-encoder, the
// potion-base-2M static (Model2Vec) embedder, and Search-R1's e5-base-v2 retriever and
// ms-marco-MiniLM-L-12-v2 reranker.
//
// Each model has a manifest of files with pinned sizes and sha256 digests. [Pull] fetches
// them (Hugging Face layout by default, any mirror through a base URL) into a cache
// folder, resuming interrupted transfers with HTTP Range requests and retrying transient
// failures with exponential backoff; a file whose digest does not match its pin is removed
// and reported as [ErrChecksum]. [Resolve] finds a ready folder without touching the network:
// first $MEMORY_MODELS/<name>, then the cache.
//
// Environment: MEMORY_MODELS names a folder holding ready model folders (<dir>/<name>/...),
// which Resolve and Pull use before the cache; MEMORY_CACHE names memory's cache root
// (models go to $MEMORY_CACHE/models); HF_ENDPOINT overrides the Hugging Face base URL, as
// huggingface_hub does.
package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentmem/memory/internal/environ"
)

// defaultBaseURL is the Hugging Face hub.
const defaultBaseURL = "https://huggingface.co"

// defaultURLTemplate builds a file URL from {base}, {repo}, {revision} and {path}.
const defaultURLTemplate = "{base}/{repo}/resolve/{revision}/{path}"

// File is one file of a model.
type File struct {
	// Path is the file's path in the repository and in the local folder.
	Path string
	// Repo overrides the model's repository for this file ("" = Model.Repo).
	Repo string
	// Revision overrides the model's revision for this file ("" = Model.Revision).
	Revision string
	// Size in bytes; 0 = not pinned.
	Size int64
	// SHA256 is the pinned digest: 64 hex digits, or "prefix…suffix" when only the ends of
	// the digest are known; "" = not pinned (the digest is recorded at the first download
	// and checked from then on).
	SHA256 string
}

// Model is a manifest entry.
type Model struct {
	// Name is the local name (folder name and CLI argument).
	Name string
	// Kind is "embedder" (ONNX bi-encoder), "cross-encoder" (ONNX reranker) or "static"
	// (Model2Vec).
	Kind string
	// Repo is the Hugging Face repository ("owner/name").
	Repo string
	// Revision is the branch, tag or commit files are fetched from.
	Revision string
	// Dim is the embedding dimension (0 for a cross-encoder).
	Dim int
	// License is the model's license.
	License string
	// Files lists what Pull fetches.
	Files []File
}

// Size is the sum of the pinned file sizes (files without a pinned size count 0).
func (m Model) Size() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	return n
}

// Pinned reports whether every file has a full sha256 pin.
func (m Model) Pinned() bool {
	for _, f := range m.Files {
		if len(f.SHA256) != 64 {
			return false
		}
	}
	return true
}

// manifest is the built-in catalogue. Pins come from the official repositories (see
// shared/models/README.md and golden/reference_values.json of the project).
var manifest = []Model{
	{
		Name: "all-MiniLM-L6-v2", Kind: "embedder", Dim: 384, License: "Apache-2.0",
		Repo: "Xenova/all-MiniLM-L6-v2", Revision: "main",
		Files: []File{
			{Path: "onnx/model.onnx", Size: 90387606, SHA256: "759c3cd2b7fe7e93933ad23c4c9181b7396442a2ed746ec7c1d46192c469c46e"},
			{Path: "tokenizer.json", Size: 711661, SHA256: "da0e79933b9ed51798a3ae27893d3c5fa4a201126cef75586296df9b4d2c62a0"},
			{Path: "vocab.txt", Size: 231508, SHA256: "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"},
			{Path: "config.json", Size: 650, SHA256: "7135149f7cffa1a573466c6e4d8423ed73b62fd2332c575bf738a0d033f70df7"},
			{Path: "tokenizer_config.json", Size: 366, SHA256: "9261e7d79b44c8195c1cada2b453e55b00aeb81e907a6664974b4d7776172ab3"},
			{Path: "special_tokens_map.json", Size: 125, SHA256: "b6d346be366a7d1d48332dbc9fdf3bf8960b5d879522b7799ddba59e76237ee3"},
			{Path: "sentence_bert_config.json", Repo: "sentence-transformers/all-MiniLM-L6-v2", Size: 53, SHA256: "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7"},
			{Path: "modules.json", Repo: "sentence-transformers/all-MiniLM-L6-v2", Size: 349, SHA256: "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"},
			{Path: "1_Pooling/config.json", Repo: "sentence-transformers/all-MiniLM-L6-v2", Size: 190, SHA256: "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23"},
		},
	},
	{
		Name: "ms-marco-MiniLM-L-6-v2", Kind: "cross-encoder", License: "Apache-2.0",
		Repo: "cross-encoder/ms-marco-MiniLM-L6-v2", Revision: "233902d25c440f23af6f7d6e94d2946bac0bee0a",
		Files: []File{
			// No official digest of the ONNX export is known: it is recorded at the first
			// download (trust on first use) and checked from then on.
			{Path: "onnx/model.onnx"},
			{Path: "tokenizer.json", Size: 711396, SHA256: "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66"},
			{Path: "vocab.txt", Size: 231508, SHA256: "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"},
			{Path: "config.json", SHA256: "380e02c93f431831be65d99a4e7e5f67c133985bf2e77d9d4eba46847190bacc"},
		},
	},
	{
		// The retriever of Search-R1 (retrieval_launch.sh: intfloat/e5-base-v2). Its name
		// selects the e5 preset of the ONNX embedder ("query: "/"passage: ", mean pooling,
		// 256/180-token caps). The revision is the one sentence-transformers model cards
		// record for it; no official digest of its files was found in public material, so
		// the weights are checked against the sha256 Hugging Face names for them at that
		// revision (its LFS oid, X-Linked-Etag) and every file is recorded at the first
		// download and checked from then on.
		Name: "e5-base-v2", Kind: "embedder", Dim: 768, License: "MIT",
		Repo: "intfloat/e5-base-v2", Revision: "f52bf8ec8c7124536f0efb74aca902b2995e5bcd",
		Files: []File{
			{Path: "onnx/model.onnx"},
			{Path: "tokenizer.json"},
			{Path: "vocab.txt"},
			{Path: "config.json"},
			{Path: "tokenizer_config.json"},
			{Path: "special_tokens_map.json"},
		},
	},
	{
		// The cross-encoder of Search-R1's rerank servers (cross-encoder/ms-marco-MiniLM-L12-v2,
		// formerly ms-marco-MiniLM-L-12-v2). The revision is the one sentence-transformers
		// model cards record for it; no official digest was found, so the weights are
		// checked against the sha256 Hugging Face names for them at that revision (its LFS
		// oid, X-Linked-Etag) and every file is recorded at the first download.
		Name: "ms-marco-MiniLM-L-12-v2", Kind: "cross-encoder", License: "Apache-2.0",
		Repo: "cross-encoder/ms-marco-MiniLM-L12-v2", Revision: "7b0235231ca2674cb8ca8f022859a6eba2b1c968",
		Files: []File{
			{Path: "onnx/model.onnx"},
			{Path: "tokenizer.json"},
			{Path: "vocab.txt"},
			{Path: "config.json"},
		},
	},
	{
		Name: "potion-base-2M", Kind: "static", Dim: 64, License: "MIT",
		Repo: "minishlab/potion-base-2M", Revision: "389b9f64be5aa4ae7a6bc6fe95ef20ce485ae5da",
		Files: []File{
			{Path: "model.safetensors", SHA256: "f95ffde02ad06f63ae38eb9d400038cd5ccaf8411ec3cb650c6025113f96cbb8"},
			{Path: "tokenizer.json", Size: 683666, SHA256: "e67e803f624fb4d67dea1c730d06e1067e1b14d830e2c2202569e3ef0f70bb50"},
			{Path: "config.json", SHA256: "b2a89173…ea47"},
			{Path: "tokenizer_config.json", SHA256: "6725995e…e567"},
		},
	},
}

// List returns the built-in manifest, sorted by name. The result is a copy.
func List() []Model {
	out := make([]Model, len(manifest))
	for i, m := range manifest {
		m.Files = append([]File(nil), m.Files...)
		out[i] = m
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

// Lookup returns the manifest entry of name (case-insensitive).
func Lookup(name string) (Model, error) {
	for _, m := range List() {
		if strings.EqualFold(m.Name, name) {
			return m, nil
		}
	}
	return Model{}, fmt.Errorf("%w %q (known: %s)", ErrUnknownModel, name, strings.Join(names(), ", "))
}

// names lists the manifest's model names, sorted.
func names() []string {
	var out []string
	for _, m := range List() {
		out = append(out, m.Name)
	}
	return out
}

// CacheDir is where Pull stores models: $MEMORY_CACHE/models, else
// os.UserCacheDir()/memory/models.
func CacheDir() (string, error) {
	d, err := environ.CacheDir("models")
	if err != nil {
		return "", fmt.Errorf("models: %w", err)
	}
	return d, nil
}

// Resolve returns the folder of a ready model without network access: $MEMORY_MODELS/<name>
// when it holds every manifest file (any folder there for names outside the manifest),
// else a complete, verified pull in the cache. A known model with no complete copy gives
// ErrNotPulled.
func Resolve(name string) (string, error) {
	return resolve(name, "")
}

func resolve(name, cacheDir string) (string, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return "", fmt.Errorf("%w %q", ErrUnknownModel, name)
	}
	m, err := Lookup(name)
	if err != nil {
		// Not in the manifest: only a folder of $MEMORY_MODELS can provide it.
		if root := environ.Get(environ.Models); root != "" {
			dir := filepath.Join(root, name)
			if st, serr := os.Stat(dir); serr == nil && st.IsDir() {
				return dir, nil
			}
		}
		return "", err
	}
	return resolveModel(m, cacheDir)
}

// ResolveModel is Resolve for a model described by the caller (see PullModel).
func ResolveModel(m Model) (string, error) { return resolveModel(m, "") }

func resolveModel(m Model, cacheDir string) (string, error) {
	if root := environ.Get(environ.Models); root != "" {
		if dir := filepath.Join(root, m.Name); complete(dir, m) == nil {
			return dir, nil
		}
	}
	if cacheDir == "" {
		var err error
		if cacheDir, err = CacheDir(); err != nil {
			return "", err
		}
	}
	dir := filepath.Join(cacheDir, m.Name)
	if err := checkStamp(dir, m); err != nil {
		return "", err
	}
	return dir, nil
}

// complete reports whether dir holds every file of m with its pinned size.
func complete(dir string, m Model) error {
	for _, f := range m.Files {
		st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil {
			return fmt.Errorf("%w: %s: missing %s", ErrNotPulled, m.Name, filepath.Join(dir, f.Path))
		}
		if f.Size > 0 && st.Size() != f.Size {
			return fmt.Errorf("%w: %s is %d bytes, want %d", ErrChecksum, filepath.Join(dir, f.Path), st.Size(), f.Size)
		}
	}
	return nil
}

// stampName is the file Pull writes into a model folder once every file is verified.
const stampName = ".memory-models.json"

// stamp records the verified state of a pulled folder.
type stamp struct {
	Model string      `json:"model"`
	Repo  string      `json:"repo"`
	Files []stampFile `json:"files"`
}

type stampFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

func readStamp(dir string) (stamp, error) {
	var s stamp
	data, err := os.ReadFile(filepath.Join(dir, stampName))
	if err != nil {
		return s, err
	}
	err = json.Unmarshal(data, &s)
	return s, err
}

// checkStamp verifies that dir was completely pulled for m and that every file still has
// the size recorded then (a cheap check; Pull re-hashes).
func checkStamp(dir string, m Model) error {
	s, err := readStamp(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %s (run `memory models pull %s`)", ErrNotPulled, m.Name, m.Name)
		}
		return fmt.Errorf("%w: %s: damaged %s: %v", ErrNotPulled, m.Name, stampName, err)
	}
	rec := map[string]stampFile{}
	for _, f := range s.Files {
		rec[f.Path] = f
	}
	for _, f := range m.Files {
		r, ok := rec[f.Path]
		if !ok || !digestMatches(r.SHA256, f.SHA256) {
			return fmt.Errorf("%w: %s: %s not recorded as verified", ErrNotPulled, m.Name, f.Path)
		}
		st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil {
			return fmt.Errorf("%w: %s: missing %s", ErrNotPulled, m.Name, f.Path)
		}
		if st.Size() != r.Size {
			return fmt.Errorf("%w: %s changed size since it was verified (%d, was %d)", ErrChecksum,
				filepath.Join(dir, f.Path), st.Size(), r.Size)
		}
	}
	return nil
}

// digestMatches compares a computed hex digest with a pin: full, "prefix…suffix"
// (also "prefix...suffix"), or "" (anything matches).
func digestMatches(got, pin string) bool {
	got, pin = strings.ToLower(got), strings.ToLower(pin)
	if pin == "" {
		return true
	}
	for _, sep := range []string{"…", "..."} {
		if pre, suf, ok := strings.Cut(pin, sep); ok {
			return len(got) == 64 && strings.HasPrefix(got, pre) && strings.HasSuffix(got, suf)
		}
	}
	return got == pin
}
