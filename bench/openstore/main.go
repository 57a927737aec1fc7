// Command openstore measures what opening a store costs: the time of Open, the process's
// resident memory after it, the time of the first query (which opens the collection's
// indexes) and the resident memory after that. BENCHMARKS.md §0d runs it on the 1M-passage
// store.
//
//	go run ./bench/openstore [-read-only] [-query "cells grow tumor"] STORE_DIR
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agentmem/memory"
)

func main() {
	query := flag.String("query", "cells grow tumor", "the first query (BM25)")
	readOnly := flag.Bool("read-only", false, "open with memory.ReadOnly()")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: openstore [-read-only] [-query Q] STORE_DIR")
		os.Exit(2)
	}
	var opts []memory.Option
	if *readOnly {
		opts = append(opts, memory.ReadOnly())
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
	if _, err := m.Search(context.Background(), *query, memory.WithMode(memory.BM25)); err != nil {
		fmt.Fprintln(os.Stderr, "search:", err)
		os.Exit(1)
	}
	first := time.Since(t)
	fmt.Printf("open %v, RSS after open %s; first query %v, RSS after it %s\n", open, afterOpen, first, rss())
}

// rss reads the process's resident set size from /proc (Linux).
func rss() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			return strings.Join(strings.Fields(strings.TrimPrefix(l, "VmRSS:")), " ")
		}
	}
	return "?"
}
