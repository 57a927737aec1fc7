//go:build faiss

package vectorstore

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/memory/internal/vectest"
)

// faissClustered returns n vectors drawn from a mixture of c Gaussians (centres N(0,1),
// spread sigma), the shape of real embedding sets.
func faissClustered(rng *rand.Rand, n, d, c int, sigma float64) [][]float32 {
	centres := vectest.RandVecs(rng, c, d)
	vs := make([][]float32, n)
	slab := make([]float32, n*d) // one allocation, as in vectest.RandVecs
	for i := range vs {
		ctr := centres[rng.IntN(c)]
		v := slab[i*d : (i+1)*d : (i+1)*d]
		for j := range v {
			v[j] = ctr[j] + float32(sigma*rng.NormFloat64())
		}
		vs[i] = v
	}
	return vs
}

func faissIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("v%05d", i)
	}
	return ids
}

// faissBrute ranks the accepted vectors by float64 cosine (or inner product) with q:
// score desc, id asc.
func faissBrute(ids []string, vecs [][]float32, q []float32, m Metric, f Filter) []Hit {
	norm := func(v []float32) float64 {
		s := 0.0
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		return math.Sqrt(s)
	}
	var out []Hit
	for i, v := range vecs {
		if f != nil && !f(ids[i]) {
			continue
		}
		s := 0.0
		for j := range v {
			s += float64(v[j]) * float64(q[j])
		}
		if m == Cosine {
			if nv, nq := norm(v), norm(q); nv > 0 && nq > 0 {
				s /= nv * nq
			} else {
				s = 0
			}
		}
		out = append(out, Hit{ID: ids[i], Score: float64(float32(s))}) // rounded like the index
	}
	sort.SliceStable(out, func(i, j int) bool { return faissHitBefore(out[i], out[j]) })
	return out
}

// faissSameTop asserts got is the exact top k of ref up to float rounding.
func faissSameTop(t *testing.T, got, ref []Hit, k int) {
	t.Helper()
	want := min(k, len(ref))
	if len(got) != want {
		t.Fatalf("got %d hits, want %d", len(got), want)
	}
	truth := map[string]float64{}
	for _, r := range ref {
		truth[r.ID] = r.Score
	}
	for i, h := range got {
		ts, ok := truth[h.ID]
		if !ok {
			t.Fatalf("hit %d: %q is not an accepted id", i, h.ID)
		}
		if math.Abs(h.Score-ts) > 1e-4 || math.Abs(h.Score-ref[i].Score) > 1e-4 {
			t.Fatalf("hit %d: %q score %v (true %v), reference has %q %v there", i, h.ID, h.Score, ts, ref[i].ID, ref[i].Score)
		}
		if i > 0 && got[i-1].Score < h.Score {
			t.Fatalf("hits not sorted at %d", i)
		}
	}
}

// faissRecall is |got ∩ ref[:k]| / k.
func faissRecall(got, ref []Hit, k int) float64 {
	in := map[string]bool{}
	for _, r := range ref[:min(k, len(ref))] {
		in[r.ID] = true
	}
	n := 0
	for _, h := range got {
		if in[h.ID] {
			n++
		}
	}
	return float64(n) / float64(min(k, len(ref)))
}

func newFaissTest(t *testing.T, cfg IndexConfig) *faissIndex {
	t.Helper()
	cfg.Backend = FaissBackend
	idx, err := NewIndex(cfg)
	if err != nil {
		t.Fatalf("NewIndex(%+v): %v", cfg, err)
	}
	t.Cleanup(func() { idx.Close() })
	return idx.(*faissIndex)
}

// faissKinds are the index kinds with settings that make small tests meaningful: IVF trains
// on the first 400 vectors.
func faissKinds(dim int) []IndexConfig {
	return []IndexConfig{
		{Dim: dim, Factory: "Flat"},
		{Dim: dim, Factory: "IVF16,Flat", Params: map[string]int{"trainSize": 400, "nprobe": 8}},
		{Dim: dim, Factory: "HNSW16", Params: map[string]int{"efSearch": 64}},
	}
}

