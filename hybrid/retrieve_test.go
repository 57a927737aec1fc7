package hybrid_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentmem/memory/hybrid"
)

// docs is a toy corpus for the examples: id -> text.
var docs = map[string]string{
	"otters": "sea otters hold hands while they sleep",
	"bbolt":  "bbolt is an embedded key value store",
	"seals":  "seals sleep in the water",
}

// keyword ranks the documents by the query words they hold.
func keyword(_ context.Context, q string, k int) ([]hybrid.Hit, error) {
	var hits []hybrid.Hit
	for _, id := range []string{"bbolt", "otters", "seals"} {
		n := 0
		for _, w := range strings.Fields(q) {
			if strings.Contains(docs[id], w) {
				n++
			}
		}
		if n > 0 && len(hits) < k {
			hits = append(hits, hybrid.Hit{ID: id, Score: float64(n)})
		}
	}
	return hits, nil
}

// ExampleRetrieve composes two retrievers and fuses their lists with RRF.
func ExampleRetrieve() {
	semantic := func(_ context.Context, q string, k int) ([]hybrid.Hit, error) {
		return []hybrid.Hit{{ID: "seals", Score: 0.9}, {ID: "otters", Score: 0.8}}[:min(k, 2)], nil
	}
	lists, err := hybrid.Retrieve(context.Background(), "otters sleep", 10,
		hybrid.Retriever[string]{Name: "keyword", Search: keyword},
		hybrid.Retriever[string]{Name: "semantic", Search: semantic},
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range hybrid.RRF(lists, hybrid.FusionOptions{}) {
		fmt.Printf("%s %.4f\n", f.ID, f.Score)
	}
	// Output:
	// otters 0.0325
	// seals 0.0325
}

func TestRetrieve(t *testing.T) {
	boom := errors.New("boom")
	calls := 0
	failing := hybrid.Retriever[string]{Name: "failing", Search: func(context.Context, string, int) ([]hybrid.Hit, error) {
		calls++
		return nil, boom
	}}
	ok := hybrid.Retriever[string]{Name: "keyword", Weight: 2, Search: keyword}
	lists, err := hybrid.Retrieve(context.Background(), "sleep", 1, ok)
	if err != nil || len(lists) != 1 || lists[0].Name != "keyword" || lists[0].Weight != 2 || len(lists[0].Hits) != 1 {
		t.Fatalf("Retrieve = %+v, %v", lists, err)
	}
	if _, err := hybrid.Retrieve(context.Background(), "sleep", 1, failing, ok); !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("a failing retriever: %v after %d calls", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := hybrid.Retrieve(ctx, "sleep", 1, failing); !errors.Is(err, context.Canceled) || calls != 1 {
		t.Fatalf("a cancelled context: %v after %d calls", err, calls)
	}
	if lists, err := hybrid.Retrieve[string](context.Background(), "x", 1); err != nil || len(lists) != 0 {
		t.Fatalf("no retrievers: %v, %v", lists, err)
	}
}
