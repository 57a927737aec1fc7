package main

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/internal/vecmath"
	"github.com/agentmem/memory/vectorstore"
)

// The -store comparison (issue 40): the dense part of a store, its store of record
// included. For each precision named (float32, float16, int8) it writes the generated
// vectors into a store.db of that precision (as an ingest does: Write, a record and a
// vector a passage, 65,536 a transaction) and a disk index of binary codes (-storecodes
// int8: per-dimension int8 codes; with lists when -nlist is set) beside it: with float32 and float16 one that keeps its own float32
// rows (the default), with int8 one without rows, which rescores with the vectors it reads
// from store.db (IndexConfig.Rows). It reports the bytes a vector of the store's vecs
// bucket, of the whole store.db (allocated blocks) and of the index files; recall@10
// against the exact float32 search at each oversampling (and nprobe), and one-thread
// latency per query (p50, p99), each search alone. -code names the binary codes of the
// indexes (signs, rotated, rotatedpad: every bit of the rotation padded to a power of
// two), one index of each beside the same store.db; an int8 run without a float32 one
// before it computes the exact results in memory, and reports the int8 store's ceiling
// (the recall of an exact search over its own vectors).

// storeCol is the collection the vectors go in.
const storeCol = "c"

// dbRows reads an index's rows from store.db.
type dbRows struct{ db *store.DB }

func (r dbRows) Rows(_ context.Context, ids []string, dst [][]float32) error {
	return r.db.FillVectors(storeCol, ids, dst)
}

// allocated is the bytes of disk a file takes (its allocated blocks: store.db's mapped
// tail is sparse).
func allocated(path string) int64 {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0
	}
	return st.Blocks * 512
}

// round is v rounded to what a store of precision p decodes.
func round(p string, v []float32) []float32 {
	switch p {
	case "int8":
		r, err := vecmath.RoundInt8(v)
		check(err)
		return r
	case "float16":
		r, err := vecmath.RoundHalf(v)
		check(err)
		return r
	}
	return v
}

func storePrecision(p string) store.Precision {
	switch p {
	case "int8":
		return store.PrecisionInt8
	case "float16":
		return store.PrecisionFloat16
	case "float32":
		return store.PrecisionFloat32
	}
	check(fmt.Errorf("-store: precision %q (float32, float16, int8)", p))
	return 0
}