func TestFaissRegistered(t *testing.T) {
	found := false
	for _, b := range Backends() {
		found = found || b == FaissBackend
	}
	if !found {
		t.Fatalf("backend %q not registered: %v", FaissBackend, Backends())
	}
}

// The Flat index against a brute force (both metrics, dimensions 1 to 384, filters):
// TestFaissConformance (vectorstore/indextest).

func TestFaissTiesAndZeroVectors(t *testing.T) {
	ctx := context.Background()
	for _, cfg := range faissKinds(3) {
		t.Run(cfg.Factory, func(t *testing.T) {
			idx := newFaissTest(t, cfg)
			ids := []string{"e", "d", "c", "b", "a", "z"}
			vecs := [][]float32{{1, 0, 0}, {2, 0, 0}, {0, 1, 0}, {0, 0, 0}, {3, 0, 0}, {-1, 0, 0}}
			if err := idx.Add(ctx, ids, vecs); err != nil {
				t.Fatal(err)
			}
			want := []Hit{{ID: "a", Score: 1}, {ID: "d", Score: 1}, {ID: "e", Score: 1}, {ID: "b", Score: 0}, {ID: "c", Score: 0}, {ID: "z", Score: -1}}
			for _, k := range []int{2, 10} {
				got, err := idx.Search(ctx, []float32{1, 0, 0}, k, nil)
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got) != fmt.Sprint(want[:min(k, 6)]) {
					t.Errorf("k=%d: %v, want %v", k, got, want[:min(k, 6)])
				}
			}
			got, err := idx.Search(ctx, []float32{0, 0, 0}, 3, nil)
			if err != nil || fmt.Sprint(got) != fmt.Sprint([]Hit{{ID: "a", Score: 0}, {ID: "b", Score: 0}, {ID: "c", Score: 0}}) {
				t.Errorf("zero query: %v, %v", got, err)
			}
		})
	}
}

func TestFaissIVF(t *testing.T) {
	const n, dim, k = 2000, 32, 10
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 3))
	ids, vecs := faissIDs(n), faissClustered(rng, n, dim, 40, 0.3)
	queries := faissClustered(rand.New(rand.NewPCG(3, 3)), 30, dim, 40, 0.3) // same centres
	idx := newFaissTest(t, IndexConfig{Dim: dim, Factory: "IVF32,Flat", Params: map[string]int{"trainSize": 1000, "nprobe": 4}})
	// Below trainSize the vectors wait in the buffer and are searched exactly.
	if err := idx.Add(ctx, ids[:600], vecs[:600]); err != nil {
		t.Fatal(err)
	}
	if idx.Trained() {
		t.Fatal("trained before trainSize vectors arrived")
	}
	ref := faissBrute(ids[:600], vecs[:600], queries[0], Cosine, nil)
	got, err := idx.Search(ctx, queries[0], k, nil)
	if err != nil {
		t.Fatal(err)
	}
	faissSameTop(t, got, ref, k)
	if err := idx.Add(ctx, ids[600:], vecs[600:]); err != nil {
		t.Fatal(err)
	}
	if !idx.Trained() || idx.Len() != n {
		t.Fatalf("after %d vectors: trained %v, Len %d", n, idx.Trained(), idx.Len())
	}
	var sum float64
	for _, q := range queries {
		got, err := idx.Search(ctx, q, k, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != k {
			t.Fatalf("%d hits", len(got))
		}
		sum += faissRecall(got, faissBrute(ids, vecs, q, Cosine, nil), k)
	}
	if r := sum / float64(len(queries)); r < 0.9 {
		t.Errorf("IVF32 nprobe 4 recall@10 = %.3f, want >= 0.9", r)
	} else {
		t.Logf("IVF32 nprobe 4 recall@10 = %.3f", r)
	}

	// Train on demand.
	idx2 := newFaissTest(t, IndexConfig{Dim: dim, Factory: "IVF32,Flat"})
	if err := idx2.Add(ctx, ids[:20], vecs[:20]); err != nil {
		t.Fatal(err)
	}
	if err := idx2.Train(ctx); !errors.Is(err, ErrFaissUntrained) {
		t.Fatalf("Train with 20 vectors for 32 lists: %v", err)
	}
	if err := idx2.Add(ctx, ids[20:500], vecs[20:500]); err != nil {
		t.Fatal(err)
	}
	if idx2.Trained() {
		t.Fatal("trained before the default trainSize (39*32)")
	}
	if err := idx2.Train(ctx); err != nil {
		t.Fatal(err)
	}
	if !idx2.Trained() || idx2.Len() != 500 {
		t.Fatalf("after Train: trained %v Len %d", idx2.Trained(), idx2.Len())
	}
	got, err = idx2.Search(ctx, vecs[7], 1, nil)
	if err != nil || len(got) != 1 || got[0].ID != ids[7] {
		t.Fatalf("own vector after Train: %v %v", got, err)
	}
}

