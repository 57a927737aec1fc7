package memory

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/memory/vectorstore"
)

// cascadeStore has a gold collection and a docs collection; "deploy" is in both, strong
// in gold; "database" only in docs.
func cascadeStore(t *testing.T, opts ...Option) *Memory {
	t.Helper()
	m := openT(t, "", opts...)
	must(t, m.Collection("gold").Add(bg,
		Document{ID: "g1", Text: "deploy deploy: run make deploy"},
		Document{ID: "g2", Text: "the service logs live in /var/log"},
		Document{ID: "g3", Text: "service owners are listed in the wiki"},
	))
	must(t, m.Collection("docs").Add(bg,
		Document{ID: "d1", Text: "restore the database from its snapshot", Source: "db.md"},
		Document{ID: "d2", Text: "the database snapshot runs hourly", Source: "db.md"},
		Document{ID: "d3", Text: "deploy notes for the service", Source: "deploy.md"},
	))
	return m
}

func TestCascade(t *testing.T) {
	m := cascadeStore(t)
	bm := WithMode(BM25)
	t.Run("stops at the first collection past the threshold", func(t *testing.T) {
		var st SearchStats
		res, err := m.Search(bg, "deploy", bm, WithCascade(0.5, "gold", "docs"), WithStats(&st))
		must(t, err)
		if len(res) != 1 || res[0].ID != "g1" || res[0].Collection != "gold" || res[0].Explain.Cascade != 1 {
			t.Fatalf("results %+v", res)
		}
		if n := res[0].Explain.Notes; len(n) == 0 || !strings.Contains(n[len(n)-1], `stopped at step 1 of 2 ("gold")`) {
			t.Errorf("notes %q", n)
		}
		if st.Total <= 0 || st.Mode != BM25 {
			t.Errorf("stats %+v", st)
		}
	})
	t.Run("falls back, merging by score", func(t *testing.T) {
		res, err := m.Search(bg, "service database", bm, WithCascade(0.5, "gold", "docs"))
		must(t, err)
		if len(res) < 3 || res[0].Collection != "docs" || res[0].Explain.Cascade != 2 {
			t.Fatalf("results %+v", res)
		}
		var cols []string
		for i, r := range res {
			if i > 0 && r.Score > res[i-1].Score {
				t.Errorf("not sorted by score: %v", res)
			}
			want := map[string]int{"gold": 1, "docs": 2}[r.Collection]
			if r.Explain.Cascade != want {
				t.Errorf("%s/%s: step %d, want %d", r.Collection, r.ID, r.Explain.Cascade, want)
			}
			cols = append(cols, r.Collection)
		}
		if !slices.Contains(cols, "gold") {
			t.Errorf("the gold results searched before the fallback are gone: %v", cols)
		}
	})
	t.Run("no collection passes: all of them", func(t *testing.T) {
		res, err := m.Search(bg, "service", bm, WithCascade(1000, "gold", "docs"), TopK(3))
		must(t, err)
		if len(res) != 3 {
			t.Fatalf("%d results, want TopK 3", len(res))
		}
		if n := res[0].Explain.Notes; !strings.Contains(n[len(n)-1], "searched all 2 collections") {
			t.Errorf("notes %q", n)
		}
	})
	t.Run("order matters", func(t *testing.T) {
		res, err := m.Search(bg, "deploy", bm, WithCascade(0.01, "docs", "gold"))
		must(t, err)
		if len(res) != 1 || res[0].ID != "d3" {
			t.Fatalf("results %v", ids(res))
		}
	})
	t.Run("with source dedup", func(t *testing.T) {
		res, err := m.Search(bg, "database snapshot", bm, WithCascade(1000, "gold", "docs"), WithSourceDedup())
		must(t, err)
		if got := ids(res); !slices.Equal(got, []string{"d1"}) && !slices.Equal(got, []string{"d2"}) {
			t.Fatalf("results %v, want one of db.md", got)
		}
	})
	t.Run("errors", func(t *testing.T) {
		for name, opt := range map[string]SearchOption{
			"empty":            WithCascade(0.5),
			"repeated":         WithCascade(0.5, "gold", "gold"),
			"NaN":              WithCascade(math.NaN(), "gold"),
			"bad name":         WithCascade(0.5, ""),
			"too many":         WithCascade(0.5, manyNames(maxCascadeCollections+1)...),
			"with collections": func(s *SearchOptions) { WithCascade(0.5, "gold")(s); InCollections(map[string]float64{"docs": 1})(s) },
		} {
			_, err := m.Search(bg, "deploy", bm, opt)
			if !errors.Is(err, ErrInvalidOption) && !errors.Is(err, ErrInvalidCollection) {
				t.Errorf("%s: err %v", name, err)
			}
		}
		_, err := m.Search(bg, "deploy", bm, WithCascade(0.5, "gold", "nope"), TopK(1))
		if err != nil {
			t.Errorf("a missing collection after the stop is not searched: %v", err)
		}
		_, err = m.Search(bg, "deploy", bm, WithCascade(1000, "gold", "nope"))
		if !errors.Is(err, ErrCollectionNotFound) || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("missing collection: %v", err)
		}
		_, err = m.Search(bg, "  ", bm, WithCascade(0.5, "gold"))
		if !errors.Is(err, ErrInvalidOption) {
			t.Errorf("empty query: %v", err)
		}
	})
}

func manyNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint("c", i)
	}
	return out
}

// TestCascadeBatch: SearchBatch with a cascade answers each query as Search does (the
// batch's shared dense retrieval is not used for another collection).
func TestCascadeBatch(t *testing.T) {
	m := cascadeStore(t, WithEmbedder(vectorstore.NewHashEmbedder(32)))
	queries := []string{"deploy", "service database", "snapshot", "logs"}
	for _, mode := range []Mode{Dense, Hybrid} {
		opts := []SearchOption{WithMode(mode), WithCascade(0.99, "gold", "docs"), TopK(4)}
		batch, err := m.SearchBatch(bg, queries, opts...)
		must(t, err)
		for i, q := range queries {
			one, err := m.Search(bg, q, opts...)
			must(t, err)
			if fmt.Sprint(ids(one)) != fmt.Sprint(ids(batch[i])) {
				t.Errorf("%s %q: batch %v, search %v", mode, q, ids(batch[i]), ids(one))
			}
		}
	}
}

// TestSourceDedup: one result per source, the best; results without a source all kept;
// a source with many better documents does not push the others out of the top k.
func TestSourceDedup(t *testing.T) {
	m := openT(t, "")
	var docs []Document
	for i := range 30 {
		docs = append(docs, Document{ID: fmt.Sprintf("a%02d", i), Source: "a.md", Text: "otter otter otter river " + fmt.Sprint(i)})
	}
	docs = append(docs,
		Document{ID: "b1", Source: "b.md", Text: "an otter in a long sentence about many other things entirely"},
		Document{ID: "n1", Text: "otter otter"},
		Document{ID: "n2", Text: "otter otter otter"},
	)
	must(t, m.Add(bg, docs...))
	res, err := m.Search(bg, "otter", WithMode(BM25), TopK(4), WithSourceDedup())
	must(t, err)
	got := ids(res)
	srcs := map[string]int{}
	for _, r := range res {
		srcs[r.Source]++
	}
	if srcs["a.md"] != 1 || srcs["b.md"] != 1 || !slices.Contains(got, "n1") || !slices.Contains(got, "n2") {
		t.Fatalf("results %v (sources %v)", got, srcs)
	}
	plain, err := m.Search(bg, "otter", WithMode(BM25), TopK(4))
	must(t, err)
	var firstA string
	for _, r := range plain {
		if r.Source == "a.md" {
			firstA = r.ID
			break
		}
	}
	for _, r := range res {
		if r.Source == "a.md" && r.ID != firstA {
			t.Errorf("kept %s of a.md, not its best %s", r.ID, firstA)
		}
	}
	// Across collections too.
	must(t, m.Collection("other").Add(bg, Document{ID: "o1", Source: "a.md", Text: "otter otter otter otter otter"}))
	res, err = m.Search(bg, "otter", WithMode(BM25), TopK(10), WithSourceDedup(),
		InCollections(map[string]float64{DefaultCollection: 1, "other": 1}))
	must(t, err)
	srcs = map[string]int{}
	for _, r := range res {
		srcs[r.Source]++
	}
	if srcs["a.md"] != 1 {
		t.Fatalf("multi-collection: %d results of a.md: %v", srcs["a.md"], ids(res))
	}
}
