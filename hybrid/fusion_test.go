package hybrid

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// ids lists the ids of fs in order.
func fusedIDs(fs []Fused) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.ID
	}
	return out
}

func hits(ids ...string) []Hit {
	hs := make([]Hit, len(ids))
	for i, id := range ids {
		hs[i] = Hit{ID: id, Score: float64(len(ids) - i)}
	}
	return hs
}

func TestRRFHandComputed(t *testing.T) {
	r := func(ranks ...int) float64 { // sum of 1/(60+r)
		s := 0.0
		for _, x := range ranks {
			s += 1 / (60 + float64(x))
		}
		return s
	}
	tests := []struct {
		name   string
		lists  []List
		opt    FusionOptions
		ids    []string
		scores []float64
	}{
		{
			name:   "two lists with overlap",
			lists:  []List{{Name: "a", Hits: hits("a", "b", "c")}, {Name: "b", Hits: hits("c", "a", "d")}},
			ids:    []string{"a", "c", "b", "d"},
			scores: []float64{r(1, 2), r(3, 1), r(2), r(3)},
		},
		{
			name:   "equal scores and equal best rank fall back to id",
			lists:  []List{{Name: "a", Hits: hits("y", "x")}, {Name: "b", Hits: hits("x", "y")}},
			ids:    []string{"x", "y"},
			scores: []float64{r(2, 1), r(1, 2)},
		},
		{
			name:   "disjoint singletons tie on score and rank",
			lists:  []List{{Name: "a", Hits: hits("q")}, {Name: "b", Hits: hits("p")}},
			ids:    []string{"p", "q"},
			scores: []float64{r(1), r(1)},
		},
		{
			// K=1: n (rank 2 of a) scores 1/3; z (rank 1 of b, weight 2/3) scores (2/3)/2 = 1/3.
			name: "equal scores fall back to best rank before id",
			lists: []List{
				{Name: "a", Hits: hits("m", "n")},
				{Name: "b", Weight: 2.0 / 3, Hits: hits("z")},
			},
			opt:    FusionOptions{K: 1},
			ids:    []string{"m", "z", "n"},
			scores: []float64{0.5, 1.0 / 3, 1.0 / 3},
		},
		{
			name:   "duplicates in a list count once and do not shift later ranks",
			lists:  []List{{Name: "a", Hits: hits("a", "b", "a", "a", "c")}, {Name: "b", Hits: hits("c")}},
			ids:    []string{"c", "a", "b"},
			scores: []float64{r(3, 1), r(1), r(2)},
		},
		{
			name: "weights scale a list and 0 means 1",
			lists: []List{
				{Name: "a", Weight: 0, Hits: hits("a", "b")},
				{Name: "b", Weight: 3, Hits: hits("b", "c")},
			},
			ids:    []string{"b", "c", "a"},
			scores: []float64{r(2) + 3*r(1), 3 * r(2), r(1)},
		},
		{
			name: "window keeps the first W distinct ids of each list",
			lists: []List{
				{Name: "a", Hits: hits("a", "a", "b", "c")},
				{Name: "b", Hits: hits("d", "c", "e")},
			},
			opt:    FusionOptions{Window: 2},
			ids:    []string{"a", "d", "b", "c"},
			scores: []float64{r(1), r(1), r(2), r(2)},
		},
		{
			name: "min score drops weak results",
			lists: []List{
				{Name: "a", Hits: hits("a", "b", "c")},
				{Name: "b", Hits: hits("c", "a")},
			},
			opt:    FusionOptions{MinScore: r(1) + 0.001},
			ids:    []string{"a", "c"},
			scores: []float64{r(1, 2), r(3, 1)},
		},
		{
			name:   "K <= 0 means 60",
			lists:  []List{{Name: "a", Hits: hits("a", "b")}},
			opt:    FusionOptions{K: -5},
			ids:    []string{"a", "b"},
			scores: []float64{r(1), r(2)},
		},
		{
			name:   "custom K",
			lists:  []List{{Name: "a", Hits: hits("a", "b")}, {Name: "b", Hits: hits("b")}},
			opt:    FusionOptions{K: 2},
			ids:    []string{"b", "a"},
			scores: []float64{1.0/4 + 1.0/3, 1.0 / 3},
		},
		{
			name:  "no lists",
			lists: nil,
		},
		{
			name:  "empty lists",
			lists: []List{{Name: "a"}, {Name: "b", Hits: []Hit{}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := RRF(tc.lists, tc.opt)
			if g := fusedIDs(got); len(g) != len(tc.ids) || (len(g) > 0 && !reflect.DeepEqual(g, tc.ids)) {
				t.Fatalf("ids = %v, want %v", g, tc.ids)
			}
			for i, f := range got {
				if math.Abs(f.Score-tc.scores[i]) > 1e-15 {
					t.Errorf("%s: score = %.17g, want %.17g", f.ID, f.Score, tc.scores[i])
				}
				if len(f.Contributions) != len(tc.lists) {
					t.Errorf("%s: %d contributions, want %d", f.ID, len(f.Contributions), len(tc.lists))
				}
			}
		})
	}
}

func TestRRFContributions(t *testing.T) {
	lists := []List{
		{Name: "bm25", Hits: []Hit{{ID: "a", Score: 12.5}, {ID: "b", Score: 7}, {ID: "a", Score: 3}}},
		{Name: "dense", Weight: 2, Hits: []Hit{{ID: "b", Score: 0.9}, {ID: "c", Score: 0.8}}},
		{Name: "empty"},
	}
	got := RRF(lists, FusionOptions{})
	var b Fused
	for _, f := range got {
		if f.ID == "b" {
			b = f
		}
	}
	want := []Contribution{
		{List: "bm25", Rank: 2, Score: 7, Weight: 1, Value: 1.0 / 62},
		{List: "dense", Rank: 1, Score: 0.9, Weight: 2, Value: 2.0 / 61},
		{List: "empty", Rank: 0, Score: 0, Weight: 1, Value: 0},
	}
	if !reflect.DeepEqual(b.Contributions, want) {
		t.Fatalf("contributions of b:\n got %+v\nwant %+v", b.Contributions, want)
	}
	if b.Score != 1.0/62+2.0/61 {
		t.Errorf("score of b = %v", b.Score)
	}
	// a: the duplicate at rank 3 must not replace the first occurrence.
	a := got[len(got)-2]
	for _, f := range got {
		if f.ID == "a" {
			a = f
		}
	}
	if c := a.Contributions[0]; c.Rank != 1 || c.Score != 12.5 {
		t.Errorf("a in bm25 = %+v, want rank 1 raw 12.5", c)
	}
	if c := a.Contributions[1]; c.Rank != 0 || c.Value != 0 {
		t.Errorf("a in dense = %+v, want absent", c)
	}
}

func TestFusionDoesNotModifyInput(t *testing.T) {
	lists := []List{{Name: "a", Hits: hits("a", "b", "a")}, {Name: "b", Hits: hits("b")}}
	before := fmt.Sprint(lists)
	RRF(lists, FusionOptions{Window: 1})
	WeightedScore(lists, FusionOptions{Window: 1})
	if after := fmt.Sprint(lists); after != before {
		t.Fatalf("input changed: %s -> %s", before, after)
	}
}

func TestWeightedScore(t *testing.T) {
	tests := []struct {
		name   string
		lists  []List
		opt    FusionOptions
		ids    []string
		scores []float64
	}{
		{
			name: "min-max per list then weighted sum",
			lists: []List{
				{Name: "bm25", Hits: []Hit{{ID: "a", Score: 10}, {ID: "b", Score: 5}, {ID: "c", Score: 0}}},
				{Name: "dense", Weight: 2, Hits: []Hit{{ID: "c", Score: 0.9}, {ID: "b", Score: 0.7}, {ID: "d", Score: 0.4}}},
			},
			ids:    []string{"c", "b", "a", "d"},
			scores: []float64{0 + 2*1, 0.5 + 2*0.6, 1, 0},
		},
		{
			name:   "single element normalises to 1",
			lists:  []List{{Name: "a", Hits: []Hit{{ID: "x", Score: -3.5}}}, {Name: "b", Hits: []Hit{{ID: "y", Score: 1}, {ID: "x", Score: 0}}}},
			ids:    []string{"x", "y"},
			scores: []float64{1, 1},
		},
		{
			name:   "all equal scores normalise to 1",
			lists:  []List{{Name: "a", Hits: []Hit{{ID: "p", Score: 2}, {ID: "q", Score: 2}, {ID: "r", Score: 2}}}},
			ids:    []string{"p", "q", "r"},
			scores: []float64{1, 1, 1},
		},
		{
			name:   "negative scores",
			lists:  []List{{Name: "a", Hits: []Hit{{ID: "p", Score: -1}, {ID: "q", Score: -2}, {ID: "r", Score: -5}}}},
			ids:    []string{"p", "q", "r"},
			scores: []float64{1, 0.75, 0},
		},
		{
			name:   "duplicates keep the first score",
			lists:  []List{{Name: "a", Hits: []Hit{{ID: "p", Score: 4}, {ID: "q", Score: 2}, {ID: "p", Score: 0}, {ID: "r", Score: 0}}}},
			ids:    []string{"p", "q", "r"},
			scores: []float64{1, 0.5, 0},
		},
		{
			name:   "window is applied before normalising",
			lists:  []List{{Name: "a", Hits: []Hit{{ID: "p", Score: 4}, {ID: "q", Score: 2}, {ID: "r", Score: 0}}}},
			opt:    FusionOptions{Window: 2},
			ids:    []string{"p", "q"},
			scores: []float64{1, 0},
		},
		{
			name:   "non-finite scores",
			lists:  []List{{Name: "a", Hits: []Hit{{ID: "i", Score: math.Inf(1)}, {ID: "p", Score: 3}, {ID: "q", Score: 1}, {ID: "n", Score: math.NaN()}, {ID: "m", Score: math.Inf(-1)}}}},
			ids:    []string{"i", "p", "q", "n", "m"}, // zeros ordered by rank
			scores: []float64{1, 1, 0, 0, 0},
		},
		{
			name:   "min score",
			lists:  []List{{Name: "a", Hits: []Hit{{ID: "p", Score: 4}, {ID: "q", Score: 3}, {ID: "r", Score: 0}}}},
			opt:    FusionOptions{MinScore: 0.5},
			ids:    []string{"p", "q"},
			scores: []float64{1, 0.75},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := WeightedScore(tc.lists, tc.opt)
			if g := fusedIDs(got); !reflect.DeepEqual(g, tc.ids) {
				t.Fatalf("ids = %v, want %v", g, tc.ids)
			}
			for i, f := range got {
				if math.Abs(f.Score-tc.scores[i]) > 1e-12 {
					t.Errorf("%s: score = %v, want %v", f.ID, f.Score, tc.scores[i])
				}
			}
		})
	}
}

