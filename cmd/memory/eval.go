package main

import (
	"context"
	"fmt"
	"github.com/agentmem/memory/webui"
	"io"
	"sort"
	"time"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/atomicfile"
	"github.com/agentmem/memory/internal/beir"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newEvalCmd() *cobra.Command {
	var cfg evalConfig
	c := newCommand("eval", "evaluate retrieval on a BEIR folder (nDCG@10, Recall@100, MRR@10, timings)",
		func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			if err := cfg.check(args); err != nil {
				return err
			}
			return runEval(ctx, cfg, stdout, stderr)
		})
	cfg.addFlags(c.Flags())
	return c
}

// evalConfig holds the parsed flags of `memory eval`.
type evalConfig struct {
	store     storeFlags
	data      string
	split     string
	mode      string
	runOut    string
	reportOut string // --report-out: a webui.EvalReport for memory serve --ui
	analyzer  string // BM25 analyzer of the store built (--analyzer)
	mappedMB  int64  // --mapped-mb
	k         int
	window    int
	fullDense bool // --full-dense-window
	rrfK      float64
	rerankTop int
	k1, b     float64
	limit     int
	storeDir  string
	keepDir   string
	chunk     bool
	qa        evalQAConfig
}

func runEval(ctx context.Context, cfg evalConfig, stdout, stderr io.Writer) error {
	if cfg.qa.file != "" {
		return runEvalQA(ctx, cfg, stdout, stderr)
	}
	// The queries and judgments only: the corpus is read (streamed) only to fill an empty
	// store, so a store of any size is evaluated in the memory its queries need.
	queries, allQrels, err := beir.LoadQueries(cfg.data, cfg.split)
	if err != nil {
		return err
	}
	if cfg.limit > 0 && cfg.limit < len(queries) {
		queries = queries[:cfg.limit]
	}
	total := -1 // documents in the corpus; -1: not counted yet
	if cfg.storeDir == "" {
		// A new store is always filled: check the corpus before creating it.
		if total, err = countCorpus(ctx, cfg.data); err != nil {
			return err
		}
	}
	m, err := openEvalStore(cfg, stderr)
	if err != nil {
		return err
	}
	defer m.Close()

	ix, err := indexCorpus(ctx, m, cfg.data, total, stderr)
	if err != nil {
		return err
	}

	// A run file needs ids and scores: the results' texts are not read.
	sr, err := searchQueries(ctx, m, queries, append(cfg.searchOptions(), memory.WithoutText()))
	if err != nil {
		return err
	}
	if cfg.runOut != "" {
		if err := writeRunFile(cfg.runOut, sr.run, "memory-"+cfg.mode); err != nil {
			return err
		}
	}
	qrels := beir.Qrels{}
	for _, q := range queries {
		qrels[q.ID] = allQrels[q.ID]
	}
	met, _ := beir.Evaluate(qrels, sr.run)
	docs, err := m.Count(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "dataset      %s (%d docs, %d queries)\n", cfg.data, docs, len(queries))
	fmt.Fprintf(stdout, "mode         %s (used: %s)\n", cfg.mode, sr.stats.Mode)
	for _, nt := range sr.notes {
		fmt.Fprintf(stdout, "note         %s\n", nt)
	}
	fmt.Fprintf(stdout, "nDCG@10      %.4f\n", met.NDCG10)
	fmt.Fprintf(stdout, "Recall@100   %.4f\n", met.Recall100)
	fmt.Fprintf(stdout, "MRR@10       %.4f\n", met.MRR10)
	if ix.filled {
		fmt.Fprintf(stdout, "index        %s (%.0f docs/s)\n", ix.took.Round(time.Millisecond), float64(ix.added)/ix.took.Seconds())
	} else {
		fmt.Fprintf(stdout, "index        none (the store was already filled; the corpus was not read)\n")
	}
	if cfg.reportOut != "" { // before printTimings, which sorts sr.lat
		rep := webui.NewEvalReport(webui.EvalInput{Dataset: cfg.data, Mode: string(sr.stats.Mode), Docs: docs, K: cfg.k,
			Queries: queries, Qrels: qrels, Run: sr.run, Latencies: sr.lat})
		if err := webui.WriteEvalReport(cfg.reportOut, rep); err != nil {
			return err
		}
	}
	sr.printTimings(stdout, cfg.k)
	if cfg.runOut != "" {
		fmt.Fprintf(stdout, "run file     %s\n", cfg.runOut)
	}
	if cfg.reportOut != "" {
		fmt.Fprintf(stdout, "report       %s (memory serve --ui ADDR --ui-report %s)\n", cfg.reportOut, cfg.reportOut)
	}
	return nil
}