func TestFaissHNSWRecall(t *testing.T) {
	const n, dim, k = 2000, 32, 10
	ctx := context.Background()
	for _, data := range []string{"clustered", "random"} {
		t.Run(data, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(4, 4))
			var vecs, queries [][]float32
			if data == "clustered" {
				all := faissClustered(rng, n+30, dim, 40, 0.3)
				vecs, queries = all[:n], all[n:]
			} else {
				vecs, queries = vectest.RandVecs(rng, n, dim), vectest.RandVecs(rng, 30, dim)
			}
			ids := faissIDs(n)
			idx := newFaissTest(t, IndexConfig{Dim: dim, Factory: "HNSW32"})
			if err := idx.Add(ctx, ids, vecs); err != nil {
				t.Fatal(err)
			}
			var sum float64
			for _, q := range queries {
				got, err := idx.Search(ctx, q, k, nil)
				if err != nil {
					t.Fatal(err)
				}
				sum += faissRecall(got, faissBrute(ids, vecs, q, Cosine, nil), k)
			}
			if r := sum / float64(len(queries)); r < 0.95 {
				t.Errorf("HNSW32 default recall@10 = %.3f, want >= 0.95", r)
			} else {
				t.Logf("HNSW32 default recall@10 = %.3f", r)
			}
		})
	}
}

