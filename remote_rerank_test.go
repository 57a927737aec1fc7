package memory

import (
	"context"
	"errors"
	"testing"

	"github.com/agentmem/memory/vectorstore"
)

// byLength is a stand-in cross-encoder that prefers short passages (the opposite of what
// fusion favours here), so a rerank that did not happen, or happened elsewhere, shows.
type byLength struct{}

func (byLength) Score(_ context.Context, _ string, passages []string) ([]float32, error) {
	out := make([]float32, len(passages))
	for i, p := range passages {
		out[i] = -float32(len(p)) / 100
	}
	return out, nil
}

// TestRemoteRerankWithOwnReranker: a read-only open beside a writer that has no reranker,
// opened WithReranker, reranks with its own reranker over the writer's candidates (it used
// to get the writer's reranker or ErrNoReranker); its results equal those of the same
// store opened directly with that reranker. A collapse after its own rerank is refused.
func TestRemoteRerankWithOwnReranker(t *testing.T) {
	dir := t.TempDir()
	w, _ := remotePair(t, dir)
	r, err := Open(dir, ReadOnly(), WithReranker(byLength{}))
	if err != nil {
		t.Fatal(err)
	}
	if r.remote == nil {
		t.Fatal("the read-only store does not read through the writer")
	}
	searches := []struct {
		name string
		col  string
		q    string
		opts []SearchOption
	}{
		{"top 3 of 50", "", "language memory", []SearchOption{WithRerank(0), TopK(3)}},
		{"rerank 4, top 6", "", "language", []SearchOption{WithRerank(4), TopK(6), WithMode(BM25)}},
		{"min score", "", "language", []SearchOption{WithRerank(0), WithMinScore(0.3)}},
		{"source dedup", "other", "otters", []SearchOption{WithRerank(0), WithSourceDedup(), WithAllChunks(), TopK(5)}},
	}
	got := make([]string, len(searches))
	for i, s := range searches {
		res, err := r.Collection(s.col).Search(bg, s.q, s.opts...)
		if err != nil || len(res) == 0 || res[0].Explain.Rerank == nil {
			t.Fatalf("%s through the writer: %v, %v (want reranked results)", s.name, jsonOf(res), err)
		}
		got[i] = jsonOf(res)
	}
	qs := []string{"language", "otters"}
	gotBatch, err := r.SearchBatch(bg, qs, WithRerank(0), TopK(2))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Search(bg, "language", WithRerank(0), WithCollapse(0.9)); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("collapse after a reader's own rerank: %v, want ErrInvalidOption", err)
	}
	r.Close()
	w.Close()

	direct, err := Open(dir, ReadOnly(), WithEmbedder(vectorstore.NewHashEmbedder(16)), WithReranker(byLength{}))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	if direct.remote != nil {
		t.Fatal("the writer is closed, yet the store reads through it")
	}
	for i, s := range searches {
		want, err := direct.Collection(s.col).Search(bg, s.q, s.opts...)
		if err != nil || jsonOf(want) != got[i] {
			t.Errorf("%s: through the writer %s, opened directly %s (%v)", s.name, got[i], jsonOf(want), err)
		}
	}
	wantBatch, err := direct.SearchBatch(bg, qs, WithRerank(0), TopK(2))
	if err != nil || jsonOf(wantBatch) != jsonOf(gotBatch) {
		t.Errorf("batch: through the writer %s, opened directly %s (%v)", jsonOf(gotBatch), jsonOf(wantBatch), err)
	}
}
