package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
// latency per query (p50, p99), each search alone.

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

// runStores runs the -store comparison.
func runStores(ctx context.Context, precs []string, g *gen, n, dim, nlist int, qs [][]float32, exact [][]vectorstore.Hit,
	dir, exactPath, oversample, nprobes string, rebuild bool, lat int, codes string) {
	quant, mode := vectorstore.DiskQuantBinary, vectorstore.DiskBinary
	switch codes {
	case "int8":
		quant, mode = vectorstore.DiskQuantInt8, vectorstore.DiskInt8
	case "binary":
	default:
		check(fmt.Errorf("-storecodes %q: binary or int8", codes))
	}
	for _, p := range precs {
		sdir := filepath.Join(dir, fmt.Sprintf("store-%s-n%d-c%d-l%d", p, n, len(g.cs), nlist))
		if codes != "binary" {
			sdir += "-" + codes
		}
		dbPath := filepath.Join(sdir, "store.db")
		cfg := vectorstore.IndexConfig{Backend: "disk", Dim: dim, Dir: filepath.Join(sdir, "vec"),
			Params: map[string]int{"quant": quant}}
		if nlist > 0 {
			cfg.Params["nlist"] = nlist
		}
		built := false
		if _, err := os.Stat(filepath.Join(cfg.Dir, "disk.json")); err != nil || rebuild {
			check(os.RemoveAll(sdir))
			check(os.MkdirAll(sdir, 0o755))
			buildStore(ctx, p, dbPath, cfg, g, n, nlist)
			built = true
		}
		db, err := store.Open(dbPath, store.Options{NoSync: true, Precision: storePrecision(p)})
		check(err)
		if p == "int8" {
			cfg.Rows = dbRows{db}
		}
		if !built {
			fmt.Printf("store %s: found in %s, not built again\n", p, sdir)
		}
		vb, err := db.VectorBytes(storeCol)
		check(err)
		ib, sb := dirSize(cfg.Dir), allocated(dbPath)
		fmt.Printf("store %s: vecs bucket %.1f B/vector, store.db %.1f B/vector (allocated), index files %.1f B/vector; dense part (vecs bucket + index) %.1f B/vector\n",
			p, float64(vb)/float64(n), float64(sb)/float64(n), float64(ib)/float64(n), float64(vb+ib)/float64(n))
		x, err := vectorstore.NewDiskIndex(cfg)
		check(err)
		if exact == nil {
			if p == "int8" {
				check(fmt.Errorf("-store: the exact float32 results are needed first: put float32 before int8"))
			}
			t := time.Now()
			exact, err = x.SearchBatchWith(ctx, qs, 10, nil, vectorstore.DiskSearchOptions{Mode: vectorstore.DiskExact})
			check(err)
			fmt.Printf("exact float32 batch of %d: %v\n", len(qs), time.Since(t).Round(time.Millisecond))
			saveExact(exactPath, exact)
		}
		if p == "float32" {
			// Ties at the 10th place make recall@10 ambiguous: a search that ranks tied
			// vectors in another order (other rounding) loses them.
			t11, err := x.SearchBatchWith(ctx, qs, 11, nil, vectorstore.DiskSearchOptions{Mode: vectorstore.DiskExact})
			check(err)
			ties := 0
			for _, hs := range t11 {
				if len(hs) == 11 && hs[9].Score == hs[10].Score {
					ties++
				}
			}
			fmt.Printf("exact float32: %d of %d queries have a tie between their 10th and 11th scores\n", ties, len(qs))
		}
		probes := []string{"0"}
		if nlist > 0 {
			probes = strings.Split(nprobes, ",")
		}
		_, err = x.SearchBatchWith(ctx, qs, 10, nil, vectorstore.DiskSearchOptions{Mode: mode}) // warm-up
		check(err)
		for _, ps := range probes {
			np, _ := strconv.Atoi(ps)
			for _, os := range strings.Split(oversample, ",") {
				o, _ := strconv.Atoi(os)
				so := vectorstore.DiskSearchOptions{Mode: mode, Oversample: o, NProbe: np}
				t := time.Now()
				got, err := x.SearchBatchWith(ctx, qs, 10, nil, so)
				check(err)
				el := time.Since(t)
				line := fmt.Sprintf("  store %s nprobe %d oversample %2d: recall@10 %.4f, batch of %d %v (%.0f q/s)", p, np, o,
					recall(got, exact), len(qs), el.Round(time.Millisecond), float64(len(qs))/el.Seconds())
				if lat > 0 {
					p50, p99 := oneThread(ctx, cfg, x, qs[:min(lat, len(qs))], so)
					line += fmt.Sprintf("; one thread p50 %v p99 %v", p50, p99)
				}
				fmt.Printf("%s, RssAnon %s\n", line, status("RssAnon"))
			}
		}
		check(x.Close())
		check(db.Close())
	}
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

// buildStore writes n generated vectors into store.db (precision p) and the index cfg.
func buildStore(ctx context.Context, p, dbPath string, cfg vectorstore.IndexConfig, g *gen, n, nlist int) {
	t := time.Now()
	db, err := store.Open(dbPath, store.Options{NoSync: true, Precision: storePrecision(p)})
	check(err)
	if p == "int8" {
		cfg.Rows = dbRows{db}
	}
	x, err := vectorstore.NewDiskIndex(cfg)
	check(err)
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
		_, err := db.Write(storeCol, puts, len(puts), len(puts))
		check(err)
		check(x.Add(ctx, ids, vs))
		check(x.Commit(uint64(hi)))
		lo = hi
	}
	check(x.Close())
	check(db.Close())
	fmt.Printf("build store %s: %v, VmHWM %s\n", p, time.Since(t).Round(time.Millisecond), status("VmHWM"))
}