func TestFaissDeleteAndReAdd(t *testing.T) {
	const n, dim = 600, 8
	ctx := context.Background()
	for _, cfg := range faissKinds(dim) {
		t.Run(cfg.Factory, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(9, 9))
			ids, vecs := faissIDs(n), vectest.RandVecs(rng, n, dim)
			if cfg.Factory == "HNSW16" {
				cfg.Params = map[string]int{"efSearch": 64, "compactPercent": 50}
			}
			idx := newFaissTest(t, cfg)
			if err := idx.Add(ctx, ids, vecs); err != nil {
				t.Fatal(err)
			}
			live := map[string][]float32{}
			var gone []string
			for i, id := range ids {
				if i%3 == 0 || i == n-1 {
					gone = append(gone, id)
				} else {
					live[id] = vecs[i]
				}
			}
			if err := idx.Delete(ctx, append(gone, "no-such-id", gone[0])...); err != nil {
				t.Fatal(err)
			}
			if idx.Len() != len(live) {
				t.Fatalf("Len after delete = %d, want %d", idx.Len(), len(live))
			}
			if cfg.Factory == "HNSW16" && idx.Tombstones() != len(gone) {
				t.Fatalf("HNSW tombstones = %d, want %d", idx.Tombstones(), len(gone))
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
					got, err := idx.Search(ctx, q, len(live)+10, nil)
					if err != nil {
						t.Fatal(err)
					}
					// Asking for more than Len returns every live vector, ranked.
					faissSameTop(t, got, faissBrute(lids, lvecs, q, Cosine, nil), len(live)+10)
					got, err = idx.Search(ctx, q, 10, nil)
					if err != nil {
						t.Fatal(err)
					}
					for _, h := range got {
						if _, ok := live[h.ID]; !ok {
							t.Fatalf("deleted id %q returned", h.ID)
						}
					}
				}
			}
			check()
			// Re-add a deleted id and replace a live one.
			nv := vectest.RandVecs(rng, 2, dim)
			if err := idx.Add(ctx, []string{gone[0], ids[1]}, nv); err != nil {
				t.Fatal(err)
			}
			live[gone[0]], live[ids[1]] = nv[0], nv[1]
			if idx.Len() != len(live) {
				t.Fatalf("Len after re-add = %d, want %d", idx.Len(), len(live))
			}
			check()
			got, err := idx.Search(ctx, nv[1], 1, nil)
			if err != nil || len(got) != 1 || got[0].ID != ids[1] || math.Abs(float64(got[0].Score)-1) > 1e-5 {
				t.Fatalf("search for the replaced vector = %+v, %v", got, err)
			}
			if cfg.Factory == "HNSW16" {
				// Deleting past compactPercent (50%) rebuilds the graph without tombstones.
				var more []string
				for id := range live {
					if len(more) < len(live)/2 {
						more = append(more, id)
					}
				}
				if err := idx.Delete(ctx, more...); err != nil {
					t.Fatal(err)
				}
				for _, id := range more {
					delete(live, id)
				}
				if idx.Tombstones() != 0 {
					t.Fatalf("tombstones after passing compactPercent = %d", idx.Tombstones())
				}
				check()
			}
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
		})
	}
}

func TestFaissFilter(t *testing.T) {
	const n, dim = 2000, 16
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 5))
	all := faissClustered(rng, n+5, dim, 20, 0.5)
	ids, vecs, queries := faissIDs(n), all[:n], all[n:]
	half := func(id string) bool { return id[len(id)-1]%2 == 0 }
	tenth := func(id string) bool { return id[len(id)-1] == '3' }
	twelve := func(id string) bool { return id >= "v01000" && id < "v01012" }
	for _, cfg := range faissKinds(dim) {
		t.Run(cfg.Factory, func(t *testing.T) {
			idx := newFaissTest(t, cfg)
			if err := idx.Add(ctx, ids, vecs); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				name    string
				f       Filter
				k, want int
				exact   bool // must equal the brute-force filtered top k
			}{
				{"half", half, 10, 10, cfg.Factory == "Flat"},
				{"tenth", tenth, 10, 10, cfg.Factory == "Flat"},
				{"tenth-k200", tenth, 200, 200, cfg.Factory == "Flat"},
				{"twelve", twelve, 10, 10, true}, // selective: exact scan for every kind
				{"twelve-k50", twelve, 50, 12, true},
				{"one", func(id string) bool { return id == "v01999" }, 5, 1, true},
				{"none", func(string) bool { return false }, 5, 0, true},
			} {
				var recall float64
				for qi, q := range queries {
					got, err := idx.Search(ctx, q, tc.k, tc.f)
					if err != nil {
						t.Fatal(err)
					}
					if len(got) != tc.want {
						t.Fatalf("%s q%d: %d hits, want %d", tc.name, qi, len(got), tc.want)
					}
					for _, h := range got {
						if !tc.f(h.ID) {
							t.Fatalf("%s: rejected id %q returned", tc.name, h.ID)
						}
					}
					ref := faissBrute(ids, vecs, q, Cosine, tc.f)
					if tc.exact {
						faissSameTop(t, got, ref, tc.k)
					} else {
						recall += faissRecall(got, ref, tc.k) / float64(len(queries))
					}
				}
				// ANN over-fetch: the filtered top k comes from an approximate top-kk list.
				// (1e-9: a mean of fifths that is 0.8 sums to 0.7999999999999999.)
				if !tc.exact && recall < 0.8-1e-9 {
					t.Errorf("%s: mean filtered recall %.2f, want >= 0.8", tc.name, recall)
				} else if !tc.exact {
					t.Logf("%s: mean filtered recall %.2f", tc.name, recall)
				}
			}
		})
	}
}

