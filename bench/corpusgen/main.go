// Command corpusgen writes a deterministic scale corpus in BEIR layout built from the
// sentences of a BEIR dataset, every passage with "bucket" (i mod 10) and "lang" metadata
// for filter benchmarks (see internal/corpusgen):
//
//	go run ./bench/corpusgen -src ../shared/data/beir/scifact -n 1000000 -out /tmp/corpus1m
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/agentmem/memory/internal/beir"
	"github.com/agentmem/memory/internal/corpusgen"
)

func main() {
	var (
		src  = flag.String("src", "../shared/data/beir/scifact", "source BEIR folder")
		out  = flag.String("out", "", "output folder (required)")
		o    corpusgen.Options
		seed uint64
	)
	flag.IntVar(&o.N, "n", 1_000_000, "passages")
	flag.Uint64Var(&seed, "seed", 1, "seed")
	flag.IntVar(&o.TargetBytes, "bytes", 760, "mean passage bytes (title + text)")
	flag.IntVar(&o.BatchQueries, "batch", 2560, "queries in batch-queries.jsonl")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "corpusgen: -out is required")
		os.Exit(2)
	}
	o.Seed = seed
	start := time.Now()
	ds, err := beir.Load(*src, "test")
	if err == nil {
		err = corpusgen.Generate(context.Background(), ds, *out, o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "corpusgen:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "corpusgen: %d passages in %s (%v)\n", o.N, *out, time.Since(start).Round(time.Millisecond))
}
