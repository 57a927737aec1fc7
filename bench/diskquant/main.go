// Command diskquant measures the disk index's quantized searches on a seeded clustered
// vector set (dense only): build time and peak RSS, bytes per vector on disk, open time, and
// for each scan (int8 codes, binary codes, each then rescored exactly; with or without
// inverted lists) the batch time and recall@10 against the exact float32 search, with the
// process's RssAnon. With -faiss (a build with -tags faiss) it runs FAISS on the same vectors.
// With -store it compares the dense part of stores of record (store.db and index) by
// precision (store.go).
//
// The vectors are generated a chunk at a time from their ordinal (vector i is drawn from
// its own seeded generator), so no run holds the whole set in memory: 10M x 384 float32 is
// 15.4 GB. The exact results are computed once (DiskExact over the first index built) and
// kept in -dir, so the FAISS side can run in a process of its own, and an index already
// built in -dir is searched without being built again (its serving RSS then excludes the
// build):
//
//	go run ./bench/diskquant -n 10000000 -q 2560 -nlist 4096 -modes binary-ivf -dir /tmp/dq10m
//	go run -tags faiss ./bench/diskquant -n 10000000 -q 2560 -modes none -faiss IVF4096,SQ8,RFlat -dir /tmp/dq10m
//
// Issue 40's comparison at 10M x 768 (an int8 store of record with lists and the row-less
// default's codes, at the defaults: nprobe 0 = nlist/16, oversample 0 = 56; beside FAISS's
// IVF-SQ8 and IVF-SQfp16 in memory; recall over the first 256 of 2,560 queries, whose exact
// results one streaming pass computes; the batches time all 2,560; -qseed 1 for the
// held-out set):
//
//	go run ./bench/diskquant -n 10000000 -dim 768 -q 2560 -qexact 256 -nlist 1024 -nprobe 0,8,16 \
//	    -oversample 0,72,84 -code rotatedpad -modes none -store int8 -exact stream -dir /work/dq10m
//	go run -tags faiss ./bench/diskquant -n 10000000 -dim 768 -q 2560 -qexact 256 -modes none \
//	    -faiss IVF1024,SQfp16 -nprobe 8 -kfactor 1 -dir /work/dq10m
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentmem/memory/internal/atomicfile"
	"github.com/agentmem/memory/vectorstore"
)

// gen draws the clustered vector set: centres N(0,1), each vector a centre (drawn from the
// vector's own generator) plus N(0, sigma^2) per component.
type gen struct {
	dim   int
	sigma float64
	cs    [][]float32
	hash  *vectorstore.HashEmbedder // -vectors hash: vectors of generated texts instead
	n     int                       // the set's size (later ordinals are queries)
}

// hashVocab is the vocabulary of -vectors hash's texts: words drawn by a Zipf law.
const hashVocab = 50000

// text is the generated text of vector i (-vectors hash): a passage of 40 to 120 words,
// or for a query (i >= the set's size) of 3 to 8, drawn from its own generator.
func (g *gen) text(i, n int) string {
	r := rand.New(rand.NewPCG(uint64(i), 0x51ed270b27e1ea55))
	z := rand.NewZipf(r, 1.1, 2, hashVocab-1)
	words := 40 + r.IntN(81)
	if i >= n {
		words = 3 + r.IntN(6)
	}
	var b strings.Builder
	for w := range words {
		if w > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "w%d", z.Uint64())
	}
	return b.String()
}

func newGen(dim, centres int, sigma float64) *gen {
	rng := rand.New(rand.NewPCG(1, 2))
	g := &gen{dim: dim, sigma: sigma, cs: make([][]float32, centres)}
	for i := range g.cs {
		g.cs[i] = make([]float32, dim)
		for j := range g.cs[i] {
			g.cs[i][j] = float32(rng.NormFloat64())
		}
	}
	return g
}

// chunk returns vectors [lo, hi), drawn on all cores (queries: of ordinals from n on).
func (g *gen) chunk(lo, hi int) [][]float32 {
	if g.hash != nil {
		texts := make([]string, hi-lo)
		for i := range texts {
			texts[i] = g.text(lo+i, g.n)
		}
		vs, err := g.hash.Embed(context.Background(), texts)
		check(err)
		return vs
	}
	d := g.dim
	slab := make([]float32, (hi-lo)*d)
	out := make([][]float32, hi-lo)
	w := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for p := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo + p; i < hi; i += w {
				r := rand.New(rand.NewPCG(uint64(i), 0x9e3779b97f4a7c15))
				ctr := g.cs[r.IntN(len(g.cs))]
				v := slab[(i-lo)*d : (i-lo+1)*d : (i-lo+1)*d]
				for j := range v {
					v[j] = ctr[j] + float32(g.sigma*r.NormFloat64())
				}
				out[i-lo] = v
			}
		}()
	}
	wg.Wait()
	return out
}

