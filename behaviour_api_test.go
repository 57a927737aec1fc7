package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/agentmem/memory/chunker"
	"github.com/agentmem/memory/hybrid"
	"github.com/agentmem/memory/sop"
	"github.com/agentmem/memory/vectorstore"
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
		{"Replace", behaviourReplace},
		{"BeginReplace", behaviourBeginReplace},
		{"AddCode", behaviourAddCode},
		{"SOPs", behaviourSOPs},
		{"WhereDocument", behaviourWhereDocument},
		{"QueryVectors", behaviourQueryVectors},
		{"Collapse", behaviourCollapse},
		{"Find", behaviourFind},
		{"CollectionMetadata", behaviourCollectionMeta},
		{"Rerank", behaviourRerank},
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
		// The results of each collection come in the order of its own list, the r-th with
		// score weight/(k + r), and are results of its own search. (Not the same rank as a
		// search of its own: documents that tie, as several here do in dense recall, may
		// come back in another order from another replica.)
		own := map[string]map[string]bool{}
		for col := range weights {
			res, err := m.Collection(col).Search(ctx, "gecko fern", WithMode(mode), TopK(100))
			if err != nil {
				t.Fatal(err)
			}
			own[col] = map[string]bool{}
			for _, r := range res {
				own[col][r.ID] = true
			}
		}
		nth := map[string]int{}
		for i, r := range res {
			w := weights[r.Collection]
			nth[r.Collection]++
			if !own[r.Collection][r.ID] || r.Explain.CollectionWeight != w {
				t.Errorf("%s #%d %s: collection %q weight %v, not a result of its own search", mode, i, r.ID, r.Collection, r.Explain.CollectionWeight)
				continue
			}
			if want := w / (hybrid.DefaultRRFK + float64(nth[r.Collection])); math.Abs(r.Score-want) > 1e-12 {
				t.Errorf("%s #%d %s: score %v, want %v (weight %v, #%d of its collection)", mode, i, r.ID, r.Score, want, w, nth[r.Collection])
			}
			if i > 0 && r.Score > res[i-1].Score {
				t.Errorf("%s: #%d scores %v above #%d's %v", mode, i, r.Score, i-1, res[i-1].Score)
			}
		}
		if nth["animals"] == 0 || nth["garden"] == 0 {
			t.Errorf("%s: %v, want results of both collections", mode, resultIDs(res))
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

// sourced is n documents of source src, ids src-0..: "<word> of <src>".
func sourced(src string, n int, word string) []Document {
	out := make([]Document, n)
	for i := range out {
		out[i] = Document{ID: fmt.Sprintf("%s-%d", src, i), Text: fmt.Sprintf("%s %d of %s", word, i, src), Source: src,
			Metadata: map[string]any{"kind": []string{"even", "odd"}[i%2]}}
	}
	return out
}

// checkIDs fails the test unless the collection's ids are want (in any order).
func checkIDs(t *testing.T, c *Collection, want ...string) {
	t.Helper()
	got, err := c.IDs(bctx(t))
	sort.Strings(want)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ids %v, %v; want %v", got, err, want)
	}
}

