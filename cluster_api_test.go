//go:build weaviate

package memory

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/weaviate"
	"github.com/agentmem/memory/sop"
)

// The cluster's own tests of what it builds from its searches and writes (see
// behaviour_api_test.go for the suite both backends run).

func init() {
	clusterTests = append(clusterTests, []struct {
		name string
		run  func(t *testing.T, co clusterOpener)
	}{
		{"ReplaceOrder", clusterReplaceOrder},
		{"MultiCollectionParity", clusterMultiParity},
		{"SOPsShared", clusterSOPsShared},
		{"WhereDocumentPaths", clusterWhereDocumentPaths},
		{"LargeRecords", clusterLargeRecords},
	}...)
}

// errCrash stands for a crash of the client between a replacement's steps.
var errCrash = errors.New("crash")

// clusterReplaceOrder: a replacement stopped between its upsert and its deletes (as by a
// crash) leaves the old and the new documents, never neither; run again it completes. A
// Where Weaviate cannot express is refused before anything is written.
func clusterReplaceOrder(t *testing.T, co clusterOpener) {
	m := co.open(t, behaviourEmbedder())
	ctx := bctx(t)
	c := m.Collection("")
	mustAdd(t, m, sourced("a.md", 3, "apple")...)
	replaceHook = func() error { return errCrash }
	_, err := m.ReplaceSource(ctx, "a.md", Document{ID: "a.md-5", Text: "new"})
	replaceHook = nil
	if !errors.Is(err, errCrash) {
		t.Fatalf("ReplaceSource stopped after its upsert: %v", err)
	}
	checkIDs(t, c, "a.md-0", "a.md-1", "a.md-2", "a.md-5")
	r, err := c.BeginReplace(Where{"source": "a.md"})
	if err != nil {
		t.Fatal(err)
	}
	replaceHook = func() error { return errCrash }
	_, err = r.Commit(ctx, Document{ID: "a.md-6", Text: "newer", Source: "a.md"})
	replaceHook = nil
	if !errors.Is(err, errCrash) {
		t.Fatalf("Commit stopped after its upsert: %v", err)
	}
	checkIDs(t, c, "a.md-0", "a.md-1", "a.md-2", "a.md-5", "a.md-6")
	if n, err := r.Commit(ctx, Document{ID: "a.md-6", Text: "newer", Source: "a.md"}); err != nil || n != 4 {
		t.Fatalf("Commit again = %d, %v; want 4 removed", n, err)
	}
	checkIDs(t, c, "a.md-6")
	// $ne matches documents without the key, which Weaviate's filters cannot say.
	for name, call := range map[string]func() error{
		"Replace": func() error {
			_, err := m.Replace(ctx, Where{"kind": Where{"$ne": "x"}}, Document{ID: "w", Text: "w"})
			return err
		},
		"BeginReplace": func() error { _, err := c.BeginReplace(Where{"kind": Where{"$nin": []any{"x"}}}); return err },
	} {
		if err := call(); !errors.Is(err, ErrNotSupported) {
			t.Errorf("%s with $ne/$nin: %v, want ErrNotSupported", name, err)
		}
	}
	checkIDs(t, c, "a.md-6")
}

