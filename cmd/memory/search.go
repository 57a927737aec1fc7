package main

import (
	"bytes"
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
	"github.com/agentmem/memory/internal/vecfile"
	"github.com/agentmem/memory/rerank"
	"github.com/spf13/cobra"
)

// searchOptions are the flags of memory search beside the store's.
type searchOptions struct {
	col, mode, where, whereDoc, cascade  string
	llmURL, llmModel, llmMode, llmKeyEnv string
	vector, vectorEmbedder               string // --vector FILE|-, --vector-embedder ID
	k, window, rerankTop                 int
	cascadeThreshold                     float64
	asJSON, dedupeSource, fullDense      bool
}

func newSearchCmd() *cobra.Command {
	var sf storeFlags
	var o searchOptions
	c := newCommand("search", "search a store (table, or --json lines with the score breakdown)",
		func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			return runSearch(ctx, &sf, o, args, stdout, stderr)
		})
	c.ValidArgsFunction = cobra.NoFileCompletions
	fs := c.Flags()
	sf.addStore(fs)
	sf.addEmbedder(fs, false)
	sf.addIndex(fs)
	sf.addReranker(fs, "cross-encoder `MODEL` (a name or a directory) that reranks the top --rerank N candidates")
	sf.addScoring(fs)
	addCollection(fs, &o.col, "the collection `C` to search (default: the default collection)")
	fs.StringVar(&o.mode, "mode", "", "retrieval `MODE`: hybrid, bm25 or dense (default hybrid; bm25 with a warning when the store's embedder cannot be loaded)")
	fs.IntVarP(&o.k, "k", "k", 10, "results")
	fs.IntVar(&o.window, "window", 0, "candidates per retriever (default 100)")
	fs.BoolVar(&o.fullDense, "full-dense-window", false, "an approximate dense index (int8 stores) rescores candidates for the whole --window, "+
		"not only for the -k results (slower; dense hits past -k then rank as a search for --window)")
	fs.IntVar(&o.rerankTop, "rerank", 0, "rerank the top `N` fused candidates (with --reranker: none unless given; "+
		"with --llm-reranker: 20 unless given)")
	fs.StringVar(&o.where, "where", "", "metadata filter as `JSON`, e.g. '{\"year\":{\"$gte\":2020}}'")
	fs.StringVar(&o.whereDoc, "where-document", "", "text filter as `JSON`, e.g. '{\"$contains\":\"go\"}'")
	fs.BoolVar(&o.asJSON, "json", false, "one JSON object per result")
	fs.StringVar(&o.cascade, "cascade", "", "search these `COLLECTIONS` in order, e.g. \"gold,kb,docs\", and stop after the first whose best "+
		"score reaches --cascade-threshold (not with --collection); each result names its collection")
	fs.Float64Var(&o.cascadeThreshold, "cascade-threshold", 0, "with --cascade: the best `SCORE` that stops the cascade (compared with SCORE: use a "+
		"reranked, dense or bm25 search; hybrid's RRF scores are at most ~0.033) (default 0: stop at the first collection with a result)")
	fs.BoolVar(&o.dedupeSource, "dedupe-source", false, "keep only the best result of each source (file or URL a document came from)")
	fs.StringVar(&o.llmURL, "llm-reranker", "", "rerank with a chat model behind this OpenAI-compatible API root `URL`, e.g. http://localhost:11434/v1 "+
		"(Ollama), http://host:8000/v1 (vLLM): the top --rerank N candidates (20 when --rerank is not given); not with --reranker")
	fs.StringVar(&o.llmModel, "llm-model", "", "with --llm-reranker: the server's `MODEL` name (required)")
	fs.StringVar(&o.llmMode, "llm-mode", "pointwise", "with --llm-reranker: pointwise (one request per passage, a 0-10 grade each) or listwise (one request ranking them all)")
	fs.StringVar(&o.llmKeyEnv, "llm-api-key-env", "OPENAI_API_KEY", "with --llm-reranker: the environment `VARIABLE` holding the API key, sent as a bearer token (unset or empty: none)")
	fs.StringVar(&o.vector, "vector", "", "search by the query vector in `FILE` (\"-\": stdin) instead of embedding the query: a JSON array of numbers, "+
		"a .npy (float32, shape (d,) or (1, d)) or an .fvecs file of one vector, of the store's dimension; QUERY is then optional "+
		"(hybrid: BM25 searches QUERY, dense the vector; without QUERY, dense only)")
	fs.StringVar(&o.vectorEmbedder, "vector-embedder", "", "with --vector: the `ID` of the model that made the vector, checked against the store's")
	completeValues(fs, modeValues, "mode")
	completeValues(fs, []string{"pointwise", "listwise"}, "llm-mode")
	return c
}

// maxVectorFileBytes caps what --vector reads: one vector of 1M float32 in JSON text.
const maxVectorFileBytes = 32 << 20

