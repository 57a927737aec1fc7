//go:build faiss

package memory

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory/vectorstore"
)

// A read-only open of a store built with a persisted FAISS HNSW index, without WithIndex,
// opens that index (no rebuild: the log says none, the files stay as they were) and
// answers as the writer did.
func TestReadOnlyUsesPersistedFaiss(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	emb := vectorstore.NewHashEmbedder(32)
	m := openT(t, dir, WithEmbedder(emb), WithIndex(vectorstore.IndexConfig{Backend: "faiss", Factory: "HNSW16"}))
	if err := m.Add(bg, roDocs()...); err != nil {
		t.Fatal(err)
	}
	want, err := m.Search(bg, "compiled language", WithMode(Dense), TopK(5))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	before := treeState(t, dir)
	var logs strings.Builder
	r := openT(t, dir, ReadOnly(), WithEmbedder(emb), WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	if cfg := r.IndexConfig(); cfg.Backend != "faiss" || cfg.Factory != "HNSW16" {
		t.Fatalf("read-only store uses %+v, want the recorded faiss HNSW16", cfg)
	}
	got, err := r.Search(bg, "compiled language", WithMode(Dense), TopK(5))
	if err != nil || strings.Join(ids(got), ",") != strings.Join(ids(want), ",") {
		t.Fatalf("read-only dense search: %v, %v; want %v", ids(got), err, ids(want))
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "index=vectors") {
		t.Fatalf("the read-only open rebuilt the persisted FAISS index:\n%s", logs.String())
	}
	if after := treeState(t, dir); after != before {
		t.Fatalf("a read-only open changed the store:\n%s\n->\n%s", before, after)
	}
}
