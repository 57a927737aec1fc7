//go:build faiss

package vectorstore_test

import (
	"testing"

	"github.com/agentmem/memory/vectorstore"
	"github.com/agentmem/memory/vectorstore/indextest"
)

// TestFaissConformance holds the FAISS backend's exact index (Flat) to the Index contract,
// in memory and persisted in a folder.
func TestFaissConformance(t *testing.T) {
	for _, dir := range []bool{false, true} {
		name := "memory"
		if dir {
			name = "dir"
		}
		t.Run(name, func(t *testing.T) {
			indextest.Run(t, newIndexFunc(vectorstore.FaissBackend, "Flat", nil, dir), indextest.Options{})
		})
	}
}
