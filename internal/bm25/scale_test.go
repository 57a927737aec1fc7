package bm25

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
	o := Options{}
	if v := os.Getenv("MEMORY_BM25_CACHE_MB"); v != "" {
		mb, err := strconv.Atoi(v)
		if err != nil {
			b.Fatal(err)
		}
		o.PostingsCacheBytes = mb << 20
	}
	idx, err := OpenWith(dir, o)
	if err != nil {
		b.Fatal(err)
	}
	defer idx.Close()
	qs := readQueries(b, qf)
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

// BenchmarkBM25IndexScaleFilter (same variables as BenchmarkBM25IndexScale; the index of a
// bench/corpusgen corpus, whose passages carry "bucket" i mod 10): what a metadata filter
// costs apart from the search. Reported: the first evaluation of a filter selecting 10 %
// (FilterCount, bitmaps and bitset; later searches with the same filter reuse it), the
// first FilterIDs (the ids dense recall needs), and SearchFiltered p50 beside Search p50.
func BenchmarkBM25IndexScaleFilter(b *testing.B) {
	dir, qf := os.Getenv("MEMORY_BM25_DIR"), os.Getenv("MEMORY_BM25_QUERIES")
	if dir == "" || qf == "" {
		b.Skip("set MEMORY_BM25_DIR and MEMORY_BM25_QUERIES")
	}
	idx, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer idx.Close()
	qs := readQueries(b, qf)
	ctx := context.Background()
	bucket := func(v int) *MetaFilter {
		f, err := MetaCompare("bucket", MetaEq, v)
		if err != nil {
			b.Fatal(err)
		}
		return f
	}
	if _, docs, err := idx.FilterCount(ctx, bucket(0)); err != nil || docs == 0 {
		b.Skipf("no bucket metadata in the index (err %v)", err)
	}
	var evalT, idsT time.Duration
	for v := 1; v <= 4; v++ { // four fresh filters each
		t := time.Now()
		if _, _, err := idx.FilterCount(ctx, bucket(v)); err != nil {
			b.Fatal(err)
		}
		evalT += time.Since(t)
		t = time.Now()
		ids, err := idx.FilterIDs(ctx, bucket(v+4))
		if err != nil || len(ids) == 0 {
			b.Fatal(len(ids), err)
		}
		idsT += time.Since(t)
	}
	p50 := func(f *MetaFilter) time.Duration {
		for _, q := range qs {
			if _, err := idx.SearchFiltered(ctx, q, 10, f); err != nil {
				b.Fatal(err)
			}
		}
		var lat []time.Duration
		for range 3 {
			for _, q := range qs {
				t := time.Now()
				if _, err := idx.SearchFiltered(ctx, q, 10, f); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t))
			}
		}
		slices.Sort(lat)
		return lat[len(lat)/2]
	}
	base, filtered := p50(nil), p50(bucket(3))
	b.ReportMetric(float64(evalT.Microseconds())/4/1000, "first-eval-ms")
	b.ReportMetric(float64(idsT.Microseconds())/4/1000, "first-ids-ms")
	b.ReportMetric(float64(base.Microseconds()), "p50-us")
	b.ReportMetric(float64(filtered.Microseconds()), "filtered-p50-us")
}

// readQueries reads the texts of a JSONL query file.
func readQueries(b *testing.B, path string) []string {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var qs []string
	dec := json.NewDecoder(f)
	for dec.More() {
		var q struct{ Text string }
		if err := dec.Decode(&q); err != nil {
			b.Fatal(err)
		}
		qs = append(qs, q.Text)
	}
	return qs
}
