package hybrid

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/agentmem/memory/internal/rank"
)

// DefaultRRFK is the RRF rank constant used when FusionOptions.K is not positive
// (the value of Cormack et al., 2009, and of most engines).
const DefaultRRFK = 60

// Hit is one entry of a ranked list, best first: its rank is its index plus one. It is an
// alias of [rank.Hit], the one hit type every retriever returns.
type Hit = rank.Hit

// List is one retriever's ranked result list, the input of fusion.
type List struct {
	Name   string  // the retriever ("bm25", "dense"); reported in contributions
	Weight float64 // the list's weight in the fused score; 0 means 1
	Hits   []Hit   // best first; an id repeated later in the list is ignored
}

// FusionOptions tunes RRF and WeightedScore. The zero value is RRF with k = 60, whole lists
// and no score cut-off.
type FusionOptions struct {
	// K is the RRF rank constant: a document at rank r of a list gains w/(K+r).
	// K <= 0 means DefaultRRFK. WeightedScore ignores it.
	K float64
	// Window keeps only the first Window distinct ids of each list before fusing (what a
	// retriever asked for top Window would have returned); 0 or less keeps every hit.
	Window int
	// MinScore drops fused results whose score is below it; 0 means no cut-off.
	MinScore float64
}

// Contribution is what one input list gave a fused document.
type Contribution struct {
	List   string  // List.Name
	Rank   int     // 1-based rank in the (deduplicated, windowed) list; 0 = absent from it
	Score  float64 // the list's raw score for the document (0 when absent)
	Weight float64 // the list's effective weight
	Value  float64 // what the list added to the fused score (0 when absent)
}

// Fused is one fused result: a document, its fused score and the per-list breakdown.
type Fused struct {
	ID    string
	Score float64 // sum of the contributions' values
	// Contributions holds one entry per input list, in input order (Rank 0 where the
	// document was absent from a list).
	Contributions []Contribution

	method string // how Score was computed, for Explain
}

// fusionList is one input list after deduplication and windowing.
type fusionList struct {
	name   string
	weight float64
	hits   []Hit // distinct ids, best first
}

// prepareLists applies the weight default, per-list deduplication (first occurrence wins)
// and the window.
func prepareLists(lists []List, window int) []fusionList {
	out := make([]fusionList, len(lists))
	for i, l := range lists {
		w := l.Weight
		if w == 0 {
			w = 1
		}
		seen := make(map[string]struct{}, len(l.Hits))
		hits := make([]Hit, 0, len(l.Hits))
		for _, h := range l.Hits {
			if window > 0 && len(hits) == window {
				break
			}
			if _, dup := seen[h.ID]; dup {
				continue
			}
			seen[h.ID] = struct{}{}
			hits = append(hits, h)
		}
		out[i] = fusionList{name: l.Name, weight: w, hits: hits}
	}
	return out
}

// FusionFunc combines ranked lists into one list, best first. RRF and WeightedScore are
// FusionFuncs; a new fusion method is one more function of this type, most simply a call
// of Fuse with its own Scorer. A FusionFunc fills each result's Contributions (one per
// input list, Rank 0 where absent): the facade reads its explanations from them.
type FusionFunc func(lists []List, opt FusionOptions) []Fused

// The fusion methods of this package are FusionFuncs.
var (
	_ FusionFunc = RRF
	_ FusionFunc = WeightedScore
)

// Scorer says what a document earns from one input list: list is the list's index in the
// input, weight its effective weight (List.Weight, 0 read as 1), rank the document's 1-based
// rank in it after deduplication and the window, and h the hit itself.
type Scorer func(list int, weight float64, rank int, h Hit) float64

// Fuse is the common frame of a FusionFunc: it removes repeated ids from each list, applies
// opt.Window, sums score over the lists that hold each document, drops the results below
// opt.MinScore and sorts the rest best first (score descending, then best rank in any list,
// then id). method names the method in Fused.Explain. The inputs are not modified.
//
// For example, CombSUM, the weighted sum of the raw scores:
//
//	func CombSUM(lists []List, opt FusionOptions) []Fused {
//		return Fuse(lists, opt, "combsum", func(_ int, w float64, _ int, h Hit) float64 {
//			return w * h.Score
//		})
//	}
func Fuse(lists []List, opt FusionOptions, method string, score Scorer) []Fused {
	return fuse(prepareLists(lists, opt.Window), opt, method, score)
}

