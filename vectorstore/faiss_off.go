//go:build !faiss

package vectorstore

import (
	"context"
	"fmt"
)

// faissBuilt: this build has the FAISS backend.
const faissBuilt = false

// faissIndex is the FAISS backend's index. This build has none (it was built without the
// "faiss" tag): newFaissIndex returns ErrFaissNotBuilt, so no faissIndex exists, and its
// methods, kept so that code naming them compiles in every build, return that error or
// nothing.
type faissIndex struct{}

var (
	_ Index   = (*faissIndex)(nil)
	_ Durable = (*faissIndex)(nil)
)

// newFaissIndex returns ErrFaissNotBuilt: this build has no FAISS backend.
func newFaissIndex(cfg IndexConfig) (*faissIndex, error) {
	return nil, fmt.Errorf("%w: %s index of %d dimensions", ErrFaissNotBuilt, FaissBackend, cfg.Dim)
}

// Kind is "" (no FAISS in this build).
func (x *faissIndex) Kind() string { return "" }

// Device is "" (no FAISS in this build).
func (x *faissIndex) Device() string { return "" }

// Trained is false (no FAISS in this build).
func (x *faissIndex) Trained() bool { return false }

// Train returns ErrFaissNotBuilt.
func (x *faissIndex) Train(context.Context) error { return ErrFaissNotBuilt }

// Add returns ErrFaissNotBuilt.
func (x *faissIndex) Add(context.Context, []string, [][]float32) error { return ErrFaissNotBuilt }

// Delete returns ErrFaissNotBuilt.
func (x *faissIndex) Delete(context.Context, ...string) error { return ErrFaissNotBuilt }

// Compact returns ErrFaissNotBuilt.
func (x *faissIndex) Compact(context.Context) error { return ErrFaissNotBuilt }

// Tombstones is 0 (no FAISS in this build).
func (x *faissIndex) Tombstones() int { return 0 }

// Len is 0 (no FAISS in this build).
func (x *faissIndex) Len() int { return 0 }

// Search returns ErrFaissNotBuilt.
func (x *faissIndex) Search(context.Context, []float32, int, Filter) ([]Hit, error) {
	return nil, ErrFaissNotBuilt
}

// SearchBatch returns ErrFaissNotBuilt.
func (x *faissIndex) SearchBatch(context.Context, [][]float32, int, Filter) ([][]Hit, error) {
	return nil, ErrFaissNotBuilt
}

// Seq is 0 (no FAISS in this build).
func (x *faissIndex) Seq() uint64 { return 0 }

// Commit returns ErrFaissNotBuilt.
func (x *faissIndex) Commit(uint64) error { return ErrFaissNotBuilt }

// Close does nothing (no FAISS in this build).
func (x *faissIndex) Close() error { return nil }