// runStores runs the -store comparison: for each precision a store.db (built once) and an
// index beside it for each kind of binary code in codeKinds (-code; int8 codes: one). The
// timed batches search every query of qs; recall is over the first qexact (-qexact).
func runStores(ctx context.Context, precs []string, g *gen, n, dim, nlist int, qs [][]float32, qexact int, exact [][]vectorstore.Hit,
	dir, exactPath, oversample, nprobes string, rebuild bool, lat int, codes string, codeKinds []string) {
	quant, mode := vectorstore.DiskQuantBinary, vectorstore.DiskBinary
	switch codes {
	case "int8":
		quant, mode = vectorstore.DiskQuantInt8, vectorstore.DiskInt8
		codeKinds = []string{"int8"}
	case "binary":
	default:
		check(fmt.Errorf("-storecodes %q: binary or int8", codes))
	}
	for _, p := range precs {
		if p == "int8" && exact == nil {
			if exactMode == "stream" {
				exact = exactStream(g, n, qs[:qexact], p)
			} else {
				exact = exactInMemory(ctx, g, n, dim, qs[:qexact], p)
			}
			saveExact(exactPath, exact)
		}
		sdir := filepath.Join(dir, fmt.Sprintf("store-%s-n%d-c%d-l%d", p, n, len(g.cs), nlist))
		dbPath := filepath.Join(sdir, "store.db")
		var cfgs []vectorstore.IndexConfig
		var missing []vectorstore.IndexConfig
		for _, ck := range codeKinds {
			cfg := vectorstore.IndexConfig{Backend: "disk", Dim: dim, Dir: filepath.Join(sdir, "vec-"+ck),
				Params: map[string]int{"quant": quant}}
			switch ck {
			case "signs":
				cfg.Params["code"] = vectorstore.DiskCodeSigns
			case "rotated":
				cfg.Params["code"] = vectorstore.DiskCodeRotated
			case "rotatedpad": // every bit of the rotation, padded to a power of two
				cfg.Params["code"] = vectorstore.DiskCodeRotated
				cfg.Params["codebits"] = 1 << bits.Len(uint(dim-1))
			}
			if nlist > 0 {
				cfg.Params["nlist"] = nlist
			}
			cfgs = append(cfgs, cfg)
			if _, err := os.Stat(filepath.Join(cfg.Dir, "disk.json")); err != nil || rebuild {
				check(os.RemoveAll(cfg.Dir))
				missing = append(missing, cfg)
			}
		}
		_, err := os.Stat(dbPath)
		writeDB := err != nil || rebuild
		if writeDB {
			check(os.RemoveAll(sdir))
			check(os.MkdirAll(sdir, 0o755))
			missing = cfgs
		}
		if len(missing) > 0 {
			buildStore(ctx, p, dbPath, missing, writeDB, g, n, nlist)
		} else {
			fmt.Printf("store %s: found in %s, not built again\n", p, sdir)
		}
		db, err := store.Open(dbPath, store.Options{NoSync: true, Precision: storePrecision(p)})
		check(err)
		vb, err := db.VectorBytes(storeCol)
		check(err)
		sb := allocated(dbPath)
		for ci, cfg := range cfgs {
			if p == "int8" {
				cfg.Rows = dbRows{db}
			}
			ck := codeKinds[ci]
			ib := dirSize(cfg.Dir)
			fmt.Printf("store %s, %s codes: vecs bucket %.1f B/vector, store.db %.1f B/vector (allocated), index files %.1f B/vector; dense part (vecs bucket + index) %.1f B/vector\n",
				p, ck, float64(vb)/float64(n), float64(sb)/float64(n), float64(ib)/float64(n), float64(vb+ib)/float64(n))
			x, err := vectorstore.NewDiskIndex(cfg)
			check(err)
			if plan, _ := x.SearchPlan(); plan != "" {
				fmt.Printf("  plan: %s\n", plan)
			}
			if exact == nil {
				t := time.Now()
				exact, err = x.SearchBatchWith(ctx, qs[:qexact], 10, nil, vectorstore.DiskSearchOptions{Mode: vectorstore.DiskExact})
				check(err)
				fmt.Printf("exact float32 batch of %d: %v\n", qexact, time.Since(t).Round(time.Millisecond))
				saveExact(exactPath, exact)
			}
			probes := []string{"0"}
			if nlist > 0 {
				probes = strings.Split(nprobes, ",")
			}
			t := time.Now()
			f0, j0 := faults()
			_, err = x.SearchBatchWith(ctx, qs, 10, nil, vectorstore.DiskSearchOptions{Mode: mode}) // warm-up
			check(err)
			f1, j1 := faults()
			fmt.Printf("  warm-up batch of %d at the defaults (the first, on the page cache as found): %v, page faults a query %.1f minor %.1f major, RssAnon %s\n", len(qs),
				time.Since(t).Round(time.Millisecond), float64(f1-f0)/float64(len(qs)), float64(j1-j0)/float64(len(qs)), status("RssAnon"))
			for _, ps := range probes {
				np, _ := strconv.Atoi(ps)
				for _, rs := range strings.Split(probeCuts, ",") {
					cut, err := strconv.Atoi(rs)
					check(err)
					for _, pair := range crossLists(oversample, prefilters) {
						o, pf := pair[0], pair[1]
						so := vectorstore.DiskSearchOptions{Mode: mode, Oversample: o, NProbe: np, Prefilter: pf, ProbeCut: cut}
						t := time.Now()
						f0, j0 := faults()
						got, err := x.SearchBatchWith(ctx, qs, 10, nil, so)
						check(err)
						el := time.Since(t)
						f1, j1 := faults()
						line := fmt.Sprintf("  store %s %s nprobe %d cut %d oversample %2d prefilter %d: recall@10 %.4f (first %d), batch of %d %v (%.0f q/s, page faults a query %.1f minor %.1f major)", p, ck, np, cut, o, pf,
							recall(got, exact), min(qexact, len(exact)), len(qs), el.Round(time.Millisecond), float64(len(qs))/el.Seconds(), float64(f1-f0)/float64(len(qs)), float64(j1-j0)/float64(len(qs)))
						if lat > 0 {
							p50, p99 := oneThread(ctx, cfg, x, qs[:min(lat, len(qs))], so)
							line += fmt.Sprintf("; one thread p50 %v p99 %v", p50, p99)
						}
						fmt.Printf("%s, RssAnon %s\n", line, status("RssAnon"))
					}
				}
			}
			check(x.Close())
		}
		check(db.Close())
	}
}