func TestFaissPersistence(t *testing.T) {
	const n, dim = 800, 16
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(6, 6))
	ids, vecs := faissIDs(n), vectest.RandVecs(rng, n, dim)
	queries := vectest.RandVecs(rng, 5, dim)
	cases := append(faissKinds(dim), IndexConfig{Dim: dim, Factory: "IVF16,Flat"}) // stays untrained: buffer persisted
	for _, cfg := range cases {
		name := cfg.Factory
		if cfg.Params == nil {
			name += "-untrained"
		}
		t.Run(name, func(t *testing.T) {
			cfg.Dir = t.TempDir()
			idx := newFaissTest(t, cfg)
			if idx.Seq() != 0 {
				t.Fatalf("fresh Seq = %d", idx.Seq())
			}
			if err := idx.Add(ctx, ids, vecs); err != nil {
				t.Fatal(err)
			}
			if err := idx.Delete(ctx, ids[:50]...); err != nil {
				t.Fatal(err)
			}
			if err := idx.Commit(7); err != nil {
				t.Fatal(err)
			}
			var before [][]Hit
			for _, q := range queries {
				got, err := idx.Search(ctx, q, 10, tenthFilter)
				if err != nil {
					t.Fatal(err)
				}
				before = append(before, got)
			}
			trained := idx.Trained()
			if err := idx.Close(); err != nil {
				t.Fatal(err)
			}
			re := newFaissTest(t, cfg)
			if re.Seq() != 7 || re.Len() != n-50 || re.Trained() != trained {
				t.Fatalf("reopened: Seq %d Len %d trained %v, want 7 %d %v", re.Seq(), re.Len(), re.Trained(), n-50, trained)
			}
			for i, q := range queries {
				got, err := re.Search(ctx, q, 10, tenthFilter)
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got) != fmt.Sprint(before[i]) {
					t.Fatalf("q%d after reopen:\n%v\nwant\n%v", i, got, before[i])
				}
			}
			// Changes after the last Commit are written by Close, with the committed Seq.
			if err := re.Add(ctx, []string{"new"}, [][]float32{queries[0]}); err != nil {
				t.Fatal(err)
			}
			if err := re.Close(); err != nil {
				t.Fatal(err)
			}
			re2 := newFaissTest(t, cfg)
			got, err := re2.Search(ctx, queries[0], 1, nil)
			if err != nil || re2.Seq() != 7 || len(got) != 1 || got[0].ID != "new" {
				t.Fatalf("after Close without Commit: Seq %d, %v, %v", re2.Seq(), got, err)
			}
			// Labels are never reused: a new id after reopening does not collide.
			if err := re2.Add(ctx, []string{"newer"}, [][]float32{queries[1]}); err != nil {
				t.Fatal(err)
			}
			if re2.Len() != n-50+2 {
				t.Fatalf("Len = %d", re2.Len())
			}
			files, _ := filepath.Glob(filepath.Join(cfg.Dir, "faiss-*"))
			if len(files) > 1 {
				t.Errorf("stale generations left: %v", files)
			}
		})
	}
}

func tenthFilter(id string) bool { return id[len(id)-1] == '3' }