// clusterMultiParity: a multi-collection search gives the same results, scores and
// collection weights on the cluster as in the embedded store (dense and hybrid, whose
// per-collection lists are the same on both).
func clusterMultiParity(t *testing.T, co clusterOpener) {
	ctx := bctx(t)
	emb := embeddedOpener{}.open(t, behaviourEmbedder())
	cl := co.open(t, behaviourEmbedder())
	for _, m := range []*Memory{emb, cl} {
		mustAdd(t, m.Collection("animals"), zoo()...)
		mustAdd(t, m.Collection("garden"), plants()...)
	}
	w := map[string]float64{"animals": 2, "garden": 1}
	for _, opts := range [][]SearchOption{
		{WithMode(Dense), InCollections(w), TopK(12)},
		{WithMode(Dense), InCollections(w), WithWhere(Where{"n": Where{"$lt": 3}})},
		{WithMode(Dense), WithCascade(0.3, "garden", "animals"), TopK(6)},
	} {
		e, err1 := emb.Search(ctx, "a bird of the garden", opts...)
		c, err2 := cl.Search(ctx, "a bird of the garden", opts...)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if len(e) == 0 || len(e) != len(c) {
			t.Errorf("embedded %v, cluster %v", resultIDs(e), resultIDs(c))
			continue
		}
		// Position by position: the same collection, score, weight, step and cosine, and
		// the same id unless another result of that collection has the same cosine (ties
		// may come back in another order).
		for i := range e {
			ec, cc := e[i].Explain.Cosine, c[i].Explain.Cosine
			if e[i].Collection != c[i].Collection || math.Abs(e[i].Score-c[i].Score) > 1e-6 || ec == nil || cc == nil || math.Abs(*ec-*cc) > 1e-5 ||
				e[i].Explain.CollectionWeight != c[i].Explain.CollectionWeight || e[i].Explain.Cascade != c[i].Explain.Cascade {
				t.Errorf("#%d %s: embedded %s %v %v %d, cluster %s %s %v %v %d", i, e[i].ID, e[i].Collection, e[i].Score,
					e[i].Explain.CollectionWeight, e[i].Explain.Cascade, c[i].ID, c[i].Collection, c[i].Score, c[i].Explain.CollectionWeight, c[i].Explain.Cascade)
				continue
			}
			tied := false
			for j := range e {
				if j != i && e[j].Collection == e[i].Collection && e[j].Explain.Cosine != nil && math.Abs(*e[j].Explain.Cosine-*ec) < 1e-6 {
					tied = true
				}
			}
			if !tied && e[i].ID != c[i].ID {
				t.Errorf("#%d: embedded %s, cluster %s (cosine %v, no tie)", i, e[i].ID, c[i].ID, *ec)
			}
		}
	}
}

// clusterSOPsShared: two clients of one cluster and prefix, open at once, share the
// procedures one of them saves; their class is no collection, and collections whose names
// look like it keep their own classes.
func clusterSOPsShared(t *testing.T, co clusterOpener) {
	addr := co.newAddr(t)
	ctx := bctx(t)
	a, err := Open(addr, WithConsistency(testConsistency))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(addr, WithConsistency(testConsistency))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, col := range []string{"sops", "_SOPs", "SOPs"} {
		mustAdd(t, a.Collection(col), Document{ID: "d", Text: "collection " + col})
	}
	p := sop.Procedure{Name: "rollback", Trigger: sop.Triggers{"rollback"}, Steps: []sop.Step{{Action: "revert the deploy"}}}
	if err := a.SOPs().Add(p); err != nil {
		t.Fatal(err)
	}
	if err := a.SaveSOPs(); err != nil {
		t.Fatal(err)
	}
	if got, err := b.SOPs().Get("rollback"); err != nil || got.Steps[0].Action != "revert the deploy" {
		t.Errorf("the other client's procedure: %+v, %v", got, err)
	}
	cols, err := b.Collections(ctx)
	if err != nil || !reflect.DeepEqual(cols, []string{"SOPs", "_SOPs", "sops"}) {
		t.Errorf("Collections = %v, %v; want the three collections only", cols, err)
	}
	for _, col := range cols {
		if d, err := b.Collection(col).Get(ctx, "d"); err != nil || d.Text != "collection "+col {
			t.Errorf("collection %s: %+v, %v", col, d, err)
		}
	}
}