// fuse accumulates score over every prepared list and returns the results above
// opt.MinScore, best first.
func fuse(lists []fusionList, opt FusionOptions, method string, score Scorer) []Fused {
	total := 0
	for _, l := range lists {
		total += len(l.hits)
	}
	pos := make(map[string]int, total)
	res := make([]Fused, 0, total)
	slab := make([]Contribution, 0, total*len(lists)) // every result's contributions, carved
	for li, l := range lists {
		for r, h := range l.hits {
			i, ok := pos[h.ID]
			if !ok {
				i = len(res)
				pos[h.ID] = i
				cs := slab[len(slab) : len(slab)+len(lists) : len(slab)+len(lists)]
				slab = slab[:len(slab)+len(lists)]
				for j, lj := range lists {
					cs[j] = Contribution{List: lj.name, Weight: lj.weight}
				}
				res = append(res, Fused{ID: h.ID, Contributions: cs, method: method})
			}
			v := score(li, l.weight, r+1, h)
			c := &res[i].Contributions[li]
			c.Rank, c.Score, c.Value = r+1, h.Score, v
		}
	}
	kept := res[:0]
	for _, f := range res {
		// Sum in input order so the score does not depend on map or insertion order.
		s := 0.0
		for _, c := range f.Contributions {
			s += c.Value
		}
		f.Score = s
		if opt.MinScore == 0 || !(s < opt.MinScore) {
			kept = append(kept, f)
		}
	}
	sortFused(kept)
	return kept
}

// bestRank is the smallest non-zero rank of f's contributions (MaxInt when none).
func (f Fused) bestRank() int {
	best := math.MaxInt
	for _, c := range f.Contributions {
		if c.Rank > 0 && c.Rank < best {
			best = c.Rank
		}
	}
	return best
}

// sortFused orders by score descending, then best rank in any list, then id.
func sortFused(fs []Fused) {
	best := make(map[string]int, len(fs))
	for _, f := range fs {
		best[f.ID] = f.bestRank()
	}
	sort.Slice(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if ra, rb := best[a.ID], best[b.ID]; ra != rb {
			return ra < rb
		}
		return a.ID < b.ID
	})
}

// RRF fuses ranked lists by weighted Reciprocal Rank Fusion: a document scores
// sum_i w_i/(k + rank_i) over the lists i that contain it, with 1-based ranks counted after
// removing repeated ids from each list and after opt.Window. A document missing from a list
// gets nothing from it. Results are best first: score descending, then best rank in any
// list, then id. The inputs are not modified.
func RRF(lists []List, opt FusionOptions) []Fused {
	k := opt.K
	if !(k > 0) {
		k = DefaultRRFK
	}
	return Fuse(lists, opt, "rrf k="+strconv.FormatFloat(k, 'g', -1, 64), func(_ int, w float64, rank int, _ Hit) float64 {
		return w / (k + float64(rank))
	})
}

// WeightedScore fuses lists by their raw scores: each list's scores (after deduplication
// and opt.Window) are min-max normalised to [0, 1] and a document scores the weighted sum
// of its normalised scores. A list whose scores are all equal (a single hit, say) gives
// each of its documents 1. Non-finite raw scores are left out of the min and max;
// +Inf normalises to 1, -Inf and NaN to 0. Ordering and ties are as for RRF.
func WeightedScore(lists []List, opt FusionOptions) []Fused {
	ls := prepareLists(lists, opt.Window)
	type span struct{ lo, hi float64 }
	spans := make([]span, len(ls))
	for i, l := range ls {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, h := range l.hits {
			if math.IsNaN(h.Score) || math.IsInf(h.Score, 0) {
				continue
			}
			lo, hi = math.Min(lo, h.Score), math.Max(hi, h.Score)
		}
		spans[i] = span{lo, hi}
	}
	return fuse(ls, opt, "weighted min-max", func(li int, w float64, _ int, h Hit) float64 {
		return w * minMax(h.Score, spans[li].lo, spans[li].hi)
	})
}

// minMax maps s into [0, 1] given the finite range [lo, hi] of its list.
func minMax(s, lo, hi float64) float64 {
	switch {
	case math.IsNaN(s), math.IsInf(s, -1):
		return 0
	case math.IsInf(s, 1):
		return 1
	case hi <= lo: // all finite scores equal
		return 1
	}
	return (s - lo) / (hi - lo)
}

// Explain renders the fused score and what each list contributed, one line per list:
//
//	doc-7 score 0.032266 (rrf k=60)
//	  bm25   rank 1   raw 12.5     weight 1   +0.016393
//	  dense  rank 3   raw 0.81     weight 1   +0.015873
//	  extra  absent
func (f Fused) Explain() string {
	var b strings.Builder
	method := f.method
	if method == "" {
		method = "fused"
	}
	fmt.Fprintf(&b, "%s score %.6g (%s)", f.ID, f.Score, method)
	width := 0
	for _, c := range f.Contributions {
		width = max(width, len(c.List))
	}
	for _, c := range f.Contributions {
		name := c.List
		if name == "" {
			name = "?"
		}
		if c.Rank == 0 {
			fmt.Fprintf(&b, "\n  %-*s  absent", width, name)
			continue
		}
		fmt.Fprintf(&b, "\n  %-*s  rank %-3d raw %-9.4g weight %-4.3g +%.6g",
			width, name, c.Rank, c.Score, c.Weight, c.Value)
	}
	return b.String()
}