func TestFaissPersistenceMismatchOrCorrupt(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := IndexConfig{Dim: 4, Dir: dir}
	idx := newFaissTest(t, cfg)
	if err := idx.Add(ctx, []string{"a"}, [][]float32{{1, 2, 3, 4}}); err != nil {
		t.Fatal(err)
	}
	if err := idx.Commit(2); err != nil {
		t.Fatal(err)
	}
	before, _ := filepath.Glob(filepath.Join(dir, "faiss-*"))
	if err := idx.Commit(3); err != nil { // nothing changed: only the metadata is rewritten
		t.Fatal(err)
	}
	after, _ := filepath.Glob(filepath.Join(dir, "faiss-*"))
	if len(before) != 1 || fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("index files before %v, after an unchanged Commit %v", before, after)
	}
	idx.Close()
	// Another factory or dimension ignores the persisted state (Seq 0: the store rebuilds).
	for _, other := range []IndexConfig{{Dim: 4, Dir: dir, Factory: "HNSW8"}, {Dim: 5, Dir: dir}, {Dim: 4, Dir: dir, Metric: InnerProduct}} {
		x := newFaissTest(t, other)
		if x.Seq() != 0 || x.Len() != 0 {
			t.Errorf("%+v over a Flat dim-4 dir: Seq %d Len %d", other, x.Seq(), x.Len())
		}
		// Another configuration is not damage: Discarded says so without ErrCorrupt.
		if err := x.Discarded(); err == nil || errors.Is(err, ErrCorrupt) {
			t.Errorf("%+v over a Flat dim-4 dir: Discarded() = %v, want a configuration mismatch", other, err)
		}
		x.closed = true // do not overwrite the dir
	}
	x := newFaissTest(t, cfg)
	if x.Seq() != 3 || x.Len() != 1 {
		t.Fatalf("matching config: Seq %d Len %d", x.Seq(), x.Len())
	}
	if err := x.Discarded(); err != nil {
		t.Fatalf("matching config: Discarded() = %v", err)
	}
	x.Close()
	if err := os.WriteFile(filepath.Join(dir, faissMetaFile), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	y := newFaissTest(t, cfg)
	if y.Seq() != 0 || y.Len() != 0 {
		t.Fatalf("corrupt metadata: Seq %d Len %d", y.Seq(), y.Len())
	}
	if err := y.Discarded(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("corrupt metadata: Discarded() = %v, want ErrCorrupt", err)
	}
}

// TestFaissChecksums flips one byte of the persisted index file or of faiss.json (an id)
// and requires the persisted state to be ignored (Seq 0: the store rebuilds it), never
// loaded with other answers.
func TestFaissChecksums(t *testing.T) {
	ctx := context.Background()
	build := func(t *testing.T) (string, IndexConfig) {
		dir := t.TempDir()
		cfg := IndexConfig{Dim: 4, Dir: dir}
		idx := newFaissTest(t, cfg)
		if err := idx.Add(ctx, []string{"a", "b", "c"}, [][]float32{{1, 2, 3, 4}, {4, 3, 2, 1}, {1, 0, 0, 1}}); err != nil {
			t.Fatal(err)
		}
		if err := idx.Commit(7); err != nil {
			t.Fatal(err)
		}
		idx.Close()
		return dir, cfg
	}
	flip := func(t *testing.T, path string, at func(n int) int) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b[at(len(b))] ^= 0x04
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, cfg := build(t)
	if x := newFaissTest(t, cfg); x.Seq() != 7 || x.Len() != 3 || x.Discarded() != nil {
		t.Fatalf("undamaged: Seq %d Len %d Discarded %v", x.Seq(), x.Len(), x.Discarded())
	}
	for name, damage := range map[string]func(t *testing.T, dir string){
		"index file, last vector": func(t *testing.T, dir string) {
			files, _ := filepath.Glob(filepath.Join(dir, "faiss-*.index"))
			if len(files) != 1 {
				t.Fatalf("index files %v", files)
			}
			flip(t, files[0], func(n int) int { return n - 3 })
		},
		"faiss.json, an id": func(t *testing.T, dir string) {
			b, err := os.ReadFile(filepath.Join(dir, faissMetaFile))
			if err != nil {
				t.Fatal(err)
			}
			i := strings.Index(string(b), `"b"`)
			flip(t, filepath.Join(dir, faissMetaFile), func(int) int { return i + 1 })
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir, cfg := build(t)
			damage(t, dir)
			x := newFaissTest(t, cfg)
			if x.Seq() != 0 || x.Len() != 0 {
				t.Fatalf("damaged %s loaded: Seq %d Len %d", name, x.Seq(), x.Len())
			}
			if err := x.Discarded(); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("damaged %s: Discarded() = %v, want ErrCorrupt", name, err)
			}
			x.closed = true
		})
	}
}

