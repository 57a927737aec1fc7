//go:build faiss

package vectorstore

import (
	"testing"
	"time"

	faiss "github.com/DataIntelligenceCrew/go-faiss"

	_ "github.com/agentmem/memory/internal/faisslink" // link flags for the static libfaiss_c
	"github.com/agentmem/memory/internal/vecmath"
)

// FAISS Flat beside the flat scan and chromem-go, on the same 100k x 384 data and queries:
//
//	CGO_LDFLAGS="-L$PWD/.deps/faiss/lib" OMP_NUM_THREADS=1 \
//	  go test -tags faiss -run '^$' -bench 'DenseSearch100kFaiss' -benchtime 20x ./vectorstore/

// BenchmarkDenseSearch100kFaiss: "backend" is this package's FAISS Index (Factory "Flat"),
// "raw" is go-faiss's IndexFlatIP called directly (no id mapping, no Go-side heap), with the
// vectors normalised the same way.
func BenchmarkDenseSearch100kFaiss(b *testing.B) {
	const n = 100_000
	b.Run("backend", func(b *testing.B) {
		runSearchBench(b, benchIndex(b, "faiss", n, IndexConfig{Backend: "faiss", Factory: "Flat"}), n)
	})
	b.Run("raw", func(b *testing.B) {
		_, vecs, queries := benchData(n)
		idx, err := faiss.NewIndexFlatIP(benchDim)
		if err != nil {
			b.Fatal(err)
		}
		defer idx.Delete()
		flat := make([]float32, n*benchDim)
		for i, v := range vecs {
			vecmath.NormalizeInto(flat[i*benchDim:(i+1)*benchDim], v)
		}
		if err := idx.Add(flat); err != nil {
			b.Fatal(err)
		}
		flat = nil
		nq := make([][]float32, len(queries))
		for i, q := range queries {
			nq[i] = make([]float32, benchDim)
			vecmath.NormalizeInto(nq[i], q)
		}
		bw := readBandwidth()
		bytes := float64(n * benchDim * 4)
		best := time.Duration(1 << 62)
		b.ResetTimer()
		i := 0
		for b.Loop() {
			t0 := time.Now()
			_, labels, err := idx.Search(nq[i%len(nq)], benchK)
			best = min(best, time.Since(t0))
			if err != nil || len(labels) != benchK {
				b.Fatalf("search: %v", err)
			}
			i++
		}
		sec := b.Elapsed().Seconds() / float64(b.N)
		b.ReportMetric(best.Seconds()*1e3, "best-ms")
		b.ReportMetric(bytes/best.Seconds()/bw, "best-bw-frac")
		b.ReportMetric(sec*1e3, "ms/query")
		b.ReportMetric(bytes/sec/1e9, "GB/s")
		b.ReportMetric(bytes/sec/bw, "bw-frac")
		b.ReportMetric(bw/1e9, "bw-GB/s")
	})
}
