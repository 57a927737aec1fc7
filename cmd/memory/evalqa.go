package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agentmem/memory/internal/qa"
	"github.com/agentmem/memory/searchr1"
	"github.com/spf13/pflag"
)

// evalQAConfig holds the flags of `memory eval --qa`.
type evalQAConfig struct {
	file         string
	generator    string
	model        string
	apiKeyEnv    string
	chat         bool
	tags         string
	topK         int
	maxTurns     int
	maxSearches  int
	rollouts     int
	concurrency  int
	maxTokens    int
	temperature  float64
	limit        int
	trajectories string
}

// register adds the flags of --qa to fs.
func (c *evalQAConfig) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.file, "qa", "", "QA JSONL `FILE` ({\"id\",\"question\",\"golden_answers\":[...],\"data_source\"}): run the Search-R1 loop over it and print EM/F1")
	fs.StringVar(&c.generator, "generator", "", "with --qa: OpenAI-compatible API root `URL`, e.g. http://127.0.0.1:8000/v1 (vLLM)")
	fs.StringVar(&c.model, "model", "", "with --qa: `MODEL` name sent to the generator")
	fs.StringVar(&c.apiKeyEnv, "api-key-env", "OPENAI_API_KEY", "with --qa: environment `VARIABLE` holding the generator's API key (unset: none)")
	fs.BoolVar(&c.chat, "chat", false, "with --qa: use /chat/completions (default /completions)")
	fs.StringVar(&c.tags, "tags", "original", "with --qa: passage tags: original (<information>) or seed (<context>)")
	fs.IntVar(&c.topK, "topk", 3, "with --qa: passages per search")
	fs.IntVar(&c.maxTurns, "max-turns", 4, "with --qa: turns before the final answer (Search-R1's max_turns)")
	fs.IntVar(&c.maxSearches, "max-searches", 0, "with --qa: searches per question (default: --max-turns, as the original)")
	fs.IntVar(&c.rollouts, "rollouts", 1, "with --qa: episodes per question (all scored)")
	fs.IntVar(&c.concurrency, "concurrency", 32, "with --qa: generations in flight")
	fs.IntVar(&c.maxTokens, "max-tokens", 500, "with --qa: tokens per generation (Search-R1's max_response_length)")
	fs.Float64Var(&c.temperature, "temperature", 0, "with --qa: sampling temperature")
	fs.IntVar(&c.limit, "limit", 0, "with --qa: only the first `N` questions (0: all)")
	fs.StringVar(&c.trajectories, "trajectories", "", "with --qa: write every episode to `FILE` as JSONL")
	completeValues(fs, []string{"original", "seed"}, "tags")
}

// runEvalQA runs `memory eval --qa`: the questions of the file through a searchr1.Runner
// over the store, then EM, cover EM and F1 per dataset.
func runEvalQA(ctx context.Context, cfg evalConfig, stdout, stderr io.Writer) error {
	c := cfg.qa
	var tags searchr1.Tags
	switch c.tags {
	case "original":
		tags = searchr1.OriginalTags()
	case "seed":
		tags = searchr1.DefaultTags()
	default:
		return usagef("--tags %q: want original or seed", c.tags)
	}
	questions, err := qa.LoadFile(c.file)
	if err != nil {
		return err
	}
	if c.limit > 0 && c.limit < len(questions) {
		questions = questions[:c.limit]
	}
	total := -1
	if cfg.storeDir == "" {
		if total, err = countCorpus(ctx, cfg.data); err != nil {
			return err
		}
	}
	m, err := openEvalStore(cfg, stderr)
	if err != nil {
		return err
	}
	defer m.Close()
	docs, err := m.Count(ctx)
	if err != nil {
		return err
	}
	if docs == 0 {
		if cfg.data == "" {
			return errors.New("eval --qa: the store is empty; give --data DIR to fill it")
		}
		if _, err := indexCorpus(ctx, m, cfg.data, total, stderr); err != nil {
			return err
		}
		if docs, err = m.Count(ctx); err != nil {
			return err
		}
	}
	maxSearches := c.maxSearches
	if maxSearches == 0 {
		maxSearches = c.maxTurns
	}
	gen := &searchr1.OpenAI{
		BaseURL: c.generator, Model: c.model, Chat: c.chat, MaxTokens: c.maxTokens, Temperature: c.temperature,
	}
	if c.apiKeyEnv != "" {
		gen.APIKey = os.Getenv(c.apiKeyEnv)
	}
	rn := &searchr1.Runner{
		Loop: searchr1.Loop{
			Tags: tags, TopK: c.topK, MaxTurns: c.maxTurns, MaxSearches: maxSearches,
			SearchOptions: cfg.searchOptions(),
		},
		Generator: gen, Searcher: m, Rollouts: c.rollouts, Concurrency: c.concurrency,
	}
	var f *os.File
	if c.trajectories != "" {
		if f, err = os.Create(c.trajectories); err != nil {
			return err
		}
		defer f.Close()
		rn.Out = f
	}
	rep, err := qa.Evaluate(ctx, rn, questions)
	if err != nil {
		return err
	}
	if f != nil {
		if err := f.Close(); err != nil {
			return err
		}
	}
	api := "completions"
	if c.chat {
		api = "chat/completions"
	}
	fmt.Fprintf(stdout, "qa           %s (%d questions x %d rollouts; store %d docs, mode %s)\n", c.file, len(questions), max(1, c.rollouts), docs, cfg.mode)
	fmt.Fprintf(stdout, "generator    %s (%s, model %q, tags %s, topk %d, max turns %d)\n", c.generator, api, c.model, c.tags, c.topK, c.maxTurns)
	if c.trajectories != "" {
		fmt.Fprintf(stdout, "trajectories %s\n", c.trajectories)
	}
	fmt.Fprintf(stdout, "EM           %.4f\n", rep.Overall.EM)
	fmt.Fprintf(stdout, "SubEM        %.4f\n", rep.Overall.SubEM)
	fmt.Fprintf(stdout, "F1           %.4f\n", rep.Overall.F1)
	return rep.WriteText(stdout)
}
