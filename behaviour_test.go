package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory/vectorstore"
)

// One behaviour suite, two backends (issue #41): each test takes a store opener and runs
// against the embedded store in the normal test run (TestBehaviourEmbedded) and against a
// three-node Weaviate cluster under the build tag weaviate (TestBehaviourCluster,
// cluster_behaviour_test.go). The tests assert what both backends promise: results that
// do not depend on how BM25 scores ties, filters, ids, collections and errors.

// storeOpener opens a store for one test: each call of open gives a new, empty store;
// reopen opens the same store again (after the first is closed) with other options.
type storeOpener interface {
	open(t *testing.T, opts ...Option) *Memory
	reopen(t *testing.T, m *Memory, opts ...Option) (*Memory, error)
}

// behaviourTests is the suite.
var behaviourTests = []struct {
	name string
	run  func(t *testing.T, so storeOpener)
}{
	{"AddGetRoundTrip", behaviourAddGet},
	{"DuplicateID", behaviourDuplicate},
	{"UpsertReplaces", behaviourUpsert},
	{"DeleteCountIDs", behaviourDelete},
	{"DeleteWhere", behaviourDeleteWhere},
	{"Collections", behaviourCollections},
	{"SearchModes", behaviourSearchModes},
	{"ExplainRRF", behaviourExplain},
	{"Filters", behaviourFilters},
	{"Chunking", behaviourChunking},
	{"Vectors", behaviourVectors},
	{"Errors", behaviourErrors},
	{"EmbedderMismatch", behaviourEmbedderMismatch},
	{"Closed", behaviourClosed},
}

// runBehaviour runs the suite on one backend.
func runBehaviour(t *testing.T, so storeOpener) {
	for _, bt := range behaviourTests {
		t.Run(bt.name, func(t *testing.T) { bt.run(t, so) })
	}
}

// TestBehaviourEmbedded runs the suite on the embedded store.
func TestBehaviourEmbedded(t *testing.T) {
	runBehaviour(t, embeddedOpener{})
}

type embeddedOpener struct{}