func TestFaissBadConfigAndInput(t *testing.T) {
	for _, f := range []string{"IVF", "IVF0,Flat", "IVF16", "IVF16,PQ8", "HNSW", "HNSW1", "HNSWx", "PQ8", "Flat,Flat", "ivf16,flat", "IVF-3,Flat", "HNSW032"} {
		_, err := NewIndex(IndexConfig{Backend: FaissBackend, Dim: 8, Factory: f})
		if !errors.Is(err, errFaissFactory) || !errors.Is(err, ErrBadConfig) {
			t.Errorf("factory %q: err = %v, want errFaissFactory and ErrBadConfig", f, err)
		}
	}
	for _, cfg := range []IndexConfig{
		{Dim: 0},
		{Dim: 8, Metric: "l2"},
		{Dim: 8, Params: map[string]int{"nprobe": -1}},
		{Dim: 8, Params: map[string]int{"efsearch": 10}},
		{Dim: 8, Factory: "IVF16,Flat", Params: map[string]int{"trainSize": 4}},
		{Dim: 8, Factory: "HNSW8", Params: map[string]int{"compactPercent": 101}},
	} {
		cfg.Backend = FaissBackend
		if _, err := NewIndex(cfg); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%+v: err = %v, want ErrBadConfig", cfg, err)
		}
	}
	ctx := context.Background()
	for _, cfg := range faissKinds(4) {
		t.Run(cfg.Factory, func(t *testing.T) {
			idx := newFaissTest(t, cfg)
			if err := idx.Add(ctx, []string{"a", "b"}, [][]float32{{1, 0, 0, 0}, {0, 1, 0, 0}}); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				name string
				ids  []string
				vecs [][]float32
				want error
			}{
				{"short", []string{"c"}, [][]float32{{1, 2, 3}}, ErrDimMismatch},
				{"count", []string{"c", "d"}, [][]float32{{1, 2, 3, 4}}, ErrBadBatch},
				{"empty id", []string{""}, [][]float32{{1, 2, 3, 4}}, ErrBadBatch},
				{"NaN", []string{"c"}, [][]float32{{1, float32(math.NaN()), 3, 4}}, ErrNonFinite},
			} {
				if err := idx.Add(ctx, tc.ids, tc.vecs); !errors.Is(err, tc.want) {
					t.Errorf("Add %s: %v, want %v", tc.name, err, tc.want)
				}
			}
			if idx.Len() != 2 {
				t.Fatalf("rejected batch changed Len to %d", idx.Len())
			}
			if _, err := idx.Search(ctx, []float32{1, 2}, 1, nil); !errors.Is(err, ErrDimMismatch) {
				t.Errorf("short query: %v", err)
			}
			if got, err := idx.Search(ctx, []float32{1, 1, 0, 0}, 0, nil); err != nil || len(got) != 0 {
				t.Errorf("k=0: %v %v", got, err)
			}
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			if _, err := idx.Search(cctx, []float32{1, 1, 0, 0}, 1, nil); !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled search: %v", err)
			}
			if err := idx.Close(); err != nil {
				t.Fatal(err)
			}
			if err := idx.Add(ctx, []string{"z"}, [][]float32{{1, 2, 3, 4}}); !errors.Is(err, errFaissClosed) {
				t.Errorf("Add after Close: %v", err)
			}
		})
	}
}

