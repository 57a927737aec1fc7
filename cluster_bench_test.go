//go:build weaviate

package memory

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory/internal/weaviate"
	"github.com/agentmem/memory/vectorstore"
)

// BenchmarkClusterFusion compares, on the three-node cluster, the two ways of fusing a
// hybrid search (issue #41): ours (Weaviate's BM25 and nearVector queries, each for the
// candidate window, fused here by RRF: the embedded store's Explain and semantics) and
// Weaviate's own hybrid (rankedFusion, alpha 0.5), on the SciFact test queries over a
// subset of its corpus (the documents the test qrels name, then others up to 1,000), with
// hash:384 vectors. Each sub-benchmark is one query a round; the quality of each (nDCG@10
// and the overlap of the two top 10s) is logged once. Needs BEIR SciFact in
// $MEMORY_SCIFACT (default /work/shared/data/beir/scifact).
//
//	go test -tags weaviate -run '^$' -bench BenchmarkClusterFusion -benchtime 300x .
func BenchmarkClusterFusion(b *testing.B) {
	dir := os.Getenv("MEMORY_SCIFACT")
	if dir == "" {
		dir = "/work/shared/data/beir/scifact"
	}
	docs, queries, qrels := loadSciFactSubset(b, dir, 1000)
	m, err := Open(clusterOpener{addr: clusterAddr(b)}.newAddr(b), WithEmbedder(vectorstore.NewHashEmbedder(384)), WithConsistency("ALL"))
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	t0 := time.Now()
	for i := 0; i < len(docs); i += 200 {
		if err := m.Add(ctx, docs[i:min(i+200, len(docs))]...); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("loaded %d documents in %v; %d queries", len(docs), time.Since(t0), len(queries))
	cs := m.cluster
	cc, err := cs.class(ctx, DefaultCollection)
	if err != nil {
		b.Fatal(err)
	}
	emb := vectorstore.NewHashEmbedder(384)
	var stats []SearchStats
	ours := func(q string) ([]string, error) {
		var st SearchStats
		res, err := m.Search(ctx, q, TopK(10), WithStats(&st))
		stats = append(stats, st)
		return resultIDs(res), err
	}
	ours40 := func(q string) ([]string, error) {
		res, err := m.Search(ctx, q, TopK(10), WithWindow(40))
		return resultIDs(res), err
	}
	theirs := func(q string) ([]string, error) {
		qv, err := emb.Embed(ctx, []string{q})
		if err != nil {
			return nil, err
		}
		// Chunks: ask for 40 and keep each document's best, up to 10 documents.
		hits, err := cs.wc.Hybrid(ctx, weaviate.Query{Class: cc.name, Limit: 40, Text: q,
			Vector: qv[0], Alpha: 0.5, Properties: []string{weaviate.PropText}, Fields: []string{propChunk}})
		if err != nil {
			return nil, err
		}
		ids := make([]string, 0, 10)
		seen := map[string]bool{}
		for _, h := range hits {
			if !seen[h.ID] && len(ids) < 10 {
				seen[h.ID] = true
				ids = append(ids, h.ID)
			}
		}
		// As a Result needs the record: read it (ours reads them too).
		if _, err := cs.heads(ctx, cc, ids, nil); err != nil {
			return nil, err
		}
		return ids, nil
	}
	var ndcgOurs, ndcgOurs40, ndcgTheirs, overlap float64
	for _, q := range queries {
		a40, err := ours40(q.text)
		if err != nil {
			b.Fatal(err)
		}
		ndcgOurs40 += ndcg10(a40, qrels[q.id])
		a, err := ours(q.text)
		if err != nil {
			b.Fatal(err)
		}
		t, err := theirs(q.text)
		if err != nil {
			b.Fatal(err)
		}
		ndcgOurs += ndcg10(a, qrels[q.id])
		ndcgTheirs += ndcg10(t, qrels[q.id])
		in := map[string]bool{}
		for _, id := range a {
			in[id] = true
		}
		n := 0
		for _, id := range t {
			if in[id] {
				n++
			}
		}
		overlap += float64(n) / 10
	}
	nq := float64(len(queries))
	var bm, de, fu time.Duration
	for _, st := range stats {
		bm, de, fu = bm+st.BM25, de+st.Dense, fu+st.Fuse
	}
	b.Logf("ours, mean per query: BM25 %v, dense %v (run at once), fusion and records %v",
		bm/time.Duration(len(stats)), de/time.Duration(len(stats)), fu/time.Duration(len(stats)))
	b.Logf("nDCG@10: ours (RRF k 60, window 100) %.4f, ours with window 40 %.4f, Weaviate hybrid rankedFusion alpha 0.5 %.4f; top-10 overlap (ours, Weaviate's) %.3f",
		ndcgOurs/nq, ndcgOurs40/nq, ndcgTheirs/nq, overlap/nq)
	for _, c := range []struct {
		name string
		run  func(string) ([]string, error)
	}{{"weaviate-hybrid", theirs}, {"ours-rrf", ours}, {"ours-rrf-window40", ours40}, {"weaviate-hybrid-again", theirs}} {
		run := c.run
		b.Run(c.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				t := time.Now()
				if _, err := run(queries[i%len(queries)].text); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t))
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

type benchQuery struct{ id, text string }

// loadSciFactSubset reads SciFact's test queries and qrels, and the corpus documents the
// qrels name, then others up to n.
func loadSciFactSubset(b testing.TB, dir string, n int) ([]Document, []benchQuery, map[string]map[string]float64) {
	qrels := map[string]map[string]float64{}
	f, err := os.Open(filepath.Join(dir, "qrels", "test.tsv"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	need := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 || fs[0] == "query-id" {
			continue
		}
		if qrels[fs[0]] == nil {
			qrels[fs[0]] = map[string]float64{}
		}
		qrels[fs[0]][fs[1]] = 1
		need[fs[1]] = true
	}
	type line struct {
		ID    string `json:"_id"`
		Title string `json:"title"`
		Text  string `json:"text"`
	}
	read := func(name string, fn func(line)) {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var l line
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				b.Fatal(err)
			}
			fn(l)
		}
	}
	var docs, rest []Document
	read("corpus.jsonl", func(l line) {
		d := Document{ID: l.ID, Title: l.Title, Text: l.Text}
		if need[l.ID] {
			docs = append(docs, d)
		} else if len(rest) < n {
			rest = append(rest, d)
		}
	})
	docs = append(docs, rest[:max(0, min(len(rest), n-len(docs)))]...)
	var queries []benchQuery
	read("queries.jsonl", func(l line) {
		if qrels[l.ID] != nil {
			queries = append(queries, benchQuery{l.ID, l.Text})
		}
	})
	return docs, queries, qrels
}

// ndcg10 is nDCG@10 of ranked ids against binary relevance rel.
func ndcg10(ids []string, rel map[string]float64) float64 {
	dcg, idcg := 0.0, 0.0
	for i, id := range ids {
		if i == 10 {
			break
		}
		dcg += rel[id] / math.Log2(float64(i+2))
	}
	for i := 0; i < min(10, len(rel)); i++ {
		idcg += 1 / math.Log2(float64(i+2))
	}
	if idcg == 0 {
		return 0
	}
	return dcg / idcg
}
