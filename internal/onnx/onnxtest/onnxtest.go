// Package onnxtest finds the fixtures the ONNX tests need: the ONNX Runtime library and the
// shared model folder. A missing fixture skips the test, or fails it when
// MEMORY_REQUIRE_FIXTURES=1.
package onnxtest

import (
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// RepoRoot walks up from the working directory to the folder holding go.mod ("" if none).
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Missing skips tb, or fails it when MEMORY_REQUIRE_FIXTURES=1.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("MEMORY_REQUIRE_FIXTURES") == "1" {
		tb.Fatalf("required fixture missing: "+format, args...)
	}
	tb.Skipf("fixture missing: "+format, args...)
}

// Library returns the ONNX Runtime library: $MEMORY_ORT_LIB or <root>/.deps/onnxruntime.
func Library(tb testing.TB) string {
	tb.Helper()
	p := os.Getenv("MEMORY_ORT_LIB")
	if p == "" {
		p = filepath.Join(RepoRoot(), ".deps", "onnxruntime", "libonnxruntime.so.1")
	}
	if _, err := os.Stat(p); err != nil {
		Missing(tb, "ONNX Runtime library %s (run scripts/deps.sh ort)", p)
	}
	return p
}

// ModelsDir returns the shared model folder: $MEMORY_MODELS or <root>/../shared/models.
func ModelsDir(tb testing.TB) string {
	tb.Helper()
	p := os.Getenv("MEMORY_MODELS")
	if p == "" {
		p = filepath.Join(RepoRoot(), "..", "shared", "models")
	}
	if _, err := os.Stat(filepath.Join(p, "tiny-bert-encoder", "model.onnx")); err != nil {
		Missing(tb, "model fixtures in %s", p)
	}
	return p
}

// Model returns a folder of ModelsDir, skipping (or failing) when it is absent.
func Model(tb testing.TB, name string) string {
	tb.Helper()
	p := filepath.Join(ModelsDir(tb), name)
	if _, err := os.Stat(p); err != nil {
		Missing(tb, "model %s", p)
	}
	return p
}

// Golden decodes ModelsDir's golden/name into v, which must then hold at least minCases
// cases (count reports how many it holds), and returns the models folder; a missing file
// skips (or fails) tb.
func Golden(tb testing.TB, name string, v any, minCases int, count func() int) string {
	tb.Helper()
	models := ModelsDir(tb)
	data, err := os.ReadFile(filepath.Join(models, "golden", name))
	if err != nil {
		Missing(tb, "golden file %s: %v", name, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		tb.Fatalf("golden file %s: %v", name, err)
	}
	if n := count(); n < minCases {
		tb.Fatalf("golden file %s has %d cases, want at least %d", name, n, minCases)
	}
	return models
}

// Open returns what open returns, closing it when tb ends; an error fails tb.
func Open[T io.Closer](tb testing.TB, open func() (T, error)) T {
	tb.Helper()
	v, err := open()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { v.Close() })
	return v
}

// Close checks got against want value by value: a length mismatch fails tb at once, each
// value further than tol from want (or NaN) is reported with its index.
func Close(tb testing.TB, what string, got []float32, want []float64, tol float64) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); d > tol || math.IsNaN(d) {
			tb.Errorf("%s[%d] = %v, want %v (|Δ| %.2g)", what, i, got[i], want[i], d)
		}
	}
}
