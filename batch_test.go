package memory

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/memory/vectorstore"
)

// TestSearchBatch: every mode (dense and hybrid share one embedding call and one vector
// index batch) returns, for each query, exactly what Search returns, in input order;
// filters, options and errors behave as for single searches.
func TestSearchBatch(t *testing.T) {
	ctx := context.Background()
	m, err := Open(t.TempDir(), WithEmbedder(vectorstore.NewHashEmbedder(64)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	words := strings.Fields("cell tumor growth insulin glucose mouse brain protein gene therapy risk diet sleep memory zinc iron")
	rng := rand.New(rand.NewPCG(3, 3))
	var docs []Document
	for i := 0; i < 300; i++ {
		var sb strings.Builder
		for j := 0; j < 5+rng.IntN(30); j++ {
			sb.WriteString(words[rng.IntN(len(words))] + " ")
		}
		docs = append(docs, Document{ID: fmt.Sprintf("d%03d", i), Text: sb.String(), Metadata: map[string]any{"even": i%2 == 0}})
	}
	if err := m.Add(ctx, docs...); err != nil {
		t.Fatal(err)
	}
	qs := make([]string, 40)
	for i := range qs {
		qs[i] = words[rng.IntN(len(words))] + " " + words[rng.IntN(len(words))]
	}
	for _, tc := range []struct {
		name string
		opts []SearchOption
	}{
		{"bm25", []SearchOption{WithMode(BM25), TopK(5)}},
		{"dense", []SearchOption{WithMode(Dense), TopK(7)}},
		{"hybrid", []SearchOption{TopK(10)}},
		{"hybrid window", []SearchOption{TopK(3), WithWindow(20)}},
		{"hybrid filtered", []SearchOption{TopK(5), WithWhere(Where{"even": true})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := m.SearchBatch(ctx, qs, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(qs) {
				t.Fatalf("%d lists for %d queries", len(got), len(qs))
			}
			for i, q := range qs {
				want, err := m.Search(ctx, q, tc.opts...)
				if err != nil {
					t.Fatal(err)
				}
				if len(want) == 0 {
					t.Fatalf("query %q: no results: weak test", q)
				}
				if fmt.Sprint(resultKeys(got[i])) != fmt.Sprint(resultKeys(want)) {
					t.Fatalf("query %d %q:\nbatch  %v\nsingle %v", i, q, resultKeys(got[i]), resultKeys(want))
				}
			}
		})
	}
	if _, err := m.SearchBatch(ctx, qs, WithStats(&SearchStats{})); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("WithStats: %v", err)
	}
	bad := append([]string{}, qs...)
	bad[7] = strings.Repeat("x ", 40<<10)
	if _, err := m.SearchBatch(ctx, bad, WithMode(BM25)); !errors.Is(err, ErrQueryTooLarge) || !strings.Contains(err.Error(), "query 7") {
		t.Fatalf("oversized query: %v", err)
	}
	if _, err := m.SearchBatch(ctx, make([]string, maxBatchQueries+1)); !errors.Is(err, ErrQueryTooLarge) {
		t.Fatalf("oversized batch: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := m.SearchBatch(cctx, qs, WithMode(BM25)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if res, err := m.SearchBatch(ctx, nil); err != nil || len(res) != 0 {
		t.Fatalf("empty batch: %v %v", res, err)
	}
}

// resultKeys is what a result list says: ids, chunks and scores in order.
func resultKeys(rs []Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("%s#%d:%.6g", r.ID, r.ChunkIndex, r.Score)
	}
	return out
}

// countingEmbedder counts the embedding calls of the embedder it wraps. Searches of a batch
// embed on several goroutines: the counts are taken under mu (tests read them once the
// searches have returned).
type countingEmbedder struct {
	vectorstore.Embedder
	mu           sync.Mutex
	calls, texts int
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.mu.Lock()
	c.calls++
	c.texts += len(texts)
	c.mu.Unlock()
	return c.Embedder.Embed(ctx, texts)
}

// TestSearchBatchSharesEmbedding: a dense batch embeds its queries in one call (not one per
// query) and still answers each as Search does.
func TestSearchBatchSharesEmbedding(t *testing.T) {
	ctx := context.Background()
	ce := &countingEmbedder{Embedder: vectorstore.NewHashEmbedder(32)}
	m, err := Open(t.TempDir(), WithEmbedder(ce))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Add(ctx, Document{ID: "a", Text: "tumor growth"}, Document{ID: "b", Text: "insulin glucose"}, Document{ID: "c", Text: "sleep memory"}); err != nil {
		t.Fatal(err)
	}
	qs := []string{"tumor", "glucose", "memory", "growth", "sleep"}
	ce.calls, ce.texts = 0, 0
	got, err := m.SearchBatch(ctx, qs, WithMode(Dense), TopK(2))
	if err != nil {
		t.Fatal(err)
	}
	if ce.calls != 1 || ce.texts != len(qs) {
		t.Fatalf("batch of %d queries: %d embedding calls for %d texts, want 1 call", len(qs), ce.calls, ce.texts)
	}
	for i, q := range qs {
		want, err := m.Search(ctx, q, WithMode(Dense), TopK(2))
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(resultKeys(got[i])) != fmt.Sprint(resultKeys(want)) {
			t.Fatalf("%q: batch %v single %v", q, resultKeys(got[i]), resultKeys(want))
		}
	}
}

// TestStoresKeepOwnBM25Params: two stores in one process with different k1/b keep their
// own scores while both are searched concurrently (BM25 parameters are per store, not
// process-global; run under -race).
func TestStoresKeepOwnBM25Params(t *testing.T) {
	ctx := context.Background()
	docs := []Document{
		{ID: "a", Text: "tumor tumor tumor growth in a long text about many other things entirely"},
		{ID: "b", Text: "tumor growth"},
		{ID: "c", Text: "cell biology"},
	}
	open := func(k1, b float64) *Memory {
		m, err := Open("", WithBM25(k1, b))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		if err := m.Add(ctx, docs...); err != nil {
			t.Fatal(err)
		}
		return m
	}
	x, y := open(0.9, 0.4), open(2.0, 1.0)
	score := func(m *Memory) string {
		res, err := m.Search(ctx, "tumor growth", WithMode(BM25), TopK(3))
		if err != nil {
			t.Error(err)
			return ""
		}
		return fmt.Sprint(resultKeys(res))
	}
	wx, wy := score(x), score(y)
	if wx == wy {
		t.Fatalf("weak test: both parameter sets rank alike: %s", wx)
	}
	done := make(chan string, 40)
	for i := 0; i < 40; i++ {
		go func() {
			m, want := x, wx
			if i%2 == 1 {
				m, want = y, wy
			}
			if got := score(m); got != want {
				done <- fmt.Sprintf("store %d: %s, want %s", i%2, got, want)
				return
			}
			done <- ""
		}()
	}
	for i := 0; i < 40; i++ {
		if msg := <-done; msg != "" {
			t.Fatal(msg)
		}
	}
}

// TestSearchStatsFunc: WithStatsFunc reports every search's timings, once per query of a
// SearchBatch too (where WithStats is refused), with the batch's shared embedding counted
// in each query's Embed.
func TestSearchStatsFunc(t *testing.T) {
	ctx := context.Background()
	m, err := Open(t.TempDir(), WithEmbedder(vectorstore.NewHashEmbedder(32)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for i := range 50 {
		if err := m.Add(ctx, Document{ID: fmt.Sprintf("d%d", i), Text: fmt.Sprintf("zinc iron number %d sleep", i)}); err != nil {
			t.Fatal(err)
		}
	}
	qs := []string{"zinc", "iron sleep", "number 7", "sleep"}
	for _, tc := range []struct {
		name  string
		mode  Mode
		batch bool
	}{
		{"search bm25", BM25, false},
		{"search dense", Dense, false},
		{"batch bm25", BM25, true},
		{"batch dense", Dense, true},
		{"batch hybrid", Hybrid, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu  sync.Mutex
				got []SearchStats
			)
			fn := WithStatsFunc(func(st SearchStats) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, st)
			})
			want := 1
			if tc.batch {
				want = len(qs)
				if _, err := m.SearchBatch(ctx, qs, WithMode(tc.mode), fn); err != nil {
					t.Fatal(err)
				}
			} else if _, err := m.Search(ctx, qs[0], WithMode(tc.mode), fn); err != nil {
				t.Fatal(err)
			}
			if len(got) != want {
				t.Fatalf("stats func called %d times, want %d", len(got), want)
			}
			for _, st := range got {
				if st.Mode != tc.mode || st.Total <= 0 {
					t.Errorf("stats %+v: want mode %s and a total", st, tc.mode)
				}
				if tc.mode != BM25 && st.Embed <= 0 {
					t.Errorf("stats %+v: a %s search embeds its query", st, tc.mode)
				}
				if tc.mode != Dense && st.BM25 <= 0 {
					t.Errorf("stats %+v: a %s search runs BM25", st, tc.mode)
				}
			}
		})
	}
}
