package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/rerank"
)

func init() {
	register(command{
		name:    "search",
		summary: "search a store (table, or --json lines with the score breakdown)",
		run:     runSearch,
	})
}

func runSearch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("search", stderr)
	var sf storeFlags
	sf.register(fs, true)
	col := fs.String("collection", "", "collection to search")
	mode := fs.String("mode", "", "hybrid, bm25 or dense (default hybrid; bm25 with a warning when the store's embedder cannot be loaded)")
	k := fs.Int("k", 10, "results")
	window := fs.Int("window", 0, "candidates per retriever (default 100)")
	rerankTop := fs.Int("rerank", 0, "rerank the top N fused candidates with --reranker (0: off)")
	where := fs.String("where", "", `metadata filter as JSON, e.g. '{"year":{"$gte":2020}}'`)
	whereDoc := fs.String("where-document", "", `text filter as JSON, e.g. '{"$contains":"go"}'`)
	asJSON := fs.Bool("json", false, "one JSON object per result")
	cascade := fs.String("cascade", "", `search these collections in order, e.g. "gold,kb,docs", and stop after the first whose best
score reaches --cascade-threshold (not with --collection); each result names its collection`)
	cascadeThreshold := fs.Float64("cascade-threshold", 0, "with --cascade: the best score that stops the cascade (compared with SCORE: use a\nreranked, dense or bm25 search; hybrid's RRF scores are at most ~0.033) (default 0: stop at the first collection with a result)")
	dedupeSource := fs.Bool("dedupe-source", false, "keep only the best result of each source (file or URL a document came from)")
	llmURL := fs.String("llm-reranker", "", "rerank with a chat model behind this OpenAI-compatible API root, e.g. http://localhost:11434/v1\n(Ollama), http://host:8000/v1 (vLLM); reranks the top --rerank N (default 20); not with --reranker")
	llmModel := fs.String("llm-model", "", "with --llm-reranker: the server's model name (required)")
	llmMode := fs.String("llm-mode", "pointwise", "with --llm-reranker: pointwise (one request per passage, a 0-10 grade each) or listwise (one request ranking them all)")
	llmKeyEnv := fs.String("llm-api-key-env", "OPENAI_API_KEY", "with --llm-reranker: environment variable holding the API key, sent as a bearer token (unset or empty: none)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	llmOnly := *llmModel != "" || fs.Lookup("llm-mode").Value.String() != "pointwise"
	if sf.dir == "" || fs.NArg() == 0 || (*cascade != "" && *col != "") || (*llmURL != "" && sf.reranker != "") ||
		(*llmURL == "" && llmOnly) || (*cascade == "" && *cascadeThreshold != 0) {
		fs.Usage()
		return errUsage
	}
	var extra []memory.Option
	if *llmURL != "" {
		key := ""
		if *llmKeyEnv != "" {
			key = os.Getenv(*llmKeyEnv)
		}
		r, err := rerank.NewLLMReranker(rerank.LLMOptions{BaseURL: *llmURL, Model: *llmModel, Mode: rerank.LLMMode(*llmMode), APIKey: key,
			Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err != nil {
			return fmt.Errorf("--llm-reranker: %w", err)
		}
		extra = append(extra, memory.WithReranker(r))
		if *rerankTop == 0 {
			*rerankTop = 20
		}
	}
	modeSet := *mode != ""
	if !modeSet {
		*mode = string(memory.Hybrid)
	}
	opts := []memory.SearchOption{memory.TopK(*k), memory.WithWindow(*window), memory.WithSnippets()}
	if *where != "" {
		w, err := memory.ParseWhere([]byte(*where))
		if err != nil {
			return err
		}
		opts = append(opts, memory.WithWhere(w))
	}
	if *whereDoc != "" {
		w, err := memory.ParseWhereDocument([]byte(*whereDoc))
		if err != nil {
			return err
		}
		opts = append(opts, memory.WithWhereDocument(w))
	}
	if *rerankTop > 0 {
		opts = append(opts, memory.WithRerank(*rerankTop))
	}
	if *dedupeSource {
		opts = append(opts, memory.WithSourceDedup())
	}
	if *cascade != "" {
		var cols []string
		for _, n := range strings.Split(*cascade, ",") {
			if n = strings.TrimSpace(n); n != "" {
				cols = append(cols, n)
			}
		}
		opts = append(opts, memory.WithCascade(*cascadeThreshold, cols...))
	}
	m, c, err := sf.openCollection(*col, stderr, append(extra, memory.ReadOnly())...)
	if err != nil {
		return err
	}
	defer m.Close()
	query := strings.Join(fs.Args(), " ")
	res, err := c.Search(ctx, query, append(opts, memory.WithMode(memory.Mode(*mode)))...)
	if note := unloadedEmbedderNote(res); err == nil && note != "" {
		// The library ran the hybrid search as BM25 because the store's embedder could
		// not be loaded: the CLI says so, and does not change an explicit --mode.
		if modeSet {
			return fmt.Errorf("%w: --mode hybrid: %s (give --embedder, or put the model in $MEMORY_MODELS; leave --mode out to search with BM25 only)", memory.ErrEmbedderNeeded, note)
		}
		fmt.Fprintf(stderr, "warning: searching with BM25 only: %s\n", note)
	}
	if err != nil && !modeSet && errors.Is(err, memory.ErrEmbedderNeeded) {
		fmt.Fprintf(stderr, "warning: searching with BM25 only: %v\n", err)
		res, err = c.Search(ctx, query, append(opts, memory.WithMode(memory.BM25))...)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, r := range res {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	printResults(stdout, res, *cascade != "")
	return nil
}

// printResults writes a results table with each result's score breakdown and, under each
// row, its snippet. Stored text is shown with control characters escaped.
func printResults(w io.Writer, res []memory.Result, withCollection bool) {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	colHead, colPad := "", ""
	if withCollection { // a cascade: which collection answered
		colHead, colPad = "COLLECTION\t", "\t"
	}
	fmt.Fprintf(tw, "#\tSCORE\tBM25\tDENSE\tRERANK\t%sID\tTITLE\n", colHead)
	for i, r := range res {
		bm, de, rr := "-", "-", "-"
		if s := r.Explain.BM25; s != nil {
			bm = fmt.Sprintf("#%d %.3f", s.Rank, s.Score)
		}
		if s := r.Explain.Dense; s != nil {
			de = fmt.Sprintf("#%d %.3f", s.Rank, s.Score)
		}
		if s := r.Explain.Rerank; s != nil {
			rr = fmt.Sprintf("%.3f", s.Prob)
		}
		title := r.Title
		if title == "" {
			title = r.Text
		}
		id := cell(r.ID, 60)
		if r.Chunks > 1 {
			id += fmt.Sprintf(" [%d/%d]", r.ChunkIndex+1, r.Chunks)
		}
		if len(r.Headings) > 0 {
			title += " > " + strings.Join(r.Headings, " > ")
		}
		colCell := ""
		if withCollection {
			colCell = cell(r.Collection, 40) + "\t"
		}
		fmt.Fprintf(tw, "%d\t%.4f\t%s\t%s\t%s\t%s%s\t%s\n", i+1, r.Score, bm, de, rr, colCell, id, cell(title, 60))
		if r.Snippet != "" {
			// Text after the last tab is not a column: the snippet sits under TITLE
			// without widening it.
			fmt.Fprintf(tw, "\t\t\t\t\t\t%s  %s\n", colPad, cell(r.Snippet, 160))
		}
	}
	tw.Flush()
	if len(res) > 0 {
		for _, n := range res[0].Explain.Notes {
			fmt.Fprintf(w, "note: %s\n", escapeControls(n, false))
		}
	}
}

// unloadedEmbedderNote is the note of results whose hybrid search ran as BM25 because the
// store's embedder is not loaded ("" when none says so).
func unloadedEmbedderNote(res []memory.Result) string {
	if len(res) == 0 {
		return ""
	}
	for _, n := range res[0].Explain.Notes {
		if strings.HasPrefix(n, "hybrid search") && strings.Contains(n, "the store's embedder") && strings.Contains(n, "is not loaded") {
			return n
		}
	}
	return ""
}
