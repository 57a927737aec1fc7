// Command zipfgen writes a deterministic synthetic corpus in BEIR layout whose vocabulary
// grows like real text (Heaps' law calibrated on the 21M-passage Wikipedia, Zipf–Mandelbrot
// frequencies, topics), with queries split into a tuning half (queries-tune.jsonl,
// qrels/tune.tsv) and a reported half (queries-report.jsonl, qrels/test.tsv), and
// stats.json (see internal/zipfgen):
//
//	go run ./bench/zipfgen -n 1000000 -out /tmp/zipf1m
//
// It prints one line: passages, time, passages/s, bytes, tokens and distinct terms.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/agentmem/memory/internal/zipfgen"
)

func main() {
	var o zipfgen.Options
	out := flag.String("out", "", "output folder (required)")
	flag.IntVar(&o.N, "n", 1_000_000, "passages")
	flag.Uint64Var(&o.Seed, "seed", 1, "seed")
	flag.IntVar(&o.TargetBytes, "bytes", 760, "mean passage bytes (title + text)")
	flag.StringVar(&o.WordsPath, "words", zipfgen.DefaultWordsPath, "word list, one word a line (Debian: apt-get install wamerican)")
	flag.IntVar(&o.Queries, "queries", 1000, "judged queries (half tuning, half reported)")
	flag.IntVar(&o.BatchQueries, "batch", 2560, "queries in batch-queries.jsonl")
	flag.IntVar(&o.Workers, "workers", 0, "generating goroutines (0: GOMAXPROCS)")
	flag.Float64Var(&o.HeapsK, "heaps-k", 0, "K of Heaps' law V = K·n^β (0: 40)")
	flag.Float64Var(&o.HeapsBeta, "heaps-beta", 0, "β of Heaps' law (0: 0.55)")
	flag.Float64Var(&o.ZipfExponent, "zipf-s", 0, "Zipf–Mandelbrot exponent (0: 1.05)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "zipfgen: -out is required")
		os.Exit(2)
	}
	start := time.Now()
	st, err := zipfgen.Generate(context.Background(), *out, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zipfgen:", err)
		os.Exit(1)
	}
	el := time.Since(start)
	fmt.Printf("zipfgen: %d passages in %s (%v, %.0f passages/s): %d bytes (mean %.1f), %d tokens, %d distinct terms, Heaps fit K=%.1f β=%.3f\n",
		st.N, *out, el.Round(time.Millisecond), float64(st.N)/el.Seconds(), st.Bytes, st.MeanPassageBytes,
		st.Tokens, st.DistinctTerms, st.HeapsFit.K, st.HeapsFit.Beta)
}
