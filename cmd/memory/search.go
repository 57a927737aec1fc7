package main

import (
	"context"
	"encoding/json"
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
	mode := fs.String("mode", "hybrid", "hybrid, bm25 or dense")
	k := fs.Int("k", 10, "results")
	window := fs.Int("window", 0, "candidates per retriever (default 100)")
	rerankTop := fs.Int("rerank", 0, "rerank the top N fused candidates with --reranker (0: off)")
	where := fs.String("where", "", `metadata filter as JSON, e.g. '{"year":{"$gte":2020}}'`)
	whereDoc := fs.String("where-document", "", `text filter as JSON, e.g. '{"$contains":"go"}'`)
	asJSON := fs.Bool("json", false, "one JSON object per result")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if sf.dir == "" || fs.NArg() == 0 {
		fmt.Fprintln(stderr, "usage: memory search --store DIR [flags] QUERY")
		return errUsage
	}
	opts := []memory.SearchOption{memory.WithMode(memory.Mode(*mode)), memory.TopK(*k), memory.WithWindow(*window)}
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
	m, err := sf.open(sf.dir, stderr)
	if err != nil {
		return err
	}
	defer m.Close()
	res, err := m.Collection(*col).Search(ctx, strings.Join(fs.Args(), " "), opts...)
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

// printResults writes a results table with each result's score breakdown.
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
		if len(title) > 60 {
			title = title[:57] + "..."
		}
		fmt.Fprintf(tw, "%d\t%.4f\t%s\t%s\t%s\t%s\t%s\n", i+1, r.Score, bm, de, rr, r.ID, strings.ReplaceAll(title, "\n", " "))
	}
	tw.Flush()
	if len(res) > 0 {
		for _, n := range res[0].Explain.Notes {
			fmt.Fprintf(w, "note: %s\n", n)
		}
	}
}
