package memory

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/agentmem/memory/internal/store"
)

// maxCascadeCollections caps the collections of one cascade (WithCascade).
const maxCascadeCollections = 64

// dedupeSources keeps the first of each non-empty source, in order.
func dedupeSources[T any](items []T, source func(T) string) []T {
	seen := map[string]bool{}
	out := items[:0:0]
	for _, it := range items {
		if src := source(it); src != "" {
			if seen[src] {
				continue
			}
			seen[src] = true
		}
		out = append(out, it)
	}
	return out
}

// checkCascade refuses a cascade it cannot run.
func (so *SearchOptions) checkCascade() error {
	switch {
	case len(so.Cascade) == 0:
		return fmt.Errorf("%w: a cascade without collections", ErrInvalidOption)
	case len(so.Cascade) > maxCascadeCollections:
		return fmt.Errorf("%w: a cascade of %d collections (at most %d)", ErrInvalidOption, len(so.Cascade), maxCascadeCollections)
	case math.IsNaN(so.CascadeThreshold):
		return fmt.Errorf("%w: cascade threshold NaN", ErrInvalidOption)
	case len(so.Collections) > 0:
		return fmt.Errorf("%w: a cascade and InCollections in one search", ErrInvalidOption)
	}
	seen := map[string]bool{}
	for _, name := range so.Cascade {
		if err := validCollectionName(name); err != nil {
			return err
		}
		if seen[name] {
			return fmt.Errorf("%w: collection %s twice in a cascade", ErrInvalidOption, store.ShowKey(name))
		}
		seen[name] = true
	}
	return nil
}

// searchCascade runs a cascade (see WithCascade): each step is a search of one collection
// with the caller's options (opts) less the cascade, so it is checked, guarded and
// repaired as any search is.
func (sr searcher) searchCascade(ctx context.Context, query string, so SearchOptions, opts []SearchOption) ([]Result, error) {
	m := sr.m
	start := time.Now()
	if err := so.checkCascade(); err != nil {
		return nil, err
	}
	topK := so.TopK
	if topK == 0 {
		topK = 10
	}
	var all []Result
	stop, best := -1, math.Inf(-1)
	for i, col := range so.Cascade {
		var one SearchStats
		step := append(opts[:len(opts):len(opts)], func(s *SearchOptions) {
			s.Cascade, s.stats, s.dense = nil, &one, nil
		})
		res, err := m.Collection(col).Search(ctx, query, step...)
		if err != nil {
			return nil, fmt.Errorf("cascade step %d, collection %s: %w", i+1, store.ShowKey(col), err)
		}
		so.stats.addStep(&one)
		bestHere := math.Inf(-1)
		for _, r := range res {
			r.Explain.Cascade = i + 1
			bestHere = max(bestHere, r.Score)
			all = append(all, r)
		}
		best = max(best, bestHere)
		if len(res) > 0 && bestHere >= so.CascadeThreshold {
			stop = i
			break
		}
	}
	slices.SortStableFunc(all, func(a, b Result) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	if so.SourceDedup {
		all = dedupeSources(all, func(r Result) string { return r.Source })
	}
	all = all[:min(len(all), topK)]
	var note string
	if stop >= 0 {
		note = fmt.Sprintf("cascade stopped at step %d of %d (%s): best score %s >= threshold %s",
			stop+1, len(so.Cascade), store.ShowKey(so.Cascade[stop]), fmtScore(best), fmtScore(so.CascadeThreshold))
	} else {
		note = fmt.Sprintf("cascade searched all %d collections: no best score reached threshold %s",
			len(so.Cascade), fmtScore(so.CascadeThreshold))
	}
	for i := range all {
		n := all[i].Explain.Notes
		all[i].Explain.Notes = append(n[:len(n):len(n)], note)
	}
	if so.stats != nil {
		so.stats.Total = time.Since(start)
	}
	return all, nil
}

// addStep adds the timings of one step of a cascade to st (nil: none kept).
func (st *SearchStats) addStep(one *SearchStats) {
	if st == nil {
		return
	}
	st.Mode = one.Mode
	st.Filter += one.Filter
	st.BM25 += one.BM25
	st.Embed += one.Embed
	st.Dense += one.Dense
	st.Fuse += one.Fuse
	st.Rerank += one.Rerank
	st.Candidates += one.Candidates
	st.Allowed = one.Allowed
}

func fmtScore(f float64) string { return strconv.FormatFloat(f, 'g', 4, 64) }
