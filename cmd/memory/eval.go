package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/beir"
)

func init() {
	register(command{
		name:    "eval",
		summary: "evaluate retrieval on a BEIR folder (nDCG@10, Recall@100, MRR@10, timings)",
		run:     runEval,
	})
}

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("eval", stderr)
	var sf storeFlags
	sf.register(fs, false)
	data := fs.String("data", "", "BEIR folder with corpus.jsonl, queries.jsonl, qrels/")
	split := fs.String("split", "test", "qrels split")
	mode := fs.String("mode", "bm25", "hybrid, bm25 or dense")
	runOut := fs.String("run-out", "", "write the TREC run file here")
	k := fs.Int("k", 100, "results per query (Recall@100 needs 100)")
	window := fs.Int("window", 0, "candidates per retriever (default max(100, k))")
	rrfK := fs.Float64("rrf-k", 0, "RRF rank constant (default 60)")
	rerankTop := fs.Int("rerank-top", 100, "with --reranker: rerank this many fused candidates")
	k1 := fs.Float64("k1", 0.9, "BM25 k1")
	b := fs.Float64("b", 0.4, "BM25 b")
	limit := fs.Int("queries", 0, "evaluate only the first N queries (0: all)")
	storeDir := fs.String("store", "", "evaluate this existing store (never created; an empty one is filled with the corpus)")
	keepDir := fs.String("keep", "", "build the store in this new directory and keep it (default: a temporary store)")
	chunk := fs.Bool("chunk", false, "split long documents into chunks on add (BEIR judges whole documents, so off by default)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *data == "" || (*storeDir != "" && *keepDir != "") {
		fs.Usage()
		return errUsage
	}
	ds, err := beir.Load(*data, *split)
	if err != nil {
		return err
	}
	queries := ds.Queries
	if *limit > 0 && *limit < len(queries) {
		queries = queries[:*limit]
	}
	var m *memory.Memory
	openOpts := []memory.Option{memory.WithBM25(*k1, *b), memory.WithNoSync()}
	if !*chunk {
		openOpts = append(openOpts, memory.WithChunking(memory.ChunkOptions{Disabled: true}))
	}
	if *storeDir != "" {
		m, err = sf.open(*storeDir, stderr, openOpts...)
	} else {
		m, err = sf.create(*keepDir, stderr, openOpts...)
	}
	if err != nil {
		return err
	}
	defer m.Close()

	// Index.
	start := time.Now()
	prog := newProgress(stderr, len(ds.Corpus), "indexing")
	const batch = 512
	if m.Count() == 0 {
		for i := 0; i < len(ds.Corpus); i += batch {
			j := min(i+batch, len(ds.Corpus))
			docs := make([]memory.Document, 0, j-i)
			for _, d := range ds.Corpus[i:j] {
				docs = append(docs, memory.Document{ID: d.ID, Title: d.Title, Text: d.Text})
			}
			if err := m.Add(ctx, docs...); err != nil {
				return err
			}
			prog.add(j - i)
		}
	}
	prog.finish()
	indexTime := time.Since(start)

	// Search.
	opts := []memory.SearchOption{memory.WithMode(memory.Mode(*mode)), memory.TopK(*k), memory.WithWindow(*window), memory.WithRRFK(*rrfK)}
	if sf.reranker != "" {
		opts = append(opts, memory.WithRerank(*rerankTop))
	}
	run := beir.Run{}
	lat := make([]time.Duration, 0, len(queries))
	var sum memory.SearchStats
	var notes []string
	for _, q := range queries {
		var st memory.SearchStats
		res, err := m.Search(ctx, q.Text, append(opts, memory.WithStats(&st))...)
		if err != nil {
			return fmt.Errorf("query %s: %w", q.ID, err)
		}
		lat = append(lat, st.Total)
		sum.Mode = st.Mode
		sum.Filter += st.Filter
		sum.BM25 += st.BM25
		sum.Embed += st.Embed
		sum.Dense += st.Dense
		sum.Fuse += st.Fuse
		sum.Rerank += st.Rerank
		sum.Total += st.Total
		hits := make([]beir.Scored, len(res))
		for i, r := range res {
			hits[i] = beir.Scored{DocID: r.ID, Score: r.Score}
		}
		run[q.ID] = hits
		if len(res) > 0 && notes == nil {
			notes = res[0].Explain.Notes
		}
	}
	if *runOut != "" {
		f, err := os.Create(*runOut)
		if err != nil {
			return err
		}
		if err := beir.WriteTREC(f, run, "memory-"+*mode); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	qrels := beir.Qrels{}
	for _, q := range queries {
		qrels[q.ID] = ds.Qrels[q.ID]
	}
	met, _ := beir.Evaluate(qrels, run)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	n := time.Duration(len(queries))
	share := func(d time.Duration) string {
		if sum.Total == 0 {
			return "0%"
		}
		return fmt.Sprintf("%.0f%%", 100*float64(d)/float64(sum.Total))
	}
	fmt.Fprintf(stdout, "dataset      %s (%d docs, %d queries)\n", *data, len(ds.Corpus), len(queries))
	fmt.Fprintf(stdout, "mode         %s (used: %s)\n", *mode, sum.Mode)
	for _, nt := range notes {
		fmt.Fprintf(stdout, "note         %s\n", nt)
	}
	fmt.Fprintf(stdout, "nDCG@10      %.4f\n", met.NDCG10)
	fmt.Fprintf(stdout, "Recall@100   %.4f\n", met.Recall100)
	fmt.Fprintf(stdout, "MRR@10       %.4f\n", met.MRR10)
	fmt.Fprintf(stdout, "index        %s (%.0f docs/s)\n", indexTime.Round(time.Millisecond), float64(len(ds.Corpus))/indexTime.Seconds())
	fmt.Fprintf(stdout, "query        p50 %s  p99 %s  mean %s  (k=%d)\n", pct(0.50), pct(0.99), sum.Total/n, *k)
	fmt.Fprintf(stdout, "stages       filter %s (%s)  bm25 %s (%s)  embed %s (%s)  dense %s (%s)  fuse %s (%s)  rerank %s (%s)  [mean per query]\n",
		sum.Filter/n, share(sum.Filter), sum.BM25/n, share(sum.BM25), sum.Embed/n, share(sum.Embed),
		sum.Dense/n, share(sum.Dense), sum.Fuse/n, share(sum.Fuse), sum.Rerank/n, share(sum.Rerank))
	if *runOut != "" {
		fmt.Fprintf(stdout, "run file     %s\n", *runOut)
	}
	return nil
}
