//go:build !faiss

package vectorstore

import (
	"context"
	"fmt"
)

// faissBuilt: this build has the FAISS backend.
const faissBuilt = false

// FaissIndex is the FAISS backend's index. This build has none (it was built without the
// "faiss" tag): NewFaissIndex returns ErrFaissNotBuilt, so no FaissIndex exists, and its
// methods, kept so that code naming them compiles in every build, return that error or
// nothing.
type FaissIndex struct{}

var (
	_ Index   = (*FaissIndex)(nil)
	_ Durable = (*FaissIndex)(nil)
)

// NewFaissIndex returns ErrFaissNotBuilt: this build has no FAISS backend.
func NewFaissIndex(cfg IndexConfig) (*FaissIndex, error) {
	return nil, fmt.Errorf("%w: %s index of %d dimensions", ErrFaissNotBuilt, FaissBackend, cfg.Dim)
}

// Kind is "" (no FAISS in this build).
func (x *FaissIndex) Kind() string { return "" }

// Device is "" (no FAISS in this build).
func (x *FaissIndex) Device() string { return "" }

// Trained is false (no FAISS in this build).
func (x *FaissIndex) Trained() bool { return false }

// Train returns ErrFaissNotBuilt.
func (x *FaissIndex) Train(context.Context) error { return ErrFaissNotBuilt }

// Add returns ErrFaissNotBuilt.
func (x *FaissIndex) Add(context.Context, []string, [][]float32) error { return ErrFaissNotBuilt }

// Delete returns ErrFaissNotBuilt.
func (x *FaissIndex) Delete(context.Context, ...string) error { return ErrFaissNotBuilt }

// Compact returns ErrFaissNotBuilt.
func (x *FaissIndex) Compact(context.Context) error { return ErrFaissNotBuilt }

// Tombstones is 0 (no FAISS in this build).
func (x *FaissIndex) Tombstones() int { return 0 }

// Len is 0 (no FAISS in this build).
func (x *FaissIndex) Len() int { return 0 }

// Search returns ErrFaissNotBuilt.
func (x *FaissIndex) Search(context.Context, []float32, int, Filter) ([]Hit, error) {
	return nil, ErrFaissNotBuilt
}

// SearchBatch returns ErrFaissNotBuilt.
func (x *FaissIndex) SearchBatch(context.Context, [][]float32, int, Filter) ([][]Hit, error) {
	return nil, ErrFaissNotBuilt
}

// Seq is 0 (no FAISS in this build).
func (x *FaissIndex) Seq() uint64 { return 0 }

// Commit returns ErrFaissNotBuilt.
func (x *FaissIndex) Commit(uint64) error { return ErrFaissNotBuilt }

// Close does nothing (no FAISS in this build).
func (x *FaissIndex) Close() error { return nil }