func TestExplain(t *testing.T) {
	lists := []List{
		{Name: "bm25", Hits: []Hit{{ID: "a", Score: 12.5}, {ID: "b", Score: 7}}},
		{Name: "dense", Hits: []Hit{{ID: "c", Score: 0.9}, {ID: "b", Score: 0.81}}},
		{Name: "sop", Hits: nil},
	}
	got := RRF(lists, FusionOptions{})
	if got[0].ID != "b" {
		t.Fatalf("top = %s, want b", got[0].ID)
	}
	want := strings.Join([]string{
		"b score 0.0322581 (rrf k=60)",
		"  bm25   rank 2   raw 7         weight 1    +0.016129",
		"  dense  rank 2   raw 0.81      weight 1    +0.016129",
		"  sop    absent",
	}, "\n")
	if e := got[0].Explain(); e != want {
		t.Errorf("Explain:\n%s\nwant:\n%s", e, want)
	}
	w := WeightedScore(lists, FusionOptions{})
	if e := w[0].Explain(); !strings.Contains(e, "(weighted min-max)") {
		t.Errorf("weighted Explain lacks its method: %s", e)
	}
	if e := (Fused{ID: "x"}).Explain(); e != "x score 0 (fused)" {
		t.Errorf("zero Fused Explain = %q", e)
	}
}