// behaviourReplace: Replace and ReplaceSource remove what the filter matches that is not
// among the new documents, keep the rest, and report how many they removed; bad input is
// refused with nothing written; Sources lists the sources.
func behaviourReplace(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder())
	ctx := bctx(t)
	c := m.Collection("")
	mustAdd(t, m, append(sourced("a.md", 3, "apple"), sourced("b.md", 2, "banana")...)...)
	mustAdd(t, m, Document{ID: "free", Text: "no source at all"})
	if srcs, err := c.Sources(ctx); err != nil || !reflect.DeepEqual(srcs, []string{"a.md", "b.md"}) {
		t.Fatalf("Sources = %v, %v", srcs, err)
	}
	// a.md-1 is kept (new text), a.md-0 and a.md-2 go, a.md-9 is new.
	n, err := m.ReplaceSource(ctx, "a.md", Document{ID: "a.md-1", Text: "apricot now"}, Document{ID: "a.md-9", Text: "avocado"})
	if err != nil || n != 2 {
		t.Fatalf("ReplaceSource = %d, %v; want 2 removed", n, err)
	}
	checkIDs(t, c, "a.md-1", "a.md-9", "b.md-0", "b.md-1", "free")
	if d, err := m.Get(ctx, "a.md-9"); err != nil || d.Source != "a.md" || d.Text != "avocado" {
		t.Errorf("Get(a.md-9) = %+v, %v; want the new document with its source", d, err)
	}
	if res, err := m.Search(ctx, "apple", WithMode(BM25)); err != nil || len(res) != 0 {
		t.Errorf("search of the replaced text: %v, %v; want nothing", resultIDs(res), err)
	}
	if res, err := m.Search(ctx, "apricot", WithMode(BM25)); err != nil || !reflect.DeepEqual(resultIDs(res), []string{"a.md-1"}) {
		t.Errorf("search of the new text: %v, %v", resultIDs(res), err)
	}
	// Replace by metadata: the odd documents of b.md go, a document not matching is upserted.
	n, err = m.Replace(ctx, Where{"$and": []any{Where{"source": "b.md"}, Where{"kind": "odd"}}}, Document{ID: "extra", Text: "x"})
	if err != nil || n != 1 {
		t.Fatalf("Replace(odd of b.md) = %d, %v; want 1", n, err)
	}
	checkIDs(t, c, "a.md-1", "a.md-9", "b.md-0", "extra", "free")
	// Without documents: a delete of what matches.
	if n, err := m.Replace(ctx, Where{"source": "b.md"}); err != nil || n != 1 {
		t.Errorf("Replace without documents = %d, %v; want 1", n, err)
	}
	// A filter no document matches: nothing removed, the documents upserted.
	if n, err := m.Replace(ctx, Where{"nokey": "x"}, Document{ID: "extra", Text: "y"}); err != nil || n != 0 {
		t.Errorf("Replace(nothing matches) = %d, %v", n, err)
	}
	checkIDs(t, c, "a.md-1", "a.md-9", "extra", "free")
	if srcs, err := c.Sources(ctx); err != nil || !reflect.DeepEqual(srcs, []string{"a.md"}) {
		t.Errorf("Sources = %v, %v; want [a.md]", srcs, err)
	}
	// Refused, nothing written.
	for name, call := range map[string]func() error{
		"other source": func() error {
			_, err := m.ReplaceSource(ctx, "a.md", Document{ID: "q", Text: "q"}, Document{ID: "r", Text: "r", Source: "z.md"})
			return errOf(err, ErrInvalidMetadata)
		},
		"empty source": func() error {
			_, err := m.ReplaceSource(ctx, "", Document{ID: "q", Text: "q"})
			return errOf(err, ErrInvalidFilter)
		},
		"empty where": func() error {
			_, err := m.Replace(ctx, Where{}, Document{ID: "q", Text: "q"})
			return errOf(err, ErrInvalidFilter)
		},
		"bad where": func() error {
			_, err := m.Replace(ctx, Where{"$bad": 1}, Document{ID: "q", Text: "q"})
			return errOf(err, ErrInvalidFilter)
		},
		"bad doc": func() error {
			_, err := m.Replace(ctx, Where{"source": "a.md"}, Document{ID: "q", Text: "q"}, Document{ID: "", Text: "r"})
			return errOf(err, ErrEmptyID)
		},
		"missing collection": func() error {
			_, err := m.Collection("nope").Replace(ctx, Where{"source": "a.md"})
			return errOf(err, ErrCollectionNotFound)
		},
	} {
		if err := call(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	checkIDs(t, c, "a.md-1", "a.md-9", "extra", "free")
	if srcs, err := m.Collection("nope").Sources(ctx); !errors.Is(err, ErrCollectionNotFound) {
		t.Errorf("Sources of a missing collection: %v, %v", srcs, err)
	}
}

// errOf is nil when err is want, else an error saying what it was.
func errOf(err, want error) error {
	if errors.Is(err, want) {
		return nil
	}
	return fmt.Errorf("got %v, want %v", err, want)
}

// behaviourBeginReplace: a Replacement's documents, upserted in several calls, replace
// the filter's documents at Commit; until then the old ones stay.
func behaviourBeginReplace(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder())
	ctx := bctx(t)
	c := m.Collection("")
	mustAdd(t, m, append(sourced("big.txt", 4, "old"), sourced("other.txt", 1, "keep")...)...)
	r, err := c.BeginReplace(Where{"source": "big.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Upsert(ctx, Document{ID: "big.txt-0", Text: "new 0", Source: "big.txt"}, Document{ID: "big.txt-7", Text: "new 7", Source: "big.txt"}); err != nil {
		t.Fatal(err)
	}
	checkIDs(t, c, "big.txt-0", "big.txt-1", "big.txt-2", "big.txt-3", "big.txt-7", "other.txt-0")
	n, err := r.Commit(ctx, Document{ID: "big.txt-8", Text: "new 8", Source: "big.txt"})
	if err != nil || n != 3 {
		t.Fatalf("Commit = %d, %v; want 3 removed", n, err)
	}
	if r.Upserted() != 3 {
		t.Errorf("Upserted = %d, want 3", r.Upserted())
	}
	checkIDs(t, c, "big.txt-0", "big.txt-7", "big.txt-8", "other.txt-0")
	if _, err := r.Commit(ctx); !errors.Is(err, ErrReplacementDone) {
		t.Errorf("second Commit: %v, want ErrReplacementDone", err)
	}
	if _, err := c.BeginReplace(nil); !errors.Is(err, ErrInvalidFilter) {
		t.Errorf("BeginReplace(nil): %v, want ErrInvalidFilter", err)
	}
}

// behaviourAddCode: AddCode stores a tree's chunks (CodeDocuments' ids and sources), and
// indexing the changed tree again replaces each file's chunks, a file bigger than a batch
// included (its Replacement), leaving no stale chunk.
func behaviourAddCode(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder())
	ctx := bctx(t)
	root := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goSrc := "package geo\n\n// Area of a square.\nfunc Area(s float64) float64 { return s * s }\n\n// Perimeter of a square.\nfunc Perimeter(s float64) float64 { return 4 * s }\n\n// Diagonal of a square.\nfunc Diagonal(s float64) float64 { return s * 1.4142 }\n"
	write("geo.go", goSrc)
	write("words.py", "def tokenize(text):\n    return text.lower().split()\n")
	c := m.Collection("code")
	if _, err := c.AddCode(ctx, root, CodeOptions{Walk: chunkerWalkSmall()}); err != nil {
		t.Fatal(err)
	}
	want := codeIDs(t, root)
	checkIDs(t, c, want...)
	if srcs, err := c.Sources(ctx); err != nil || !reflect.DeepEqual(srcs, []string{"geo.go", "words.py"}) {
		t.Fatalf("Sources = %v, %v", srcs, err)
	}
	res, err := c.Search(ctx, "Perimeter", WithMode(BM25), TopK(1))
	if err != nil || len(res) != 1 || res[0].Source != "geo.go" || !strings.Contains(res[0].Text, "4 * s") {
		t.Fatalf("search Perimeter: %+v, %v", res, err)
	}
	// The changed tree: Perimeter is gone, the lines move; batches of 1 chunk make geo.go a
	// Replacement of several batches.
	write("geo.go", strings.Replace(goSrc, "// Perimeter of a square.\nfunc Perimeter(s float64) float64 { return 4 * s }\n\n", "", 1))
	if _, err := c.AddCode(ctx, root, CodeOptions{Walk: chunkerWalkSmall(), BatchSize: 1}); err != nil {
		t.Fatal(err)
	}
	checkIDs(t, c, codeIDs(t, root)...)
	if res, err := c.Search(ctx, "Perimeter", WithMode(BM25)); err != nil || len(res) != 0 {
		t.Errorf("search of the removed function: %v, %v", resultIDs(res), err)
	}
}

