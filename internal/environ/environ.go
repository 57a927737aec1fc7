// Package environ is the one place the library reads the process environment. Every
// variable it honours is named here with what it does; the packages that document them
// (models, the ONNX Runtime loader) name the same constants. The CLI and the test helpers
// read their own flags and knobs; the library reads nothing else.
package environ

import (
	"fmt"
	"os"
	"path/filepath"
)

// The variables the library reads.
const (
	// Models names a folder of ready model folders (<dir>/<name>/...), used before the
	// cache when it holds a complete copy.
	Models = "MEMORY_MODELS"
	// Cache names the cache root: pulled models go to $MEMORY_CACHE/models, the ONNX
	// Runtime library to $MEMORY_CACHE/onnxruntime/<version>. Default: the user cache
	// folder's memory/ (os.UserCacheDir).
	Cache = "MEMORY_CACHE"
	// ORTLib names the ONNX Runtime shared library to load, before any cached copy.
	ORTLib = "MEMORY_ORT_LIB"
	// HFEndpoint overrides the Hugging Face base URL models are pulled from (as
	// huggingface_hub does).
	HFEndpoint = "HF_ENDPOINT"
	// OpenAIKey is the API key of the OpenAI-compatible embedder when it is loaded by
	// name (vectorstore.LoadEmbedder "openai:MODEL/DIM"); options given in code win.
	OpenAIKey = "OPENAI_API_KEY"
	// OpenAIBaseURL is that embedder's server root (default https://api.openai.com/v1).
	OpenAIBaseURL = "OPENAI_BASE_URL"
)

// Get returns the value of variable name, one of the constants above ("" when unset).
func Get(name string) string {
	switch name {
	case Models, Cache, ORTLib, HFEndpoint, OpenAIKey, OpenAIBaseURL:
		return os.Getenv(name)
	}
	panic("environ: " + name + " is not a variable the library reads")
}

// CacheDir is the folder sub (joined) of the cache root: $MEMORY_CACHE/sub, else the
// user cache folder's memory/sub.
func CacheDir(sub ...string) (string, error) {
	if d := Get(Cache); d != "" {
		return filepath.Join(append([]string{d}, sub...)...), nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no user cache folder (set %s): %w", Cache, err)
	}
	return filepath.Join(append([]string{d, "memory"}, sub...)...), nil
}