// exactInMemory is the exact float32 top 10 of each query over the n generated vectors
// (an index in memory: the -store int8 run needs no float32 store for its ground truth).
// It also reports the queries whose 10th and 11th scores tie, and the ceiling of a store
// of precision p: the recall@10 of the exact search over the vectors as the store decodes
// them (what rescoring every vector with them would reach).
func exactInMemory(ctx context.Context, g *gen, n, dim int, qs [][]float32, p string) [][]vectorstore.Hit {
	t := time.Now()
	top := func(rounded bool) [][]vectorstore.Hit {
		x, err := vectorstore.NewDiskIndex(vectorstore.IndexConfig{Backend: "disk", Dim: dim, Params: map[string]int{"quant": vectorstore.DiskQuantNone}})
		check(err)
		defer x.Close()
		for lo := 0; lo < n; lo += 1 << 16 {
			hi := min(n, lo+1<<16)
			vs := g.chunk(lo, hi)
			ids := make([]string, hi-lo)
			for i := range ids {
				ids[i] = idOf(lo + i)
				if rounded {
					vs[i] = round(p, vs[i])
				}
			}
			check(x.Add(ctx, ids, vs))
		}
		res, err := x.SearchBatch(ctx, qs, 11, nil)
		check(err)
		return res
	}
	t11 := top(false)
	ties := 0
	exact := make([][]vectorstore.Hit, len(t11))
	for i, hs := range t11 {
		if len(hs) == 11 && hs[9].Score == hs[10].Score {
			ties++
		}
		exact[i] = hs[:min(10, len(hs))]
	}
	fmt.Printf("exact float32 (in memory) batch of %d: %v; %d queries have a tie between their 10th and 11th scores\n",
		len(qs), time.Since(t).Round(time.Millisecond), ties)
	if p != "float32" {
		r := top(true)
		for i := range r {
			r[i] = r[i][:min(10, len(r[i]))]
		}
		fmt.Printf("ceiling of a %s store: exact search over its vectors, recall@10 %.4f\n", p, recall(r, exact))
	}
	return exact
}

// oneThread times each query alone on one thread (the index's threads 1).
func oneThread(ctx context.Context, cfg vectorstore.IndexConfig, x *vectorstore.DiskIndex, qs [][]float32, so vectorstore.DiskSearchOptions) (p50, p99 time.Duration) {
	c := cfg
	c.Params = map[string]int{}
	for k, v := range cfg.Params {
		c.Params[k] = v
	}
	c.Params["threads"] = 1
	c.ReadOnly = true
	y, err := vectorstore.NewDiskIndex(c)
	check(err)
	defer y.Close()
	ts := make([]time.Duration, len(qs))
	for i, q := range qs {
		t := time.Now()
		_, err := y.SearchWith(ctx, q, 10, nil, so)
		check(err)
		ts[i] = time.Since(t)
	}
	slices.Sort(ts)
	at := func(f float64) time.Duration { return ts[min(len(ts)-1, int(math.Ceil(f*float64(len(ts))))-1)] }
	return at(0.50).Round(time.Microsecond), at(0.99).Round(time.Microsecond)
}