// readQueryVector reads the one query vector of --vector: a JSON array of numbers, or a
// .npy / .fvecs file (internal/vecfile) of exactly one row; "-" reads stdin.
func readQueryVector(path string, stdin io.Reader) ([]float32, error) {
	var (
		b   []byte
		err error
	)
	name := path
	if path == "-" {
		name = "stdin"
		b, err = io.ReadAll(io.LimitReader(stdin, maxVectorFileBytes+1))
	} else {
		var f *os.File
		if f, err = os.Open(path); err == nil {
			b, err = io.ReadAll(io.LimitReader(f, maxVectorFileBytes+1))
			f.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("--vector: %w", err)
	}
	if len(b) > maxVectorFileBytes {
		return nil, fmt.Errorf("%w: --vector %s: more than %d bytes", memory.ErrQueryVector, name, maxVectorFileBytes)
	}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
		var v []float32
		if err := json.Unmarshal(t, &v); err != nil {
			return nil, fmt.Errorf("%w: --vector %s: not a JSON array of numbers: %v", memory.ErrQueryVector, name, err)
		}
		return v, nil
	}
	r, err := vecfile.NewReader(bytes.NewReader(b), int64(len(b)), name)
	if err != nil {
		return nil, fmt.Errorf("%w: --vector %s: neither a JSON array nor a .npy/.fvecs file: %v", memory.ErrQueryVector, name, err)
	}
	defer r.Close()
	if r.Rows() != 1 {
		return nil, fmt.Errorf("%w: --vector %s holds %d vectors, want one", memory.ErrQueryVector, name, r.Rows())
	}
	v, err := r.Next(nil)
	if err != nil {
		return nil, fmt.Errorf("%w: --vector %s: %v", memory.ErrQueryVector, name, err)
	}
	return v, nil
}

// check reports a combination of flags and arguments that makes no sense as a usage error.
func (o searchOptions) check(sf *storeFlags, args []string) error {
	switch {
	case sf.dir == "":
		return sf.need()
	case len(args) == 0 && o.vector == "":
		return usagef("no QUERY given (or --vector FILE)")
	case o.vectorEmbedder != "" && o.vector == "":
		return usagef("--vector-embedder goes with --vector")
	case o.cascade != "" && o.col != "":
		return usagef("--cascade names the collections to search: not with --collection")
	case o.cascade == "" && o.cascadeThreshold != 0:
		return usagef("--cascade-threshold goes with --cascade")
	case o.llmURL != "" && sf.reranker != "":
		return usagef("--llm-reranker and --reranker: one reranker at a time")
	case o.llmURL == "" && (o.llmModel != "" || o.llmMode != "pointwise"):
		return usagef("--llm-model and --llm-mode go with --llm-reranker URL")
	}
	return nil
}

func runSearch(ctx context.Context, sf *storeFlags, o searchOptions, args []string, stdout, stderr io.Writer) error {
	if err := o.check(sf, args); err != nil {
		return err
	}
	var extra []memory.Option
	if o.llmURL != "" {
		key := ""
		if o.llmKeyEnv != "" {
			key = os.Getenv(o.llmKeyEnv)
		}
		r, err := rerank.NewLLMReranker(rerank.LLMOptions{BaseURL: o.llmURL, Model: o.llmModel, Mode: rerank.LLMMode(o.llmMode), APIKey: key,
			Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err != nil {
			return fmt.Errorf("--llm-reranker: %w", err)
		}
		extra = append(extra, memory.WithReranker(r))
		if o.rerankTop == 0 {
			o.rerankTop = 20
		}
	}
	modeSet := o.mode != ""
	if !modeSet {
		o.mode = string(memory.Hybrid)
	}
	opts := []memory.SearchOption{memory.TopK(o.k), memory.WithWindow(o.window), memory.WithSnippets()}
	if o.fullDense {
		opts = append(opts, memory.WithFullDenseWindow())
	}
	if o.where != "" {
		w, err := memory.ParseWhere([]byte(o.where))
		if err != nil {
			return err
		}
		opts = append(opts, memory.WithWhere(w))
	}
	if o.whereDoc != "" {
		w, err := memory.ParseWhereDocument([]byte(o.whereDoc))
		if err != nil {
			return err
		}
		opts = append(opts, memory.WithWhereDocument(w))
	}
	if o.rerankTop > 0 {
		opts = append(opts, memory.WithRerank(o.rerankTop))
	}
	if o.dedupeSource {
		opts = append(opts, memory.WithSourceDedup())
	}
	if o.cascade != "" {
		var cols []string
		for _, n := range strings.Split(o.cascade, ",") {
			if n = strings.TrimSpace(n); n != "" {
				cols = append(cols, n)
			}
		}
		opts = append(opts, memory.WithCascade(o.cascadeThreshold, cols...))
	}
	if o.vector != "" {
		v, err := readQueryVector(o.vector, os.Stdin)
		if err != nil {
			return err
		}
		opts = append(opts, memory.WithQueryVector(v))
		if o.vectorEmbedder != "" {
			opts = append(opts, memory.WithQueryVectorEmbedder(o.vectorEmbedder))
		}
		if len(args) == 0 && !modeSet {
			o.mode, modeSet = string(memory.Dense), true
		}
	}
	m, c, err := sf.openCollection(o.col, stderr, append(extra, memory.ReadOnly())...)
	if err != nil {
		return err
	}
	defer m.Close()
	query := strings.Join(args, " ")
	res, err := c.Search(ctx, query, append(opts, memory.WithMode(memory.Mode(o.mode)))...)
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
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		for _, r := range res {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	printResults(stdout, res, o.cascade != "")
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