// exactMode is -exact: memory or stream (exactStream).
var exactMode string

func idOf(i int) string { return fmt.Sprintf("v%08d", i) }

func main() {
	n := flag.Int("n", 1000000, "vectors")
	dim := flag.Int("dim", 384, "dimension")
	nq := flag.Int("q", 256, "queries in the timed batch")
	qexact := flag.Int("qexact", 0, "queries (the batch's first) whose recall is measured (0: all)")
	qfull := flag.Int("qfull", 256, "queries of a scan without lists (every code, slow at 10M)")
	centres := flag.Int("centres", 0, "clusters (0: n/1000)")
	sigma := flag.Float64("sigma", 0.5, "spread of a cluster (centres are N(0,1))")
	dir := flag.String("dir", "/tmp/diskquant", "where the indexes and the exact results are kept")
	oversample := flag.String("oversample", "2,4,8,16,32,64", "oversampling factors tried")
	nlist := flag.Int("nlist", 0, "inverted lists of the -ivf modes")
	nprobes := flag.String("nprobe", "8,16,32", "lists probed, with -nlist")
	train := flag.Int("train", 0, "rows of the first write, on which the lists are trained (0: 64 x nlist)")
	modes := flag.String("modes", "int8,binary,int8-ivf,binary-ivf", "which indexes to build and search (none: only FAISS)")
	rebuild := flag.Bool("rebuild", false, "build an index again even if -dir holds it")
	rounds := flag.Int("rounds", 1, "timed batches per setting (after one untimed warm-up batch per index)")
	faissFactory := flag.String("faiss", "", "also run FAISS with this factory string (-tags faiss), e.g. IVF1024,SQ8,RFlat")
	kfactors := flag.String("kfactor", "1,4", "FAISS refine factors tried")
	vectors := flag.String("vectors", "clustered", "clustered (Gaussian clusters) or hash (the hash:DIM embedder over generated texts: -centres names the set only)")
	stores := flag.String("store", "", "also compare the dense part of stores of these precisions (float32,float16,int8: int8's index reads its rows from store.db; binary codes, -nlist lists)")
	lat := flag.Int("latency", 256, "with -store and -faiss: queries timed one at a time (p50, p99)")
	storeCodes := flag.String("storecodes", "binary", "with -store: the codes the indexes scan (binary or int8)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the -store searches to this file")
	codes := flag.String("code", "rotated", "binary codes of the indexes (signs, rotated, rotatedpad: every bit of the padded rotation, what a row-less index keeps by default; several: signs,rotated with -store, the first for the binary modes)")
	flag.StringVar(&exactMode, "exact", "memory", "with -store int8 first: how the exact float32 results are computed: memory (an index of every vector in memory) or stream (one pass, each query's best 11 kept: a set larger than memory)")
	flag.StringVar(&prefilters, "prefilter", "0", "with -store: the binary scans' prefilter factors tried (vectorstore.DiskSearchOptions.Prefilter; 0: the default, -1: off)")
	flag.StringVar(&probeCuts, "probecut", "0", "with -nlist: the ProbeCut values tried (percent; 0: the default, -1: off)")
	qseed := flag.Int("qseed", 0, "query set: the queries are the generator's vectors n+qseed*q.. (tune on one, report on another)")
	flag.Parse()
	ctx := context.Background()
	if *centres == 0 {
		*centres = max(1, *n/1000)
	}
	if *qexact == 0 || *qexact > *nq {
		*qexact = *nq
	}
	if exactMode != "memory" && exactMode != "stream" {
		check(fmt.Errorf("-exact %q: memory or stream", exactMode))
	}
	check(os.MkdirAll(*dir, 0o755))
	g := newGen(*dim, *centres, *sigma)
	g.n = *n
	switch *vectors {
	case "hash":
		g.hash = vectorstore.NewHashEmbedder(*dim)
		g.cs = g.cs[:1] // names the files: c1
		*centres = 1
	case "clustered":
	default:
		check(fmt.Errorf("-vectors %q: clustered or hash", *vectors))
	}
	q0 := *n + *qseed**nq
	qs := g.chunk(q0, q0+*nq)
	fmt.Printf("%s: %d x %d %s vectors, %d clusters, sigma %g; %d queries (set %d, recall over %d); GOMAXPROCS %d\n",
		time.Now().UTC().Format(time.RFC3339), *n, *dim, *vectors, *centres, *sigma, *nq, *qseed, *qexact, runtime.GOMAXPROCS(0))

	exactPath := filepath.Join(*dir, fmt.Sprintf("exact-n%d-d%d-c%d-s%g-q%d.bin", *n, *dim, *centres, *sigma, *qexact))
	if *qseed != 0 {
		exactPath = strings.TrimSuffix(exactPath, ".bin") + fmt.Sprintf("-qs%d.bin", *qseed)
	}
	codeKinds := map[string]int{"signs": vectorstore.DiskCodeSigns, "rotated": vectorstore.DiskCodeRotated, "rotatedpad": vectorstore.DiskCodeRotated}
	for _, c := range strings.Split(*codes, ",") {
		if _, ok := codeKinds[c]; !ok {
			check(fmt.Errorf("-code %q: signs or rotated", c))
		}
	}
	exact := loadExact(exactPath, *qexact)
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
		name := q.name
		cfg := vectorstore.IndexConfig{Backend: "disk", Dim: *dim, Params: map[string]int{"quant": q.quant}}
		if q.quant == vectorstore.DiskQuantBinary { // the first of -code
			c := strings.Split(*codes, ",")[0]
			cfg.Params["code"] = codeKinds[c]
			name += "-" + c
		}
		probes := []string{"0"}
		if q.ivf {
			cfg.Params["nlist"] = *nlist
			name = fmt.Sprintf("%s%d", q.name, *nlist)
			probes = strings.Split(*nprobes, ",")
		}
		cfg.Dir = filepath.Join(*dir, fmt.Sprintf("%s-n%d-c%d", name, *n, *centres))
		x, err := vectorstore.NewDiskIndex(cfg)
		if err == nil && x.Len() != *n {
			check(x.Close())
			err = fmt.Errorf("holds %d vectors", x.Len())
		}
		if err != nil || *rebuild {
			if x != nil && err == nil {
				check(x.Close())
			}
			build(ctx, cfg, g, *n, *train, *nlist)
			x, err = vectorstore.NewDiskIndex(cfg)
			check(err)
		} else {
			check(x.Close())
			fmt.Printf("%s: index found in %s, not built again\n", name, cfg.Dir)
		}
		check(x.Close())
		t := time.Now()
		x, err = vectorstore.NewDiskIndex(cfg)
		check(err)
		fmt.Printf("%s: %d bytes on disk (%.1f bytes/vector), open %v, RssAnon %s\n", name, dirSize(cfg.Dir),
			float64(dirSize(cfg.Dir))/float64(*n), time.Since(t).Round(time.Microsecond), status("RssAnon"))
		if exact == nil {
			t = time.Now()
			exact, err = x.SearchBatchWith(ctx, qs[:*qexact], 10, nil, vectorstore.DiskSearchOptions{Mode: vectorstore.DiskExact})
			check(err)
			el := time.Since(t)
			fmt.Printf("exact float32 batch of %d: %v (%v/query), RssAnon %s\n", *qexact, el.Round(time.Millisecond), el/time.Duration(*qexact), status("RssAnon"))
			saveExact(exactPath, exact)
		}
		batch := qs
		if !q.ivf {
			batch = qs[:min(*qfull, *qexact)]
		}
		t = time.Now()
		np0, _ := strconv.Atoi(probes[len(probes)-1])
		_, err = x.SearchBatchWith(ctx, batch, 10, nil, vectorstore.DiskSearchOptions{Mode: q.mode, NProbe: np0})
		check(err)
		fmt.Printf("  warm-up batch of %d (nprobe %d): %v, RssAnon %s\n", len(batch), np0, time.Since(t).Round(time.Millisecond), status("RssAnon"))
		for range *rounds {
			for _, ps := range probes {
				np, _ := strconv.Atoi(ps)
				for _, pair := range crossLists(*oversample, probeCuts) {
					o, cut := pair[0], pair[1]
					t = time.Now()
					got, err := x.SearchBatchWith(ctx, batch, 10, nil, vectorstore.DiskSearchOptions{Mode: q.mode, Oversample: o, NProbe: np, ProbeCut: cut})
					check(err)
					el := time.Since(t)
					fmt.Printf("  %s nprobe %d cut %d oversample %2d: recall@10 %.4f, batch of %d %v (%.0f q/s), RssAnon %s\n", name, np, cut, o,
						recall(got, exact), len(batch), el.Round(time.Millisecond), float64(len(batch))/el.Seconds(), status("RssAnon"))
				}
			}
		}
		check(x.Close())
	}
	if *stores != "" {
		var prof bytes.Buffer
		if *cpuprofile != "" {
			check(pprof.StartCPUProfile(&prof))
		}
		runStores(ctx, strings.Split(*stores, ","), g, *n, *dim, *nlist, qs, *qexact, exact, *dir, exactPath, *oversample, *nprobes, *rebuild, *lat, *storeCodes, strings.Split(*codes, ","))
		if *cpuprofile != "" {
			pprof.StopCPUProfile()
			check(atomicfile.WriteFile(*cpuprofile, prof.Bytes(), atomicfile.Options{}))
		}
	}
	if *faissFactory != "" {
		if runFaiss == nil {
			check(fmt.Errorf("-faiss needs a build with -tags faiss"))
		}
		if exact == nil {
			check(fmt.Errorf("-faiss needs the exact results: run a disk index mode first (%s)", exactPath))
		}
		runFaiss(*faissFactory, g, *n, qs, exact, *nprobes, *kfactors, *lat)
	}
	fmt.Printf("VmHWM %s, RssAnon %s\n", status("VmHWM"), status("RssAnon"))
}

