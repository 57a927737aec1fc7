// Command threeway runs one workload through the memory API on any store address — an
// embedded directory, one Weaviate node or a Weaviate cluster (weaviate://a,b,c) — so the
// three can be compared in the same run doing the same work (issue #41, point 6): ingest of a
// BEIR corpus.jsonl through Add (batches from a few goroutines, vectors from the same
// embedder, computed here on the client for every backend), then one-thread BM25 and hybrid
// searches (a first-seen round and a warm one, p50/p99), then a SearchBatch of the batch
// queries. After each phase it reports this process's CPU seconds, VmRSS and RssAnon and,
// for the server processes named by -pids, theirs (CPU from /proc/PID/stat, memory from
// /proc/PID/status, summed over the nodes).
//
//	go run ./bench/threeway -store S -corpus DIR/corpus.jsonl -queries DIR/queries.jsonl \
//	    -batch DIR/batch-queries.jsonl [-n 1000000] [-embedder hash:384] [-workers 2] \
//	    [-add-batch 500] [-limit 300] [-consistency QUORUM] [-replication 3] [-pids 1,2,3]
//
// It is a benchmark, not a test: figures go to BENCHMARKS.md with the machine and the run.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/beir"
	"github.com/agentmem/memory/vectorstore"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "threeway:", err)
		os.Exit(1)
	}
}

type row struct {
	ID       string         `json:"_id"`
	Title    string         `json:"title"`
	Text     string         `json:"text"`
	Metadata map[string]any `json:"metadata"`
}

func run() error {
	var (
		store       = flag.String("store", "", "store: a directory (embedded) or weaviate://host:port,... (required)")
		corpus      = flag.String("corpus", "", "BEIR corpus.jsonl to ingest (empty: no ingest, search what is there)")
		n           = flag.Int("n", 0, "ingest the first N rows (0: all)")
		queries     = flag.String("queries", "", "BEIR queries.jsonl for the one-thread rounds")
		batch       = flag.String("batch", "", "queries (JSONL with a text field) sent as one SearchBatch")
		limit       = flag.Int("limit", 300, "one-thread rounds use the first N queries (0: all)")
		embedder    = flag.String("embedder", "hash:384", "hash:DIM (the same on every backend)")
		workers     = flag.Int("workers", 2, "goroutines calling Add")
		addBatch    = flag.Int("add-batch", 500, "documents per Add")
		consistency = flag.String("consistency", "", "cluster stores: ONE, QUORUM or ALL")
		replication = flag.Int("replication", 0, "cluster stores: replication factor of new collections (0: the backend's default)")
		pids        = flag.String("pids", "", "server process ids (comma-separated) whose CPU and memory are reported")
		modes       = flag.String("modes", "bm25,hybrid", "search modes timed")
	)
	flag.Parse()
	if *store == "" {
		return errors.New("-store is required")
	}
	dim, err := strconv.Atoi(strings.TrimPrefix(*embedder, "hash:"))
	if err != nil || !strings.HasPrefix(*embedder, "hash:") {
		return fmt.Errorf("-embedder %q: want hash:DIM", *embedder)
	}
	var servers []int
	for _, f := range strings.Split(*pids, ",") {
		if f = strings.TrimSpace(f); f != "" {
			p, err := strconv.Atoi(f)
			if err != nil {
				return fmt.Errorf("-pids: %q", f)
			}
			servers = append(servers, p)
		}
	}
	opts := []memory.Option{memory.WithEmbedder(vectorstore.NewHashEmbedder(dim))}
	if strings.HasPrefix(*store, "weaviate://") {
		if *consistency != "" {
			opts = append(opts, memory.WithConsistency(*consistency))
		}
		if *replication > 0 {
			opts = append(opts, memory.WithReplication(*replication))
		}
	}
	ctx := context.Background()
	t0 := time.Now()
	m, err := memory.Open(*store, opts...)
	if err != nil {
		return err
	}
	defer m.Close()
	fmt.Printf("store %s, GOMAXPROCS %d, open %v\n", *store, runtime.GOMAXPROCS(0), time.Since(t0).Round(time.Microsecond))
	mark := snapshot(servers)

	if *corpus != "" {
		t := time.Now()
		added, err := ingest(ctx, m, *corpus, *n, *workers, *addBatch)
		if err != nil {
			return err
		}
		el := time.Since(t)
		fmt.Printf("ingest: %d docs in %v: %.0f docs/s (%d workers x %d a batch, the corpus streamed)\n", added, el.Round(time.Millisecond), float64(added)/el.Seconds(), *workers, *addBatch)
		mark = report("ingest", mark, servers)
	}
	if cnt, err := m.Count(ctx); err == nil {
		fmt.Printf("count: %d\n", cnt)
	}

	if *queries != "" {
		_, qs, err := beir.ReadQueryFile(*queries, 0)
		if err != nil {
			return err
		}
		if *limit > 0 && len(qs) > *limit {
			qs = qs[:*limit]
		}
		for _, mode := range strings.Split(*modes, ",") {
			md, err := parseMode(mode)
			if err != nil {
				return err
			}
			for r := 1; r <= 2; r++ {
				lat := make([]time.Duration, 0, len(qs))
				for _, q := range qs {
					t := time.Now()
					if _, err := m.Search(ctx, q, memory.TopK(10), memory.WithMode(md)); err != nil {
						return fmt.Errorf("%s search %q: %w", mode, q, err)
					}
					lat = append(lat, time.Since(t))
				}
				slices.Sort(lat)
				name := map[int]string{1: "first seen", 2: "warm"}[r]
				fmt.Printf("%s one thread k=10, round %d (%s): %d queries p50 %v p99 %v mean %v\n", mode, r, name, len(lat),
					pct(lat, 50), pct(lat, 99), mean(lat))
				mark = report(mode+" round", mark, servers)
			}
		}
	}
	if *batch != "" {
		_, qs, err := beir.ReadQueryFile(*batch, 0)
		if err != nil {
			return err
		}
		for _, mode := range strings.Split(*modes, ",") {
			md, _ := parseMode(mode)
			t := time.Now()
			res, err := m.SearchBatch(ctx, qs, memory.TopK(10), memory.WithMode(md))
			if err != nil {
				return fmt.Errorf("%s batch: %w", mode, err)
			}
			el := time.Since(t)
			fmt.Printf("%s batch of %d (k=10): %v, %.0f q/s (%d answered)\n", mode, len(qs), el.Round(time.Millisecond), float64(len(qs))/el.Seconds(), len(res))
			mark = report(mode+" batch", mark, servers)
		}
	}
	return nil
}

