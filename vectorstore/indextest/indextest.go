// Package indextest checks that an implementation of vectorstore.Index keeps the
// interface's contract, as testing/fstest does for file systems. Every backend of this
// module runs it from its tests, and a third party's backend (one registered with
// vectorstore.RegisterIndex) can run it from its own:
//
//	func TestConformance(t *testing.T) {
//		indextest.Run(t, func(t *testing.T, cfg vectorstore.IndexConfig) vectorstore.Index {
//			idx, err := mybackend.New(cfg)
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { idx.Close() })
//			return idx
//		}, indextest.Options{})
//	}
//
// The checks: exact top k against a float64 brute force (dimensions 1 to 384, filters,
// k past Len), filters, deletes and re-adds, bad input refused with the package's typed
// errors and no change, zero vectors and ties (ordered by id), no aliasing of the caller's
// slices, searches concurrent with a writer, and the inner-product metric.
package indextest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"

	"github.com/agentmem/memory/internal/vectest"
	"github.com/agentmem/memory/vectorstore"
)

// New returns an empty index for cfg (its Dim and Metric set; the other fields zero),
// closed by the caller's t.Cleanup. It fails t when the backend refuses cfg.
type New func(t *testing.T, cfg vectorstore.IndexConfig) vectorstore.Index

// Options says what the backend under test does; the zero value is an exact index of both
// metrics.
type Options struct {
	// CosineOnly skips the inner-product check (a backend that refuses that metric).
	CosineOnly bool
	// NoConcurrency skips searches run while a writer adds and deletes.
	NoConcurrency bool
}

// Run runs every check as a subtest of t.
func Run(t *testing.T, newIndex New, o Options) {
	checks := []struct {
		name string
		run  func(*testing.T, New, Options)
		skip bool
	}{
		{"MatchesBruteForce", checkMatchesBruteForce, false},
		{"Filter", checkFilter, false},
		{"DeleteAndReAdd", checkDeleteAndReAdd, false},
		{"BadInput", checkBadInput, false},
		{"ZeroVectorsAndTies", checkZeroVectorsAndTies, false},
		{"DoesNotAliasInput", checkDoesNotAliasInput, false},
		{"ConcurrentUse", checkConcurrentUse, o.NoConcurrency},
		{"InnerProduct", checkInnerProduct, o.CosineOnly},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if c.skip {
				t.Skip("the backend does not claim it (Options)")
			}
			c.run(t, newIndex, o)
		})
	}
}

// refHit is a brute-force float64 result.
type refHit struct {
	id    string
	score float64
}

// bruteForce ranks every accepted vector by float64 cosine (or inner product) with q.
func bruteForce(ids []string, vecs [][]float32, q []float32, metric vectorstore.Metric, f vectorstore.Filter) []refHit {
	norm := func(v []float32) float64 {
		s := 0.0
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		return math.Sqrt(s)
	}
	nq := norm(q)
	var out []refHit
	for i, v := range vecs {
		if f != nil && !f(ids[i]) {
			continue
		}
		d := 0.0
		for j := range v {
			d += float64(v[j]) * float64(q[j])
		}
		if metric != vectorstore.InnerProduct {
			if nv := norm(v); nv == 0 || nq == 0 {
				d = 0
			} else {
				d /= nv * nq
			}
		}
		out = append(out, refHit{ids[i], d})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return out[i].id < out[j].id
	})
	return out
}