// addFlags adds the flags of memory eval to fs.
func (cfg *evalConfig) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&cfg.data, "data", "", "BEIR folder `DIR` with corpus.jsonl, queries.jsonl, qrels/")
	fs.StringVar(&cfg.split, "split", "test", "qrels split")
	fs.StringVar(&cfg.mode, "mode", "bm25", "retrieval `MODE`: hybrid, bm25 or dense")
	fs.StringVar(&cfg.runOut, "run-out", "", "write the TREC run file to `FILE`")
	fs.StringVar(&cfg.reportOut, "report-out", "", "write the evaluation report `FILE` (JSON: metrics, per-query figures, latencies) that memory serve --ui --ui-report shows as charts")
	fs.IntVarP(&cfg.k, "k", "k", 100, "results per query (Recall@100 needs 100)")
	fs.IntVar(&cfg.window, "window", 0, "candidates per retriever (default max(100, k))")
	fs.BoolVar(&cfg.fullDense, "full-dense-window", false, "an approximate dense index rescores candidates for the whole --window, not only the top -k")
	fs.Float64Var(&cfg.rrfK, "rrf-k", 0, "RRF rank constant (default 60)")
	fs.IntVar(&cfg.rerankTop, "rerank-top", 100, "with --reranker: rerank this many fused candidates")
	fs.Float64Var(&cfg.k1, "k1", 0.9, "BM25 k1")
	fs.Float64VarP(&cfg.b, "b", "b", 0.4, "BM25 b")
	fs.IntVar(&cfg.limit, "queries", 0, "evaluate only the first `N` queries (0: all)")
	grouped(fs, groupStore, func() {
		fs.StringVarP(&cfg.storeDir, "store", "s", "", "evaluate the existing store `DIR` (never created; an empty one is filled with the corpus), or a store on a Weaviate cluster, weaviate://HOST:PORT,...[/PREFIX] (--keep makes a new one)")
		fs.StringVar(&cfg.keepDir, "keep", "", "build the store in the new directory `DIR` (or on a Weaviate cluster, weaviate://...) and keep it (default: a temporary store)")
		cfg.store.addOpen(fs)
	})
	fs.StringVar(&cfg.analyzer, "analyzer", "", "BM25 analyzer of the store built (default en; "+analyzerList()+")")
	fs.Int64Var(&cfg.mappedMB, "mapped-mb", 512, "keep at most about this many MiB of index files mapped into memory (Linux; 0: no bound): "+
		"an evaluation sweeps the whole index, and the pages it has read stay in the page cache either way")
	fs.BoolVar(&cfg.chunk, "chunk", false, "split long documents into chunks on add (BEIR judges whole documents, so off by default)")
	cfg.store.addEmbedder(fs, true)
	cfg.store.addIndex(fs)
	cfg.store.addReranker(fs, "cross-encoder `MODEL` (a name or a directory) that reranks the top --rerank-top fused candidates")
	cfg.store.addScoring(fs)
	grouped(fs, groupQA, func() { cfg.qa.register(fs) })
	completeDirs(fs, "data", "store", "keep")
	completeValues(fs, modeValues, "mode")
	completeValues(fs, memory.Analyzers(), "analyzer")
}

// check reports a combination of flags and arguments that makes no sense as a usage error.
func (cfg evalConfig) check(args []string) error {
	if err := noArgs(args); err != nil {
		return err
	}
	if cfg.storeDir != "" && cfg.keepDir != "" {
		return usagef("--store evaluates an existing store, --keep builds a new one: not both")
	}
	if cfg.qa.file != "" {
		switch {
		case cfg.qa.generator == "":
			return usagef("--qa needs --generator URL (the model that answers)")
		case cfg.data == "" && cfg.storeDir == "":
			return usagef("--qa needs the store to search: --store DIR, or --data DIR to build one")
		}
		return nil
	}
	if cfg.data == "" {
		return usagef("--data DIR (a BEIR folder) is required")
	}
	return nil
}

// openEvalStore opens the existing --store, or creates the --keep (else a temporary)
// store, with the BM25 parameters and chunking of cfg.
func openEvalStore(cfg evalConfig, stderr io.Writer) (*memory.Memory, error) {
	openOpts := []memory.Option{memory.WithBM25(cfg.k1, cfg.b), memory.WithNoSync()}
	if cfg.mappedMB > 0 && !isClusterStore(cfg.storeDir) && !isClusterStore(cfg.keepDir) { // a cluster maps no file
		openOpts = append(openOpts, func(o *memory.Options) { o.MappedResidentBytes = cfg.mappedMB << 20 })
	}
	if !cfg.chunk {
		openOpts = append(openOpts, memory.WithChunking(memory.ChunkOptions{Disabled: true}))
	}
	if cfg.analyzer != "" {
		openOpts = append(openOpts, memory.WithAnalyzer(cfg.analyzer))
	}
	if cfg.storeDir != "" {
		return cfg.store.open(cfg.storeDir, stderr, openOpts...)
	}
	return cfg.store.create(cfg.keepDir, stderr, openOpts...)
}

// searchOptions are the options of every evaluated query.
func (cfg evalConfig) searchOptions() []memory.SearchOption {
	opts := []memory.SearchOption{memory.WithMode(memory.Mode(cfg.mode)), memory.TopK(cfg.k), memory.WithWindow(cfg.window), memory.WithRRFK(cfg.rrfK)}
	if cfg.store.reranker != "" {
		opts = append(opts, memory.WithRerank(cfg.rerankTop))
	}
	if cfg.fullDense {
		opts = append(opts, memory.WithFullDenseWindow())
	}
	return opts
}

