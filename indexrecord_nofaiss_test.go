//go:build !faiss

package memory

import (
	"errors"
	"testing"

	"github.com/agentmem/memory/vectorstore"
)

// A build without FAISS asked for the FAISS backend (configured, or recorded by a store
// built with it) says so with a typed error, and an unknown backend does not claim FAISS.
func TestOpenFaissWithoutFaiss(t *testing.T) {
	for _, tc := range []struct {
		backend string
		faiss   bool
	}{{vectorstore.FaissBackend, true}, {"nope", false}} {
		_, err := Open(t.TempDir(), WithEmbedder(vectorstore.NewHashEmbedder(8)), WithIndex(vectorstore.IndexConfig{Backend: tc.backend}))
		if !errors.Is(err, ErrInvalidOption) || !errors.Is(err, vectorstore.ErrUnknownBackend) || errors.Is(err, vectorstore.ErrFaissNotBuilt) != tc.faiss {
			t.Errorf("backend %q: err %v; want ErrInvalidOption, ErrUnknownBackend, ErrFaissNotBuilt %v", tc.backend, err, tc.faiss)
		}
	}
}