// checkAgainstRef asserts that got is the exact top k of ref, up to float32 rounding:
// the same length, each score within tol of the reference score at its position and of
// its own id's true score, no duplicates, and no id below the reference cut-off.
func checkAgainstRef(t *testing.T, got []vectorstore.Hit, ref []refHit, k int, tol float64) {
	t.Helper()
	want := min(k, len(ref))
	if len(got) != want {
		t.Fatalf("got %d hits, want %d", len(got), want)
	}
	truth := make(map[string]float64, len(ref))
	for _, r := range ref {
		truth[r.id] = r.score
	}
	seen := map[string]bool{}
	for i, h := range got {
		ts, ok := truth[h.ID]
		if !ok {
			t.Fatalf("hit %d: id %q is not an accepted id", i, h.ID)
		}
		if seen[h.ID] {
			t.Fatalf("hit %d: duplicate id %q", i, h.ID)
		}
		seen[h.ID] = true
		if math.Abs(float64(h.Score)-ts) > tol {
			t.Fatalf("hit %d %q: score %v, true score %v", i, h.ID, h.Score, ts)
		}
		if math.Abs(float64(h.Score)-ref[i].score) > tol {
			t.Fatalf("hit %d: %q score %v, reference has %q %v there", i, h.ID, h.Score, ref[i].id, ref[i].score)
		}
		if i > 0 && got[i-1].Score < h.Score {
			t.Fatalf("hits not sorted at %d: %v < %v", i, got[i-1].Score, h.Score)
		}
	}
}

func checkMatchesBruteForce(t *testing.T, newIndex New, o Options) {
	for _, dim := range []int{1, 7, 40, 384} {
		n := 2500
		if dim == 384 {
			n = 700
		}
		rng := rand.New(rand.NewPCG(uint64(dim), 7))
		ids, vecs := vectest.IDs(n), vectest.RandVecs(rng, n, dim)
		queries := vectest.RandVecs(rng, 4, dim)
		filters := map[string]vectorstore.Filter{
			"nil":       nil,
			"one-in-3":  func(id string) bool { return id[len(id)-1]%3 == 0 },
			"selective": func(id string) bool { return id[len(id)-2:] == "17" },
		}
		t.Run(fmt.Sprintf("dim%d", dim), func(t *testing.T) {
			idx := newIndex(t, vectorstore.IndexConfig{Dim: dim, Metric: vectorstore.Cosine})
			// Add in a few batches.
			for lo := 0; lo < n; lo += 1000 {
				hi := min(lo+1000, n)
				if err := idx.Add(context.Background(), ids[lo:hi], vecs[lo:hi]); err != nil {
					t.Fatal(err)
				}
			}
			if idx.Len() != n {
				t.Fatalf("Len = %d, want %d", idx.Len(), n)
			}
			for fname, f := range filters {
				for qi, q := range queries {
					ref := bruteForce(ids, vecs, q, vectorstore.Cosine, f)
					for _, k := range []int{1, 10, 100} {
						got, err := idx.Search(context.Background(), q, k, f)
						if err != nil {
							t.Fatal(err)
						}
						t.Run(fmt.Sprintf("%s/q%d/k%d", fname, qi, k), func(t *testing.T) {
							checkAgainstRef(t, got, ref, k, 1e-5)
							if dim == 1 { // scores are exactly ±1: massive ties, ordered by id
								for i, h := range got {
									if h.ID != ref[i].id {
										t.Fatalf("hit %d = %q, want %q (ties are ordered by id)", i, h.ID, ref[i].id)
									}
								}
							}
						})
					}
				}
			}
		})
	}
}

func checkFilter(t *testing.T, newIndex New, o Options) {
	const n, dim = 600, 16
	rng := rand.New(rand.NewPCG(5, 5))
	ids, vecs := vectest.IDs(n), vectest.RandVecs(rng, n, dim)
	accept := func(id string) bool { return id[len(id)-1] == '3' } // 60 ids
	q := vectest.RandVecs(rng, 1, dim)[0]
	idx := newIndex(t, vectorstore.IndexConfig{Dim: dim, Metric: vectorstore.Cosine})
	if err := idx.Add(context.Background(), ids, vecs); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		k, want int
		f       vectorstore.Filter
	}{
		{k: 10, want: 10, f: accept},
		{k: 60, want: 60, f: accept},
		{k: 100, want: 60, f: accept},
		{k: 5, want: 0, f: func(string) bool { return false }},
		{k: 5, want: 1, f: func(id string) bool { return id == "doc-00599" }},
	} {
		got, err := idx.Search(context.Background(), q, tc.k, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != tc.want {
			t.Fatalf("k=%d: %d hits, want %d", tc.k, len(got), tc.want)
		}
		for _, h := range got {
			if !tc.f(h.ID) {
				t.Fatalf("k=%d: rejected id %q returned", tc.k, h.ID)
			}
		}
		checkAgainstRef(t, got, bruteForce(ids, vecs, q, vectorstore.Cosine, tc.f), tc.k, 1e-5)
	}
}

