//go:build !cgo

package onnx

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/agentmem/memory/internal/errkind"
)

// TestNoCgo checks that a CGO_ENABLED=0 build fails every runtime entry point with
// ErrNeedsCgo, and through OpenEncoder with the caller's sentinel as well.
func TestNoCgo(t *testing.T) {
	if Enabled {
		t.Fatal("Enabled without cgo")
	}
	ctx := context.Background()
	if err := Init(""); !errors.Is(err, ErrNeedsCgo) {
		t.Fatalf("Init: %v, want ErrNeedsCgo", err)
	}
	if _, err := Open(ctx, filepath.Join(t.TempDir(), "model.onnx"), Spec{Outputs: []string{"x"}}, Options{}); !errors.Is(err, ErrNeedsCgo) {
		t.Fatalf("Open: %v, want ErrNeedsCgo", err)
	}
	pkgErr := errkind.New("pkg: needs cgo", ErrNeedsCgo)
	_, err := OpenEncoder(ctx, t.TempDir(), EncoderOptions{}, "logits", Errors{Prefix: "pkg", NeedsCgo: pkgErr})
	if !errors.Is(err, pkgErr) || !errors.Is(err, ErrNeedsCgo) {
		t.Fatalf("OpenEncoder: %v, want the package's ErrNeedsCgo", err)
	}
	if Version() != "" || LibraryPath() != "" {
		t.Fatalf("Version %q, LibraryPath %q without cgo", Version(), LibraryPath())
	}
	// Finding the library needs no cgo (`memory version` reports it).
	if got := ResolveLibrary("/x/libonnxruntime.so.1"); got != "/x/libonnxruntime.so.1" {
		t.Fatalf("ResolveLibrary = %q", got)
	}
}
