package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/internal/vecmath"
	"github.com/agentmem/memory/vectorstore"
)

// int8Docs are the documents the int8 store tests write.
func int8Docs(n int) []Document {
	docs := make([]Document, n)
	for i := range docs {
		docs[i] = Document{ID: fmt.Sprintf("d%03d", i), Text: fmt.Sprintf("passage %d about topic%d and theme%d with word%d", i, i%11, i%7, i%23)}
	}
	return docs
}

// TestVectorPrecisionInt8: a store opened WithVectorPrecision(Int8) keeps its vectors in
// int8 (Get returns vecmath.RoundInt8 of the embedder's), and its dense index keeps no
// float32 rows (no .f32 file; disk.json row-less): dense scores are the cosines of the
// query and the stored vectors, within int8's bound of float32's; dense and hybrid results
// are the same before and after a reopen (the codes then rescoring from store.db), after
// the dense index is rebuilt from store.db (its files deleted), and read-only; Explain
// names int8; Check passes; another precision is ErrVectorPrecision.
func TestVectorPrecisionInt8(t *testing.T) {
	ctx := context.Background()
	const dim = 64
	emb := vectorstore.NewHashEmbedder(dim)
	docs := int8Docs(300)
	open := func(dir string, opts ...Option) *Memory {
		t.Helper()
		m, err := Open(dir, append([]Option{WithEmbedder(emb)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	dir8, dir32 := t.TempDir(), t.TempDir()
	m8, m32 := open(dir8, WithVectorPrecision(Int8)), open(dir32)
	for _, m := range []*Memory{m8, m32} {
		must(t, m.Add(ctx, docs...))
	}
	for _, id := range []string{"d000", "d123", "d299"} {
		d, err := m8.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := emb.Embed(ctx, []string{docs[mustAtoi(t, id[1:])].Text})
		want, _ := vecmath.RoundInt8(v[0])
		if !slices.Equal(d.Embedding, want) || slices.Equal(want, v[0]) {
			t.Fatalf("%s: the stored vector is not the embedder's rounded to int8 (or rounding changed nothing)", id)
		}
	}
	queries := []string{"topic3 theme4", "passage about word7", "theme1 word22 topic10"}
	search := func(m *Memory, q string, mode Mode) []Result {
		t.Helper()
		rs, err := m.Search(ctx, q, WithMode(mode), TopK(10))
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	type answers map[string][]Result
	ask := func(m *Memory) answers {
		out := answers{}
		for _, q := range queries {
			out["dense "+q], out["hybrid "+q] = search(m, q, Dense), search(m, q, Hybrid)
		}
		return out
	}
	same := func(what string, got, want answers) {
		t.Helper()
		for k, w := range want {
			if !sameResults(got[k], w) {
				t.Fatalf("%s: %q: %v, want %v", what, k, ids(got[k]), ids(w))
			}
		}
	}
	before := ask(m8)
	bound := math.Sqrt(dim) / 127 // the cosine moves by at most |error| / |v| <= sqrt(d) x (max/254) / max, twice
	for _, q := range queries {
		qv, _ := emb.Embed(ctx, []string{q})
		rs8, rs32 := before["dense "+q], search(m32, q, Dense)
		for i, r := range rs8 {
			d, err := m8.Get(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if want := vecmath.Cosine(qv[0], d.Embedding); math.Abs(r.Score-want) > 1e-5 {
				t.Fatalf("%q: %s scores %v, want %v", q, r.ID, r.Score, want)
			}
			if dd := math.Abs(r.Score - rs32[i].Score); dd > bound {
				t.Fatalf("%q: result %d scores %v in int8, %v in float32", q, i, r.Score, rs32[i].Score)
			}
			if r.Explain.Dense == nil || r.Explain.Dense.Precision != "int8" || rs32[i].Explain.Dense == nil || rs32[i].Explain.Dense.Precision != "float32" {
				t.Fatalf("%q: result %d explains its dense score as %+v (int8 store) and %+v (float32): want the precisions named", q, i, r.Explain.Dense, rs32[i].Explain.Dense)
			}
		}
	}
	for _, r := range before["hybrid "+queries[0]] {
		if r.Explain.BM25 != nil && r.Explain.BM25.Precision != "" {
			t.Fatalf("a BM25 stage names a vector precision: %+v", r.Explain.BM25)
		}
	}
	must(t, m8.Close())
	m32.Close()
	vecFiles := func() []string {
		var out []string
		filepath.Walk(filepath.Join(dir8, vecDir), func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				out = append(out, p)
			}
			return nil
		})
		return out
	}
	rowless := func() {
		t.Helper()
		var seg bool
		for _, p := range vecFiles() {
			if strings.HasSuffix(p, ".f32") {
				t.Fatalf("the dense index of an int8 store wrote %s", p)
			}
			seg = seg || strings.HasSuffix(p, ".b1")
			if filepath.Base(p) == "disk.json" {
				raw, _ := os.ReadFile(p)
				var meta struct{ Rowless bool }
				if json.Unmarshal(raw, &meta) != nil || !meta.Rowless {
					t.Fatalf("%s does not record a row-less index", p)
				}
			}
		}
		if !seg {
			t.Fatalf("no binary codes written: %v", vecFiles())
		}
	}
	rowless()

	m8 = open(dir8)
	same("reopened", ask(m8), before)
	rs, err := m8.Search(ctx, queries[0], WithMode(Dense))
	if err != nil || len(rs) == 0 || !strings.Contains(strings.Join(rs[0].Explain.Notes, "; "), "int8 vectors of the store of record") {
		t.Fatalf("Explain does not name int8: %v, %v", rs, err)
	}
	rep, err := m8.Check(ctx, false)
	if err != nil || !rep.OK() {
		t.Fatalf("Check: %+v, %v", rep, err)
	}
	more := Document{ID: "e000", Text: "a later passage about topic3"}
	must(t, m8.Add(ctx, more))
	d, err := m8.Get(ctx, "e000")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := vecmath.RoundInt8(d.Embedding); !slices.Equal(r, d.Embedding) {
		t.Fatal("a write after reopening without the option stored unrounded values")
	}
	nan := make([]float32, dim)
	nan[3] = float32(math.NaN())
	if err := m8.Add(ctx, Document{ID: "nan", Text: "x", Embedding: nan}); !errors.Is(err, ErrBadVector) {
		t.Fatalf("a NaN: %v, want ErrBadVector", err)
	}
	must(t, m8.Delete(ctx, "e000"))
	must(t, m8.Close())

	// Rebuilt from store.db: the same answers, still row-less.
	must(t, os.RemoveAll(filepath.Join(dir8, vecDir)))
	m8 = open(dir8)
	same("rebuilt", ask(m8), before)
	must(t, m8.Close())
	rowless()

	for _, p := range []VectorPrecision{Float32, Float16} {
		if m, err := Open(dir8, WithEmbedder(emb), WithVectorPrecision(p)); !errors.Is(err, ErrVectorPrecision) {
			if m != nil {
				m.Close()
			}
			t.Fatalf("%s on an int8 store: %v, want ErrVectorPrecision", p, err)
		}
	}
	if m, err := Open(dir32, WithEmbedder(emb), WithVectorPrecision(Int8)); !errors.Is(err, ErrVectorPrecision) {
		if m != nil {
			m.Close()
		}
		t.Fatalf("int8 on a float32 store with vectors: %v, want ErrVectorPrecision", err)
	}
	ro := open(dir8, ReadOnly())
	defer ro.Close()
	same("read-only", ask(ro), before)
}

// TestInt8VectorDamage: a flipped bit in an int8 vector stored in store.db (its tag, its
// checksum, its scale, a value) is ErrCorrupt when the document is read and when a dense
// search rescores it (the index reads its rows from store.db), and damage in Check; never
// a vector or a score of other values.
func TestInt8VectorDamage(t *testing.T) {
	ctx := context.Background()
	emb := vectorstore.NewHashEmbedder(32)
	dir := t.TempDir()
	m, err := Open(dir, WithEmbedder(emb), WithVectorPrecision(Int8))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		must(t, m.Add(ctx, Document{ID: fmt.Sprintf("d%02d", i), Text: fmt.Sprintf("passage %d on topic%d", i, i%5)}))
	}
	must(t, m.Close())
	e := locateElem(t, filepath.Join(dir, dbName), [][]byte{bkCols, []byte(DefaultCollection), bkVecs}, []byte("d17"))
	if e.val < 0 {
		t.Fatal("no vector value found")
	}
	for _, c := range []struct {
		name string
		off  int64
		mask byte
	}{{"tag", 0, 0x01}, {"checksum", 5, 0x80}, {"scale", 9, 0x04}, {"value-0", 12, 0x01}, {"value-31", 12 + 31, 0x40}} {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			must(t, os.CopyFS(d, os.DirFS(dir)))
			path := filepath.Join(d, dbName)
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			raw[e.val+c.off] ^= c.mask
			must(t, os.WriteFile(path, raw, 0o644))
			opened := 0
			for _, opts := range [][]Option{{ReadOnly()}, nil} {
				m, err := Open(d, append([]Option{WithEmbedder(emb)}, opts...)...)
				if err != nil {
					if errors.Is(err, ErrCorrupt) {
						continue // found on open
					}
					t.Fatal(err)
				}
				opened++
				if _, err := m.Get(ctx, "d17"); !errors.Is(err, ErrCorrupt) {
					t.Errorf("Get: %v, want ErrCorrupt", err)
				}
				// 40 vectors: every one is a candidate of a search, d17 among them.
				if res, err := m.Search(ctx, "passage 17 on topic2", WithMode(Dense)); !errors.Is(err, ErrCorrupt) {
					t.Errorf("dense search: %v, %v; want ErrCorrupt", ids(res), err)
				}
				rep, err := m.Check(ctx, false)
				if err == nil && !rep.StoreDamaged() {
					t.Errorf("Check found no damage: %+v", rep)
				}
				m.Close()
			}
			if opened == 0 {
				t.Fatal("no open got past the damage: the searches were not tried")
			}
		})
	}
}

// TestStoreRowsInTx: storeRows reads in the read transaction a context carries
// (withStoreTx), else in one of its own; an id without a vector is vectorstore.ErrNoRow.
func TestStoreRowsInTx(t *testing.T) {
	ctx := context.Background()
	m := openT(t, t.TempDir(), WithEmbedder(vectorstore.NewHashEmbedder(16)), WithVectorPrecision(Int8))
	must(t, m.Add(ctx, Document{ID: "a", Text: "alpha"}, Document{ID: "b", Text: "beta"}))
	s, err := m.Collection("").state(false)
	if err != nil {
		t.Fatal(err)
	}
	r := storeRows{db: m.db, s: s, prec: Int8}
	want, err := m.Get(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	dst := [][]float32{make([]float32, 16)}
	must(t, r.Rows(ctx, []string{"b"}, dst))
	if !slices.Equal(dst[0], want.Embedding) {
		t.Fatalf("Rows: %v, want %v", dst[0], want.Embedding)
	}
	tx, err := m.db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	clear(dst[0])
	err = r.Rows(withStoreTx(ctx, tx), []string{"b"}, dst)
	tx.Rollback()
	if err != nil || !slices.Equal(dst[0], want.Embedding) {
		t.Fatalf("Rows in a transaction: %v, %v", dst[0], err)
	}
	if err := r.Rows(ctx, []string{"a", "zz"}, [][]float32{make([]float32, 16), make([]float32, 16)}); !errors.Is(err, vectorstore.ErrNoRow) || !errors.Is(err, store.ErrNoVector) {
		t.Fatalf("a missing id: %v", err)
	}
	if r.Precision() != "int8" {
		t.Fatal(r.Precision())
	}
}

// TestInt8IndexBehindStore: the dense index of an int8 store left behind store.db (its
// files as of an earlier write, as a kill between the store's commit and the index's
// write leaves them) is caught up on open from the change log, reading the vectors it
// needs from store.db; deleted and replaced documents are never rescored with a vector
// the store no longer holds: its answers are those of an index rebuilt from store.db.
func TestInt8IndexBehindStore(t *testing.T) {
	ctx := context.Background()
	emb := vectorstore.NewHashEmbedder(48)
	dir := t.TempDir()
	open := func() *Memory { return openT(t, dir, WithEmbedder(emb), WithVectorPrecision(Int8)) }
	m := open()
	docs := int8Docs(200)
	must(t, m.Add(ctx, docs...))
	must(t, m.Close())
	saved := filepath.Join(t.TempDir(), "vec")
	must(t, os.CopyFS(saved, os.DirFS(filepath.Join(dir, vecDir))))

	m = open()
	var dels []string
	for i := 0; i < 200; i += 4 {
		dels = append(dels, docs[i].ID)
	}
	must(t, m.Delete(ctx, dels...))
	for i := 1; i < 200; i += 4 {
		must(t, m.Upsert(ctx, Document{ID: docs[i].ID, Text: "replaced text about theme3 and word5 " + docs[i].ID}))
	}
	more := int8Docs(260)[200:]
	for i := range more {
		more[i].ID = fmt.Sprintf("n%03d", i)
	}
	must(t, m.Add(ctx, more...))
	must(t, m.Close())

	queries := []string{"topic3 theme4", "replaced theme3 word5", "passage about word7"}
	ask := func() map[string][]Result {
		m := open()
		defer m.Close()
		out := map[string][]Result{}
		for _, q := range queries {
			for _, mode := range []Mode{Dense, Hybrid} {
				rs, err := m.Search(ctx, q, WithMode(mode), TopK(20))
				if err != nil {
					t.Fatalf("%q: %v", q, err)
				}
				out[fmt.Sprint(mode, q)] = rs
			}
		}
		return out
	}
	must(t, os.RemoveAll(filepath.Join(dir, vecDir)))
	must(t, os.CopyFS(filepath.Join(dir, vecDir), os.DirFS(saved)))
	behind := ask()
	must(t, os.RemoveAll(filepath.Join(dir, vecDir)))
	rebuilt := ask()
	for k, w := range rebuilt {
		if !sameResults(behind[k], w) {
			t.Fatalf("%s: caught up %v, rebuilt %v", k, ids(behind[k]), ids(w))
		}
		for _, r := range w {
			if slices.Contains(dels, r.ID) {
				t.Fatalf("%s: deleted %s returned", k, r.ID)
			}
		}
	}
}

// TestIndexRowsNotRecorded: IndexConfig.Rows is a runtime setting: the manifest's record
// of the index is the same with it or without, and a configuration that sets it matches
// the record.
func TestIndexRowsNotRecorded(t *testing.T) {
	cfg := vectorstore.IndexConfig{Backend: "disk", Params: map[string]int{"nlist": 16}}
	with := cfg
	with.Rows = vectorstore.RowMap{}
	if a, b := normalIndex(cfg), normalIndex(with); a.String() != b.String() {
		t.Fatalf("recorded %s with Rows, %s without", b, a)
	}
	if _, ok := mergeIndex(normalIndex(cfg), with); !ok {
		t.Fatal("a configuration with Rows does not match its record")
	}
	if got := normalIndex(cfg).config(with); got.Rows != nil {
		t.Fatal("the recorded configuration carries Rows")
	}
}

// TestHybridDenseFocus: in an int8 store (codes, then rescoring from store.db) a hybrid
// search asks dense recall for its window (100) with the candidates picked for the results
// it keeps, and says so in each result's notes; WithFullDenseWindow, a dense search (whose
// window is its k) and a float32 store (exact) do not focus. A focused dense list's first k hits are those of a dense search for k.
func TestHybridDenseFocus(t *testing.T) {
	ctx := context.Background()
	emb := vectorstore.NewHashEmbedder(64)
	dir := t.TempDir()
	m, err := Open(dir, WithEmbedder(emb), WithVectorPrecision(Int8))
	if err != nil {
		t.Fatal(err)
	}
	must(t, m.Add(ctx, int8Docs(900)...))
	must(t, m.Close())
	if m, err = Open(dir, WithEmbedder(emb)); err != nil { // the rows now in segments: codes
		t.Fatal(err)
	}
	defer m.Close()
	notes := func(m *Memory, opts ...SearchOption) string {
		t.Helper()
		rs, err := m.Search(ctx, "topic3 theme4 word7", opts...)
		if err != nil || len(rs) == 0 {
			t.Fatalf("search: %v, %v", rs, err)
		}
		return strings.Join(rs[0].Explain.Notes, "; ")
	}
	const focused = "dense: candidates picked for the top 25 of its 100 hits" // a quarter of the window
	if n := notes(m, TopK(5)); !strings.Contains(n, focused) {
		t.Fatalf("hybrid notes %q, want %q", n, focused)
	}
	for what, opts := range map[string][]SearchOption{
		"full window": {TopK(5), WithFullDenseWindow()},
		"dense":       {TopK(5), WithMode(Dense)},
		"k = window":  {TopK(5), WithWindow(5)},
	} {
		if n := notes(m, opts...); strings.Contains(n, "candidates picked") {
			t.Fatalf("%s: notes %q", what, n)
		}
	}
	if n := notes(m, TopK(7), WithWindow(200)); !strings.Contains(n, "top 50 of its 200") {
		t.Fatalf("window 200: %q", n)
	}
	if n := notes(m, TopK(60), WithWindow(200)); !strings.Contains(n, "top 60 of its 200") {
		t.Fatalf("k 60, window 200: %q", n)
	}
	// The focused list's first k hits: a dense search for k.
	qv, _ := emb.Embed(ctx, []string{"topic3 theme4 word7"})
	s, err := m.Collection("").state(false)
	if err != nil {
		t.Fatal(err)
	}
	top, err := s.vec.Search(ctx, qv[0], 5, nil)
	must(t, err)
	win, err := vectorstore.SearchFocus(ctx, s.vec, qv[0], 100, 5, nil)
	must(t, err)
	if len(win) != 100 || !reflect.DeepEqual(win[:5], top) {
		t.Fatalf("focused window %d hits, first %v; a search for 5: %v", len(win), win[:min(5, len(win))], top)
	}

	plain := t.TempDir()
	m32, err := Open(plain, WithEmbedder(emb))
	if err != nil {
		t.Fatal(err)
	}
	defer m32.Close()
	must(t, m32.Add(ctx, int8Docs(50)...))
	if n := notes(m32, TopK(5)); strings.Contains(n, "candidates picked") {
		t.Fatalf("float32 store: notes %q", n)
	}
}