func checkDeleteAndReAdd(t *testing.T, newIndex New, o Options) {
	const n, dim = 300, 8
	rng := rand.New(rand.NewPCG(9, 9))
	ids, vecs := vectest.IDs(n), vectest.RandVecs(rng, n, dim)
	ctx := context.Background()
	idx := newIndex(t, vectorstore.IndexConfig{Dim: dim, Metric: vectorstore.Cosine})
	if err := idx.Add(ctx, ids, vecs); err != nil {
		t.Fatal(err)
	}
	// Delete every third id (including the first and last slots) and an unknown one.
	var gone []string
	live := map[string][]float32{}
	for i, id := range ids {
		if i%3 == 0 || i == n-1 {
			gone = append(gone, id)
		} else {
			live[id] = vecs[i]
		}
	}
	if err := idx.Delete(ctx, append(gone, "no-such-id")...); err != nil {
		t.Fatal(err)
	}
	if idx.Len() != len(live) {
		t.Fatalf("Len after delete = %d, want %d", idx.Len(), len(live))
	}
	check := func() {
		t.Helper()
		var lids []string
		var lvecs [][]float32
		for id, v := range live {
			lids, lvecs = append(lids, id), append(lvecs, v)
		}
		for range 5 {
			q := vectest.RandVecs(rng, 1, dim)[0]
			got, err := idx.Search(ctx, q, n, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkAgainstRef(t, got, bruteForce(lids, lvecs, q, vectorstore.Cosine, nil), n, 1e-5)
		}
	}
	check()
	// Re-add a deleted id with a new vector and replace a live one.
	nv := vectest.RandVecs(rng, 2, dim)
	if err := idx.Add(ctx, []string{gone[0], ids[1]}, nv); err != nil {
		t.Fatal(err)
	}
	live[gone[0]], live[ids[1]] = nv[0], nv[1]
	if idx.Len() != len(live) {
		t.Fatalf("Len after re-add = %d, want %d", idx.Len(), len(live))
	}
	check()
	// The re-added vector is its own nearest neighbour.
	got, err := idx.Search(ctx, nv[0], 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != gone[0] || math.Abs(float64(got[0].Score)-1) > 1e-5 {
		t.Fatalf("search for the re-added vector = %+v", got)
	}
	// Delete everything.
	var all []string
	for id := range live {
		all = append(all, id)
	}
	if err := idx.Delete(ctx, all...); err != nil {
		t.Fatal(err)
	}
	if idx.Len() != 0 {
		t.Fatalf("Len after deleting all = %d", idx.Len())
	}
	if got, err := idx.Search(ctx, nv[0], 3, nil); err != nil || len(got) != 0 {
		t.Fatalf("search of an empty index = %v, %v", got, err)
	}
}

func checkBadInput(t *testing.T, newIndex New, o Options) {
	const dim = 4
	ctx := context.Background()
	good := [][]float32{{1, 0, 0, 0}, {0, 1, 0, 0}}
	idx := newIndex(t, vectorstore.IndexConfig{Dim: dim, Metric: vectorstore.Cosine})
	if err := idx.Add(ctx, []string{"a", "b"}, good); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ids  []string
		vecs [][]float32
		want error
	}{
		{"short vector", []string{"c", "d"}, [][]float32{{1, 2, 3, 4}, {1, 2, 3}}, vectorstore.ErrDimMismatch},
		{"long vector", []string{"c"}, [][]float32{{1, 2, 3, 4, 5}}, vectorstore.ErrDimMismatch},
		{"count mismatch", []string{"c", "d"}, [][]float32{{1, 2, 3, 4}}, vectorstore.ErrBadBatch},
		{"empty id", []string{""}, [][]float32{{1, 2, 3, 4}}, vectorstore.ErrBadBatch},
		{"NaN", []string{"c"}, [][]float32{{1, float32(math.NaN()), 3, 4}}, vectorstore.ErrNonFinite},
		{"Inf", []string{"c"}, [][]float32{{1, float32(math.Inf(-1)), 3, 4}}, vectorstore.ErrNonFinite},
	} {
		if err := idx.Add(ctx, tc.ids, tc.vecs); !errors.Is(err, tc.want) {
			t.Errorf("Add %s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	if idx.Len() != 2 {
		t.Fatalf("a rejected batch changed the index: Len = %d", idx.Len())
	}
	if _, err := idx.Search(ctx, []float32{1, 2, 3}, 1, nil); !errors.Is(err, vectorstore.ErrDimMismatch) {
		t.Errorf("Search with a short query: err = %v, want vectorstore.ErrDimMismatch", err)
	}
	if _, err := idx.Search(ctx, []float32{1, 2, 3, float32(math.NaN())}, 1, nil); !errors.Is(err, vectorstore.ErrNonFinite) {
		t.Errorf("Search with a NaN query: err = %v, want vectorstore.ErrNonFinite", err)
	}
	// k beyond Len returns everything; k <= 0 returns nothing.
	got, err := idx.Search(ctx, []float32{1, 1, 0, 0}, 10, nil)
	if err != nil || len(got) != 2 {
		t.Fatalf("k > Len: %v, %v", got, err)
	}
	if got[0].ID != "a" || got[1].ID != "b" || got[0].Score != got[1].Score {
		t.Errorf("tied hits not ordered by id: %+v", got)
	}
	for _, k := range []int{0, -1} {
		if got, err := idx.Search(ctx, []float32{1, 1, 0, 0}, k, nil); err != nil || len(got) != 0 {
			t.Errorf("k=%d: %v, %v", k, got, err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := idx.Search(cctx, []float32{1, 1, 0, 0}, 1, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Search with a cancelled context: err = %v", err)
	}
	if err := idx.Add(cctx, []string{"z"}, [][]float32{{1, 2, 3, 4}}); !errors.Is(err, context.Canceled) {
		t.Errorf("Add with a cancelled context: err = %v", err)
	}
}

func checkZeroVectorsAndTies(t *testing.T, newIndex New, o Options) {
	const dim = 3
	ctx := context.Background()
	idx := newIndex(t, vectorstore.IndexConfig{Dim: dim, Metric: vectorstore.Cosine})
	ids := []string{"e", "d", "c", "b", "a", "z"}
	vecs := [][]float32{{1, 0, 0}, {2, 0, 0}, {0, 1, 0}, {0, 0, 0}, {3, 0, 0}, {-1, 0, 0}}
	if err := idx.Add(ctx, ids, vecs); err != nil {
		t.Fatal(err)
	}
	got, err := idx.Search(ctx, []float32{1, 0, 0}, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []vectorstore.Hit{{ID: "a", Score: 1}, {ID: "d", Score: 1}, {ID: "e", Score: 1}, {ID: "b", Score: 0}, {ID: "c", Score: 0}, {ID: "z", Score: -1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("search = %v\nwant     %v", got, want)
	}
	// The cut-off inside a tie keeps the smallest ids.
	got, err = idx.Search(ctx, []float32{1, 0, 0}, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want[:2]) {
		t.Errorf("top 2 = %v, want %v", got, want[:2])
	}
	// A zero query scores everything 0.
	got, err = idx.Search(ctx, []float32{0, 0, 0}, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint([]vectorstore.Hit{{ID: "a", Score: 0}, {ID: "b", Score: 0}, {ID: "c", Score: 0}}) {
		t.Errorf("zero query = %v", got)
	}
	// Replacing a zero vector with a real one and back.
	if err := idx.Add(ctx, []string{"b"}, [][]float32{{5, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := idx.Search(ctx, []float32{1, 0, 0}, 1, nil); len(got) != 1 || got[0].ID != "a" {
		t.Errorf("after replacing b: %v", got)
	}
	if got, _ := idx.Search(ctx, []float32{1, 0, 0}, 4, func(id string) bool { return id == "b" || id == "c" }); fmt.Sprint(got) != fmt.Sprint([]vectorstore.Hit{{ID: "b", Score: 1}, {ID: "c", Score: 0}}) {
		t.Errorf("after replacing b, filtered: %v", got)
	}
	if err := idx.Add(ctx, []string{"a"}, [][]float32{{0, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	if idx.Len() != 6 {
		t.Errorf("Len = %d, want 6", idx.Len())
	}
	if got, _ := idx.Search(ctx, []float32{1, 0, 0}, 6, nil); fmt.Sprint(got) != fmt.Sprint([]vectorstore.Hit{{ID: "b", Score: 1}, {ID: "d", Score: 1}, {ID: "e", Score: 1}, {ID: "a", Score: 0}, {ID: "c", Score: 0}, {ID: "z", Score: -1}}) {
		t.Errorf("after zeroing a: %v", got)
	}
}

func checkDoesNotAliasInput(t *testing.T, newIndex New, o Options) {
	const dim = 2
	idx := newIndex(t, vectorstore.IndexConfig{Dim: dim, Metric: vectorstore.Cosine})
	v := []float32{1, 0} // already normalised
	if err := idx.Add(context.Background(), []string{"a", "b"}, [][]float32{v, {0, 1}}); err != nil {
		t.Fatal(err)
	}
	v[0], v[1] = 0, 1
	got, err := idx.Search(context.Background(), []float32{1, 0}, 1, nil)
	if err != nil || len(got) != 1 || got[0].ID != "a" || got[0].Score != 1 {
		t.Fatalf("after changing the caller's slice: %v, %v", got, err)
	}
}

func checkConcurrentUse(t *testing.T, newIndex New, o Options) {
	const dim = 16
	rng := rand.New(rand.NewPCG(2, 3))
	ids, vecs := vectest.IDs(400), vectest.RandVecs(rng, 400, dim)
	queries := vectest.RandVecs(rng, 8, dim)
	idx := newIndex(t, vectorstore.IndexConfig{Dim: dim, Metric: vectorstore.Cosine})
	ctx := context.Background()
	if err := idx.Add(ctx, ids[:200], vecs[:200]); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				got, err := idx.Search(ctx, queries[(g+i)%len(queries)], 5, nil)
				if err != nil || len(got) != 5 {
					t.Errorf("concurrent search: %d hits, %v", len(got), err)
					return
				}
			}
		}()
	}
	for i := 200; i < 400; i += 20 { // one writer
		if err := idx.Add(ctx, ids[i:i+20], vecs[i:i+20]); err != nil {
			t.Error(err)
		}
		if err := idx.Delete(ctx, ids[i-200]); err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
	if idx.Len() != 390 {
		t.Errorf("Len = %d, want 390", idx.Len())
	}
}
func checkInnerProduct(t *testing.T, newIndex New, o Options) {
	const n, dim = 500, 24
	rng := rand.New(rand.NewPCG(11, 1))
	ids, vecs := vectest.IDs(n), vectest.RandVecs(rng, n, dim)
	idx := newIndex(t, vectorstore.IndexConfig{Dim: dim, Metric: vectorstore.InnerProduct})
	if err := idx.Add(context.Background(), ids, vecs); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		q := vectest.RandVecs(rng, 1, dim)[0]
		got, err := idx.Search(context.Background(), q, 20, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkAgainstRef(t, got, bruteForce(ids, vecs, q, vectorstore.InnerProduct, nil), 20, 1e-4)
	}
}
