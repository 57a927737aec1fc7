package vectorstore

import (
	"errors"
	"testing"
)

// The Index contract is checked for every backend by vectorstore/indextest
// (conformance_test.go); this file checks the registry.

// useGenericKernel switches the flat kernels to portable Go for the test's duration.
func useGenericKernel(t *testing.T, on bool) {
	if !on {
		return
	}
	old := flatAVX2
	flatAVX2 = false
	t.Cleanup(func() { flatAVX2 = old })
}

func TestIndexConfig(t *testing.T) {
	for _, name := range []string{"chromem", "flat"} {
		found := false
		for _, b := range Backends() {
			found = found || b == name
		}
		if !found {
			t.Errorf("backend %q not registered (have %v)", name, Backends())
		}
	}
	for _, tc := range []struct {
		cfg  IndexConfig
		want error
	}{
		{IndexConfig{Dim: 4}, nil}, // chromem by default
		{IndexConfig{Backend: "flat", Dim: 4, Metric: InnerProduct}, nil},
		{IndexConfig{Backend: "chromem", Dim: 4, Metric: InnerProduct}, ErrBadConfig},
		{IndexConfig{Backend: "flat", Dim: 4, Metric: "l2"}, ErrBadConfig},
		{IndexConfig{Backend: "flat", Dim: 4, Params: map[string]int{"threads": -1}}, ErrBadConfig},
		{IndexConfig{Backend: "flat", Dim: 0}, ErrBadConfig},
	} {
		idx, err := NewIndex(tc.cfg)
		if !errors.Is(err, tc.want) {
			t.Errorf("NewIndex(%+v): err = %v, want %v", tc.cfg, err, tc.want)
		}
		if err == nil {
			idx.Close()
		}
	}
	if _, err := newChromemIndex(IndexConfig{Dim: -1}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("newChromemIndex(dim -1): err = %v", err)
	}
}
