//go:build !cgo

package vectorstore

import (
	"context"
	"errors"
	"testing"

	"github.com/agentmem/memory/internal/onnx"
	"github.com/agentmem/memory/models"
)

// TestONNXEmbedderNeedsCgo checks that a CGO_ENABLED=0 build reports models.ErrNeedsCgo (before
// looking at the folder) instead of failing to build.
func TestONNXEmbedderNeedsCgo(t *testing.T) {
	e, err := NewONNXEmbedder(context.Background(), t.TempDir(), ONNXOptions{Device: "cuda"})
	if e != nil || !errors.Is(err, models.ErrNeedsCgo) || !errors.Is(err, onnx.ErrNeedsCgo) {
		t.Fatalf("NewONNXEmbedder = %v, %v; want models.ErrNeedsCgo", e, err)
	}
	if errors.Is(err, models.ErrModelNotFound) {
		t.Fatalf("%v also reports a missing model", err)
	}
}
