// Command openstore measures what opening a store costs: the time of Open, the process's
// resident memory after it, the time of the first query (which opens the collection's
// indexes) and the resident memory after that. BENCHMARKS.md §0d runs it on the 1M-passage
// store.
//
//	go run ./bench/openstore [-read-only] [-query "cells grow tumor"] [-hash 384 -mode hybrid] STORE_DIR
//
// -hash DIM opens the store with the hashing embedder of DIM dimensions (a store indexed
// with --embedder hash:DIM), so that -mode hybrid or dense searches its vector index; the
// report adds RssAnon (anonymous memory: the heap, not the mapped files of the indexes).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/vectorstore"
)

func main() {
	query := flag.String("query", "cells grow tumor", "the first query (BM25)")
	readOnly := flag.Bool("read-only", false, "open with memory.ReadOnly()")
	hashDim := flag.Int("hash", 0, "open with the hashing embedder of this dimension (0: none)")
	mode := flag.String("mode", "bm25", "the first query's mode: bm25, dense or hybrid")
	again := flag.Int("again", 0, "queries after the first (timed together)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of Open and the first query to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "cpuprofile:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: openstore [-read-only] [-query Q] STORE_DIR")
		os.Exit(2)
	}
	var opts []memory.Option
	if *readOnly {
		opts = append(opts, memory.ReadOnly())
	}
	if *hashDim > 0 {
		opts = append(opts, memory.WithEmbedder(vectorstore.NewHashEmbedder(*hashDim)))
	}
	t := time.Now()
	m, err := memory.OpenExisting(flag.Arg(0), opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(1)
	}
	defer m.Close()
	open := time.Since(t)
	afterOpen := rss()
	t = time.Now()
	if _, err := m.Search(context.Background(), *query, memory.WithMode(memory.Mode(*mode))); err != nil {
		fmt.Fprintln(os.Stderr, "search:", err)
		os.Exit(1)
	}
	first := time.Since(t)
	fmt.Printf("open %v, RSS after open %s; first %s query %v, RSS after it %s (RssAnon %s)\n", open, afterOpen, *mode, first, rss(), status("RssAnon:"))
	if os.Getenv("OPENSTORE_MAPS") != "" {
		printMappedFiles()
	}
	if *again > 0 {
		words := strings.Fields("cells protein tumor growth gene blood brain study patients risk")
		t = time.Now()
		for i := range *again {
			q := words[i%len(words)] + " " + words[(i*3+1)%len(words)]
			if _, err := m.Search(context.Background(), q, memory.WithMode(memory.Mode(*mode))); err != nil {
				fmt.Fprintln(os.Stderr, "search:", err)
				os.Exit(1)
			}
		}
		fmt.Printf("%d more %s queries: %v each, RssAnon after %s\n", *again, *mode, time.Since(t)/time.Duration(*again), status("RssAnon:"))
	}
}

// rss reads the process's resident set size from /proc (Linux).
func rss() string { return status("VmRSS:") }

// status reads a field of /proc/self/status (Linux).
func status(field string) string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, field) {
			return strings.Join(strings.Fields(strings.TrimPrefix(l, field)), " ")
		}
	}
	return "?"
}

// printMappedFiles prints each mapped file's resident kB (/proc/self/smaps, Linux), for
// finding what a first query reads (OPENSTORE_MAPS=1).
func printMappedFiles() {
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return
	}
	res := map[string]int{}
	name := ""
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 6 && strings.Contains(f[0], "-"):
			name = f[5]
		case len(f) == 1 && strings.Contains(f[0], "-"):
			name = "[anon]"
		case len(f) >= 2 && f[0] == "Rss:":
			var kb int
			fmt.Sscan(f[1], &kb)
			res[name] += kb
		}
	}
	for n, kb := range res {
		if kb >= 1024 {
			fmt.Printf("  %8d kB %s\n", kb, n)
		}
	}
}
