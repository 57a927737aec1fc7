package bm25

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestLargest: the n largest positive values, descending, whatever the input's order.
func TestLargest(t *testing.T) {
	for _, tc := range []struct {
		r    []float64
		n    int
		want []float64
	}{
		{nil, 3, []float64{}},
		{[]float64{0, 0}, 3, []float64{}},
		{[]float64{0.5, 0, 0.25}, 3, []float64{0.5, 0.25}},
		{[]float64{0.1, 0.9, 0.3, 0.9, 0.7, 0.2}, 3, []float64{0.9, 0.9, 0.7}},
		{[]float64{0.3, 0.2, 0.1}, 1, []float64{0.3}},
	} {
		if got := largest(tc.r, tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("largest(%v, %d) = %v, want %v", tc.r, tc.n, got, tc.want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	r := make([]float64, 5000)
	for i := range r {
		r[i] = float64(rng.IntN(700)) / 700 // ties and zeros
	}
	want := slices.Clone(r)
	slices.Sort(want)
	slices.Reverse(want)
	want = want[:maxTopRatios]
	if got := largest(r, maxTopRatios); !slices.Equal(got, want) {
		t.Fatalf("largest of 5,000: %v, want %v", got, want)
	}
}

// TestThresholdFloor: on segments without deletions a query's pass starts from the
// threshold floor (the k-th largest block bound of one of its terms) and answers exactly
// as exhaustive evaluation, for k from 1 to past maxTopRatios, in both scoring modes, with
// one and with several segment workers, tied documents included; and a first query for a
// rare and a common term decodes fewer postings with the floor than without it.
func TestThresholdFloor(t *testing.T) {
	for _, scoring := range []string{ScoringClassic, ScoringLucene} {
		t.Run("scoring="+scoring, func(t *testing.T) {
			withChunkMode(t, 16)
			b, err := OpenWith("", Options{Scoring: scoring})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			rng := rand.New(rand.NewPCG(5, 5))
			var docs []Doc
			for i := range 3000 {
				w := make([]string, 3+rng.IntN(40))
				for j := range w {
					w[j] = vocab[rng.IntN(len(vocab))]
				}
				w = append(w, "common")
				if i%19 == 0 {
					for range 1 + rng.IntN(3) {
						w = append(w, "rarea")
					}
				}
				d := Doc{ID: fmt.Sprintf("d%04d", i), Text: strings.Join(w, " ")}
				docs = append(docs, d)
				if i%50 == 0 { // an exact copy: tied scores
					docs = append(docs, Doc{ID: d.ID + "copy", Text: d.Text})
				}
			}
			if err := b.Apply(docs, nil, 1); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			extra := []string{"", "rarea", "common", "rarea common"}
			for qi := range 80 {
				q := randomQuery(rng, 4) + " " + extra[qi%len(extra)]
				k := []int{1, 2, 3, 10, 37, maxTopRatios, maxTopRatios + 1, 1000}[qi%8]
				b.SetExhaustive(true)
				want, err := b.Search(ctx, q, k, nil)
				b.SetExhaustive(false)
				if err != nil {
					t.Fatal(err)
				}
				for _, workers := range []int{1, 3} {
					b.opts.SegmentWorkers = workers
					got, err := b.Search(ctx, q, k, nil)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, want) {
						t.Fatalf("q=%q k=%d workers=%d:\n got %v\nwant %v", q, k, workers, got, want)
					}
				}
				b.opts.SegmentWorkers = 0
			}
			if b.postings.floors.Load() == 0 {
				t.Fatal("no pass started from a threshold floor")
			}
			// A first query (no cached block) for "rarea common": with the floor, "common"
			// is not essential from the first window, and only its blocks that can hold a
			// document of the top 10 are decoded.
			decoded := func(floor bool) uint64 {
				t.Helper()
				defer func(old bool) { useFloor = old }(useFloor)
				useFloor = floor
				c := b.postings
				c.mu.Lock()
				for _, r := range c.ring {
					r.tb.slots[r.i].Store(nil)
				}
				c.ring, c.used = nil, 0
				c.mu.Unlock()
				before := c.decoded.Load() + c.lookups.Load()
				want, got := searchBoth(t, b, "rarea common", 10)
				if !slices.Equal(got, want) {
					t.Fatalf("rarea common (floor %v):\n got %v\nwant %v", floor, got, want)
				}
				return c.decoded.Load() + c.lookups.Load() - before
			}
			without, with := decoded(false), decoded(true)
			t.Logf("first query: %d postings read without the floor, %d with it", without, with)
			if with >= without {
				t.Fatalf("the floor did not spare any posting: %d read with it, %d without", with, without)
			}
		})
	}
}