// evalBatch is the number of documents eval adds at a time.
const evalBatch = 512

// evalIndexing is what indexCorpus did: filled is false for a store that was already
// filled (the corpus was not read); took is the time of adding the documents.
type evalIndexing struct {
	filled bool
	added  int
	took   time.Duration
}

// countCorpus streams the corpus of the BEIR folder dir once, checking every line, and
// returns its number of documents.
func countCorpus(ctx context.Context, dir string) (int, error) {
	return beir.EachDoc(ctx, dir, evalBatch, func([]beir.Doc) error { return nil })
}

// indexCorpus fills an empty store with the corpus of the BEIR folder dir; a store that
// already holds documents is evaluated as it is and the corpus is not opened. The corpus
// is streamed evalBatch documents at a time, never held whole, after a first pass
// (countCorpus, skipped when total >= 0 says it was done) that checks every line and
// counts the documents: a malformed line fails before anything is written, leaving no
// half-filled store behind, and the progress knows its total.
func indexCorpus(ctx context.Context, m *memory.Memory, dir string, total int, stderr io.Writer) (evalIndexing, error) {
	if n, err := m.Count(ctx); err != nil || n > 0 {
		return evalIndexing{}, err
	}
	if total < 0 {
		var err error
		if total, err = countCorpus(ctx, dir); err != nil {
			return evalIndexing{}, err
		}
	}
	prog := newProgress(stderr, total, "indexing")
	start := time.Now()
	added, err := beir.EachDoc(ctx, dir, evalBatch, func(batch []beir.Doc) error {
		docs := make([]memory.Document, len(batch))
		for i, d := range batch {
			docs[i] = memory.Document{ID: d.ID, Title: d.Title, Text: d.Text}
		}
		if err := m.Add(ctx, docs...); err != nil {
			return err
		}
		prog.add(len(batch))
		return nil
	})
	if err != nil {
		return evalIndexing{}, err
	}
	prog.finish()
	return evalIndexing{filled: true, added: added, took: time.Since(start)}, nil
}

// evalSearch is what searching the queries gave: the run, per-query latencies, the
// summed stage timings and the first result's notes.
type evalSearch struct {
	run   beir.Run
	lat   []time.Duration
	stats memory.SearchStats
	notes []string
}

// searchQueries runs every query with opts and collects the run and the timings.
func searchQueries(ctx context.Context, m *memory.Memory, queries []beir.Query, opts []memory.SearchOption) (evalSearch, error) {
	sr := evalSearch{run: beir.Run{}, lat: make([]time.Duration, 0, len(queries))}
	for _, q := range queries {
		var st memory.SearchStats
		res, err := m.Search(ctx, q.Text, append(opts, memory.WithStats(&st))...)
		if err != nil {
			return sr, fmt.Errorf("query %s: %w", q.ID, err)
		}
		sr.lat = append(sr.lat, st.Total)
		sr.stats.Mode = st.Mode
		sr.stats.Filter += st.Filter
		sr.stats.BM25 += st.BM25
		sr.stats.Embed += st.Embed
		sr.stats.Dense += st.Dense
		sr.stats.Fuse += st.Fuse
		sr.stats.Rerank += st.Rerank
		sr.stats.Total += st.Total
		hits := make([]beir.Scored, len(res))
		for i, r := range res {
			hits[i] = beir.Scored{DocID: r.ID, Score: r.Score}
		}
		sr.run[q.ID] = hits
		if len(res) > 0 && sr.notes == nil {
			sr.notes = res[0].Explain.Notes
		}
	}
	return sr, nil
}

// printTimings prints the query latency percentiles and the mean time of each stage.
func (sr evalSearch) printTimings(w io.Writer, k int) {
	lat := sr.lat
	sum := sr.stats
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	n := time.Duration(len(lat))
	share := func(d time.Duration) string {
		if sum.Total == 0 {
			return "0%"
		}
		return fmt.Sprintf("%.0f%%", 100*float64(d)/float64(sum.Total))
	}
	fmt.Fprintf(w, "query        p50 %s  p99 %s  mean %s  (k=%d)\n", pct(0.50), pct(0.99), sum.Total/n, k)
	fmt.Fprintf(w, "stages       filter %s (%s)  bm25 %s (%s)  embed %s (%s)  dense %s (%s)  fuse %s (%s)  rerank %s (%s)  [mean per query]\n",
		sum.Filter/n, share(sum.Filter), sum.BM25/n, share(sum.BM25), sum.Embed/n, share(sum.Embed),
		sum.Dense/n, share(sum.Dense), sum.Fuse/n, share(sum.Fuse), sum.Rerank/n, share(sum.Rerank))
}

// writeRunFile writes run as a TREC run file tagged tag, replacing path whole
// (internal/atomicfile): an interrupted eval never leaves half a run file to be scored.
func writeRunFile(path string, run beir.Run, tag string) error {
	return atomicfile.Write(path, atomicfile.Options{}, func(w io.Writer) error {
		return beir.WriteTREC(w, run, tag)
	})
}