// TestFuseCustomMethod: a new fusion method is one Scorer given to Fuse; it gets the
// deduplicated, windowed ranks, the effective weights and the ordering of RRF.
func TestFuseCustomMethod(t *testing.T) {
	combSUM := func(lists []List, opt FusionOptions) []Fused {
		return Fuse(lists, opt, "combsum", func(_ int, w float64, _ int, h Hit) float64 { return w * h.Score })
	}
	var f FusionFunc = combSUM
	lists := []List{
		{Name: "a", Hits: []Hit{{ID: "x", Score: 3}, {ID: "y", Score: 2}, {ID: "x", Score: 9}, {ID: "z", Score: 1}}}, // the repeated x is ignored
		{Name: "b", Weight: 2, Hits: []Hit{{ID: "z", Score: 4}, {ID: "y", Score: 0.5}}},
	}
	got := f(lists, FusionOptions{Window: 2}) // a keeps x, y; b keeps z, y
	want := []struct {
		id    string
		score float64
	}{{"z", 8}, {"x", 3}, {"y", 3}} // x and y tie on 3: x's best rank (1) beats y's (2)
	if len(got) != len(want) {
		t.Fatalf("got %v", fusedIDs(got))
	}
	for i, w := range want {
		if got[i].ID != w.id || got[i].Score != w.score {
			t.Fatalf("result %d = %s %v, want %s %v", i, got[i].ID, got[i].Score, w.id, w.score)
		}
	}
	c := got[0].Contributions
	if len(c) != 2 || c[0].Rank != 0 || c[1].Rank != 1 || c[1].Weight != 2 || c[1].Value != 8 {
		t.Fatalf("contributions of z: %+v", c)
	}
	if e := got[0].Explain(); !strings.Contains(e, "(combsum)") {
		t.Fatalf("Explain lacks the method name: %s", e)
	}
	// The built-in methods are the same frame with their own Scorer.
	rrf := Fuse(lists, FusionOptions{}, "rrf k=60", func(_ int, w float64, rank int, _ Hit) float64 { return w / (60 + float64(rank)) })
	if !reflect.DeepEqual(rrf, RRF(lists, FusionOptions{})) {
		t.Fatalf("Fuse with the RRF scorer differs from RRF")
	}
}