// clusterWhereDocumentPaths: where_document gives the same results whether the documents
// it leaves go to Weaviate as a filter of ids or are filtered here from longer lists; a
// list that would need more candidates than Weaviate returns is ErrNotSupported naming it.
func clusterWhereDocumentPaths(t *testing.T, co clusterOpener) {
	m := co.open(t, behaviourEmbedder())
	ctx := bctx(t)
	docs := zoo()
	for i := 0; i < 40; i++ {
		docs = append(docs, Document{ID: fmt.Sprintf("f%02d", i), Text: fmt.Sprintf("filler text of the zoo, animal %d%s", i, strings.Repeat(" pad", i))}) // lengths apart: no BM25 ties
	}
	mustAdd(t, m, docs...)
	defer func(ids, max int) { maxScopeIDs, clusterMaxResults = ids, max }(maxScopeIDs, clusterMaxResults)
	for _, wd := range []WhereDocument{{"$contains": "food number"}, {"$contains": "ecko"}, {"$regex": "animal [13]"}} {
		for _, mode := range []Mode{BM25, Dense, Hybrid} {
			opts := []SearchOption{WithMode(mode), WithWhereDocument(wd), TopK(5), WithWindow(5)}
			maxScopeIDs = 2000
			a, err1 := m.Search(ctx, "animal of the zoo", opts...)
			maxScopeIDs = 0
			b, err2 := m.Search(ctx, "animal of the zoo", opts...)
			if err1 != nil || err2 != nil || len(a) == 0 {
				t.Fatalf("%v %s: %v, %v, %v", wd, mode, resultIDs(a), err1, err2)
			}
			if !reflect.DeepEqual(resultIDs(a), resultIDs(b)) {
				t.Errorf("%v %s: ids in the filter %v, filtered here %v", wd, mode, resultIDs(a), resultIDs(b))
				continue
			}
			for i := range a {
				if math.Abs(a[i].Score-b[i].Score) > 1e-12 {
					t.Errorf("%v %s #%d: scores %v, %v", wd, mode, i, a[i].Score, b[i].Score)
				}
			}
		}
	}
	maxScopeIDs, clusterMaxResults = 0, 4
	_, err := m.Search(ctx, "filler text", WithMode(Dense), WithWhereDocument(WhereDocument{"$contains": "ecko"}), TopK(3))
	if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "WithWhereDocument") {
		t.Errorf("a scope beyond Weaviate's results: %v, want ErrNotSupported naming WithWhereDocument", err)
	}
}

// clusterLargeRecords: the scans that read records (Find, Sources, where_document) ask
// again in smaller pages when a page's answer is over the client's cap on a body.
func clusterLargeRecords(t *testing.T, co clusterOpener) {
	m := co.open(t)
	ctx := bctx(t)
	var docs []Document
	for i := 0; i < 20; i++ {
		docs = append(docs, Document{ID: fmt.Sprintf("big%02d", i), Text: fmt.Sprintf("word%d ", i) + strings.Repeat("lorem ipsum ", 500),
			Source: fmt.Sprintf("s%d", i%3)})
	}
	mustAdd(t, m, docs...)
	nodes, _, _ := parseClusterAddress(m.Dir())
	small, err := weaviate.New(ctx, weaviate.Config{Endpoints: nodes, MaxBody: 40000}) // about 6 records a page
	if err != nil {
		t.Fatal(err)
	}
	m.cluster.wc = small
	got, err := m.Collection("").Find(ctx, FindOptions{})
	if err != nil || len(got) != 20 {
		t.Fatalf("Find: %d documents, %v; want 20", len(got), err)
	}
	if srcs, err := m.Collection("").Sources(ctx); err != nil || !reflect.DeepEqual(srcs, []string{"s0", "s1", "s2"}) {
		t.Errorf("Sources = %v, %v", srcs, err)
	}
	res, err := m.Search(ctx, "lorem", WithWhereDocument(WhereDocument{"$contains": "word7 "}))
	if err != nil || !reflect.DeepEqual(resultIDs(res), []string{"big07"}) {
		t.Errorf("where_document: %v, %v", resultIDs(res), err)
	}
}