// buildStore writes n generated vectors into store.db (precision p; unless writeDB is
// false: it holds them already) and the indexes cfgs.
func buildStore(ctx context.Context, p, dbPath string, cfgs []vectorstore.IndexConfig, writeDB bool, g *gen, n, nlist int) {
	t := time.Now()
	db, err := store.Open(dbPath, store.Options{NoSync: true, Precision: storePrecision(p)})
	check(err)
	var xs []*vectorstore.DiskIndex
	for _, cfg := range cfgs {
		if p == "int8" {
			cfg.Rows = dbRows{db}
		}
		x, err := vectorstore.NewDiskIndex(cfg)
		check(err)
		xs = append(xs, x)
	}
	train := max(1<<16, 64*nlist)
	for lo := 0; lo < n; {
		hi := min(n, lo+1<<16)
		if lo == 0 {
			hi = min(n, train)
		}
		vs := g.chunk(lo, hi)
		ids := make([]string, hi-lo)
		puts := make([]store.Put, hi-lo)
		for i := range ids {
			ids[i] = idOf(lo + i)
			vs[i] = round(p, vs[i]) // the index holds what store.db decodes
			puts[i] = store.Put{ID: ids[i], Record: &store.Record{Text: ids[i]}, Units: []string{ids[i]}, Vecs: [][]float32{vs[i]}}
		}
		if writeDB {
			_, err := db.Write(storeCol, puts, len(puts), len(puts))
			check(err)
		}
		for _, x := range xs {
			check(x.Add(ctx, ids, vs))
			check(x.Commit(uint64(hi)))
		}
		lo = hi
	}
	el := time.Since(t)
	for _, x := range xs {
		if nlist > 0 { // as memory index and memory compact leave a store: each list's rows in order
			t0 := time.Now()
			check(x.OrderLists(ctx))
			fmt.Printf("  OrderLists: %v\n", time.Since(t0).Round(time.Millisecond))
		}
		check(x.Close())
	}
	check(db.Close())
	fmt.Printf("build store %s (%d indexes): %v (lists ordered: %v), VmHWM %s\n", p, len(xs), el.Round(time.Millisecond),
		time.Since(t).Round(time.Millisecond), status("VmHWM"))
}

// exactStream is exactInMemory in one streaming pass (-exact stream): the generated vectors
// are drawn a chunk at a time and each query keeps only its best 11 by float64 cosine, so a
// set larger than memory (21M x 768 float32 is 64 GB) gets its exact float32 results; the
// ceiling of a store of precision p (the vectors rounded as it decodes them) is taken in the
// same pass.
func exactStream(g *gen, n int, qs [][]float32, p string) [][]vectorstore.Hit {
	t := time.Now()
	unit := func(v []float32) []float32 {
		var s float64
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		u := make([]float32, len(v))
		if s > 0 {
			inv := 1 / math.Sqrt(s)
			for i, x := range v {
				u[i] = float32(float64(x) * inv)
			}
		}
		return u
	}
	qn := make([][]float32, len(qs))
	for i, q := range qs {
		qn[i] = unit(q)
	}
	rounded := p != "float32"
	// ord is a hit by the vector's ordinal (its id is made once, at the end).
	type ord struct {
		i     int
		score float64
	}
	best := make([][]ord, len(qs)) // each query's best 11, best first
	cbest := make([][]ord, len(qs))
	// keep inserts h into hs (best first, at most 11); of equal scores the lower ordinal
	// (the lower id) first.
	keep := func(hs []ord, h ord) []ord {
		if len(hs) == 11 && h.score <= hs[10].score {
			return hs // a later ordinal loses a tie
		}
		i := slices.IndexFunc(hs, func(x ord) bool { return h.score > x.score })
		if i < 0 {
			i = len(hs)
		}
		hs = slices.Insert(hs, i, h)
		return hs[:min(11, len(hs))]
	}
	// floor is the score a hit must reach to enter hs (a query's best 11, best first).
	floor := func(hs []ord) float64 {
		if len(hs) < 11 {
			return math.Inf(-1)
		}
		return hs[10].score
	}
	w := runtime.GOMAXPROCS(0)
	for lo := 0; lo < n; lo += 1 << 16 {
		hi := min(n, lo+1<<16)
		vs := g.chunk(lo, hi)
		us := make([][]float32, len(vs))
		var rs [][]float32
		var dv []float64
		if rounded {
			rs = make([][]float32, len(vs))
			dv = make([]float64, len(vs))
		}
		var pw sync.WaitGroup
		for part := range w {
			pw.Add(1)
			go func() {
				defer pw.Done()
				for i := part; i < len(vs); i += w {
					v := vs[i]
					us[i] = unit(v)
					if rounded {
						rs[i] = unit(round(p, v))
						var d float64
						for j, x := range rs[i] {
							e := float64(x) - float64(us[i][j])
							d += e * e
						}
						dv[i] = math.Sqrt(d) // |q.r - q.u| <= |r - u| for a unit q
					}
				}
			}()
		}
		pw.Wait()
		var wg sync.WaitGroup
		for part := range w {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A block of vectors at a time for all of this part's queries, so that
				// the block stays in the core's cache while the queries pass over it
				// (vector by vector per query read the whole chunk from memory each time).
				// Each query still sees the vectors in ordinal order.
				for b0 := 0; b0 < len(us); b0 += exactBlock {
					for q := part; q < len(qn); q += w {
						for i := b0; i < min(len(us), b0+exactBlock); i++ {
							// A float32 dot first: only a vector that may enter the query's
							// best 11 is scored again in float64 (exactSlack bounds the float32
							// error; for the store's rounded vector, dv[i] bounds how far its
							// cosine can be from the vector's own).
							s := float64(dot32(qn[q], us[i]))
							if s+exactSlack >= floor(best[q]) {
								best[q] = keep(best[q], ord{lo + i, dot64(qn[q], us[i])})
							}
							if rounded && s+exactSlack+dv[i] >= floor(cbest[q]) {
								cbest[q] = keep(cbest[q], ord{lo + i, dot64(qn[q], rs[i])})
							}
						}
					}
				}
			}()
		}
		wg.Wait()
	}
	hits := func(os []ord) []vectorstore.Hit {
		hs := make([]vectorstore.Hit, len(os))
		for i, o := range os {
			hs[i] = vectorstore.Hit{ID: idOf(o.i), Score: o.score}
		}
		return hs
	}
	exact := make([][]vectorstore.Hit, len(qs))
	ceil := make([][]vectorstore.Hit, len(qs))
	for i := range qs {
		exact[i], ceil[i] = hits(best[i]), hits(cbest[i])
	}
	ties := 0
	for i, hs := range exact {
		if len(hs) == 11 && hs[9].Score == hs[10].Score {
			ties++
		}
		exact[i] = hs[:min(10, len(hs))]
		ceil[i] = ceil[i][:min(10, len(ceil[i]))]
	}
	fmt.Printf("exact float32 (one streaming pass) batch of %d: %v; %d queries have a tie between their 10th and 11th scores\n",
		len(qs), time.Since(t).Round(time.Millisecond), ties)
	if rounded {
		fmt.Printf("ceiling of a %s store: exact search over its vectors, recall@10 %.4f\n", p, recall(ceil, exact))
	}
	return exact
}

