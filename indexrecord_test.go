package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentmem/memory/vectorstore"
)

// The manifest records the dense index: a later open without WithIndex uses it, one with
// another configuration is ErrIndexMismatch naming both, and WithIndexRebuild switches.
func TestIndexRecorded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	emb := vectorstore.NewHashEmbedder(32)
	chromem := vectorstore.IndexConfig{Backend: "chromem"}
	m := openT(t, dir, WithEmbedder(emb), WithIndex(chromem))
	if err := m.Add(bg, roDocs()...); err != nil {
		t.Fatal(err)
	}
	want, err := m.Search(bg, "compiled language", WithMode(Dense), TopK(5))
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	man, err := readManifest(dir)
	if err != nil || man.Index == nil || man.Index.Backend != "chromem" || man.Index.Metric != "cosine" {
		t.Fatalf("manifest index %+v, %v", man.Index, err)
	}

	for _, ro := range []bool{false, true} {
		opts := []Option{WithEmbedder(emb)}
		if ro {
			opts = append(opts, ReadOnly())
		}
		r, err := Open(dir, opts...)
		if err != nil {
			t.Fatalf("read-only %v: open without WithIndex: %v", ro, err)
		}
		if got := r.IndexConfig().Backend; got != "chromem" {
			t.Fatalf("read-only %v: backend %q, want the recorded chromem", ro, got)
		}
		got, err := r.Search(bg, "compiled language", WithMode(Dense), TopK(5))
		if err != nil || strings.Join(ids(got), ",") != strings.Join(ids(want), ",") {
			t.Fatalf("read-only %v: %v, %v; want %v", ro, ids(got), err, ids(want))
		}
		r.Close()

		_, err = Open(dir, append(opts, WithIndex(vectorstore.IndexConfig{Backend: "flat"}))...)
		if !errors.Is(err, ErrIndexMismatch) || !strings.Contains(err.Error(), "backend chromem") || !strings.Contains(err.Error(), "backend flat") {
			t.Fatalf("read-only %v: open with another backend: %v, want ErrIndexMismatch naming both", ro, err)
		}
		_, err = Open(dir, append(opts, WithIndex(vectorstore.IndexConfig{Metric: vectorstore.InnerProduct}))...)
		if !errors.Is(err, ErrIndexMismatch) {
			t.Fatalf("read-only %v: open with another metric: %v, want ErrIndexMismatch", ro, err)
		}
	}

	// Read-only with WithIndexRebuild: another index in memory, the record unchanged.
	before := treeState(t, dir)
	r := openT(t, dir, ReadOnly(), WithEmbedder(emb), WithIndex(vectorstore.IndexConfig{Backend: "flat"}), WithIndexRebuild())
	if got, err := r.Search(bg, "compiled language", WithMode(Dense), TopK(5)); err != nil || strings.Join(ids(got), ",") != strings.Join(ids(want), ",") {
		t.Fatalf("rebuilt read-only: %v, %v", ids(got), err)
	}
	r.Close()
	if after := treeState(t, dir); after != before {
		t.Fatalf("a read-only rebuild changed the store:\n%s\n->\n%s", before, after)
	}

	w := openT(t, dir, WithEmbedder(emb), WithIndex(vectorstore.IndexConfig{Backend: "flat"}), WithIndexRebuild())
	if got, err := w.Search(bg, "compiled language", WithMode(Dense), TopK(5)); err != nil || strings.Join(ids(got), ",") != strings.Join(ids(want), ",") {
		t.Fatalf("rebuilt: %v, %v", ids(got), err)
	}
	w.Close()
	if man, _ := readManifest(dir); man.Index == nil || man.Index.Backend != "flat" {
		t.Fatalf("after the rebuild the manifest records %+v", man.Index)
	}
	if _, err := Open(dir, WithEmbedder(emb), WithIndex(chromem)); !errors.Is(err, ErrIndexMismatch) {
		t.Fatalf("chromem after the switch to flat: %v", err)
	}
}

