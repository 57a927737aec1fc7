//go:build !cgo

package rerank

import (
	"context"
	"errors"
	"testing"

	"github.com/agentmem/memory/internal/onnx"
	"github.com/agentmem/memory/models"
)

// TestCrossEncoderNeedsCgo checks that a CGO_ENABLED=0 build reports models.ErrNeedsCgo (before
// looking at the folder) instead of failing to build.
func TestCrossEncoderNeedsCgo(t *testing.T) {
	ce, err := NewCrossEncoder(context.Background(), t.TempDir(), CrossEncoderOptions{})
	if ce != nil || !errors.Is(err, models.ErrNeedsCgo) || !errors.Is(err, onnx.ErrNeedsCgo) {
		t.Fatalf("NewCrossEncoder = %v, %v; want models.ErrNeedsCgo", ce, err)
	}
	if errors.Is(err, models.ErrModelNotFound) {
		t.Fatalf("%v also reports a missing model", err)
	}
}
