package bm25

import (
	"context"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/agentmem/memory/internal/beir"
	"github.com/agentmem/memory/internal/fixtures"
	"github.com/blevesearch/bleve/v2/index/scorch"
)

// loadSciFact opens SciFact from $MEMORY_SCIFACT or <repo>/../shared/data/beir/scifact.
func loadSciFact(b *testing.B) *beir.Dataset {
	dir := os.Getenv("MEMORY_SCIFACT")
	if dir == "" {
		dir = fixtures.Shared("data", "beir", "scifact")
	}
	ds, err := beir.Load(dir, "test")
	if err != nil {
		b.Skipf("SciFact not available (%v); set MEMORY_SCIFACT", err)
	}
	return ds
}

// sciFactIndex indexes the SciFact corpus in memory (k1 0.9, b 0.4) in batches of 512, as
// `memory eval` does.
func sciFactIndex(b *testing.B) (*beir.Dataset, *Index) {
	ds := loadSciFact(b)
	SetBM25Params(BM25Params{K1: 0.9, B: 0.4})
	idx, err := Open("")
	if err != nil {
		b.Fatal(err)
	}
	applySciFact(b, idx, ds)
	return ds, idx
}

// applySciFact indexes ds's corpus into idx in batches of 512.
func applySciFact(b *testing.B, idx *Index, ds *beir.Dataset) {
	docs := make([]Doc, len(ds.Corpus))
	for i, d := range ds.Corpus {
		docs[i] = Doc{ID: d.ID, Title: d.Title, Text: d.Text}
	}
	for j := 0; j < len(docs); j += 512 {
		if err := idx.Apply(docs[j:min(j+512, len(docs))], nil, uint64(j+1)); err != nil {
			idx.Close()
			b.Fatal(err)
		}
	}
}

// BenchmarkBM25Paths compares the two query paths of BM25Index on SciFact (5,183 docs,
// 300 test queries, k1 0.9, b 0.4), single thread, after a warm-up pass: "maxscore" (the
// default: textbook BM25 with dynamic pruning), "exhaustive" (the same scores, every
// posting) and "bleve" (Bleve's own search). Reported: p50/p99 in microseconds.
func BenchmarkBM25Paths(b *testing.B) {
	ds, idx := sciFactIndex(b)
	defer idx.Close()
	ctx := context.Background()
	for _, path := range []string{"maxscore", "exhaustive", "bleve"} {
		for _, k := range []int{10, 100} {
			b.Run(fmt.Sprintf("%s/k=%d", path, k), func(b *testing.B) {
				idx.SetBleveScoring(path == "bleve")
				idx.SetExhaustive(path == "exhaustive")
				defer idx.SetBleveScoring(false)
				defer idx.SetExhaustive(false)
				for _, q := range ds.Queries {
					if _, err := idx.Search(ctx, q.Text, k, nil); err != nil {
						b.Fatal(err)
					}
				}
				lat := make([]time.Duration, 0, b.N)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					q := ds.Queries[i%len(ds.Queries)]
					t := time.Now()
					if _, err := idx.Search(ctx, q.Text, k, nil); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(t))
				}
				b.StopTimer()
				sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
			})
		}
	}
}

// BenchmarkBM25ColdStats measures what the first search after opening an index pays on
// SciFact for its statistics: every segment's total live length, read from the length
// field's dictionary. Reported: ms per cold computation.
func BenchmarkBM25ColdStats(b *testing.B) {
	_, idx := sciFactIndex(b)
	defer idx.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		idx.stats.mu.Lock()
		idx.stats.segs, idx.stats.last = nil, nil
		idx.stats.mu.Unlock()
		if err := idx.withSnapshot(func(snap *scorch.IndexSnapshot) error {
			_, err := idx.stats.stats(snap, idx.opts.K1, idx.opts.B, false)
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/cold")
}

// BenchmarkBM25FirstSearchAfterOpen reopens an on-disk SciFact index and times its first
// search, right after OpenBM25. Reported: ms for the first search.
func BenchmarkBM25FirstSearchAfterOpen(b *testing.B) {
	ds := loadSciFact(b)
	SetBM25Params(BM25Params{K1: 0.9, B: 0.4})
	dir := b.TempDir() + "/bm25"
	idx, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	applySciFact(b, idx, ds)
	if err := idx.Close(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, mode := range []string{"immediate"} {
		b.Run(mode, func(b *testing.B) {
			var total time.Duration
			for i := 0; i < b.N; i++ {
				idx, err := Open(dir)
				if err != nil {
					b.Fatal(err)
				}
				t := time.Now()
				if _, err := idx.Search(ctx, ds.Queries[i%len(ds.Queries)].Text, 10, nil); err != nil {
					b.Fatal(err)
				}
				total += time.Since(t)
				idx.Close()
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/first-search")
		})
	}
}
