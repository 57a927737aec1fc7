package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/vecmath"
	"github.com/agentmem/memory/vectorstore"
)

// TestResolveRecordedEmbedder: a store reopened without an embedder loads the one it
// recorded through the embedder registry (by default, or with the resolver given), and
// dense search works again; WithoutEmbedderResolver opens it for BM25 only.
func TestResolveRecordedEmbedder(t *testing.T) {
	dir := t.TempDir()
	m := openT(t, dir, WithEmbedder(vectorstore.NewHashEmbedder(64)))
	must(t, m.Add(bg, corpus...))
	want := searchT(t, m, "compiled language memory", WithMode(Dense), TopK(3))
	must(t, m.Close())

	m = openT(t, dir, WithoutEmbedderResolver())
	if _, err := m.Search(bg, "compiled language memory", WithMode(Dense)); !errors.Is(err, ErrEmbedderNeeded) {
		t.Fatalf("dense search without an embedder: %v, want ErrEmbedderNeeded", err)
	}
	must(t, m.Close())
	m = openT(t, dir) // the default resolver: the registry's
	if res, err := m.Search(bg, "compiled language memory", WithMode(Dense), TopK(3)); err != nil || !slices.Equal(ids(res), ids(want)) {
		t.Fatalf("dense search after a bare reopen: %v, %v; want %v", ids(res), err, ids(want))
	}
	must(t, m.Close())

	m = openT(t, dir, WithEmbedderResolver(vectorstore.ResolveEmbedder))
	if id := m.Embedder().ID(); id != "hash-bigram-v1/64" {
		t.Fatalf("resolved embedder %q", id)
	}
	got := searchT(t, m, "compiled language memory", WithMode(Dense), TopK(3))
	if len(got) != len(want) {
		t.Fatalf("%d results after resolving, %d before", len(got), len(want))
	}
	for i := range got {
		if got[i].ID != want[i].ID {
			t.Fatalf("result %d: %s after resolving, %s before", i, got[i].ID, want[i].ID)
		}
	}
}

