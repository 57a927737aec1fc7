//go:build faiss

package vectorstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/memory/internal/vectest"
)

// BenchmarkFaissGPU measures, in one run, the same faissIndex on the CPU and (with -tags
// faiss,faissgpu and a GPU) on the GPU: build time (adds; IVF includes training), recall@10
// against exact search, single-query queries/s, and queries/s for batches of 512 and 2,560
// through SearchBatch. Vectors: 384-dim clustered (faissClustered, 1,000 centres, sigma 0.5),
// as in BenchmarkFaissANN.
//
//	MEMORY_FAISS_GPU_N=1000000 go test -tags faiss,faissgpu -run '^$' -bench FaissGPU -benchtime 1x ./vectorstore/
//
// Knobs: MEMORY_FAISS_GPU_N (vectors, comma-separated sizes; default 1000000),
// MEMORY_FAISS_GPU_KINDS (factories separated by ';', default "Flat;IVF1024,Flat"; the first
// Flat run, on the CPU unless MEMORY_FAISS_GPU_CPU=off, gives the exact answers recall is
// measured against), MEMORY_FAISS_GPU_SINGLE_S (seconds of single-query timing per
// index, default 3), MEMORY_FAISS_GPU_CPU=off (GPU only) or =after (each index on the GPU
// first, then on the CPU: the GPU figures come first when a run may be cut short; the exact
// answers are then the GPU Flat run's), MEMORY_FAISS_GPU_BATCHES512 (how many 512-query
// batches are timed, default 5; at 10M one keeps the CPU's share short). Each line of the
// table is also written as JSON to MEMORY_FAISS_GPU_OUT when set.
func BenchmarkFaissGPU(b *testing.B) {
	ctx := context.Background()
	const dim, k, nq = 384, 10, 2560
	sizes := faissBenchEnvInts(b, "MEMORY_FAISS_GPU_N", []int{1000000})
	kinds := strings.Split(faissBenchEnv("MEMORY_FAISS_GPU_KINDS", "Flat;IVF1024,Flat"), ";")
	singleFor := time.Duration(faissBenchEnvInt("MEMORY_FAISS_GPU_SINGLE_S", 3)) * time.Second
	batches512 := min(5, max(1, faissBenchEnvInt("MEMORY_FAISS_GPU_BATCHES512", 5)))
	devices := []bool{false, true}
	switch os.Getenv("MEMORY_FAISS_GPU_CPU") {
	case "off":
		devices = []bool{true}
	case "after":
		devices = []bool{true, false}
	}
	if faissGPUCount() == 0 {
		b.Logf("no GPU usable by faiss in this build (faissgpu tag: %v): CPU only", faissBuiltWithGPU)
		devices = []bool{false}
	}
	var out *os.File
	if p := os.Getenv("MEMORY_FAISS_GPU_OUT"); p != "" {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		out = f
	}
	for _, n := range sizes {
		t0 := time.Now()
		all := faissClusteredParallel(n+nq, dim, 1000, 0.5)
		vecs, qs := all[:n], all[n:]
		ids := make([]string, n)
		for i := range ids {
			ids[i] = strconv.Itoa(i)
		}
		b.Logf("n=%d: generated %d vectors in %.1fs", n, n+nq, time.Since(t0).Seconds())
		var truth [][]Hit // exact top-k of the first 1,000 queries, from the first Flat run
		truthFrom := ""
		for _, factory := range kinds {
			for _, gpu := range devices {
				name := fmt.Sprintf("n=%d/%s/%s", n, factory, map[bool]string{false: "cpu", true: "gpu"}[gpu])
				b.Run(name, func(b *testing.B) {
					x, err := newFaissIndex(IndexConfig{Dim: dim, Factory: factory, GPU: gpu})
					if err != nil {
						b.Fatal(err)
					}
					defer x.Close()
					start := time.Now()
					for lo := 0; lo < n; lo += 100000 {
						hi := min(n, lo+100000)
						if err := x.Add(ctx, ids[lo:hi], vecs[lo:hi]); err != nil {
							b.Fatal(err)
						}
					}
					if err := x.Train(ctx); err != nil {
						b.Fatal(err)
					}
					build := time.Since(start)
					if gpu && x.Device() == "cpu" {
						b.Fatalf("GPU asked for but the index runs on the CPU")
					}
					// Batches of 2,560 and of 512 (batches512 calls), after one warm-up batch.
					if _, err := x.SearchBatch(ctx, qs[:64], k, nil); err != nil {
						b.Fatal(err)
					}
					start = time.Now()
					res, err := x.SearchBatch(ctx, qs, k, nil)
					if err != nil {
						b.Fatal(err)
					}
					qps2560 := float64(nq) / time.Since(start).Seconds()
					start = time.Now()
					for lo := 0; lo < batches512*512; lo += 512 {
						if _, err := x.SearchBatch(ctx, qs[lo:lo+512], k, nil); err != nil {
							b.Fatal(err)
						}
					}
					qps512 := float64(batches512*512) / time.Since(start).Seconds()
					// Single queries, one at a time, for singleFor.
					start = time.Now()
					single := 0
					for time.Since(start) < singleFor && single < nq {
						if _, err := x.Search(ctx, qs[single], k, nil); err != nil {
							b.Fatal(err)
						}
						single++
					}
					qps1 := float64(single) / time.Since(start).Seconds()
					// Exact answers: the first Flat run's (the CPU's unless the GPU runs first).
					if truth == nil && factory == "Flat" {
						truth = res[:1000]
						truthFrom = x.Device()
					}
					recall := -1.0
					if truth != nil {
						recall = 0
						for i := range truth {
							recall += faissRecall(res[i], truth[i], k)
						}
						recall /= float64(len(truth))
					}
					rss, anon := faissRSS()
					line := fmt.Sprintf(`{"n":%d,"factory":%q,"device":%q,"build_s":%.3f,"recall10":%.4f,"truth":%q,"qps_single":%.1f,"single_queries":%d,"qps_batch512":%.1f,"batches512":%d,"qps_batch2560":%.1f,"rss_mb":%d,"rssanon_mb":%d}`,
						n, factory, x.Device(), build.Seconds(), recall, truthFrom+" Flat", qps1, single, qps512, batches512, qps2560, rss>>20, anon>>20)
					b.Log(line)
					if out != nil {
						fmt.Fprintln(out, line)
					}
					b.ReportMetric(build.Seconds(), "build-s")
					b.ReportMetric(recall, "recall@10")
					b.ReportMetric(qps1, "single-q/s")
					b.ReportMetric(qps512, "batch512-q/s")
					b.ReportMetric(qps2560, "batch2560-q/s")
				})
			}
		}
	}
}

// faissClusteredParallel is faissClustered spread over GOMAXPROCS goroutines (each with its
// own deterministic stream), for the 1M-10M vector sets of BenchmarkFaissGPU.
func faissClusteredParallel(n, d, c int, sigma float64) [][]float32 {
	centres := vectest.RandVecs(rand.New(rand.NewPCG(42, 0)), c, d)
	vs := make([][]float32, n)
	slab := make([]float32, n*d)
	w := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for g := 0; g < w; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(42, uint64(g+1)))
			for i := g * n / w; i < (g+1)*n/w; i++ {
				ctr := centres[rng.IntN(c)]
				v := slab[i*d : (i+1)*d : (i+1)*d]
				for j := range v {
					v[j] = ctr[j] + float32(sigma*rng.NormFloat64())
				}
				vs[i] = v
			}
		}(g)
	}
	wg.Wait()
	return vs
}

// faissRSS reads VmRSS and RssAnon (bytes) from /proc/self/status (0 where unavailable).
func faissRSS() (rss, anon int64) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = v << 10
		case "RssAnon:":
			anon = v << 10
		}
	}
	return rss, anon
}
