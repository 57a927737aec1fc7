package memory

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkIngest adds the passages of a BEIR corpus (MEMORY_INGEST_CORPUS, e.g. the 1M
// folder of bench/corpusgen; MEMORY_INGEST_LIMIT caps the count) to a fresh on-disk store
// in batches of 10,000 and reports documents per second, the figure compared with Lucene's
// indexing rate, and the size of its store.db. BM25 only (no embedder), as Lucene.
func BenchmarkIngest(b *testing.B) {
	corpus := os.Getenv("MEMORY_INGEST_CORPUS")
	if corpus == "" {
		b.Skip("MEMORY_INGEST_CORPUS not set")
	}
	limit, _ := strconv.Atoi(os.Getenv("MEMORY_INGEST_LIMIT"))
	ctx := context.Background()
	// The corpus is read first: the figure is the store's, not the JSON decoder's.
	var batches [][]Document
	total := 0
	scaleCorpus(b, corpus, func(docs []Document) error {
		if limit > 0 && total >= limit {
			return nil
		}
		batches = append(batches, slices.Clone(docs))
		total += len(docs)
		return nil
	})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		m, err := Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for _, docs := range batches {
			if err := m.Add(ctx, docs...); err != nil {
				b.Fatal(err)
			}
		}
		count := m.Count()
		if err := m.Close(); err != nil {
			b.Fatal(err)
		}
		secs := time.Since(start).Seconds()
		b.ReportMetric(float64(count)/secs, "docs/s")
		b.ReportMetric(secs, "s")
		if fi, err := os.Stat(filepath.Join(dir, "store.db")); err == nil {
			b.ReportMetric(float64(fi.Size())/1e6, "store-MB")
			b.ReportMetric(float64(fi.Size())/float64(count), "store-B/doc")
		}
	}
}