func (embeddedOpener) open(t *testing.T, opts ...Option) *Memory {
	t.Helper()
	m, err := Open(t.TempDir(), append([]Option{WithNoSync()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func (embeddedOpener) reopen(t *testing.T, m *Memory, opts ...Option) (*Memory, error) {
	m2, err := Open(m.Dir(), append([]Option{WithNoSync()}, opts...)...)
	if err == nil {
		t.Cleanup(func() { m2.Close() })
	}
	return m2, err
}

const behaviourDim = 64

func behaviourEmbedder() Option { return WithEmbedder(vectorstore.NewHashEmbedder(behaviourDim)) }

func bctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// zoo is a small corpus: each document has a word of its own and metadata of every type.
func zoo() []Document {
	animals := []string{"aardvark", "badger", "camel", "dingo", "emu", "ferret", "gecko", "heron", "ibis", "jackal"}
	docs := make([]Document, len(animals))
	for i, a := range animals {
		docs[i] = Document{
			ID:    fmt.Sprintf("z%02d", i),
			Title: "The " + a,
			Text:  fmt.Sprintf("The %s is an animal of the zoo. It eats food number %d.", a, i),
			Metadata: map[string]any{
				"kind":  []string{"mammal", "bird"}[boolInt(a == "emu" || a == "heron" || a == "ibis")],
				"legs":  float64([]int{4, 4, 4, 4, 2, 4, 4, 2, 2, 4}[i]),
				"n":     i,
				"night": i%3 == 0,
				"tags":  []any{"t" + fmt.Sprint(i%3), "all"},
			},
		}
	}
	docs[0].Source = "zoo/a.md"
	return docs
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func mustAdd(t *testing.T, c interface {
	Add(context.Context, ...Document) error
}, docs ...Document) {
	t.Helper()
	if err := c.Add(bctx(t), docs...); err != nil {
		t.Fatal(err)
	}
}

func resultIDs(rs []Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

func sortedIDs(rs []Result) []string {
	out := resultIDs(rs)
	sort.Strings(out)
	return out
}

func behaviourAddGet(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder())
	ctx := bctx(t)
	docs := zoo()
	mustAdd(t, m, docs...)
	for _, want := range docs {
		got, err := m.Get(ctx, want.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Title != want.Title || got.Text != want.Text || got.Source != want.Source {
			t.Errorf("%s: got %q/%q/%q, want %q/%q/%q", want.ID, got.Title, got.Text, got.Source, want.Title, want.Text, want.Source)
		}
		wantMeta := map[string]any{
			"kind": want.Metadata["kind"], "legs": want.Metadata["legs"], "n": float64(want.Metadata["n"].(int)),
			"night": want.Metadata["night"], "tags": want.Metadata["tags"],
		}
		if want.Source != "" {
			wantMeta["source"] = want.Source
		}
		if !reflect.DeepEqual(got.Metadata, wantMeta) {
			t.Errorf("%s: metadata %#v, want %#v", want.ID, got.Metadata, wantMeta)
		}
		if len(got.Embedding) != behaviourDim {
			t.Errorf("%s: embedding of %d values, want %d", want.ID, len(got.Embedding), behaviourDim)
		}
	}
	if _, err := m.Get(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of a missing id: %v, want ErrNotFound", err)
	}
	n, err := m.Count(ctx)
	if err != nil || n != len(docs) {
		t.Errorf("Count = %d, %v; want %d", n, err, len(docs))
	}
}

func behaviourDuplicate(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder())
	ctx := bctx(t)
	mustAdd(t, m, Document{ID: "a", Text: "first"})
	if err := m.Add(ctx, Document{ID: "b", Text: "new"}, Document{ID: "a", Text: "again"}); !errors.Is(err, ErrDuplicateID) {
		t.Fatalf("Add of a stored id: %v, want ErrDuplicateID", err)
	}
	if err := m.Add(ctx, Document{ID: "c", Text: "x"}, Document{ID: "c", Text: "y"}); !errors.Is(err, ErrDuplicateID) {
		t.Fatalf("Add of one id twice: %v, want ErrDuplicateID", err)
	}
	got, err := m.Get(ctx, "a")
	if err != nil || got.Text != "first" {
		t.Fatalf("Get(a) = %q, %v; want the first version", got.Text, err)
	}
	for _, id := range []string{"b", "c"} {
		if _, err := m.Get(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%s) after a refused Add: %v, want ErrNotFound", id, err)
		}
	}
}

func behaviourUpsert(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder())
	ctx := bctx(t)
	mustAdd(t, m, Document{ID: "a", Text: "old walrus text", Metadata: map[string]any{"v": 1}})
	if err := m.Upsert(ctx, Document{ID: "a", Text: "new narwhal text", Metadata: map[string]any{"v": 2}}, Document{ID: "b", Text: "other"}); err != nil {
		t.Fatal(err)
	}
	got, err := m.Get(ctx, "a")
	if err != nil || got.Text != "new narwhal text" || got.Metadata["v"] != float64(2) {
		t.Fatalf("Get(a) = %+v, %v", got, err)
	}
	if n, err := m.Count(ctx); err != nil || n != 2 {
		t.Fatalf("Count = %d, %v; want 2", n, err)
	}
	res, err := m.Search(ctx, "walrus", WithMode(BM25))
	if err != nil || len(res) != 0 {
		t.Errorf("search for the replaced text: %v, %v; want nothing", resultIDs(res), err)
	}
	res, err = m.Search(ctx, "narwhal", WithMode(BM25), WithWhere(Where{"v": 2}))
	if err != nil || !slices.Equal(resultIDs(res), []string{"a"}) {
		t.Errorf("search for the new text with its new metadata: %v, %v; want [a]", resultIDs(res), err)
	}
	res, err = m.Search(ctx, "narwhal", WithMode(BM25), WithWhere(Where{"v": 1}))
	if err != nil || len(res) != 0 {
		t.Errorf("search with the old metadata: %v, %v; want nothing", resultIDs(res), err)
	}
}

func behaviourDelete(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder())
	ctx := bctx(t)
	mustAdd(t, m, zoo()...)
	if err := m.Delete(ctx, "z03", "z07", "unknown", "z03"); err != nil {
		t.Fatal(err)
	}
	ids, err := m.Collection("").IDs(ctx)
	want := []string{"z00", "z01", "z02", "z04", "z05", "z06", "z08", "z09"}
	if err != nil || !slices.Equal(ids, want) {
		t.Fatalf("IDs = %v, %v; want %v", ids, err, want)
	}
	if n, err := m.Count(ctx); err != nil || n != len(want) {
		t.Fatalf("Count = %d, %v; want %d", n, err, len(want))
	}
	if _, err := m.Get(ctx, "z03"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of a deleted id: %v", err)
	}
	res, err := m.Search(ctx, "dingo", WithMode(BM25))
	if err != nil || len(res) != 0 {
		t.Errorf("search for a deleted document: %v, %v", resultIDs(res), err)
	}
	if err := m.Delete(ctx); err != nil {
		t.Errorf("Delete of nothing: %v", err)
	}
}

func behaviourDeleteWhere(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder())
	ctx := bctx(t)
	mustAdd(t, m, zoo()...)
	n, err := m.DeleteWhere(ctx, Where{"kind": "bird"})
	if err != nil || n != 3 {
		t.Fatalf("DeleteWhere(bird) = %d, %v; want 3", n, err)
	}
	if c, _ := m.Count(ctx); c != 7 {
		t.Errorf("Count after = %d, want 7", c)
	}
	n, err = m.DeleteWhere(ctx, Where{"legs": Where{"$gte": 4}, "n": Where{"$lt": 3}})
	if err != nil || n != 3 {
		t.Fatalf("DeleteWhere(legs >= 4, n < 3) = %d, %v; want 3", n, err)
	}
	ids, _ := m.Collection("").IDs(ctx)
	if want := []string{"z03", "z05", "z06", "z09"}; !slices.Equal(ids, want) {
		t.Errorf("IDs = %v, want %v", ids, want)
	}
	if n, err := m.DeleteWhere(ctx, Where{"nokey": "x"}); err != nil || n != 0 {
		t.Errorf("DeleteWhere on an unknown key = %d, %v; want 0", n, err)
	}
	if _, err := m.DeleteWhere(ctx, Where{}); !errors.Is(err, ErrInvalidFilter) {
		t.Errorf("DeleteWhere with no filter: %v, want ErrInvalidFilter", err)
	}
	if _, err := m.Collection("missing").DeleteWhere(ctx, Where{"a": "b"}); !errors.Is(err, ErrCollectionNotFound) {
		t.Errorf("DeleteWhere in a missing collection: %v, want ErrCollectionNotFound", err)
	}
}

func behaviourCollections(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder())
	ctx := bctx(t)
	names, err := m.Collections(ctx)
	if err != nil || len(names) != 0 {
		t.Fatalf("Collections of a new store = %v, %v", names, err)
	}
	if n, err := m.Count(ctx); err != nil || n != 0 {
		t.Errorf("Count of the unwritten default collection = %d, %v", n, err)
	}
	if res, err := m.Search(ctx, "anything"); err != nil || len(res) != 0 {
		t.Errorf("Search of the unwritten default collection = %v, %v", res, err)
	}
	if _, err := m.CreateCollection("Notes é/1"); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, m.Collection("zoo"), zoo()...)
	mustAdd(t, m, Document{ID: "d", Text: "default doc"})
	names, err = m.Collections(ctx)
	if want := []string{"Notes é/1", DefaultCollection, "zoo"}; err != nil || !slices.Equal(names, want) {
		t.Fatalf("Collections = %v, %v; want %v", names, err, want)
	}
	if n, err := m.Collection("Notes é/1").Count(ctx); err != nil || n != 0 {
		t.Errorf("Count of the new empty collection = %d, %v", n, err)
	}
	if n, _ := m.Collection("zoo").Count(ctx); n != 10 {
		t.Errorf("Count(zoo) = %d", n)
	}
	if n, _ := m.Count(ctx); n != 1 {
		t.Errorf("Count(default) = %d: collections must not share documents", n)
	}
	res, err := m.Collection("zoo").Search(ctx, "camel", WithMode(BM25))
	if err != nil || len(res) == 0 || res[0].ID != "z02" || res[0].Collection != "zoo" {
		t.Errorf("search in zoo = %+v, %v", res, err)
	}
	if _, err := m.GetCollection("zoo"); err != nil {
		t.Errorf("GetCollection(zoo): %v", err)
	}
	if err := m.DeleteCollection(ctx, "zoo"); err != nil {
		t.Fatal(err)
	}
	names, _ = m.Collections(ctx)
	if want := []string{"Notes é/1", DefaultCollection}; !slices.Equal(names, want) {
		t.Errorf("Collections after delete = %v, want %v", names, want)
	}
	for what, err := range map[string]error{
		"GetCollection": func() error { _, err := m.GetCollection("zoo"); return err }(),
		"Count":         func() error { _, err := m.Collection("zoo").Count(ctx); return err }(),
		"Search":        func() error { _, err := m.Collection("zoo").Search(ctx, "camel"); return err }(),
		"Delete":        m.DeleteCollection(ctx, "zoo"),
	} {
		if !errors.Is(err, ErrCollectionNotFound) {
			t.Errorf("%s of a deleted collection: %v, want ErrCollectionNotFound", what, err)
		}
	}
	if _, err := m.Collection("zoo").Get(ctx, "z01"); !errors.Is(err, ErrNotFound) || !errors.Is(err, ErrCollectionNotFound) {
		t.Errorf("Get in a deleted collection: %v, want ErrNotFound and ErrCollectionNotFound", err)
	}
	if err := m.Collection("").Delete(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.GetCollection(""); err != nil {
		t.Errorf("GetCollection of the default collection: %v", err)
	}
}