// chunkerWalkSmall keeps each function in a chunk of its own.
func chunkerWalkSmall() chunker.WalkOptions {
	return chunker.WalkOptions{Code: chunker.CodeOptions{NoMergeDefinitions: true}}
}

// codeIDs are the ids AddCode gives the chunks of the tree under root (CodeDocuments of
// chunker.Walk's chunks).
func codeIDs(t *testing.T, root string) []string {
	t.Helper()
	var ids []string
	if _, err := chunker.Walk(bctx(t), root, chunkerWalkSmall(), func(path string, chunks []chunker.Chunk) error {
		for _, d := range CodeDocuments(path, chunks) {
			ids = append(ids, d.ID)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(ids) < 3 {
		t.Fatalf("the tree has %d chunks (%v), want one per function", len(ids), ids)
	}
	return ids
}

// behaviourSOPs: SaveSOPs keeps the procedures, and the store opened again loads exactly
// those saved last (a procedure removed and saved again is gone).
func behaviourSOPs(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder())
	if n := m.SOPs().Len(); n != 0 {
		t.Fatalf("a new store has %d procedures", n)
	}
	procs := []sop.Procedure{
		{Name: "deploy", Description: "ship it", Trigger: sop.Triggers{"deploy", "release"}, Category: "devops", Priority: 2,
			Steps: []sop.Step{{Action: "run the tests"}, {Action: "tag the release", Condition: "tests pass"}}},
		{Name: "Debug Crash ü", Trigger: sop.Triggers{"crash", "panic*"}, Steps: []sop.Step{{Action: "read the stack"}}},
	}
	if err := m.SOPs().Add(procs...); err != nil {
		t.Fatal(err)
	}
	want := m.SOPs().List("")
	if err := m.SaveSOPs(); err != nil {
		t.Fatal(err)
	}
	m.Close()
	m2, err := so.reopen(t, m, behaviourEmbedder())
	if err != nil {
		t.Fatal(err)
	}
	if got := m2.SOPs().List(""); !reflect.DeepEqual(got, want) {
		t.Fatalf("procedures after reopening: %+v, want %+v", got, want)
	}
	if ms := m2.SOPs().Match("how do I release this", 1, sop.MatchOptions{}); len(ms) != 1 || ms[0].SOP.Name != "deploy" {
		t.Errorf("Match(release) = %+v, want deploy", ms)
	}
	if err := m2.SOPs().Remove("Debug Crash ü"); err != nil {
		t.Fatal(err)
	}
	if err := m2.SaveSOPs(); err != nil {
		t.Fatal(err)
	}
	m2.Close()
	m3, err := so.reopen(t, m, behaviourEmbedder())
	if err != nil {
		t.Fatal(err)
	}
	if got := m3.SOPs().List(""); len(got) != 1 || got[0].Name != "deploy" {
		t.Errorf("procedures after a removal: %+v, want deploy only", got)
	}
	m3.Close()
	if err := m3.SaveSOPs(); !errors.Is(err, ErrClosed) {
		t.Errorf("SaveSOPs after Close: %v, want ErrClosed", err)
	}
}

// behaviourWhereDocument: where_document keeps exactly the documents whose title or text
// holds the substring (inside a word, across words, case-sensitive), or matches the
// regular expression, before ranking: a dense search so filtered is the unfiltered one
// less the documents it drops, in the same order with the same scores.
func behaviourWhereDocument(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder())
	ctx := bctx(t)
	mustAdd(t, m, zoo()...)
	for _, tc := range []struct {
		name string
		wd   WhereDocument
		w    Where
		want []string
	}{
		{"across words", WhereDocument{"$contains": "food number 7"}, nil, []string{"z07"}},
		{"inside a word", WhereDocument{"$contains": "ecko"}, nil, []string{"z06"}},
		{"title", WhereDocument{"$contains": "The camel"}, nil, []string{"z02"}},
		{"case", WhereDocument{"$contains": "GECKO"}, nil, []string{}},
		{"regex", WhereDocument{"$regex": `number [0-2]\.`}, nil, []string{"z00", "z01", "z02"}},
		{"or", WhereDocument{"$or": []any{WhereDocument{"$contains": "emu "}, WhereDocument{"$contains": "ibis"}}}, nil, []string{"z04", "z08"}},
		{"and Where", WhereDocument{"$not_contains": "heron"}, Where{"kind": "bird"}, []string{"z04", "z08"}},
		{"not", WhereDocument{"$not_contains": "number 1."}, nil, []string{"z00", "z02", "z03", "z04", "z05", "z06", "z07", "z08", "z09"}},
	} {
		for _, mode := range []Mode{BM25, Dense, Hybrid} {
			opts := []SearchOption{WithMode(mode), WithWhereDocument(tc.wd), TopK(10)}
			if tc.w != nil {
				opts = append(opts, WithWhere(tc.w))
			}
			res, err := m.Search(ctx, "animal zoo food", opts...)
			if err != nil {
				t.Fatalf("%s %s: %v", tc.name, mode, err)
			}
			if got := sortedIDs(res); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s %s: %v, want %v", tc.name, mode, got, tc.want)
			}
		}
	}
	all, err := m.Search(ctx, "the gecko eats food", WithMode(Dense), TopK(10))
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Search(ctx, "the gecko eats food", WithMode(Dense), TopK(9), WithWhereDocument(WhereDocument{"$not_contains": "number 1."}))
	if err != nil {
		t.Fatal(err)
	}
	want := slices.DeleteFunc(all, func(r Result) bool { return r.ID == "z01" })
	if len(res) != len(want) || slices.ContainsFunc(res, func(r Result) bool { return r.ID == "z01" }) {
		t.Fatalf("filtered %v, want the unfiltered %v less z01", resultIDs(res), resultIDs(want))
	}
	for i := range res { // the same scores; the same ids but where scores tie (any order)
		tie := func(j int) bool { return j >= 0 && j < len(want) && math.Abs(want[j].Score-want[i].Score) < 1e-7 }
		tied := tie(i-1) || tie(i+1)
		if math.Abs(res[i].Score-want[i].Score) > 1e-9 || !tied && res[i].ID != want[i].ID {
			t.Errorf("#%d %s: score %v, unfiltered %s %v", i, res[i].ID, res[i].Score, want[i].ID, want[i].Score)
		}
	}
	for name, wd := range map[string]WhereDocument{
		"empty":   {"$contains": ""},
		"unknown": {"$like": "x"},
		"regex":   {"$regex": "("},
	} {
		if _, err := m.Search(ctx, "zoo", WithWhereDocument(wd)); !errors.Is(err, ErrInvalidFilter) {
			t.Errorf("%s: %v, want ErrInvalidFilter", name, err)
		}
	}
}

