// Command diskquant measures the disk index's quantized searches on a seeded clustered
// vector set (dense only): build time, bytes per vector on disk, open time, and for each
// scan (exact, int8 codes, binary codes, each then rescored exactly) the batch time and
// recall@10 against the exact float32 search, with the process's RssAnon.
//
//	go run ./bench/diskquant -n 1000000 -dim 384 -q 256 -dir /tmp/dq
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentmem/memory/vectorstore"
)

func main() {
	n := flag.Int("n", 1000000, "vectors")
	dim := flag.Int("dim", 384, "dimension")
	nq := flag.Int("q", 256, "queries")
	centres := flag.Int("centres", 1000, "clusters")
	sigma := flag.Float64("sigma", 0.5, "spread of a cluster (centres are N(0,1))")
	dir := flag.String("dir", "/tmp/diskquant", "where the indexes are written")
	oversample := flag.String("oversample", "2,4,8,16,32,64", "oversampling factors tried")
	nlist := flag.Int("nlist", 0, "also build indexes with this many inverted lists (0: none)")
	nprobes := flag.String("nprobe", "8,16,32", "lists probed, with -nlist")
	modes := flag.String("modes", "int8,binary,int8-ivf,binary-ivf", "which indexes to build")
	faissFactory := flag.String("faiss", "", "also run FAISS with this factory string (-tags faiss), e.g. IVF1024,SQ8,RFlat")
	kfactors := flag.String("kfactor", "1,4", "FAISS refine factors tried")
	flag.Parse()
	ctx := context.Background()

	t := time.Now()
	vecs, qs := clustered(*n, *nq, *dim, *centres, *sigma)
	ids := make([]string, *n)
	for i := range ids {
		ids[i] = fmt.Sprintf("v%08d", i)
	}
	fmt.Printf("generated %d x %d (+%d queries) in %v\n", *n, *dim, *nq, time.Since(t).Round(time.Millisecond))

	var exact [][]vectorstore.Hit
	for _, q := range []struct {
		name  string
		quant int
		mode  vectorstore.DiskMode
		ivf   bool
	}{
		{"int8", vectorstore.DiskQuantInt8, vectorstore.DiskInt8, false},
		{"binary", vectorstore.DiskQuantBinary, vectorstore.DiskBinary, false},
		{"int8-ivf", vectorstore.DiskQuantInt8, vectorstore.DiskInt8, true},
		{"binary-ivf", vectorstore.DiskQuantBinary, vectorstore.DiskBinary, true},
	} {
		if !strings.Contains(","+*modes+",", ","+q.name+",") || (q.ivf && *nlist == 0) {
			continue
		}
		d := filepath.Join(*dir, q.name)
		os.RemoveAll(d)
		cfg := vectorstore.IndexConfig{Backend: "disk", Dim: *dim, Dir: d, Params: map[string]int{"quant": q.quant}}
		probes := []string{"0"}
		if q.ivf {
			cfg.Params["nlist"] = *nlist
			probes = strings.Split(*nprobes, ",")
		}
		t = time.Now()
		x, err := vectorstore.NewDiskIndex(cfg)
		check(err)
		const batch = 65536
		for lo := 0; lo < *n; lo += batch {
			hi := min(lo+batch, *n)
			check(x.Add(ctx, ids[lo:hi], vecs[lo:hi]))
			check(x.Commit(uint64(hi)))
		}
		check(x.Close())
		build := time.Since(t)
		size := dirSize(d)
		t = time.Now()
		x, err = vectorstore.NewDiskIndex(cfg)
		check(err)
		open := time.Since(t)
		fmt.Printf("%s: build %v, %d bytes on disk (%.1f bytes/vector), open %v, RssAnon %s\n", q.name,
			build.Round(time.Millisecond), size, float64(size)/float64(*n), open.Round(time.Microsecond), rssAnon())
		if exact == nil {
			t = time.Now()
			exact, err = x.SearchBatchWith(ctx, qs, 10, nil, vectorstore.DiskSearchOptions{Mode: vectorstore.DiskExact})
			check(err)
			el := time.Since(t)
			fmt.Printf("exact float32 batch of %d: %v (%v/query), RssAnon %s\n", *nq, el.Round(time.Millisecond), el/time.Duration(*nq), rssAnon())
		}
		for _, ps := range probes {
			np, _ := strconv.Atoi(ps)
			for _, os := range strings.Split(*oversample, ",") {
				o, _ := strconv.Atoi(os)
				t = time.Now()
				got, err := x.SearchBatchWith(ctx, qs, 10, nil, vectorstore.DiskSearchOptions{Mode: q.mode, Oversample: o, NProbe: np})
				check(err)
				el := time.Since(t)
				fmt.Printf("  %s nprobe %d oversample %2d: recall@10 %.4f, batch %v (%v/query), RssAnon %s\n", q.name, np, o, recall(got, exact),
					el.Round(time.Millisecond), el/time.Duration(*nq), rssAnon())
			}
		}
		check(x.Close())
	}
	if *faissFactory != "" {
		if runFaiss == nil {
			check(fmt.Errorf("-faiss needs a build with -tags faiss"))
		}
		if exact == nil {
			check(fmt.Errorf("-faiss needs a disk index mode for the exact results"))
		}
		runFaiss(*faissFactory, vecs, qs, exact, *nprobes, *kfactors)
	}
}

// runFaiss runs the FAISS comparison (set in a build with -tags faiss).
var runFaiss func(factory string, vecs, qs [][]float32, exact [][]vectorstore.Hit, nprobes, kfactors string)

// clustered draws n vectors and nq queries from one mixture of c Gaussians (centres N(0,1),
// spread sigma), seeded, on all cores.
func clustered(n, nq, d, c int, sigma float64) ([][]float32, [][]float32) {
	rng := rand.New(rand.NewPCG(1, 2))
	cs := make([][]float32, c)
	for i := range cs {
		cs[i] = make([]float32, d)
		for j := range cs[i] {
			cs[i][j] = float32(rng.NormFloat64())
		}
	}
	all := make([][]float32, n+nq)
	slab := make([]float32, (n+nq)*d)
	w := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for p := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(p)+10, 3))
			for i := p; i < n+nq; i += w {
				ctr := cs[r.IntN(c)]
				v := slab[i*d : (i+1)*d : (i+1)*d]
				for j := range v {
					v[j] = ctr[j] + float32(sigma*r.NormFloat64())
				}
				all[i] = v
			}
		}()
	}
	wg.Wait()
	return all[:n], all[n:]
}

func recall(got, want [][]vectorstore.Hit) float64 {
	sum := 0.0
	for i := range want {
		in := map[string]bool{}
		for _, h := range want[i] {
			in[h.ID] = true
		}
		k := 0
		for _, h := range got[i] {
			if in[h.ID] {
				k++
			}
		}
		sum += float64(k) / float64(len(want[i]))
	}
	return sum / float64(len(want))
}

func dirSize(d string) int64 {
	var s int64
	filepath.Walk(d, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			s += fi.Size()
		}
		return nil
	})
	return s
}

func rssAnon() string {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "RssAnon:") {
			return strings.Join(strings.Fields(strings.TrimPrefix(l, "RssAnon:")), " ")
		}
	}
	return "?"
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
