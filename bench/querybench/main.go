// Command querybench times searches over an existing store from outside, the way the wiki-18
// procedure (bench/wiki21m.sh) and the issues measure them: one thread, the queries of a BEIR
// queries.jsonl, several rounds, p50/p99/mean per round; then, optionally, a batch (the
// folder's batch-queries.jsonl) through SearchBatch over GOMAXPROCS workers. It reports the
// process's RSS and RssAnon after each phase (read from /proc, Linux).
//
//	go run ./bench/querybench -store S -queries DIR/queries.jsonl [-k 10] [-rounds 3] [-limit 300]
//	    [-batch DIR/batch-queries.jsonl [-batch-rounds N]] [-mode bm25|dense|hybrid] [-read-only=true]
//	    [-cpuprofile FILE] [-run-out FILE] [-lat-out FILE] [-full-dense-window]
//	    [-warm-queries TUNE.jsonl [-warm-rounds 3]] [-open-indexes=true]
//
// The store is opened (timed: "open"), then the default collection's indexes
// (Collection.Open, timed apart: "indexes opened"; -open-indexes=false leaves them to the
// first query), then the timed rounds run.
//
// -warm-queries warms the process the way bench/lucene's latency mode warms its JVM: the
// store is opened, those queries (the tuning half: never the timed ones) are searched
// -warm-rounds times, the store is closed (its caches dropped, their memory kept by the
// process) and opened afresh; the timed rounds run on that fresh open, so their first round
// is first-seen for the index, not for the process.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/atomicfile"
	"github.com/agentmem/memory/internal/beir"
	"github.com/agentmem/memory/vectorstore"
)