// behaviourQueryVectors: SearchBatch with WithQueryVectors searches each query by its own
// vector (nil: its text embedded); bad vectors are refused before any search.
func behaviourQueryVectors(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder())
	ctx := bctx(t)
	docs := zoo()
	mustAdd(t, m, docs...)
	e := vectorstore.NewHashEmbedder(behaviourDim)
	vs, err := e.Embed(ctx, []string{embedText(docs[1].Title, docs[1].Text), embedText(docs[5].Title, docs[5].Text)})
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.SearchBatch(ctx, []string{"", "", "heron"}, WithMode(Dense), TopK(1), WithQueryVectors([][]float32{vs[0], vs[1], nil}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, res := range out {
		got = append(got, resultIDs(res)...)
	}
	if !reflect.DeepEqual(got, []string{"z01", "z05", "z07"}) {
		t.Errorf("top hits %v, want [z01 z05 z07]", got)
	}
	for name, opts := range map[string][]SearchOption{
		"count":    {WithQueryVectors([][]float32{vs[0]})},
		"dim":      {WithQueryVectors([][]float32{vs[0][:3], nil})},
		"both":     {WithQueryVectors([][]float32{vs[0], nil}), WithQueryVector(vs[0])},
		"Search's": nil,
	} {
		var err error
		if opts == nil {
			_, err = m.Search(ctx, "x", WithQueryVectors([][]float32{vs[0]}))
		} else {
			_, err = m.SearchBatch(ctx, []string{"a", "b"}, append(opts, WithMode(Dense))...)
		}
		if !errors.Is(err, ErrQueryVector) {
			t.Errorf("%s: %v, want ErrQueryVector", name, err)
		}
	}
}

// behaviourCollapse: WithCollapse drops a result whose stored vector is a near-duplicate of
// a better one's, in one collection and across collections; it needs an embedder.
func behaviourCollapse(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder())
	ctx := bctx(t)
	dups := []Document{
		{ID: "d1", Text: "the red fox jumps over the fence"},
		{ID: "d2", Text: "the red fox jumps over the fence"},
		{ID: "d3", Text: "a red fox sleeps in the den"},
	}
	mustAdd(t, m, dups...)
	mustAdd(t, m.Collection("other"), dups[0])
	for _, mode := range []Mode{BM25, Dense, Hybrid} {
		all, err := m.Search(ctx, "red fox fence", WithMode(mode))
		if err != nil || len(all) != 3 {
			t.Fatalf("%s: %v, %v; want 3 results", mode, resultIDs(all), err)
		}
		res, err := m.Search(ctx, "red fox fence", WithMode(mode), WithCollapse(0.99))
		if err != nil {
			t.Fatal(err)
		}
		if got := sortedIDs(res); len(got) != 2 || got[1] != "d3" || (got[0] != "d1" && got[0] != "d2") {
			t.Errorf("%s collapsed: %v, want one of d1, d2, and d3", mode, got)
		}
		multi, err := m.Search(ctx, "red fox fence", WithMode(mode), WithCollapse(0.99), InCollections(map[string]float64{"default": 1, "other": 1}))
		if err != nil {
			t.Fatal(err)
		}
		if len(multi) != 2 {
			t.Errorf("%s collapsed over two collections: %v, want 2", mode, resultIDs(multi))
		}
	}
	bare := so.open(t)
	mustAdd(t, bare, Document{ID: "x", Text: "red fox"})
	if _, err := bare.Search(ctx, "fox", WithCollapse(0.9)); !errors.Is(err, ErrNoEmbedder) {
		t.Errorf("collapse without an embedder: %v, want ErrNoEmbedder", err)
	}
}

