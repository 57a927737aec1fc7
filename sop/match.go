package sop

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strings"

	"github.com/agentmem/memory/internal/vecmath"
	"github.com/agentmem/memory/vectorstore"
)

// Match is one procedure selected for a query.
type Match struct {
	// SOP is a copy of the procedure matched.
	SOP Procedure
	// Score ranks matches, higher first. For a trigger match it is the sum of the weights of
	// the matched triggers plus 0.5 x priority; for a semantic match it is the cosine
	// similarity between the query and the procedure.
	Score float64
	// MatchedTriggers are the triggers found in the query, as written in the procedure, in
	// the procedure's order. Empty for a semantic match.
	MatchedTriggers []string
	// Semantic reports a match found by the semantic fallback.
	Semantic bool
}

// MatchOptions tunes one [Library.Match] call. The zero value is the default: every
// category, no minimum score, no semantic fallback.
type MatchOptions struct {
	// Category keeps only procedures of this category. Empty (the default) keeps all.
	Category string
	// MinScore drops trigger matches scoring below it. Zero (the default) keeps all, as
	// every trigger match scores more than zero.
	MinScore float64
	// SemanticFallback asks, when no trigger matches, for the procedures most similar to
	// the query by embedding (the library's [Options.Embedder]) instead, keeping those with
	// a cosine similarity of at least MinSimilarity. Each procedure is embedded as its
	// name, description and triggers. False (the default) returns nothing when no trigger
	// matches.
	SemanticFallback bool
	// MinSimilarity is the least cosine similarity a semantic match needs (only with
	// SemanticFallback). Zero (the default) keeps every procedure not pointing away from
	// the query.
	MinSimilarity float64
}

// Trigger weights: a one-word trigger found in the query is worth baseWeight, each further
// word of a phrase adds half of it, and the weight is scaled between 0.5 and 1 by how rare
// the trigger is among the library's procedures (an inverse document frequency).
const (
	baseWeight     = 10.0
	priorityWeight = 0.5
)

// Match returns up to n procedures (n <= 0: all) whose triggers occur in query, best first:
// by score, then priority, then name. It returns nothing when no trigger matches, unless
// [MatchOptions.SemanticFallback] asks for the most similar procedures instead. Errors of
// the semantic fallback are logged and give no matches; use MatchContext to see them.
func (l *Library) Match(query string, n int, opts MatchOptions) []Match {
	ms, err := l.MatchContext(context.Background(), query, n, opts)
	if err != nil {
		slog.Warn("sop: match", "query", query, "err", err)
	}
	return ms
}

// MatchContext is Match with a context (used by the semantic fallback) and its error.
func (l *Library) MatchContext(ctx context.Context, query string, n int, opts MatchOptions) ([]Match, error) {
	mc := &opts
	segs := tokenizeWith(query, true, l.opts.Terms)
	l.mu.RLock()
	ms := l.matchTriggersLocked(segs, mc)
	l.mu.RUnlock()
	if len(ms) == 0 && mc.SemanticFallback {
		return l.matchSemantic(ctx, query, n, mc)
	}
	sortMatches(ms)
	if n > 0 && len(ms) > n {
		ms = ms[:n]
	}
	for i := range ms {
		ms[i].SOP = ms[i].SOP.Clone()
	}
	return ms, nil
}

type candidate struct {
	e       *entry
	matched []int // trigger indexes, ascending
}

func (c *candidate) mark(t int) {
	i := sort.SearchInts(c.matched, t)
	if i < len(c.matched) && c.matched[i] == t {
		return
	}
	c.matched = append(c.matched, 0)
	copy(c.matched[i+1:], c.matched[i:])
	c.matched[i] = t
}

func tokenMatches(t, q token) bool {
	if t.prefix {
		return strings.HasPrefix(q.word, t.word)
	}
	return t.stem == q.stem
}

func (l *Library) matchTriggersLocked(segs [][]token, mc *MatchOptions) []Match {
	var cands map[*entry]*candidate
	visit := func(ps []posting, seg []token, i int) {
		for _, p := range ps {
			toks := p.e.trig[p.t].toks
			if i+len(toks) > len(seg) {
				continue
			}
			ok := true
			for j := 1; j < len(toks) && ok; j++ {
				ok = tokenMatches(toks[j], seg[i+j])
			}
			if !ok || (mc.Category != "" && p.e.sop.Category != mc.Category) {
				continue
			}
			if cands == nil {
				cands = map[*entry]*candidate{}
			}
			c := cands[p.e]
			if c == nil {
				c = &candidate{e: p.e}
				cands[p.e] = c
			}
			c.mark(p.t)
		}
	}
	for _, seg := range segs {
		for i, tk := range seg {
			visit(l.exact[tk.stem], seg, i)
			if l.maxPre > 0 {
				for k := 1; k <= min(len(tk.word), l.maxPre); k++ {
					if ps, ok := l.prefix[tk.word[:k]]; ok {
						visit(ps, seg, i)
					}
				}
			}
		}
	}
	if len(cands) == 0 {
		return nil
	}
	total := float64(len(l.byName))
	out := make([]Match, 0, len(cands))
	for _, c := range cands {
		score := priorityWeight * float64(c.e.sop.Priority)
		trig := make([]string, len(c.matched))
		for i, t := range c.matched {
			ct := &c.e.trig[t]
			score += l.weightLocked(ct, total)
			trig[i] = ct.text
		}
		if score < mc.MinScore {
			continue
		}
		out = append(out, Match{SOP: c.e.sop, Score: score, MatchedTriggers: trig})
	}
	return out
}

