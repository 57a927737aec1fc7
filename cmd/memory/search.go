package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/agentmem/memory"
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
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if sf.dir == "" || fs.NArg() == 0 {
		fs.Usage()
		return errUsage
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
	m, c, err := sf.readCollection(*col, stderr)
	if err != nil {
		return err
	}
	defer m.Close()
	query := strings.Join(fs.Args(), " ")
	res, err := c.Search(ctx, query, append(opts, memory.WithMode(memory.Mode(*mode)))...)
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
	printResults(stdout, res)
	return nil
}

// printResults writes a results table with each result's score breakdown and, under each
// row, its snippet. Stored text is shown with control characters escaped.
func printResults(w io.Writer, res []memory.Result) {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tSCORE\tBM25\tDENSE\tRERANK\tID\tTITLE")
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
		fmt.Fprintf(tw, "%d\t%.4f\t%s\t%s\t%s\t%s\t%s\n", i+1, r.Score, bm, de, rr, id, cell(title, 60))
		if r.Snippet != "" {
			// Text after the last tab is not a column: the snippet sits under TITLE
			// without widening it.
			fmt.Fprintf(tw, "\t\t\t\t\t\t  %s\n", cell(r.Snippet, 160))
		}
	}
	tw.Flush()
	if len(res) > 0 {
		for _, n := range res[0].Explain.Notes {
			fmt.Fprintf(w, "note: %s\n", escapeControls(n, false))
		}
	}
}