// refFuse is a deliberately naive reference: maps, sums in list order, full sort.
func refFuse(lists []List, opt FusionOptions, weighted bool) []Fused {
	k := opt.K
	if k <= 0 {
		k = 60
	}
	type entry struct {
		score float64
		best  int
	}
	entries := map[string]*entry{}
	perList := make([]map[string]float64, len(lists))
	for i, l := range lists {
		w := l.Weight
		if w == 0 {
			w = 1
		}
		perList[i] = map[string]float64{}
		var kept []Hit
		seen := map[string]bool{}
		for _, h := range l.Hits {
			if seen[h.ID] {
				continue
			}
			seen[h.ID] = true
			kept = append(kept, h)
		}
		if opt.Window > 0 && len(kept) > opt.Window {
			kept = kept[:opt.Window]
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, h := range kept {
			lo, hi = math.Min(lo, h.Score), math.Max(hi, h.Score)
		}
		for r, h := range kept {
			var v float64
			if weighted {
				n := 1.0
				if hi > lo {
					n = (h.Score - lo) / (hi - lo)
				}
				v = w * n
			} else {
				v = w / (k + float64(r+1))
			}
			perList[i][h.ID] = v
			e := entries[h.ID]
			if e == nil {
				e = &entry{best: r + 1}
				entries[h.ID] = e
			}
			e.best = min(e.best, r+1)
		}
	}
	var out []Fused
	for id, e := range entries {
		for i := range lists { // sum in list order, like the implementation
			e.score += perList[i][id]
		}
		if opt.MinScore != 0 && e.score < opt.MinScore {
			continue
		}
		out = append(out, Fused{ID: id, Score: e.score})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if entries[a.ID].best != entries[b.ID].best {
			return entries[a.ID].best < entries[b.ID].best
		}
		return a.ID < b.ID
	})
	return out
}

func randomLists(rng *rand.Rand) []List {
	n := rng.IntN(4)
	lists := make([]List, n)
	universe := 1 + rng.IntN(30)
	for i := range lists {
		l := List{Name: fmt.Sprint("l", i)}
		if rng.IntN(3) == 0 {
			l.Weight = float64(rng.IntN(5)) * 0.5
		}
		m := rng.IntN(25)
		score := 100.0
		for range m {
			score -= float64(rng.IntN(4)) // repeated scores happen
			l.Hits = append(l.Hits, Hit{ID: fmt.Sprint("d", rng.IntN(universe)), Score: score})
		}
		lists[i] = l
	}
	return lists
}

func TestFusionMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for it := range 3000 {
		lists := randomLists(rng)
		opt := FusionOptions{}
		if rng.IntN(2) == 0 {
			opt.K = float64(rng.IntN(100))
		}
		if rng.IntN(2) == 0 {
			opt.Window = rng.IntN(10)
		}
		if rng.IntN(4) == 0 {
			opt.MinScore = rng.Float64() * 0.05
		}
		for _, weighted := range []bool{false, true} {
			var got []Fused
			if weighted {
				got = WeightedScore(lists, opt)
			} else {
				got = RRF(lists, opt)
			}
			want := refFuse(lists, opt, weighted)
			if len(got) != len(want) {
				t.Fatalf("case %d weighted=%v: %d results, want %d\nlists=%v opt=%+v", it, weighted, len(got), len(want), lists, opt)
			}
			for i := range got {
				if got[i].ID != want[i].ID || got[i].Score != want[i].Score {
					t.Fatalf("case %d weighted=%v: result %d = %s %v, want %s %v\nlists=%v opt=%+v",
						it, weighted, i, got[i].ID, got[i].Score, want[i].ID, want[i].Score, lists, opt)
				}
				sum := 0.0
				for j, c := range got[i].Contributions {
					if c.List != lists[j].Name {
						t.Fatalf("case %d: contribution %d names %q, want %q", it, j, c.List, lists[j].Name)
					}
					if c.Rank == 0 && (c.Value != 0 || c.Score != 0) {
						t.Fatalf("case %d: absent contribution carries a value: %+v", it, c)
					}
					sum += c.Value
				}
				if sum != got[i].Score {
					t.Fatalf("case %d: contributions sum to %v, score %v", it, sum, got[i].Score)
				}
			}
		}
	}
}

func BenchmarkRRF(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	lists := make([]List, 2)
	for i := range lists {
		lists[i].Name = fmt.Sprint("l", i)
		for j := range 100 {
			lists[i].Hits = append(lists[i].Hits, Hit{ID: fmt.Sprint("d", rng.IntN(150)), Score: float64(100 - j)})
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		RRF(lists, FusionOptions{})
	}
}
