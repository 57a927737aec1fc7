package memory

import (
	"errors"
	"testing"

	"github.com/agentmem/memory/vectorstore"
)

// TestResolveRecordedEmbedder: a store reopened without an embedder loads the one it
// recorded through the embedder registry, and dense search works again; without the
// resolver it opens for BM25 only.
func TestResolveRecordedEmbedder(t *testing.T) {
	dir := t.TempDir()
	m := openT(t, dir, WithEmbedder(vectorstore.NewHashEmbedder(64)))
	must(t, m.Add(bg, corpus...))
	want := searchT(t, m, "compiled language memory", WithMode(Dense), TopK(3))
	must(t, m.Close())

	m = openT(t, dir)
	if _, err := m.Search(bg, "compiled language memory", WithMode(Dense)); !errors.Is(err, ErrEmbedderNeeded) {
		t.Fatalf("dense search without an embedder: %v, want ErrEmbedderNeeded", err)
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