// exactSlack bounds the error of dot32 between unit vectors of up to a few thousand
// dimensions (about n x 2^-24, far below it at 768), so that a vector whose float32 dot is
// below a query's 11th best by more than it cannot be among its best 11.
const exactSlack = 1e-3

// exactBlock is how many vectors exactStream passes every query over at a time (768 KiB of
// float32 at 768 dimensions: within a core's 2 MiB L2 beside a worker's share of 256
// queries, 384 KiB).
const exactBlock = 256

// dot32 is the inner product of a and b (the same length) in float32, eight partial sums.
func dot32(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		x, y := a[i:i+8:i+8], b[i:i+8:i+8]
		s0 += x[0] * y[0]
		s1 += x[1] * y[1]
		s2 += x[2] * y[2]
		s3 += x[3] * y[3]
		s4 += x[4] * y[4]
		s5 += x[5] * y[5]
		s6 += x[6] * y[6]
		s7 += x[7] * y[7]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

// dot64 is the inner product of a and b (the same length), accumulated in float64.
func dot64(a, b []float32) float64 {
	b = b[:len(a)]
	var s float64
	for i, x := range a {
		s += float64(x) * float64(b[i])
	}
	return s
}

// prefilters is -prefilter: the prefilter factors the store searches try.
var prefilters = "0"

// probeCuts is -probecut: the DiskSearchOptions.ProbeCut values the searches of
// indexes with lists try.
var probeCuts = "0"

// crossLists returns every pair of a value of the comma-separated integer lists a and b.
func crossLists(a, b string) [][2]int {
	var out [][2]int
	for _, x := range strings.Split(a, ",") {
		xi, _ := strconv.Atoi(strings.TrimSpace(x))
		for _, y := range strings.Split(b, ",") {
			yi, _ := strconv.Atoi(strings.TrimSpace(y))
			out = append(out, [2]int{xi, yi})
		}
	}
	return out
}