func behaviourSearchModes(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder())
	ctx := bctx(t)
	docs := zoo()
	mustAdd(t, m, docs...)
	for _, mode := range []Mode{BM25, Dense, Hybrid} {
		for i, d := range docs {
			q := strings.TrimPrefix(d.Title, "The ") // the animal's own word
			if mode == Dense {
				q = embedText(d.Title, d.Text) // the document's own vector
			}
			res, err := m.Search(ctx, q, WithMode(mode), TopK(3))
			if err != nil {
				t.Fatalf("%s %q: %v", mode, q, err)
			}
			if len(res) == 0 || res[0].ID != d.ID {
				t.Errorf("%s %q: top %v, want %s first", mode, q, resultIDs(res), d.ID)
				continue
			}
			r := res[0]
			if r.Explain.Mode != mode || r.Title != d.Title || r.Text != d.Text || r.Chunks != 1 || r.Collection != DefaultCollection {
				t.Errorf("%s %d: result %+v", mode, i, r)
			}
			if len(res) > 3 {
				t.Errorf("%s: %d results for TopK(3)", mode, len(res))
			}
		}
	}
	res, err := m.Search(ctx, "zoo animal", WithMode(BM25), TopK(100))
	if err != nil || len(res) != len(docs) {
		t.Errorf("BM25 for a term of every document: %d results, %v; want %d", len(res), err, len(docs))
	}
	res, err = m.Search(ctx, "xylophone", WithMode(BM25))
	if err != nil || len(res) != 0 {
		t.Errorf("BM25 for an unknown term: %v, %v", resultIDs(res), err)
	}
}