func parseMode(s string) (memory.Mode, error) {
	switch m := memory.Mode(s); m {
	case memory.BM25, memory.Dense, memory.Hybrid:
		return m, nil
	}
	return "", fmt.Errorf("mode %q: want bm25, dense or hybrid", s)
}

// ingest reads the first n rows of the corpus (0: all) and Adds them in batches of size
// from workers goroutines, the file read as they go; it returns the documents added.
func ingest(ctx context.Context, m *memory.Memory, path string, n, workers, size int) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	next := make(chan []memory.Document, workers)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for part := range next {
				if err := m.Add(ctx, part...); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	added := 0
	part := make([]memory.Document, 0, size)
	send := func() bool {
		select {
		case next <- part:
			added += len(part)
			part = make([]memory.Document, 0, size)
			return true
		case err = <-errs:
			return false
		}
	}
	for sc.Scan() && (n == 0 || added+len(part) < n) {
		var r row
		if err = json.Unmarshal(sc.Bytes(), &r); err != nil {
			err = fmt.Errorf("%s line %d: %w", path, added+len(part)+1, err)
			break
		}
		part = append(part, memory.Document{ID: r.ID, Title: r.Title, Text: r.Text, Metadata: r.Metadata})
		if len(part) == size && !send() {
			break
		}
	}
	if err == nil {
		err = sc.Err()
	}
	if err == nil && len(part) > 0 {
		send()
	}
	close(next)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return added, err
}

func pct(s []time.Duration, p int) time.Duration {
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, len(s)*p/100)].Round(time.Microsecond)
}

func mean(s []time.Duration) time.Duration {
	if len(s) == 0 {
		return 0
	}
	var t time.Duration
	for _, d := range s {
		t += d
	}
	return (t / time.Duration(len(s))).Round(time.Microsecond)
}

// mark is the CPU seconds of this process and of the servers at one instant.
type mark struct {
	self, servers float64
	at            time.Time
}

func snapshot(servers []int) mark {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	self := float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
	var sv float64
	for _, p := range servers {
		sv += procCPU(p)
	}
	return mark{self: self, servers: sv, at: time.Now()}
}

// report prints the CPU seconds since prev and the memory of this process and the servers.
func report(phase string, prev mark, servers []int) mark {
	now := snapshot(servers)
	rss, anon := procMem(os.Getpid())
	line := fmt.Sprintf("  [%s] %.1f s wall; client %.1f CPU-s, VmRSS %d MB, RssAnon %d MB", phase,
		now.at.Sub(prev.at).Seconds(), now.self-prev.self, rss>>20, anon>>20)
	if len(servers) > 0 {
		var srss, sanon uint64
		for _, p := range servers {
			r, a := procMem(p)
			srss, sanon = srss+r, sanon+a
		}
		line += fmt.Sprintf("; servers (%d) %.1f CPU-s, VmRSS %d MB, RssAnon %d MB", len(servers), now.servers-prev.servers, srss>>20, sanon>>20)
	}
	fmt.Println(line)
	return now
}

// procCPU is process pid's user + system CPU seconds (0 when unreadable).
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64) // fields 14 and 15 of stat: utime, stime
	st, _ := strconv.ParseFloat(f[12], 64)
	return (u + st) / 100 // USER_HZ
}

// procMem is process pid's VmRSS and RssAnon in bytes.
func procMem(pid int) (rss, anon uint64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = v << 10
		case "RssAnon:":
			anon = v << 10
		}
	}
	return rss, anon
}