func TestFaissGPUFallsBackToCPU(t *testing.T) {
	idx := newFaissTest(t, IndexConfig{Dim: 4, GPU: true})
	if d := idx.Device(); (d != "cpu" && faissGPUCount() == 0) || (d == "cpu" && faissGPUCount() > 0) {
		t.Fatalf("Device = %q with %d usable GPUs (GPU code built in: %v)", d, faissGPUCount(), faissBuiltWithGPU)
	}
	if h := newFaissTest(t, IndexConfig{Dim: 4, GPU: true, Factory: "HNSW8"}); h.Device() != "cpu" {
		t.Fatalf("HNSW Device = %q, faiss has no GPU HNSW", h.Device())
	}
	if err := idx.Add(context.Background(), []string{"a"}, [][]float32{{1, 0, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	got, err := idx.Search(context.Background(), []float32{1, 0, 0, 0}, 1, nil)
	if err != nil || len(got) != 1 || got[0].ID != "a" {
		t.Fatalf("search: %v %v", got, err)
	}
}

func TestFaissHNSWEfConstruction(t *testing.T) {
	idx := newFaissTest(t, IndexConfig{Dim: 4, Factory: "HNSW8", Params: map[string]int{"efConstruction": 77, "efSearch": 33}})
	c, s, err := faissHNSWEf(idx)
	if err != nil || c != 77 || s != 33 {
		t.Fatalf("efConstruction %d efSearch %d err %v", c, s, err)
	}
}

func TestFaissConcurrentUse(t *testing.T) {
	const dim = 16
	rng := rand.New(rand.NewPCG(2, 3))
	ids, vecs := faissIDs(400), vectest.RandVecs(rng, 400, dim)
	queries := vectest.RandVecs(rng, 8, dim)
	ctx := context.Background()
	for _, cfg := range faissKinds(dim) {
		t.Run(cfg.Factory, func(t *testing.T) {
			idx := newFaissTest(t, cfg)
			if err := idx.Add(ctx, ids[:200], vecs[:200]); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					for i := range 30 {
						got, err := idx.Search(ctx, queries[(g+i)%len(queries)], 5, tenthFilter)
						if err != nil || len(got) != 5 {
							t.Errorf("concurrent search: %d hits, %v", len(got), err)
							return
						}
					}
				})
			}
			for i := 200; i < 400; i += 20 {
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
		})
	}
}

// A FAISS index opened ReadOnly reads what Dir holds and never writes there: its changes,
// Commit and Close leave the files as they were.
func TestFaissReadOnlyWritesNothing(t *testing.T) {
	const n, dim = 300, 16
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(9, 9))
	ids, vecs := faissIDs(n), vectest.RandVecs(rng, n, dim)
	cfg := IndexConfig{Dim: dim, Factory: "HNSW16", Dir: t.TempDir()}
	w := newFaissTest(t, cfg)
	if err := w.Add(ctx, ids, vecs); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(5); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	state := func() string {
		var b strings.Builder
		ents, _ := os.ReadDir(cfg.Dir)
		for _, e := range ents {
			data, _ := os.ReadFile(filepath.Join(cfg.Dir, e.Name()))
			fmt.Fprintf(&b, "%s %d %x\n", e.Name(), len(data), crc32.ChecksumIEEE(data))
		}
		return b.String()
	}
	before := state()
	ro := cfg
	ro.ReadOnly = true
	r := newFaissTest(t, ro)
	if r.Seq() != 5 || r.Len() != n {
		t.Fatalf("read-only open: Seq %d Len %d", r.Seq(), r.Len())
	}
	if err := r.Add(ctx, []string{"new"}, [][]float32{vecs[0]}); err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(6); err != nil || r.Seq() != 6 {
		t.Fatalf("Commit: %v, Seq %d", err, r.Seq())
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if after := state(); after != before {
		t.Fatalf("a read-only index wrote to its Dir:\n%s\n->\n%s", before, after)
	}
}
