package vectorstore_test

import (
	"testing"

	"github.com/agentmem/memory/vectorstore"
	"github.com/agentmem/memory/vectorstore/indextest"
)

// TestConformance holds every backend of this module (FAISS: faiss_conformance_test.go)
// to the Index contract, each in the configurations it is used in.
func TestConformance(t *testing.T) {
	for _, c := range []struct {
		name    string
		backend string
		params  map[string]int
		dir     bool // in files (a temporary folder) rather than in memory
		generic bool // the portable kernel instead of the assembly one
		opts    indextest.Options
	}{
		{name: "chromem", backend: "chromem", opts: indextest.Options{CosineOnly: true}},
		{name: "flat", backend: "flat", params: map[string]int{"threads": 1}},
		{name: "flat-parallel", backend: "flat", params: map[string]int{"threads": 3}},
		{name: "flat-generic", backend: "flat", params: map[string]int{"threads": 1}, generic: true},
		{name: "disk-memory", backend: "disk"},
		// Small segments, so that the checks cross segment boundaries.
		{name: "disk-dir", backend: "disk", dir: true, params: map[string]int{"segrows": 5, "threads": 3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.generic {
				vectorstore.UseGenericKernel(t)
			}
			indextest.Run(t, newIndexFunc(c.backend, "", c.params, c.dir), c.opts)
		})
	}
}

// newIndexFunc is the indextest.New of backend (with factory and params), kept in a
// temporary folder when dir, closed when its test ends.
func newIndexFunc(backend, factory string, params map[string]int, dir bool) indextest.New {
	return func(t *testing.T, cfg vectorstore.IndexConfig) vectorstore.Index {
		cfg.Backend, cfg.Factory, cfg.Params = backend, factory, params
		if dir {
			cfg.Dir = t.TempDir()
		}
		idx, err := vectorstore.NewIndex(cfg)
		if err != nil {
			t.Fatalf("NewIndex(%+v): %v", cfg, err)
		}
		t.Cleanup(func() { idx.Close() })
		return idx
	}
}