// behaviourFind: Find lists whole documents in id order (or in the order of IDs), filtered
// by any Where (negations included) and where_document, with After, Offset and Limit.
func behaviourFind(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder())
	ctx := bctx(t)
	docs := zoo()
	mustAdd(t, m, docs...)
	c := m.Collection("")
	for _, tc := range []struct {
		name string
		o    FindOptions
		want []string
	}{
		{"all", FindOptions{}, []string{"z00", "z01", "z02", "z03", "z04", "z05", "z06", "z07", "z08", "z09"}},
		{"where", FindOptions{Where: Where{"kind": "bird"}}, []string{"z04", "z07", "z08"}},
		{"$ne", FindOptions{Where: Where{"legs": Where{"$ne": 4}}}, []string{"z04", "z07", "z08"}},
		{"$nin and $gt on a string", FindOptions{Where: Where{"$and": []any{Where{"kind": Where{"$nin": []any{"bird"}}}, Where{"kind": Where{"$gt": "a"}}}}},
			[]string{"z00", "z01", "z02", "z03", "z05", "z06", "z09"}},
		{"where_document", FindOptions{WhereDocument: WhereDocument{"$contains": "ecko"}}, []string{"z06"}},
		{"after", FindOptions{After: "z05", Limit: 2}, []string{"z06", "z07"}},
		{"offset", FindOptions{Offset: 1, Limit: 2, Where: Where{"night": true}}, []string{"z03", "z06"}},
		{"ids", FindOptions{IDs: []string{"z03", "nope", "z01", "z03"}}, []string{"z03", "z01"}},
		{"ids and where", FindOptions{IDs: []string{"z07", "z01", "z04"}, Where: Where{"kind": "bird"}, Limit: 1}, []string{"z07"}},
		{"none", FindOptions{Where: Where{"nokey": 1}}, []string{}},
	} {
		got, err := c.Find(ctx, tc.o)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		ids := make([]string, len(got))
		for i, d := range got {
			ids[i] = d.ID
		}
		if !reflect.DeepEqual(ids, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, ids, tc.want)
		}
	}
	got, err := c.Find(ctx, FindOptions{IDs: []string{"z00"}})
	if err != nil || len(got) != 1 || got[0].Text != docs[0].Text || got[0].Title != docs[0].Title || got[0].Source != docs[0].Source ||
		got[0].Metadata["kind"] != "mammal" || got[0].Embedding != nil {
		t.Errorf("Find(z00) = %+v, %v", got, err)
	}
	if _, err := m.Collection("nope").Find(ctx, FindOptions{}); !errors.Is(err, ErrCollectionNotFound) {
		t.Errorf("Find in a missing collection: %v", err)
	}
	if _, err := c.Find(ctx, FindOptions{Offset: -1}); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("negative offset: %v", err)
	}
	if _, err := c.Find(ctx, FindOptions{Where: Where{"$bad": 1}}); !errors.Is(err, ErrInvalidFilter) {
		t.Errorf("bad Where: %v", err)
	}
}

