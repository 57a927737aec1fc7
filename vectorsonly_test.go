package memory

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/memory/vectorstore"
)

// axisEmbedder embeds every text as the unit vector of axis 0, like a loaded model named
// id (its id carries a weights digest).
type axisEmbedder struct {
	id  string
	dim int
}

func (a axisEmbedder) ID() string { return a.id }
func (a axisEmbedder) Dim() int   { return a.dim }
func (a axisEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = axis(a.dim, 0)
	}
	return out, nil
}

func axis(dim, i int) []float32 {
	v := make([]float32, dim)
	v[i] = 1
	return v
}

// Vectors computed elsewhere are stored under the model name the user gives, without the
// model: BM25 searches work, searches that embed a query say why they cannot, and once the
// model is loaded (matched by name) queries are embedded by it against those vectors.
func TestVectorsOnlyImport(t *testing.T) {
	const dim = 8
	dir := filepath.Join(t.TempDir(), "store")
	m := openT(t, dir, WithEmbedder(vectorstore.NewVectorsOnly("e5-test", dim)))
	var docs []Document
	for i := range dim {
		docs = append(docs, Document{ID: fmt.Sprintf("d%d", i), Text: fmt.Sprintf("passage %d about otters", i), Embedding: axis(dim, i)})
	}
	if err := m.Add(bg, docs...); err != nil {
		t.Fatal(err)
	}
	if err := m.Add(bg, Document{ID: "novec", Text: "no vector"}); !errors.Is(err, ErrEmbedderNeeded) || !errors.Is(err, vectorstore.ErrNoModel) {
		t.Fatalf("a document without its vector: %v", err)
	}
	if err := m.Add(bg, Document{ID: "short", Text: "x", Embedding: axis(dim-1, 0)}); !errors.Is(err, ErrBadVector) {
		t.Fatalf("a vector of another dimension: %v", err)
	}
	if res, err := m.Search(bg, "otters", WithMode(BM25)); err != nil || len(res) != dim {
		t.Fatalf("BM25: %v, %v", ids(res), err)
	}
	if _, err := m.Search(bg, "otters"); !errors.Is(err, ErrEmbedderNeeded) || !errors.Is(err, ErrNoEmbedder) {
		t.Fatalf("hybrid without the model: %v", err)
	}
	if _, err := m.SearchBatch(bg, []string{"otters", "passage"}, WithMode(Dense)); !errors.Is(err, ErrEmbedderNeeded) {
		t.Fatalf("dense batch without the model: %v", err)
	}
	d, err := m.Get(bg, "d3")
	if err != nil || !slices.Equal(d.Embedding, axis(dim, 3)) {
		t.Fatalf("Get: %v, %v", d.Embedding, err)
	}
	if vs, err := m.Collection("").Vectors(bg, "d5"); err != nil || len(vs) != 1 || !slices.Equal(vs[0], axis(dim, 5)) {
		t.Fatalf("Vectors: %v, %v", vs, err)
	}
	if _, err := m.Collection("").Vectors(bg, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Vectors of a missing document: %v", err)
	}
	m.Close()
	if man, _ := readManifest(dir); man.Embedder == nil || man.Embedder.ID != "e5-test" || man.Embedder.Dim != dim || !man.Embedder.Precomputed {
		t.Fatalf("manifest records %+v", man.Embedder)
	}

	// The model, loaded by the resolver under its full id, embeds queries (axis 0: d0).
	model := axisEmbedder{id: "e5-test@sha256:0123", dim: dim}
	resolve := WithEmbedderResolver(func(_ context.Context, id string, d int) (vectorstore.Embedder, error) {
		if id != "e5-test" || d != dim {
			return nil, fmt.Errorf("asked for %q %d", id, d)
		}
		return model, nil
	})
	for _, ro := range []bool{false, true} {
		opts := []Option{resolve}
		if ro {
			opts = append(opts, ReadOnly())
		}
		r := openT(t, dir, opts...)
		res, err := r.Search(bg, "anything", WithMode(Dense), TopK(1))
		if err != nil || len(res) != 1 || res[0].ID != "d0" {
			t.Fatalf("read-only %v: dense search with the model: %v, %v", ro, ids(res), err)
		}
		r.Close()
	}
	// Configured directly, matched by name too; another model of that dimension is not.
	openT(t, dir, WithEmbedder(model)).Close()
	if _, err := Open(dir, WithEmbedder(axisEmbedder{id: "other@sha256:1", dim: dim})); !errors.Is(err, ErrEmbedderMismatch) {
		t.Fatalf("another model: %v", err)
	}

	// The model cannot be loaded: BM25 works and the error says why; a writer still takes
	// documents that bring their vectors.
	gone := WithEmbedderResolver(func(context.Context, string, int) (vectorstore.Embedder, error) {
		return nil, errors.New("model e5-test is not in the models folder")
	})
	r := openT(t, dir, gone, ReadOnly())
	if res, err := r.Search(bg, "otters", WithMode(BM25)); err != nil || len(res) == 0 {
		t.Fatalf("BM25 without the model: %v", err)
	}
	if _, err := r.Search(bg, "otters"); !errors.Is(err, ErrEmbedderNeeded) || !strings.Contains(err.Error(), "not in the models folder") {
		t.Fatalf("hybrid without the model: %v", err)
	}
	r.Close()
	w := openT(t, dir, gone)
	if err := w.Add(bg, Document{ID: "more", Text: "another otter", Embedding: axis(dim, 1)}); err != nil {
		t.Fatalf("importing more vectors without the model: %v", err)
	}
	w.Close()
	r = openT(t, dir, resolve, ReadOnly())
	if res, err := r.Search(bg, "x", WithMode(Dense), TopK(10)); err != nil || len(res) != dim+1 {
		t.Fatalf("after the second import: %v, %v", ids(res), err)
	}
}
