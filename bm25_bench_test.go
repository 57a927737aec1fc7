package memory

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/agentmem/memory/internal/beir"
)

// scifact locates ../shared/data/beir/scifact beside the repository.
func scifact(b testing.TB) *beir.Dataset {
	dir := os.Getenv("MEMORY_SCIFACT")
	if dir == "" {
		wd, _ := os.Getwd()
		dir = filepath.Join(wd, "..", "shared", "data", "beir", "scifact")
	}
	ds, err := beir.Load(dir, "test")
	if err != nil {
		b.Skipf("SciFact not available (%v); set MEMORY_SCIFACT", err)
	}
	return ds
}

func scifactDocs(ds *beir.Dataset) []Document {
	docs := make([]Document, len(ds.Corpus))
	for i, d := range ds.Corpus {
		docs[i] = Document{ID: d.ID, Title: d.Title, Text: d.Text}
	}
	return docs
}

// BenchmarkBM25Index measures indexing SciFact (5,183 docs) into a fresh store, in batches
// of 512 with fsync off, as `memory eval` does. Reported: docs/s.
func BenchmarkBM25Index(b *testing.B) {
	ds := scifact(b)
	docs := scifactDocs(ds)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m, err := Open("", WithNoSync(), WithChunking(ChunkOptions{Disabled: true}))
		if err != nil {
			b.Fatal(err)
		}
		for j := 0; j < len(docs); j += 512 {
			if err := m.Add(ctx, docs[j:min(j+512, len(docs))]...); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		m.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(len(docs)*b.N)/b.Elapsed().Seconds(), "docs/s")
}

// BenchmarkBM25Query measures single-thread BM25 query latency over SciFact's 300 test
// queries (k = 10 and 100) through the full Search path, after a warm-up pass. Documents are
// stored whole (chunking off), as Lucene's BEIR runs and `memory eval` index them.
// Reported: p50 and p99 in microseconds.
//
// MEMORY_BENCH_COMPRESS=1 stores SciFact's records compressed (as a store past
// store.SetCompressMin's documents keeps them), MEMORY_BENCH_NOTEXT=1 searches WithoutText.
func BenchmarkBM25Query(b *testing.B) {
	ds := scifact(b)
	if os.Getenv("MEMORY_BENCH_COMPRESS") == "1" {
		withCompressMin(b, 1)
	}
	opts := []SearchOption{WithMode(BM25)}
	if os.Getenv("MEMORY_BENCH_NOTEXT") == "1" {
		opts = append(opts, WithoutText())
	}
	m, err := Open("", WithNoSync(), WithChunking(ChunkOptions{Disabled: true}))
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	docs := scifactDocs(ds)
	for j := 0; j < len(docs); j += 512 {
		m.Add(ctx, docs[j:min(j+512, len(docs))]...)
	}
	for _, k := range []int{10, 100} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			opts := append(opts[:len(opts):len(opts)], TopK(k))
			for _, q := range ds.Queries { // warm-up
				m.Search(ctx, q.Text, opts...)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				q := ds.Queries[i%len(ds.Queries)]
				t := time.Now()
				if _, err := m.Search(ctx, q.Text, opts...); err != nil {
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