// weightLocked is the weight of a matched trigger: baseWeight for one word, +50% per further
// word, scaled into [0.5, 1] by the trigger's rarity among the total procedures.
func (l *Library) weightLocked(ct *ctrigger, total float64) float64 {
	w := baseWeight * (1 + 0.5*float64(len(ct.toks)-1))
	df := float64(max(l.df[ct.key], 1))
	idf := 1.0
	if total > 1 {
		idf = math.Log(1+total/df) / math.Log(1+total)
	}
	return w * (0.5 + 0.5*idf)
}

func sortMatches(ms []Match) {
	sort.Slice(ms, func(i, j int) bool {
		a, b := &ms[i], &ms[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if a.SOP.Priority != b.SOP.Priority {
			return a.SOP.Priority > b.SOP.Priority
		}
		return a.SOP.Name < b.SOP.Name
	})
}

// embedText is what the semantic fallback embeds for a procedure.
func embedText(s Procedure) string {
	var b strings.Builder
	b.WriteString(strings.NewReplacer("_", " ", "-", " ").Replace(s.Name))
	if s.Description != "" {
		b.WriteString(". ")
		b.WriteString(s.Description)
	}
	if len(s.Trigger) > 0 {
		b.WriteString(". ")
		b.WriteString(strings.Join(s.Trigger, ", "))
	}
	return b.String()
}

// Embed computes the embeddings the semantic fallback needs for every procedure not yet
// embedded. Match does it lazily; Embed lets a caller pay the cost up front.
func (l *Library) Embed(ctx context.Context) error {
	emb := l.opts.Embedder
	if emb == nil {
		return ErrNoEmbedder
	}
	l.mu.RLock()
	var (
		todo  []*entry
		texts []string
	)
	for _, e := range l.byName {
		if e.vec == nil {
			todo = append(todo, e)
			texts = append(texts, embedText(e.sop))
		}
	}
	l.mu.RUnlock()
	const batch = 64
	for from := 0; from < len(todo); from += batch {
		to := min(from+batch, len(todo))
		vecs, err := emb.Embed(ctx, texts[from:to])
		if err != nil {
			return fmt.Errorf("sop: embed procedures: %w", err)
		}
		if len(vecs) != to-from {
			return fmt.Errorf("sop: embed procedures: %d vectors for %d texts", len(vecs), to-from)
		}
		l.mu.Lock()
		for i, v := range vecs {
			// An entry replaced meanwhile is no longer in byName; setting its vector is harmless.
			todo[from+i].vec = unit(v)
		}
		l.mu.Unlock()
	}
	return nil
}

// unit is v scaled to unit length (vecmath.NormalizeInto), in a new slice.
func unit(v []float32) []float32 {
	out := make([]float32, len(v))
	vecmath.NormalizeInto(out, v)
	return out
}

func (l *Library) matchSemantic(ctx context.Context, query string, n int, mc *MatchOptions) ([]Match, error) {
	emb := l.opts.Embedder
	if emb == nil {
		return nil, ErrNoEmbedder
	}
	if err := l.Embed(ctx); err != nil {
		return nil, err
	}
	var q []float32
	if qe, ok := emb.(vectorstore.QueryEmbedder); ok {
		v, err := qe.EmbedQuery(ctx, query)
		if err != nil {
			return nil, fmt.Errorf("sop: embed query: %w", err)
		}
		q = v
	} else {
		vs, err := emb.Embed(ctx, []string{query})
		if err != nil {
			return nil, fmt.Errorf("sop: embed query: %w", err)
		}
		if len(vs) != 1 {
			return nil, fmt.Errorf("sop: embed query: %d vectors for 1 text", len(vs))
		}
		q = vs[0]
	}
	q = unit(q)
	l.mu.RLock()
	var out []Match
	for _, e := range l.byName {
		if e.vec == nil || len(e.vec) != len(q) || (mc.Category != "" && e.sop.Category != mc.Category) {
			continue
		}
		var dot float64
		for i, x := range e.vec {
			dot += float64(x) * float64(q[i])
		}
		if dot >= mc.MinSimilarity {
			out = append(out, Match{SOP: e.sop, Score: dot, Semantic: true})
		}
	}
	l.mu.RUnlock()
	sortMatches(out)
	if n > 0 && len(out) > n {
		out = out[:n]
	}
	for i := range out {
		out[i].SOP = out[i].SOP.Clone()
	}
	return out, nil
}

// baselineScore is the naive trigger score used as a reference: 10 for each trigger found in
// the lower-cased query as a plain substring, plus 0.5 x priority. matched lists the triggers
// found; a procedure with none does not match, whatever its score.
func baselineScore(s Procedure, query string) (score float64, matched []string) {
	q := strings.ToLower(query)
	for _, t := range s.Trigger {
		if t = strings.ToLower(strings.TrimSpace(t)); t != "" && strings.Contains(q, t) {
			score += baseWeight
			matched = append(matched, t)
		}
	}
	return score + priorityWeight*float64(s.Priority), matched
}

// baselineMatch ranks sops by baselineScore, keeping those with at least one trigger found,
// ordered like Match (score, priority, name); n <= 0 keeps all.
func baselineMatch(sops []Procedure, query string, n int) []Match {
	var out []Match
	for _, s := range sops {
		if score, m := baselineScore(s, query); len(m) > 0 {
			out = append(out, Match{SOP: s, Score: score, MatchedTriggers: m})
		}
	}
	sortMatches(out)
	if n > 0 && len(out) > n {
		out = out[:n]
	}
	return out
}
