//go:build !faiss

package vectorstore

import (
	"context"
	"errors"
	"testing"
)

// Without the faiss tag the FAISS names still compile, and asking for the backend is a
// typed error that says why, never a nil index.
func TestFaissNotBuilt(t *testing.T) {
	x, err := newFaissIndex(IndexConfig{Dim: 4})
	if x != nil || !errors.Is(err, ErrFaissNotBuilt) {
		t.Fatalf("newFaissIndex = %v, %v; want nil, ErrFaissNotBuilt", x, err)
	}
	_, err = NewIndex(IndexConfig{Backend: FaissBackend, Dim: 4})
	if !errors.Is(err, ErrUnknownBackend) || !errors.Is(err, ErrFaissNotBuilt) {
		t.Fatalf("NewIndex(faiss) = %v; want ErrUnknownBackend and ErrFaissNotBuilt", err)
	}
	_, err = NewIndex(IndexConfig{Backend: "nope", Dim: 4})
	if !errors.Is(err, ErrUnknownBackend) || errors.Is(err, ErrFaissNotBuilt) {
		t.Fatalf("NewIndex(nope) = %v; want ErrUnknownBackend only", err)
	}
	var none *faissIndex
	if err := none.Add(context.Background(), []string{"a"}, [][]float32{{1, 0, 0, 0}}); !errors.Is(err, ErrFaissNotBuilt) {
		t.Errorf("Add = %v", err)
	}
	if _, err := none.Search(context.Background(), []float32{1, 0, 0, 0}, 1, nil); !errors.Is(err, ErrFaissNotBuilt) {
		t.Errorf("Search = %v", err)
	}
}