func behaviourExplain(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder())
	ctx := bctx(t)
	mustAdd(t, m, zoo()...)
	for _, k := range []float64{60, 5} {
		res, err := m.Search(ctx, "gecko food", WithRRFK(k), WithWeights(2, 1), TopK(10))
		if err != nil || len(res) == 0 {
			t.Fatalf("hybrid: %v, %v", res, err)
		}
		if res[0].ID != "z06" {
			t.Errorf("k %v: top %v, want z06 first", k, resultIDs(res))
		}
		for _, r := range res {
			ex := r.Explain
			want := 0.0
			if ex.BM25 != nil {
				want += 2 / (k + float64(ex.BM25.Rank))
			}
			if ex.Dense != nil {
				want += 1 / (k + float64(ex.Dense.Rank))
				if ex.Dense.Score < -1 || ex.Dense.Score > 1.0001 {
					t.Errorf("%s: dense score %v is not a cosine", r.ID, ex.Dense.Score)
				}
			}
			if ex.Mode != Hybrid || math.Abs(ex.Fused-want) > 1e-12 || r.Score != ex.Fused {
				t.Errorf("k %v, %s: fused %v (score %v), want weighted RRF %v from %+v %+v", k, r.ID, ex.Fused, r.Score, want, ex.BM25, ex.Dense)
			}
			if r.Relevance < 0 || r.Relevance > 1 {
				t.Errorf("%s: relevance %v", r.ID, r.Relevance)
			}
		}
		if res[0].Explain.BM25 == nil || res[0].Explain.BM25.Rank != 1 || res[0].Explain.BM25.Norm != 1 {
			t.Errorf("top result's BM25 stage %+v, want rank 1, norm 1", res[0].Explain.BM25)
		}
	}
	// A BM25 search's score is BM25's own: its results come in score order.
	res, err := m.Search(ctx, "food zoo gecko", WithMode(BM25), TopK(10))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(res); i++ {
		if res[i].Score > res[i-1].Score {
			t.Errorf("BM25 results out of score order: %v then %v", res[i-1].Score, res[i].Score)
		}
		if res[i].Explain.BM25 == nil || res[i].Explain.BM25.Rank != i+1 {
			t.Errorf("result %d: BM25 stage %+v", i, res[i].Explain.BM25)
		}
	}
}