// TestVectorPrecisionFloat16: a store opened WithVectorPrecision(Float16) keeps its
// vectors in float16: Get returns them rounded to float16, dense search scores are held to
// the rounded vectors (and to float32's within float16's precision), a rebuild of the
// vector index from store.db answers the same, the manifest remembers the precision, and
// another precision, or a value float16 cannot hold, is a typed error.
func TestVectorPrecisionFloat16(t *testing.T) {
	ctx := context.Background()
	emb := vectorstore.NewHashEmbedder(64)
	docs := make([]Document, 300)
	for i := range docs {
		docs[i] = Document{ID: fmt.Sprintf("d%03d", i), Text: fmt.Sprintf("passage %d about topic%d and theme%d with word%d", i, i%11, i%7, i%23)}
	}
	open := func(dir string, opts ...Option) *Memory {
		t.Helper()
		m, err := Open(dir, append([]Option{WithEmbedder(emb)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	dir16, dir32 := t.TempDir(), t.TempDir()
	m16, m32 := open(dir16, WithVectorPrecision(Float16)), open(dir32)
	for _, m := range []*Memory{m16, m32} {
		if err := m.Add(ctx, docs...); err != nil {
			t.Fatal(err)
		}
	}
	// Stored vectors: the embedder's, rounded to float16.
	for _, id := range []string{"d000", "d123", "d299"} {
		d, err := m16.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := emb.Embed(ctx, []string{docs[mustAtoi(t, id[1:])].Text})
		want, err := vecmath.RoundHalf(v[0])
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(d.Embedding, want) {
			t.Fatalf("%s: the stored vector is not the embedder's rounded to float16", id)
		}
		if slices.Equal(want, v[0]) {
			t.Fatalf("%s: rounding changed nothing: the test proves nothing", id)
		}
	}
	queries := []string{"topic3 theme4", "passage about word7", "theme1 word22 topic10"}
	search := func(m *Memory, q string) []Result {
		t.Helper()
		rs, err := m.Search(ctx, q, WithMode(Dense))
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	before := map[string][]Result{}
	for _, q := range queries {
		rs16, rs32 := search(m16, q), search(m32, q)
		before[q] = rs16
		qv, _ := emb.Embed(ctx, []string{q})
		for _, r := range rs16 {
			d, err := m16.Get(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			// The score is the cosine of the query and the stored (rounded) vector...
			if want := vecmath.Cosine(qv[0], d.Embedding); math.Abs(r.Score-want) > 1e-5 {
				t.Fatalf("%q: %s scores %v, want %v (cosine of query and stored vector)", q, r.ID, r.Score, want)
			}
		}
		// ... and float16 (relative error <= 2^-11 a value) moves a cosine by at most 2^-10
		// (the documented precision): the k-th scores of the two stores agree within it.
		if len(rs16) != len(rs32) {
			t.Fatalf("%q: %d results in float16, %d in float32", q, len(rs16), len(rs32))
		}
		for i := range rs16 {
			if d := math.Abs(rs16[i].Score - rs32[i].Score); d > 1.0/1024 {
				t.Fatalf("%q: result %d scores %v in float16, %v in float32", q, i, rs16[i].Score, rs32[i].Score)
			}
		}
	}
	if err := m16.Close(); err != nil {
		t.Fatal(err)
	}
	m32.Close()

	// The manifest remembers float16; the vector index rebuilt from store.db answers the same.
	if err := os.RemoveAll(filepath.Join(dir16, vecDir)); err != nil {
		t.Fatal(err)
	}
	m16 = open(dir16)
	for _, q := range queries {
		got := search(m16, q)
		if !sameResults(got, before[q]) {
			t.Fatalf("%q: after a rebuild from store.db the results differ", q)
		}
	}
	more := Document{ID: "e000", Text: "a later passage about topic3", Embedding: nil}
	if err := m16.Add(ctx, more); err != nil {
		t.Fatal(err)
	}
	d, err := m16.Get(ctx, "e000")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := vecmath.RoundHalf(d.Embedding); !slices.Equal(r, d.Embedding) {
		t.Fatal("a write after reopening without the option stored float32 values")
	}
	big := make([]float32, 64)
	big[0] = 70000
	if err := m16.Add(ctx, Document{ID: "big", Text: "x", Embedding: big}); !errors.Is(err, ErrBadVector) {
		t.Fatalf("a value past float16's range: %v, want ErrBadVector", err)
	}
	last := search(m16, queries[0])
	m16.Close()

	for _, p := range []VectorPrecision{Float32, "float8"} {
		if m, err := Open(dir16, WithEmbedder(emb), WithVectorPrecision(p)); !errors.Is(err, ErrVectorPrecision) {
			if m != nil {
				m.Close()
			}
			t.Fatalf("%s on a float16 store: %v, want ErrVectorPrecision", p, err)
		}
	}
	if m, err := Open(dir32, WithEmbedder(emb), WithVectorPrecision(Float16)); !errors.Is(err, ErrVectorPrecision) {
		if m != nil {
			m.Close()
		}
		t.Fatalf("float16 on a float32 store with vectors: %v, want ErrVectorPrecision", err)
	}
	ro, err := Open(dir16, WithEmbedder(emb), ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if got := search(ro, queries[0]); !sameResults(got, last) {
		t.Fatal("read-only: results differ")
	}
}

func sameResults(a, b []Result) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID || math.Abs(a[i].Score-b[i].Score) > 1e-9 {
			return false
		}
	}
	return true
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestHalfVectorDamage: a flipped bit in a float16 vector stored in store.db (its layout
// tag, its checksum, a value) is ErrCorrupt when the document is read and damage to the
// store of record in a read-only Check, never a vector of other values.
func TestHalfVectorDamage(t *testing.T) {
	ctx := context.Background()
	emb := vectorstore.NewHashEmbedder(32)
	dir := t.TempDir()
	m, err := Open(dir, WithEmbedder(emb), WithVectorPrecision(Float16))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if err := m.Add(ctx, Document{ID: fmt.Sprintf("d%02d", i), Text: fmt.Sprintf("passage %d on topic%d", i, i%5)}); err != nil {
			t.Fatal(err)
		}
	}
	want, err := m.Get(ctx, "d17")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	e := locateElem(t, filepath.Join(dir, dbName), [][]byte{bkCols, []byte(DefaultCollection), bkVecs}, []byte("d17"))
	if e.val < 0 {
		t.Fatal("no vector value found")
	}
	for _, c := range []struct {
		name string
		off  int64
		mask byte
	}{{"tag", 0, 0x01}, {"tag-high", 3, 0x04}, {"checksum", 5, 0x80}, {"value-0", 8, 0x01}, {"value-31-high", 8 + 2*31 + 1, 0x10}} {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			if err := os.CopyFS(d, os.DirFS(dir)); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(d, dbName)
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			raw[e.val+c.off] ^= c.mask
			if err := os.WriteFile(path, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			ro, err := Open(d, WithEmbedder(emb), ReadOnly())
			if err != nil {
				t.Fatal(err)
			}
			defer ro.Close()
			got, err := ro.Get(ctx, "d17")
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Get: %v (vector equal to the stored one: %v), want ErrCorrupt", err, slices.Equal(got.Embedding, want.Embedding))
			}
			rep, err := ro.Check(ctx, false)
			if err == nil && !rep.StoreDamaged() {
				t.Fatalf("Check found no damage: %+v", rep)
			}
		})
	}
}

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
	if res, err := m.Search(bg, "otters"); err != nil || len(res) == 0 || res[0].Explain.Mode != BM25 ||
		!strings.Contains(strings.Join(res[0].Explain.Notes, "; "), vectorstore.ErrNoModel.Error()) {
		t.Fatalf("hybrid without the model runs as BM25 and says why: %v, %v", res, err)
	}
	if _, err := m.Search(bg, "otters", WithMode(Dense)); !errors.Is(err, ErrEmbedderNeeded) || !errors.Is(err, ErrNoEmbedder) {
		t.Fatalf("dense without the model: %v", err)
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
	if _, err := r.Search(bg, "otters", WithMode(Dense)); !errors.Is(err, ErrEmbedderNeeded) || !strings.Contains(err.Error(), "not in the models folder") {
		t.Fatalf("dense without the model: %v", err)
	}
	if res, err := r.Search(bg, "otters"); err != nil || len(res) == 0 || !strings.Contains(strings.Join(res[0].Explain.Notes, "; "), "not in the models folder") {
		t.Fatalf("hybrid without the model: %v, %v", res, err)
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