// build writes an index of n generated vectors: a first write of train rows (the lists are
// trained on it), then 65,536 at a time.
func build(ctx context.Context, cfg vectorstore.IndexConfig, g *gen, n, train, nlist int) {
	check(os.RemoveAll(cfg.Dir))
	if train == 0 {
		train = max(1<<16, 64*nlist)
	}
	t := time.Now()
	x, err := vectorstore.NewDiskIndex(cfg)
	check(err)
	var genTime time.Duration
	for lo := 0; lo < n; {
		hi := min(n, lo+1<<16)
		if lo == 0 {
			hi = min(n, train)
		}
		t0 := time.Now()
		vs := g.chunk(lo, hi)
		ids := make([]string, hi-lo)
		for i := range ids {
			ids[i] = idOf(lo + i)
		}
		genTime += time.Since(t0)
		check(x.Add(ctx, ids, vs))
		check(x.Commit(uint64(hi)))
		lo = hi
	}
	check(x.Close())
	el := time.Since(t)
	fmt.Printf("build %s: %v (generating the vectors: %v of it), VmHWM %s\n", filepath.Base(cfg.Dir),
		el.Round(time.Millisecond), genTime.Round(time.Millisecond), status("VmHWM"))
}

// runFaiss runs the FAISS comparison (set in a build with -tags faiss).
var runFaiss func(factory string, g *gen, n int, qs [][]float32, exact [][]vectorstore.Hit, nprobes, kfactors string, lat int)

