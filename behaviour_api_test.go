package memory

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/agentmem/memory/hybrid"
)

// More of the behaviour suite (behaviour_test.go): the operations a store on a cluster
// builds from its searches and writes (several collections, cascades, replacements, code,
// procedures, where_document), asserted identically on both backends.

func init() {
	behaviourTests = append(behaviourTests, []struct {
		name string
		run  func(t *testing.T, so storeOpener)
	}{
		{"MultiCollection", behaviourMultiCollection},
		{"Cascade", behaviourCascade},
	}...)
}

// plants is a second small corpus, of another collection: each document has a word of
// its own, and none shares one with zoo().
func plants() []Document {
	names := []string{"fern", "moss", "cactus", "orchid", "ivy"}
	docs := make([]Document, len(names))
	for i, n := range names {
		docs[i] = Document{ID: fmt.Sprintf("p%02d", i), Title: "A " + n,
			Text: fmt.Sprintf("A %s grows in the garden bed %d.", n, i), Metadata: map[string]any{"n": i}}
	}
	return docs
}

// behaviourMultiCollection: InCollections fuses the collections' own result lists with
// weighted RRF: each result's score is its collection's weight over k plus its rank in that
// collection's own search, it names its collection and weight, and a collection of weight
// 0 is not searched; errors name the collection or the option.
func behaviourMultiCollection(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder())
	ctx := bctx(t)
	animals, err := m.CreateCollection("animals")
	if err != nil {
		t.Fatal(err)
	}
	garden, err := m.CreateCollection("garden")
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, animals, zoo()...)
	mustAdd(t, garden, plants()...)
	weights := map[string]float64{"animals": 1, "garden": 3}
	// BM25: one hit in each collection; the garden's, weighted 3, first.
	res, err := m.Search(ctx, "gecko fern", WithMode(BM25), InCollections(weights))
	if err != nil {
		t.Fatal(err)
	}
	if got := resultIDs(res); !reflect.DeepEqual(got, []string{"p00", "z06"}) {
		t.Fatalf("BM25 over two collections: %v, want [p00 z06]", got)
	}
	for _, mode := range []Mode{BM25, Dense, Hybrid} {
		res, err := m.Search(ctx, "gecko fern", WithMode(mode), InCollections(weights), TopK(8))
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if len(res) == 0 || res[0].ID != "p00" || res[0].Collection != "garden" {
			t.Fatalf("%s: first result %v, want p00 of the garden", mode, resultIDs(res))
		}
		// Each result's score is weight/(k + its rank in its collection's own search).
		rank := map[string]map[string]int{}
		for col := range weights {
			own, err := m.Collection(col).Search(ctx, "gecko fern", WithMode(mode), TopK(100))
			if err != nil {
				t.Fatal(err)
			}
			rank[col] = map[string]int{}
			for i, r := range own {
				rank[col][r.ID] = i + 1
			}
		}
		for i, r := range res {
			w := weights[r.Collection]
			rk, ok := rank[r.Collection][r.ID]
			if !ok || r.Explain.CollectionWeight != w {
				t.Errorf("%s #%d %s: collection %q rank %d weight %v", mode, i, r.ID, r.Collection, rk, r.Explain.CollectionWeight)
				continue
			}
			if want := w / (hybrid.DefaultRRFK + float64(rk)); math.Abs(r.Score-want) > 1e-12 {
				t.Errorf("%s #%d %s: score %v, want %v (weight %v, rank %d)", mode, i, r.ID, r.Score, want, w, rk)
			}
			if i > 0 && r.Score > res[i-1].Score {
				t.Errorf("%s: #%d scores %v above #%d's %v", mode, i, r.Score, i-1, res[i-1].Score)
			}
		}
	}
	// A Where applies to every collection; a collection of weight 0 is not searched.
	res, err = m.Search(ctx, "animal garden", WithMode(BM25), InCollections(map[string]float64{"animals": 1, "garden": 0, "nope": 0}),
		WithWhere(Where{"kind": "bird"}), TopK(10))
	if err != nil {
		t.Fatal(err)
	}
	if got := sortedIDs(res); !reflect.DeepEqual(got, []string{"z04", "z07", "z08"}) {
		t.Errorf("birds of the animals: %v, want [z04 z07 z08]", got)
	}
	for name, tc := range map[string]struct {
		w    map[string]float64
		want error
	}{
		"missing":  {map[string]float64{"animals": 1, "nope": 1}, ErrCollectionNotFound},
		"all zero": {map[string]float64{"animals": 0}, ErrInvalidOption},
		"negative": {map[string]float64{"animals": -1, "garden": 1}, ErrInvalidOption},
		"NaN":      {map[string]float64{"animals": math.NaN()}, ErrInvalidOption},
	} {
		_, err := m.Search(ctx, "gecko", InCollections(tc.w))
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
		if name == "missing" && !strings.Contains(fmt.Sprint(err), `"nope"`) {
			t.Errorf("missing: %v does not name the collection", err)
		}
	}
}

