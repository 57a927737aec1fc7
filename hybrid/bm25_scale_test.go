package hybrid

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkBM25IndexScale queries an existing on-disk BM25 index (MEMORY_BM25_DIR, e.g. the
// bm25/default folder of a store built by the root BM25Scale benchmark) with the queries of
// a JSONL file (MEMORY_BM25_QUERIES), one thread, k=10, after a warm-up pass: the keyword
// index alone, without the store around it. Reported: p50/p99 in microseconds.
func BenchmarkBM25IndexScale(b *testing.B) {
	dir, qf := os.Getenv("MEMORY_BM25_DIR"), os.Getenv("MEMORY_BM25_QUERIES")
	if dir == "" || qf == "" {
		b.Skip("set MEMORY_BM25_DIR and MEMORY_BM25_QUERIES")
	}
	o := BM25Options{}
	if v := os.Getenv("MEMORY_BM25_CACHE_MB"); v != "" {
		mb, err := strconv.Atoi(v)
		if err != nil {
			b.Fatal(err)
		}
		o.PostingsCacheBytes = mb << 20
	}
	idx, err := OpenBM25With(dir, o)
	if err != nil {
		b.Fatal(err)
	}
	defer idx.Close()
	f, err := os.Open(qf)
	if err != nil {
		b.Fatal(err)
	}
	var qs []string
	dec := json.NewDecoder(f)
	for dec.More() {
		var q struct{ Text string }
		if err := dec.Decode(&q); err != nil {
			b.Fatal(err)
		}
		qs = append(qs, q.Text)
	}
	f.Close()
	ctx := context.Background()
	b.Logf("segments: %d", segmentCount(&testing.T{}, idx))
	for _, mode := range []string{"maxscore", "exhaustive"} {
		b.Run(mode, func(b *testing.B) {
			idx.SetExhaustive(mode == "exhaustive")
			for _, q := range qs {
				if _, err := idx.Search(ctx, q, 10, nil); err != nil {
					b.Fatal(err)
				}
			}
			var lat []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t := time.Now()
				if _, err := idx.Search(ctx, qs[i%len(qs)], 10, nil); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t))
			}
			slices.Sort(lat)
			bytes, entries, hits, misses := idx.CacheStats()
			b.Logf("postings cache: %d MiB, %d entries, %d hits, %d misses", bytes>>20, entries, hits, misses)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
		})
	}
}