func main() {
	var (
		storeDir = flag.String("store", "", "store directory (required)")
		queries  = flag.String("queries", "", "BEIR queries.jsonl for the one-thread rounds")
		batch    = flag.String("batch", "", "queries (JSONL with a text field) sent as one SearchBatch")
		k        = flag.Int("k", 10, "results per query")
		rounds   = flag.Int("rounds", 3, "rounds over the queries")
		bRounds  = flag.Int("batch-rounds", 1, "times the batch is sent (the first on a cold cache)")
		limit    = flag.Int("limit", 300, "use the first N queries (0: all)")
		mode     = flag.String("mode", "bm25", "bm25, dense or hybrid")
		readOnly = flag.Bool("read-only", true, "open read-only")
		cacheMB  = flag.Int("cache-mb", 0, "BM25 postings cache in MiB (0: the default)")
		cpuProf  = flag.String("cpuprofile", "", "write a CPU profile of the timed searches (after open) to this file")
		scoring  = flag.String("bm25-scoring", "", "BM25 formula for this run (memory.WithBM25Scoring: classic or lucene; default: by the store's analyzer)")
		noText   = flag.Bool("no-text", false, "return ids and scores only (memory.WithoutText): what Lucene's tool times, the top k's ids")
		fullWin  = flag.Bool("full-dense-window", false, "hybrid: an approximate dense index rescores candidates for the whole window (memory.WithFullDenseWindow)")
		memProf  = flag.String("memprofile", "", "write a heap profile (after a collection) to this file at the end")
		runOut   = flag.String("run-out", "", "write the first round's results to this file as a TREC run (scores printed exactly: a byte comparison between builds)")
		latOut   = flag.String("lat-out", "", "write each query's latency in every round to this file (round, query id, microseconds a line)")
		warmQ    = flag.String("warm-queries", "", "queries (BEIR queries.jsonl) searched untimed on a first open, closed before the timed open (see the command's doc)")
		warmR    = flag.Int("warm-rounds", 3, "rounds over -warm-queries")
		ixParams = flag.String("index-param", "", "dense index search parameters for this run, KEY=N,... (memory.WithIndex Params: nprobe, probecut, oversample, prefilter)")
		openIx   = flag.Bool("open-indexes", true, "open the default collection's indexes after the store, timed apart (Collection.Open), as Lucene's tool opens its reader before its rounds; false: the first query opens them")
	)
	flag.Parse()
	heapProfile, runFile, latFile = *memProf, *runOut, *latOut
	warmFile, warmRounds = *warmQ, *warmR
	openIndexes = *openIx
	if err := parseIndexParams(*ixParams); err != nil {
		fmt.Fprintln(os.Stderr, "querybench:", err)
		os.Exit(2)
	}
	if *cpuProf != "" {
		f, err := os.Create(*cpuProf)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "querybench:", err)
			os.Exit(1)
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	if *storeDir == "" || (*queries == "" && *batch == "") {
		fmt.Fprintln(os.Stderr, "usage: querybench -store S -queries Q.jsonl [-batch B.jsonl] [-k 10] [-rounds 3] [-limit 300] [-mode bm25]")
		os.Exit(2)
	}
	if err := run(*storeDir, *queries, *batch, *k, *rounds, *bRounds, *limit, *cacheMB, *mode, *readOnly, *noText, *fullWin, *scoring); err != nil {
		fmt.Fprintln(os.Stderr, "querybench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// indexParams are -index-param's parameters (nil: none).
var indexParams map[string]int

// parseIndexParams reads -index-param's KEY=N,... into indexParams.
func parseIndexParams(s string) error {
	for kv := range strings.SplitSeq(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil {
			return fmt.Errorf("-index-param %q: want KEY=N", kv)
		}
		if indexParams == nil {
			indexParams = map[string]int{}
		}
		indexParams[k] = n
	}
	return nil
}

func run(dir, qfile, bfile string, k, rounds, bRounds, limit, cacheMB int, mode string, readOnly, noText, fullWin bool, bm25Scoring string) error {
	m, err := parseMode(mode)
	if err != nil {
		return err
	}
	var opts []memory.Option
	if readOnly {
		opts = append(opts, memory.ReadOnly())
	}
	if cacheMB != 0 {
		opts = append(opts, func(o *memory.Options) { o.PostingsCacheBytes = cacheMB << 20 })
	}
	if bm25Scoring != "" {
		opts = append(opts, memory.WithBM25Scoring(bm25Scoring))
	}
	if len(indexParams) > 0 {
		opts = append(opts, memory.WithIndex(vectorstore.IndexConfig{Params: indexParams}))
	}
	if warmFile != "" {
		if err := warmProcess(dir, opts, m, k, noText, fullWin); err != nil {
			return err
		}
	}
	t := time.Now()
	mem, err := memory.OpenExisting(dir, opts...)
	if err != nil {
		return err
	}
	defer mem.Close()
	fmt.Printf("open %v; %s\n", time.Since(t).Round(time.Microsecond), rss())
	ctx := context.Background()
	if openIndexes {
		t := time.Now()
		if err := mem.Collection(memory.DefaultCollection).Open(ctx); err != nil {
			return err
		}
		fmt.Printf("indexes opened %v; %s\n", time.Since(t).Round(time.Microsecond), rss())
	}
	if qfile != "" {
		ids, qs, err := beir.ReadQueryFile(qfile, limit)
		if err != nil {
			return err
		}
		var run []byte  // -run-out: the first round's results
		var lats []byte // -lat-out: every query's latency
		for r := 1; r <= rounds; r++ {
			lat := make([]time.Duration, 0, len(qs))
			ru0 := usage()
			sopts := searchOptions(m, k, noText, fullWin)
			for qi, q := range qs {
				t := time.Now()
				res, err := mem.Search(ctx, q, sopts...)
				if err != nil {
					return fmt.Errorf("search %q: %w", q, err)
				}
				lat = append(lat, time.Since(t))
				if latFile != "" {
					lats = fmt.Appendf(lats, "%d %s %.1f\n", r, ids[qi], float64(lat[len(lat)-1].Nanoseconds())/1e3)
				}
				if r == 1 && runFile != "" {
					for rank, x := range res {
						run = fmt.Appendf(run, "%s Q0 %s %d %s querybench\n", ids[qi], x.ID, rank+1, strconv.FormatFloat(x.Score, 'g', -1, 64))
					}
				}
			}
			if r == 1 && runFile != "" {
				if err := os.WriteFile(runFile, run, 0o644); err != nil {
					return err
				}
			}
			p50, p99, mean := stats(lat)
			ru := usage().minus(ru0)
			n := time.Duration(len(qs))
			fmt.Printf("round %d: %d queries, k=%d, one thread: p50 %v p99 %v mean %v cpu/query %v (user %v, sys %v), page faults/query %.1f minor %.2f major; %s\n",
				r, len(qs), k, p50, p99, mean, ((ru.user + ru.sys) / n).Round(time.Microsecond), (ru.user / n).Round(time.Microsecond), (ru.sys / n).Round(time.Microsecond),
				float64(ru.minflt)/float64(len(qs)), float64(ru.majflt)/float64(len(qs)), rss())
		}
		if latFile != "" {
			if err := os.WriteFile(latFile, lats, 0o644); err != nil {
				return err
			}
		}
	}
	if bfile != "" {
		_, qs, err := beir.ReadQueryFile(bfile, 0)
		if err != nil {
			return err
		}
		for r := 1; r <= max(1, bRounds); r++ {
			t := time.Now()
			if _, err := mem.SearchBatch(ctx, qs, searchOptions(m, k, false, fullWin)...); err != nil {
				return fmt.Errorf("batch: %w", err)
			}
			el := time.Since(t)
			fmt.Printf("batch round %d: %d queries, k=%d, %d workers: %v, %.0f queries/s; %s\n", r, len(qs), k, runtime.GOMAXPROCS(0), el.Round(time.Millisecond), float64(len(qs))/el.Seconds(), rss())
		}
	}
	if heapProfile != "" { // while the store is open: what it holds after the searches
		runtime.GC()
		if err := atomicfile.Write(heapProfile, atomicfile.Options{}, pprof.WriteHeapProfile); err != nil {
			return err
		}
	}
	return nil
}

// heapProfile is -memprofile's file, runFile -run-out's, latFile -lat-out's ("": none).
var heapProfile, runFile, latFile string

// openIndexes is -open-indexes.
var openIndexes bool

// warmFile is -warm-queries' file ("": none), warmRounds -warm-rounds.
var (
	warmFile   string
	warmRounds int
)

// searchOptions are the options of the timed searches (and of the warm-up's).
func searchOptions(m memory.Mode, k int, noText, fullWin bool) []memory.SearchOption {
	o := []memory.SearchOption{memory.WithMode(m), memory.TopK(k)}
	if fullWin {
		o = append(o, memory.WithFullDenseWindow())
	}
	if noText {
		o = append(o, memory.WithoutText())
	}
	return o
}

// warmProcess opens the store, searches warmFile's queries warmRounds times untimed with
// the timed searches' options, and closes it again.
func warmProcess(dir string, opts []memory.Option, m memory.Mode, k int, noText, fullWin bool) error {
	_, qs, err := beir.ReadQueryFile(warmFile, 0)
	if err != nil {
		return err
	}
	mem, err := memory.OpenExisting(dir, opts...)
	if err != nil {
		return err
	}
	sopts := searchOptions(m, k, noText, fullWin)
	t := time.Now()
	for range warmRounds {
		for _, q := range qs {
			if _, err := mem.Search(context.Background(), q, sopts...); err != nil {
				mem.Close()
				return fmt.Errorf("warm-up search %q: %w", q, err)
			}
		}
	}
	if err := mem.Close(); err != nil {
		return err
	}
	fmt.Printf("warm-up: %d queries x %d rounds in %v on a first open, closed; %s\n", len(qs), warmRounds, time.Since(t).Round(time.Millisecond), rss())
	return nil
}

func parseMode(s string) (memory.Mode, error) {
	switch s {
	case "bm25":
		return memory.BM25, nil
	case "dense":
		return memory.Dense, nil
	case "hybrid":
		return memory.Hybrid, nil
	}
	return "", fmt.Errorf("mode %q: want bm25, dense or hybrid", s)
}

func stats(lat []time.Duration) (p50, p99, mean time.Duration) {
	s := slices.Clone(lat)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	at := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return at(0.50).Round(time.Microsecond), at(0.99).Round(time.Microsecond), (sum / time.Duration(len(s))).Round(time.Microsecond)
}

// rss returns "RSS x MB, RssAnon y MB" from /proc/self/status.
func rss() string {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "RSS unknown"
	}
	var parts []string
	for _, line := range strings.Split(string(data), "\n") {
		for _, key := range []string{"VmRSS:", "RssAnon:"} {
			if strings.HasPrefix(line, key) {
				var kb int64
				fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, key)), "%d", &kb)
				parts = append(parts, fmt.Sprintf("%s %d MB", strings.TrimSuffix(key, ":"), kb>>10))
			}
		}
	}
	return strings.Join(parts, ", ")
}

// rusage is the process's CPU time and page faults so far (getrusage): a round's CPU per
// query is less sensitive to other load on the machine than its wall times (it includes the
// garbage collector's work on other threads), and its faults tell a first round's costs of
// mapping segment pages (minor: already in the page cache; major: read from disk) from its
// decoding.
type rusage struct {
	user, sys      time.Duration
	minflt, majflt int64
}

// usage reads the process's rusage (zero if getrusage fails).
func usage() rusage {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return rusage{}
	}
	return rusage{user: time.Duration(ru.Utime.Nano()), sys: time.Duration(ru.Stime.Nano()), minflt: ru.Minflt, majflt: ru.Majflt}
}

// minus is r less an earlier reading.
func (r rusage) minus(o rusage) rusage {
	return rusage{user: r.user - o.user, sys: r.sys - o.sys, minflt: r.minflt - o.minflt, majflt: r.majflt - o.majflt}
}
