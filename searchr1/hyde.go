package searchr1

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/agentmem/memory"
)

// defaultHyDEPrompt asks for a short hypothetical answer passage; "{query}" is replaced.
const defaultHyDEPrompt = "Write a short passage (two or three sentences) that answers the question.\nQuestion: {query}\nPassage:"

// HyDE is a [Searcher] that first asks Generator for a short hypothetical answer to the
// query (Hypothetical Document Embeddings) and searches it together with the query.
type HyDE struct {
	Generator Generator
	Searcher  Searcher
	// Prompt is the generation prompt; "{query}" is replaced. The default asks for "a
	// short passage (two or three sentences) that answers the question".
	Prompt string
	// MaxChars caps the hypothetical passage in code points (default 1000).
	MaxChars int
	// Separate searches the query and the hypothesis separately and fuses the two lists
	// by Reciprocal Rank Fusion (k = 60); by default one search runs on
	// "query\nhypothesis".
	Separate bool
}

var _ Searcher = (*HyDE)(nil)

// Search runs the HyDE search.
func (h *HyDE) Search(ctx context.Context, query string, opts ...memory.SearchOption) ([]memory.Result, error) {
	if h.Searcher == nil {
		return nil, errNoSearcher
	}
	if h.Generator == nil {
		return nil, errNoGenerator
	}
	prompt := h.Prompt
	if prompt == "" {
		prompt = defaultHyDEPrompt
	}
	hypo, err := h.Generator.Generate(ctx, strings.ReplaceAll(prompt, "{query}", query), nil)
	if err != nil {
		return nil, fmt.Errorf("searchr1: hyde generation: %w", err)
	}
	hypo, _ = Chars{}.Truncate(strings.TrimSpace(hypo), defaultInt(h.MaxChars, 1000))
	if hypo == "" {
		return h.Searcher.Search(ctx, query, opts...)
	}
	if !h.Separate {
		return h.Searcher.Search(ctx, query+"\n"+hypo, opts...)
	}
	var so memory.SearchOptions
	for _, o := range opts {
		o(&so)
	}
	k := so.TopK
	if k <= 0 {
		k = 10
	}
	a, err := h.Searcher.Search(ctx, query, opts...)
	if err != nil {
		return nil, err
	}
	b, err := h.Searcher.Search(ctx, hypo, opts...)
	if err != nil {
		return nil, err
	}
	return fuseRRF(k, a, b), nil
}

// fuseRRF merges ranked lists by reciprocal rank (k = 60), keyed by collection and id.
func fuseRRF(topK int, lists ...[]memory.Result) []memory.Result {
	type entry struct {
		r     memory.Result
		score float64
		first int
	}
	byKey := map[string]*entry{}
	order := 0
	for _, l := range lists {
		for rank, r := range l {
			key := r.Collection + "\x00" + r.ID
			e, ok := byKey[key]
			if !ok {
				e = &entry{r: r, first: order}
				byKey[key] = e
				order++
			}
			e.score += 1 / (60 + float64(rank+1))
		}
	}
	out := make([]*entry, 0, len(byKey))
	for _, e := range byKey {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return out[i].first < out[j].first
	})
	if len(out) > topK {
		out = out[:topK]
	}
	res := make([]memory.Result, len(out))
	for i, e := range out {
		res[i] = e.r
		res[i].Score = e.score
	}
	return res
}
