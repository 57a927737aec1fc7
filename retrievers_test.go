package memory

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory/hybrid"
)

// withRetriever adds r to the retrievers table for the test.
func withRetriever(t *testing.T, r *retriever) {
	saved := retrievers
	retrievers = append(slices.Clip(saved), r)
	t.Cleanup(func() { retrievers = saved })
}

// TestThirdRetriever: a retriever is one row. A third one, here a recall path that
// finds the units whose id holds the query, runs in hybrid search beside BM25 and dense,
// is fused with them, and is what a search in its own mode runs alone.
func TestThirdRetriever(t *testing.T) {
	const idMode Mode = "id"
	var elapsed time.Duration
	withRetriever(t, &retriever{
		name:  "id",
		mode:  idMode,
		order: 30,
		search: func(ctx context.Context, s *colState, q *retrieval, k int) ([]hybrid.Hit, error) {
			var hits []hybrid.Hit
			for _, u := range []string{"zeta", "rust"} { // what an index over ids would return (unchunked units are document ids)
				if strings.Contains(u, q.query) && len(hits) < k {
					hits = append(hits, hybrid.Hit{ID: u, Score: 1})
				}
			}
			return hits, nil
		},
		elapsed: func(*SearchStats) *time.Duration { return &elapsed },
	})
	m := openT(t, "")
	must(t, m.Add(bg, Document{ID: "zeta", Text: "nothing in common with the query"},
		Document{ID: "go", Text: "Go is a compiled language"}))

	// "zeta" shares no term with the query: only the third retriever finds it.
	res := searchT(t, m, "zeta", TopK(5))
	if len(res) != 1 || res[0].ID != "zeta" {
		t.Fatalf("hybrid search with a third retriever: %v", ids(res))
	}
	// Without an embedder, hybrid runs the retrievers that need none, and says so.
	if ex := res[0].Explain; ex.Mode != Hybrid || len(ex.Notes) != 1 || !strings.Contains(ex.Notes[0], "without the retrievers that embed") {
		t.Fatalf("explanation %+v", ex)
	}
	res = searchT(t, m, "compiled", TopK(5))
	if len(res) != 1 || res[0].ID != "go" || res[0].Explain.BM25 == nil {
		t.Fatalf("the third retriever found nothing, BM25 must still answer: %v", ids(res))
	}
	// Its own mode runs it alone.
	res = searchT(t, m, "zeta", WithMode(idMode), TopK(5))
	if len(res) != 1 || res[0].ID != "zeta" || res[0].Explain.BM25 != nil || res[0].Explain.Mode != idMode {
		t.Fatalf("search in the third retriever's mode: %+v", res)
	}
}