// behaviourCollectionMeta: a collection's metadata is set at creation (an existing
// collection keeps its own), replaced by SetCollectionMetadata, kept across a reopen, and
// leaves the documents alone; bad metadata and missing collections are refused.
func behaviourCollectionMeta(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder())
	ctx := bctx(t)
	meta := func(name string) map[string]any {
		t.Helper()
		md, err := m.CollectionMetadata(ctx, name)
		if err != nil {
			t.Fatalf("CollectionMetadata(%q): %v", name, err)
		}
		return md
	}
	if md := meta(""); len(md) != 0 {
		t.Errorf("default collection before a write: %v", md)
	}
	c, err := m.CreateCollection("docs", WithCollectionMetadata(map[string]any{"owner": "ana", "version": 2, "public": true}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"owner": "ana", "version": 2.0, "public": true}
	if md := meta("docs"); !reflect.DeepEqual(md, want) {
		t.Fatalf("metadata %v, want %v", md, want)
	}
	mustAdd(t, c, Document{ID: "d", Text: "kept document"})
	if _, err := m.CreateCollection("docs", WithCollectionMetadata(map[string]any{"x": 1})); err != nil {
		t.Fatal(err)
	}
	if md := meta("docs"); !reflect.DeepEqual(md, want) {
		t.Errorf("after a second CreateCollection: %v, want the first metadata %v", md, want)
	}
	if err := m.SetCollectionMetadata(ctx, "docs", map[string]any{"owner": "bo"}); err != nil {
		t.Fatal(err)
	}
	if md, err := c.Metadata(ctx); err != nil || !reflect.DeepEqual(md, map[string]any{"owner": "bo"}) {
		t.Errorf("replaced metadata %v, %v", md, err)
	}
	if err := m.SetCollectionMetadata(ctx, "docs", map[string]any{"bad": []any{1}}); !errors.Is(err, ErrInvalidMetadata) {
		t.Errorf("a list value: %v, want ErrInvalidMetadata", err)
	}
	if err := m.SetCollectionMetadata(ctx, "", map[string]any{"a": "b"}); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"get": func() error { _, err := m.CollectionMetadata(ctx, "nope"); return err }(),
		"set": m.SetCollectionMetadata(ctx, "nope", map[string]any{"a": 1}),
	} {
		if !errors.Is(err, ErrCollectionNotFound) {
			t.Errorf("%s of a missing collection: %v", name, err)
		}
	}
	m.Close()
	m2, err := so.reopen(t, m, behaviourEmbedder())
	if err != nil {
		t.Fatal(err)
	}
	m = m2
	if md := meta("docs"); !reflect.DeepEqual(md, map[string]any{"owner": "bo"}) {
		t.Errorf("after reopening: %v", md)
	}
	if md := meta(""); !reflect.DeepEqual(md, map[string]any{"a": "b"}) {
		t.Errorf("default collection after reopening: %v", md)
	}
	if err := m.SetCollectionMetadata(ctx, "docs", nil); err != nil {
		t.Fatal(err)
	}
	if md := meta("docs"); len(md) != 0 {
		t.Errorf("cleared metadata: %v", md)
	}
	if d, err := m.Collection("docs").Get(ctx, "d"); err != nil || d.Text != "kept document" {
		t.Errorf("the collection's document: %+v, %v", d, err)
	}
	if res, err := m.Collection("docs").Search(ctx, "kept", WithMode(BM25)); err != nil || len(res) != 1 {
		t.Errorf("search after the metadata changes: %v, %v", resultIDs(res), err)
	}
}

