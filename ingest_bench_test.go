package memory

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory/internal/memtest"
	"github.com/agentmem/memory/vectorstore"
)

// dirBytes is the size of the regular files under dir (0 when it does not exist).
func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// BenchmarkIngest adds the passages of a BEIR corpus (MEMORY_INGEST_CORPUS, e.g. the 1M
// folder of bench/corpusgen; MEMORY_INGEST_LIMIT caps the count) to a fresh on-disk store
// in batches of 10,000 and reports documents per second, the figure compared with Lucene's
// indexing rate, and the size of its store.db. BM25 only (no embedder), as Lucene; with
// MEMORY_INGEST_EMBEDDER=hash:DIM also with the hashing embedder's vectors (sub-benchmark
// "vectors", after "bm25" in the same run: issue #23's ratio of the two; then
// "vectors-float16", the vectors kept in float16, and "vectors-int8", kept once in int8
// with an index of codes and lists only, issue #40's layout).
func BenchmarkIngest(b *testing.B) {
	corpus := os.Getenv("MEMORY_INGEST_CORPUS")
	if corpus == "" {
		b.Skip("MEMORY_INGEST_CORPUS not set")
	}
	limit, _ := strconv.Atoi(os.Getenv("MEMORY_INGEST_LIMIT"))
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
	emb := os.Getenv("MEMORY_INGEST_EMBEDDER")
	if emb == "" {
		ingestRun(b, batches, nil)
		return
	}
	dim, err := strconv.Atoi(strings.TrimPrefix(emb, "hash:"))
	if err != nil || !strings.HasPrefix(emb, "hash:") {
		b.Fatalf("MEMORY_INGEST_EMBEDDER=%q: want hash:DIM", emb)
	}
	b.Run("bm25", func(b *testing.B) { ingestRun(b, batches, nil) })
	b.Run("vectors", func(b *testing.B) {
		ingestRun(b, batches, []Option{WithEmbedder(vectorstore.NewHashEmbedder(dim))})
	})
	b.Run("vectors-float16", func(b *testing.B) {
		ingestRun(b, batches, []Option{WithEmbedder(vectorstore.NewHashEmbedder(dim)), WithVectorPrecision(Float16)})
	})
	b.Run("vectors-int8", func(b *testing.B) {
		ingestRun(b, batches, []Option{WithEmbedder(vectorstore.NewHashEmbedder(dim)), WithVectorPrecision(Int8)})
	})
}

// ingestRun adds batches to a fresh on-disk store opened with opts, b.N times, and reports
// documents per second and the size of store.db (and of the vectors/ folder).
func ingestRun(b *testing.B, batches [][]Document, opts []Option) {
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		m, err := Open(dir, opts...)
		if err != nil {
			b.Fatal(err)
		}
		start, cpu0 := time.Now(), cpuSeconds()
		for _, docs := range batches {
			if err := m.Add(ctx, docs...); err != nil {
				b.Fatal(err)
			}
		}
		count := memtest.Count(b, m)
		if err := m.Close(); err != nil {
			b.Fatal(err)
		}
		secs := time.Since(start).Seconds()
		b.ReportMetric(float64(count)/secs, "docs/s")
		b.ReportMetric(secs, "s")
		b.ReportMetric(cpuSeconds()-cpu0, "cpu-s")
		if fi, err := os.Stat(filepath.Join(dir, "store.db")); err == nil {
			b.ReportMetric(float64(fi.Size())/1e6, "store-MB")
			b.ReportMetric(float64(fi.Size())/float64(count), "store-B/doc")
		}
		if n := dirBytes(filepath.Join(dir, "bm25")); n > 0 {
			b.ReportMetric(float64(n)/1e6, "bm25-MB")
		}
		if n := dirBytes(filepath.Join(dir, "vectors")); n > 0 {
			b.ReportMetric(float64(n)/1e6, "vectors-MB")
		}
	}
}