func behaviourFilters(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder())
	ctx := bctx(t)
	mustAdd(t, m, zoo()...)
	cases := []struct {
		where Where
		want  []string
	}{
		{Where{"kind": "bird"}, []string{"z04", "z07", "z08"}},
		{Where{"legs": 2}, []string{"z04", "z07", "z08"}},
		{Where{"legs": Where{"$gt": 2}, "night": true}, []string{"z00", "z03", "z06", "z09"}},
		{Where{"n": Where{"$gte": 3, "$lte": 5}}, []string{"z03", "z04", "z05"}},
		{Where{"n": Where{"$lt": 2}}, []string{"z00", "z01"}},
		{Where{"night": false, "legs": 4}, []string{"z01", "z02", "z05"}},
		{Where{"tags": "t1"}, []string{"z01", "z04", "z07"}},
		{Where{"tags": Where{"$contains": "t2"}}, []string{"z02", "z05", "z08"}},
		{Where{"tags": Where{"$contains": []any{"t2", "all"}}}, []string{"z02", "z05", "z08"}},
		{Where{"tags": Where{"$contains": []any{"t2", "t1"}}}, []string{}},
		{Where{"tags": Where{"$in": []any{"t0", "nope"}}}, []string{"z00", "z03", "z06", "z09"}},
		{Where{"n": Where{"$in": []any{1, 8, "8"}}}, []string{"z01", "z08"}},
		{Where{"$or": []Where{{"n": 0}, {"kind": "bird", "n": Where{"$gt": 7}}}}, []string{"z00", "z08"}},
		{Where{"$and": []Where{{"legs": 4}, {"$or": []Where{{"n": 1}, {"n": 2}}}}}, []string{"z01", "z02"}},
		{Where{"source": "zoo/a.md"}, []string{"z00"}},
		{Where{"nokey": "x"}, []string{}},
		{Where{"kind": 4}, []string{}},
		{Where{"n": "1"}, []string{}},
	}
	for _, c := range cases {
		for _, mode := range []Mode{BM25, Dense, Hybrid} {
			res, err := m.Search(ctx, "zoo animal food", WithMode(mode), TopK(100), WithWhere(c.where))
			if err != nil {
				t.Errorf("%s %v: %v", mode, c.where, err)
				continue
			}
			if got := sortedIDs(res); !slices.Equal(got, c.want) {
				t.Errorf("%s %v: %v, want %v", mode, c.where, got, c.want)
			}
		}
	}
	if _, err := m.Search(ctx, "zoo", WithWhere(Where{"n": Where{"$bogus": 1}})); !errors.Is(err, ErrInvalidFilter) {
		t.Errorf("unknown operator: %v, want ErrInvalidFilter", err)
	}
}

// behaviourLongText is a markdown document long enough to be chunked, with a rare word
// in its last section.
func behaviourLongText() string {
	var b strings.Builder
	for s := 0; s < 6; s++ {
		fmt.Fprintf(&b, "# Section %d\n\n", s)
		for p := 0; p < 6; p++ {
			fmt.Fprintf(&b, "Paragraph %d of section %d talks about ordinary things at some length, filler words here. ", p, s)
			if s == 5 && p == 3 {
				b.WriteString("The quokka appears only here. ")
			}
			b.WriteString("\n\n")
		}
	}
	return b.String()
}