// lengthReranker scores a passage by its length: longer first (a reranker whose order
// differs from the retrievers').
type lengthReranker struct{}

func (lengthReranker) Score(_ context.Context, _ string, passages []string) ([]float32, error) {
	out := make([]float32, len(passages))
	for i, p := range passages {
		out[i] = float32(len(p)) / 10
	}
	return out, nil
}

// behaviourRerank: WithRerank reorders the fused candidates by the reranker's scores; the
// results carry the probability as score and Relevance and the rerank rank in Explain.
func behaviourRerank(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder(), WithReranker(lengthReranker{}))
	ctx := bctx(t)
	mustAdd(t, m,
		Document{ID: "short", Text: "otter"},
		Document{ID: "long", Text: "otter otter, and a long story about the river and its banks"},
		Document{ID: "mid", Text: "otter in the river"})
	for _, mode := range []Mode{BM25, Dense, Hybrid} {
		res, err := m.Search(ctx, "otter", WithMode(mode), WithRerank(10))
		if err != nil {
			t.Fatal(err)
		}
		if got := resultIDs(res); !reflect.DeepEqual(got, []string{"long", "mid", "short"}) {
			t.Errorf("%s: %v, want [long mid short]", mode, got)
			continue
		}
		for i, r := range res {
			x := r.Explain.Rerank
			if x == nil || x.Rank != i+1 || math.Abs(r.Score-x.Prob) > 1e-12 || r.Relevance != r.Score || r.Score <= 0.5 {
				t.Errorf("%s #%d %s: score %v relevance %v rerank %+v", mode, i, r.ID, r.Score, r.Relevance, x)
			}
		}
	}
}