// saveExact keeps the exact top 10 of each query as ordinals.
func saveExact(path string, exact [][]vectorstore.Hit) {
	var b []byte
	for _, hs := range exact {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(hs)))
		for _, h := range hs {
			o, err := strconv.Atoi(strings.TrimPrefix(h.ID, "v"))
			check(err)
			b = binary.LittleEndian.AppendUint32(b, uint32(o))
		}
	}
	check(atomicfile.WriteFile(path, b, atomicfile.Options{}))
}

// loadExact reads what saveExact wrote (nil if there is none).
func loadExact(path string, nq int) [][]vectorstore.Hit {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	out := make([][]vectorstore.Hit, 0, nq)
	for len(b) >= 4 && len(out) < nq {
		k := int(binary.LittleEndian.Uint32(b))
		b = b[4:]
		if len(b) < 4*k {
			break
		}
		hs := make([]vectorstore.Hit, k)
		for i := range hs {
			hs[i].ID = idOf(int(binary.LittleEndian.Uint32(b[4*i:])))
		}
		b = b[4*k:]
		out = append(out, hs)
	}
	if len(out) != nq {
		return nil
	}
	return out
}

// recall is the mean share of want's ids in got, over the queries both hold.
func recall(got, want [][]vectorstore.Hit) float64 {
	want = want[:min(len(got), len(want))]
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

// status reads one field of /proc/self/status ("RssAnon", "VmHWM").
func status(field string) string {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, field+":") {
			return strings.Join(strings.Fields(strings.TrimPrefix(l, field+":")), " ")
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