func behaviourChunking(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder())
	ctx := bctx(t)
	long := behaviourLongText()
	mustAdd(t, m, Document{ID: "long", Title: "Long", Text: long, Metadata: map[string]any{"k": "v"}}, Document{ID: "short", Text: "a short ordinary note"})
	got, err := m.Get(ctx, "long")
	if err != nil || got.Text != long || got.Embedding != nil {
		t.Fatalf("Get(long): text equal %v, embedding %d values, %v", got.Text == long, len(got.Embedding), err)
	}
	for _, mode := range []Mode{BM25, Hybrid} {
		res, err := m.Search(ctx, "quokka", WithMode(mode), TopK(5), WithWhere(Where{"k": "v"}))
		if err != nil || len(res) == 0 {
			t.Fatalf("%s: %v, %v", mode, res, err)
		}
		r := res[0]
		if r.ID != "long" || r.Chunks < 2 || r.ChunkIndex != r.Chunks-1 || !strings.Contains(r.Text, "quokka") ||
			long[r.Start:r.End] != r.Text || len(r.Headings) == 0 || r.Headings[0] != "Section 5" {
			t.Errorf("%s: result %s chunk %d/%d [%d,%d) headings %v text %q", mode, r.ID, r.ChunkIndex, r.Chunks, r.Start, r.End, r.Headings, r.Text)
		}
		for _, x := range res[1:] {
			if x.ID == "long" {
				t.Errorf("%s: document long returned twice", mode)
			}
		}
	}
	res, err := m.Search(ctx, "paragraph ordinary", WithMode(BM25), WithAllChunks(), TopK(100))
	if err != nil || len(res) < 3 {
		t.Fatalf("all chunks: %d results, %v", len(res), err)
	}
	chunks := map[int]bool{}
	for _, r := range res {
		if r.ID == "long" {
			chunks[r.ChunkIndex] = true
		}
	}
	if len(chunks) != res[0].Chunks && res[0].ID == "long" {
		t.Errorf("all chunks: %d distinct chunks of %d", len(chunks), res[0].Chunks)
	}
	// Upserting it short drops its chunks.
	if err := m.Upsert(ctx, Document{ID: "long", Text: "now short, no rare animal"}); err != nil {
		t.Fatal(err)
	}
	if res, err := m.Search(ctx, "quokka", WithMode(BM25)); err != nil || len(res) != 0 {
		t.Errorf("after the upsert: %v, %v", resultIDs(res), err)
	}
	if n, _ := m.Count(ctx); n != 2 {
		t.Errorf("Count = %d, want 2", n)
	}
}

func behaviourVectors(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder())
	ctx := bctx(t)
	mustAdd(t, m, Document{ID: "long", Title: "Long", Text: behaviourLongText()}, Document{ID: "short", Text: "a short note"})
	c := m.Collection("")
	short, err := c.Vectors(ctx, "short")
	if err != nil || len(short) != 1 {
		t.Fatalf("Vectors(short) = %d vectors, %v", len(short), err)
	}
	if d, _ := m.Get(ctx, "short"); !slices.Equal(d.Embedding, short[0]) {
		t.Errorf("Vectors(short) is not Get's embedding")
	}
	long, err := c.Vectors(ctx, "long")
	if err != nil || len(long) < 2 {
		t.Fatalf("Vectors(long) = %d vectors, %v", len(long), err)
	}
	res, err := m.Search(ctx, "quokka", WithMode(BM25), TopK(1))
	if err != nil || len(res) != 1 || res[0].Chunks != len(long) {
		t.Fatalf("the long document's chunks: %+v, %v; %d vectors", res, err, len(long))
	}
	want, err := vectorstore.NewHashEmbedder(behaviourDim).Embed(ctx, []string{"Long\n" + strings.Join(res[0].Headings, " > ") + "\n" + res[0].Text})
	if err != nil {
		t.Fatal(err)
	}
	if got := long[res[0].ChunkIndex]; len(got) != behaviourDim || math.Abs(vecmathCos(got, want[0])-1) > 1e-5 {
		t.Errorf("chunk %d's vector is not its text's embedding", res[0].ChunkIndex)
	}
	if _, err := c.Vectors(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Vectors of a missing id: %v, want ErrNotFound", err)
	}
}

func vecmathCos(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}

