package hybrid_test

import (
	"fmt"

	"github.com/agentmem/memory/hybrid"
)

// Fuse a keyword and a dense result list by Reciprocal Rank Fusion and explain the winner.
func ExampleRRF() {
	keyword := hybrid.List{Name: "bm25", Hits: []hybrid.Hit{
		{ID: "doc-1", Score: 12.5}, {ID: "doc-2", Score: 9.1}, {ID: "doc-3", Score: 4.0},
	}}
	dense := hybrid.List{Name: "dense", Weight: 1.5, Hits: []hybrid.Hit{
		{ID: "doc-3", Score: 0.83}, {ID: "doc-2", Score: 0.79}, {ID: "doc-4", Score: 0.41},
	}}
	fused := hybrid.RRF([]hybrid.List{keyword, dense}, hybrid.FusionOptions{K: 60})
	for _, f := range fused {
		fmt.Printf("%s %.5f\n", f.ID, f.Score)
	}
	fmt.Println(fused[0].Explain())
	// Output:
	// doc-3 0.04046
	// doc-2 0.04032
	// doc-4 0.02381
	// doc-1 0.01639
	// doc-3 score 0.0404632 (rrf k=60)
	//   bm25   rank 3   raw 4         weight 1    +0.015873
	//   dense  rank 1   raw 0.83      weight 1.5  +0.0245902
}

// Fuse lists by their min-max normalised raw scores, keeping the top 2 of each list.
func ExampleWeightedScore() {
	keyword := hybrid.List{Name: "bm25", Hits: []hybrid.Hit{
		{ID: "a", Score: 10}, {ID: "b", Score: 6}, {ID: "c", Score: 2},
	}}
	dense := hybrid.List{Name: "dense", Hits: []hybrid.Hit{
		{ID: "c", Score: 0.9}, {ID: "a", Score: 0.5}, {ID: "b", Score: 0.1},
	}}
	for _, f := range hybrid.WeightedScore([]hybrid.List{keyword, dense}, hybrid.FusionOptions{Window: 2}) {
		fmt.Printf("%s %.2f\n", f.ID, f.Score)
	}
	// Output:
	// a 1.00
	// c 1.00
	// b 0.00
}

// A new fusion method is one function: here CombSUM, the weighted sum of raw scores, built
// on Fuse (which deduplicates, windows, weights and orders like RRF).
func ExampleFuse() {
	combSUM := func(lists []hybrid.List, opt hybrid.FusionOptions) []hybrid.Fused {
		return hybrid.Fuse(lists, opt, "combsum", func(_ int, w float64, _ int, h hybrid.Hit) float64 {
			return w * h.Score
		})
	}
	var fusion hybrid.FusionFunc = combSUM // what memory.WithFusion takes
	keyword := hybrid.List{Name: "bm25", Hits: []hybrid.Hit{{ID: "a", Score: 0.9}, {ID: "b", Score: 0.2}}}
	dense := hybrid.List{Name: "dense", Weight: 2, Hits: []hybrid.Hit{{ID: "b", Score: 0.8}}}
	fused := fusion([]hybrid.List{keyword, dense}, hybrid.FusionOptions{})
	for _, f := range fused {
		fmt.Printf("%s %.2f\n", f.ID, f.Score)
	}
	fmt.Println(fused[0].Explain())
	// Output:
	// b 1.80
	// a 0.90
	// b score 1.8 (combsum)
	//   bm25   rank 2   raw 0.2       weight 1    +0.2
	//   dense  rank 1   raw 0.8       weight 2    +1.6
}