// Fields a configuration leaves zero take the recorded value; search parameters may
// differ; build parameters may not.
func TestMergeIndex(t *testing.T) {
	rec := indexInfo{Backend: "faiss", Factory: "HNSW32", Metric: "cosine", Params: map[string]int{"efConstruction": 40}}
	cases := []struct {
		cfg    vectorstore.IndexConfig
		ok     bool
		wantFc string
	}{
		{vectorstore.IndexConfig{}, true, "HNSW32"},
		{vectorstore.IndexConfig{Backend: "faiss"}, true, "HNSW32"},
		{vectorstore.IndexConfig{Backend: "faiss", Factory: "HNSW32,Flat"}, true, "HNSW32"},
		{vectorstore.IndexConfig{Params: map[string]int{"efSearch": 300}}, true, "HNSW32"},
		{vectorstore.IndexConfig{GPU: true}, true, "HNSW32"},
		{vectorstore.IndexConfig{Backend: "faiss", Factory: "Flat"}, false, ""},
		{vectorstore.IndexConfig{Backend: "flat"}, false, ""},
		{vectorstore.IndexConfig{Params: map[string]int{"efConstruction": 80}}, false, ""},
		{vectorstore.IndexConfig{Params: map[string]int{"compactPercent": 10}}, false, ""},
	}
	for _, tc := range cases {
		got, ok := mergeIndex(rec, tc.cfg)
		if ok != tc.ok || ok && got.Factory != tc.wantFc {
			t.Errorf("mergeIndex(%+v) = %+v, %v; want ok %v", tc.cfg, got, ok, tc.ok)
		}
	}
	if got, _ := mergeIndex(rec, vectorstore.IndexConfig{Params: map[string]int{"efSearch": 300}}); got.Params["efSearch"] != 300 || got.Params["efConstruction"] != 40 {
		t.Errorf("params merged to %v", got.Params)
	}
}

// A store of an older version records no index: a persisted FAISS index of it (its
// faiss.json) says which, so opening it without WithIndex does not switch it to flat.
func TestInferIndexFromFaissMeta(t *testing.T) {
	dir := t.TempDir()
	meta := filepath.Join(dir, vecDir, DefaultCollection)
	if err := os.MkdirAll(meta, 0o755); err != nil {
		t.Fatal(err)
	}
	body := `{"version":1,"dim":32,"metric":"cosine","factory":"HNSW16","seq":3,"gen":1,"next":2,"ids":["a","b"],"labels":[0,1]}`
	if err := os.WriteFile(filepath.Join(meta, "faiss.json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	m := &Memory{dir: dir}
	op := opening{m}
	x := op.inferIndex()
	if x == nil || x.Backend != "faiss" || x.Factory != "HNSW16" || x.Metric != "cosine" {
		t.Fatalf("inferred %+v", x)
	}
	if err := os.WriteFile(filepath.Join(meta, "faiss.json"), []byte(`{"ids":[`), 0o644); err != nil {
		t.Fatal(err)
	}
	if x := op.inferIndex(); x != nil {
		t.Fatalf("inferred %+v from a damaged faiss.json", x)
	}
}

// TestDenseIndexPersists checks the default dense index (the disk index): a store reopened
// loads its vector index from its files, with no rebuild from the store of record, and
// dense and hybrid searches, filtered or not, return what the in-memory flat index returns
// on the same store.
func TestDenseIndexPersists(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	emb := vectorstore.NewHashEmbedder(32)
	m := openT(t, dir, WithEmbedder(emb))
	var docs []Document
	for i := range 300 {
		docs = append(docs, Document{ID: fmt.Sprintf("p%03d", i), Text: fmt.Sprintf("passage %d about topic%d and theme%d words", i, i%17, i%5),
			Metadata: map[string]any{"g": float64(i % 4)}})
	}
	if err := m.Add(ctx, docs...); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(ctx, "p007", "p100"); err != nil {
		t.Fatal(err)
	}
	if err := m.Upsert(ctx, Document{ID: "p008", Text: "a replaced passage about topic3"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, vecDir, DefaultCollection, "disk.json")); err != nil {
		t.Fatalf("no persisted vector index: %v", err)
	}
	searches := func(m *Memory) []string {
		var out []string
		for _, q := range []string{"topic3 theme2", "passage 42", "words about topic11"} {
			for _, opts := range [][]SearchOption{
				{WithMode(Dense), TopK(7)},
				{WithMode(Hybrid), TopK(5)},
				{WithMode(Dense), TopK(6), WithWhere(Where{"g": float64(1)})},
			} {
				res, err := m.Search(ctx, q, opts...)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range res {
					out = append(out, fmt.Sprintf("%s %s %.6f", q, r.ID, r.Score))
				}
			}
		}
		return out
	}
	var logs strings.Builder
	m2 := openT(t, dir, WithEmbedder(emb), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	got := searches(m2)
	if strings.Contains(logs.String(), "index=vectors") {
		t.Fatalf("reopen rebuilt the vector index: %s", logs.String())
	}
	if err := m2.Close(); err != nil {
		t.Fatal(err)
	}
	flat := openT(t, dir, WithEmbedder(emb), WithIndex(vectorstore.IndexConfig{Backend: "flat"}), WithIndexRebuild())
	want := searches(flat)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("disk index results differ from the flat index's:\n got  %q\n want %q", got, want)
	}
}