func behaviourErrors(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder())
	ctx := bctx(t)
	mustAdd(t, m, zoo()...)
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"empty id", m.Add(ctx, Document{Text: "x"}), ErrEmptyID},
		{"empty text", m.Add(ctx, Document{ID: "e"}), ErrEmptyText},
		{"bad metadata", m.Add(ctx, Document{ID: "e", Text: "x", Metadata: map[string]any{"k": struct{}{}}}), ErrInvalidMetadata},
		{"bad vector", m.Add(ctx, Document{ID: "e", Text: "x", Embedding: []float32{1, 2}}), ErrBadVector},
		{"invalid collection", m.Collection("a\x01b").Add(ctx, Document{ID: "e", Text: "x"}), ErrInvalidCollection},
		{"empty query", func() error { _, err := m.Search(ctx, "  "); return err }(), ErrInvalidOption},
		{"bad mode", func() error { _, err := m.Search(ctx, "x", WithMode("fuzzy")); return err }(), ErrInvalidOption},
		{"negative k", func() error { _, err := m.Search(ctx, "x", TopK(-1)); return err }(), ErrInvalidOption},
		{"bad filter", func() error { _, err := m.Search(ctx, "x", WithWhere(Where{"$and": 3})); return err }(), ErrInvalidFilter},
		{"no reranker", func() error { _, err := m.Search(ctx, "x", WithRerank(5)); return err }(), ErrNoReranker},
		{"missing collection", func() error { _, err := m.Collection("nope").Search(ctx, "x"); return err }(), ErrCollectionNotFound},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	if n, _ := m.Count(ctx); n != 10 {
		t.Errorf("Count after refused writes = %d, want 10", n)
	}
	// A store without an embedder: dense search is ErrNoEmbedder, hybrid degrades to BM25.
	b := so.open(t)
	mustAdd(t, b, Document{ID: "x", Text: "plain walrus"})
	if _, err := b.Search(ctx, "walrus", WithMode(Dense)); !errors.Is(err, ErrNoEmbedder) {
		t.Errorf("dense without an embedder: %v, want ErrNoEmbedder", err)
	}
	res, err := b.Search(ctx, "walrus")
	if err != nil || len(res) != 1 || res[0].Explain.Mode != BM25 || len(res[0].Explain.Notes) == 0 {
		t.Errorf("hybrid without an embedder: %+v, %v; want BM25 with a note", res, err)
	}
}

func behaviourEmbedderMismatch(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder())
	mustAdd(t, m, Document{ID: "a", Text: "text"})
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := so.reopen(t, m, WithEmbedder(vectorstore.NewHashEmbedder(behaviourDim+1))); !errors.Is(err, ErrEmbedderMismatch) {
		t.Fatalf("reopen with another embedder: %v, want ErrEmbedderMismatch", err)
	}
	m2, err := so.reopen(t, m, behaviourEmbedder())
	if err != nil {
		t.Fatal(err)
	}
	if d, err := m2.Get(bctx(t), "a"); err != nil || d.Text != "text" {
		t.Errorf("Get after reopen: %+v, %v", d, err)
	}
	if err := m2.Close(); err != nil {
		t.Fatal(err)
	}
	m3, err := so.reopen(t, m, WithoutEmbedderResolver())
	if err != nil {
		t.Fatal(err)
	}
	if id, dim, ok := m3.StoredEmbedder(); !ok || dim != behaviourDim || id != vectorstore.NewHashEmbedder(behaviourDim).ID() {
		t.Errorf("StoredEmbedder = %q, %d, %v", id, dim, ok)
	}
	if err := m3.Add(bctx(t), Document{ID: "b", Text: "more"}); !errors.Is(err, ErrEmbedderNeeded) {
		t.Errorf("write without the recorded embedder: %v, want ErrEmbedderNeeded", err)
	}
}

func behaviourClosed(t *testing.T, so storeOpener) {
	m := so.open(t, behaviourEmbedder())
	ctx := bctx(t)
	mustAdd(t, m, Document{ID: "a", Text: "text"})
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Add(ctx, Document{ID: "b", Text: "x"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close: %v", err)
	}
	if _, err := m.Search(ctx, "text"); !errors.Is(err, ErrClosed) {
		t.Errorf("Search after Close: %v", err)
	}
	if _, err := m.Collections(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Collections after Close: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