// behaviourCascade: WithCascade stops at the first collection whose best score reaches
// the threshold, else searches them all; results carry their step and the cascade's note.
func behaviourCascade(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder())
	ctx := bctx(t)
	gold, err := m.CreateCollection("gold")
	if err != nil {
		t.Fatal(err)
	}
	animals, err := m.CreateCollection("animals")
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, gold, Document{ID: "g1", Text: "the gecko eats crickets at night"}, Document{ID: "g2", Text: "moss on the rock"})
	mustAdd(t, animals, zoo()...)
	// Dense: the score is a cosine, which means the same in every collection.
	res, err := m.Search(ctx, "gecko", WithMode(Dense), WithCascade(0.01, "gold", "animals"), TopK(3))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 {
		t.Fatalf("stopped at gold: %v, want its 2 documents", resultIDs(res))
	}
	for _, r := range res {
		if r.Collection != "gold" || r.Explain.Cascade != 1 || !hasNote(r, "cascade stopped at step 1 of 2") {
			t.Errorf("%s: collection %q step %d notes %q", r.ID, r.Collection, r.Explain.Cascade, r.Explain.Notes)
		}
	}
	res, err = m.Search(ctx, "gecko", WithMode(Dense), WithCascade(2, "gold", "animals"), TopK(5))
	if err != nil {
		t.Fatal(err)
	}
	steps := map[int]int{}
	for i, r := range res {
		steps[r.Explain.Cascade]++
		if want := map[string]int{"gold": 1, "animals": 2}[r.Collection]; r.Explain.Cascade != want || !hasNote(r, "cascade searched all 2 collections") {
			t.Errorf("%s of %q: step %d, notes %q", r.ID, r.Collection, r.Explain.Cascade, r.Explain.Notes)
		}
		if i > 0 && r.Score > res[i-1].Score {
			t.Errorf("#%d scores %v above #%d's %v", i, r.Score, i-1, res[i-1].Score)
		}
	}
	if len(res) != 5 || steps[1] != 2 || steps[2] != 3 {
		t.Errorf("all steps: %v (steps %v), want gold's 2 and 3 animals", resultIDs(res), steps)
	}
	if res[0].ID != "g1" && res[0].ID != "z06" {
		t.Errorf("best of the cascade: %s, want a gecko", res[0].ID)
	}
	if _, err := m.Search(ctx, "gecko", WithMode(Dense), WithCascade(0.01, "gold", "nope")); err != nil {
		t.Errorf("a missing collection after the stop is not searched: %v", err)
	}
	_, err = m.Search(ctx, "gecko", WithMode(Dense), WithCascade(2, "gold", "nope"))
	if !errors.Is(err, ErrCollectionNotFound) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("missing collection: %v", err)
	}
	if _, err := m.Search(ctx, "gecko", WithCascade(0.5, "gold", "gold")); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("a repeated collection: %v, want ErrInvalidOption", err)
	}
}

func hasNote(r Result, prefix string) bool {
	for _, n := range r.Explain.Notes {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}
