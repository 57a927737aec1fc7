package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentmem/memory/internal/vecmath"
	"github.com/agentmem/memory/vectorstore"
)

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
