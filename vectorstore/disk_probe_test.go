package vectorstore

import (
	"cmp"
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentmem/memory/internal/vectest"
)

// TestDiskProbeCut holds ProbeCut to its contract: on tight clusters most searches that
// ask for it scan NProbe/diskProbeFloor lists (the nearest: a prefix of the NProbe lists)
// and find what a search of all NProbe finds; on vectors without clusters few do, and on
// an InnerProduct index, with ProbeCut negative or with fewer than diskProbeCutMin lists
// none. It applies by default only where nprobe is the index's default: an nprobe asked
// for (the option or Params["nprobe"]) is scanned whole unless ProbeCut is set too.
func TestDiskProbeCut(t *testing.T) {
	smallDiskWrites(t, 6000)
	ctx := context.Background()
	const n, nq, k = 6000, 64, 10
	open := func(t *testing.T, metric Metric, vecs [][]float32, params map[string]int) *DiskIndex {
		t.Helper()
		p := map[string]int{"quant": DiskQuantBinary, "code": DiskCodeRotated}
		for key, v := range params {
			p[key] = v
		}
		x := openDisk(t, IndexConfig{Dim: len(vecs[0]), Metric: metric, Dir: filepath.Join(t.TempDir(), "x"), Params: p})
		t.Cleanup(func() { x.Close() })
		if err := x.Add(ctx, vectest.IDs(len(vecs)), vecs); err != nil {
			t.Fatal(err)
		}
		if err := x.Commit(1); err != nil {
			t.Fatal(err)
		}
		if len(x.lists) != p["nlist"] {
			t.Fatalf("%d lists, want %d", len(x.lists), p["nlist"])
		}
		return x
	}
	rng := rand.New(rand.NewPCG(55, 1))
	tight := diskClustered(rng, n+nq, 96, 24, 0.15)
	spread := vectest.RandVecs(rng, n+nq, 256)
	many := diskClustered(rng, n+nq, 96, 400, 0.05) // more clusters than lists
	asked := map[string]int{"nlist": 32, "nprobe": 16}
	cases := []struct {
		name     string
		metric   Metric
		vecs     [][]float32
		params   map[string]int
		o        DiskSearchOptions
		want     int    // lists a cut search scans
		fewer    [2]int // how many of the nq queries scan fewer than all: at least, at most
		sameHits bool   // the hits equal those of a search of all the lists
	}{
		{"tight clusters", Cosine, tight, asked, DiskSearchOptions{ProbeCut: 200}, 2, [2]int{nq / 2, nq}, true},
		{"tight clusters, Params", Cosine, tight, map[string]int{"nlist": 32, "nprobe": 16, "probecut": 200}, DiskSearchOptions{}, 2, [2]int{nq / 2, nq}, true},
		{"tight clusters, nprobe asked", Cosine, tight, asked, DiskSearchOptions{}, 2, [2]int{0, 0}, true},
		{"tight clusters, off", Cosine, tight, asked, DiskSearchOptions{ProbeCut: -1}, 2, [2]int{0, 0}, true},
		{"tight clusters, 8 lists", Cosine, tight, asked, DiskSearchOptions{NProbe: 8, ProbeCut: 200}, 1, [2]int{0, 0}, true},
		{"tight clusters, inner product", InnerProduct, tight, asked, DiskSearchOptions{ProbeCut: 200}, 2, [2]int{0, 0}, true},
		{"no clusters", Cosine, spread, asked, DiskSearchOptions{ProbeCut: 200}, 2, [2]int{0, nq / 8}, false},
		{"default nprobe", Cosine, many, map[string]int{"nlist": 256}, DiskSearchOptions{}, 2, [2]int{nq / 2, nq}, false},
		{"default nprobe, asked", Cosine, many, map[string]int{"nlist": 256}, DiskSearchOptions{NProbe: 16}, 2, [2]int{0, 0}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := open(t, c.metric, c.vecs[:n], c.params)
			np := cmp.Or(c.o.NProbe, x.nprobe)
			all0 := c.o
			all0.ProbeCut = -1
			short := 0
			for _, q := range c.vecs[n:] {
				pq, _ := x.prepQuery(q, "q")
				all := x.probeWith(pq, all0)
				got := x.probeWith(pq, c.o)
				if len(all) != np {
					t.Fatalf("%d lists without a cut, want %d", len(all), np)
				}
				if (len(got) != np && len(got) != c.want) || !slices.Equal(got, all[:len(got)]) {
					t.Fatalf("lists %v, want the first %d or all of %v", got, c.want, all)
				}
				if len(got) < np {
					short++
				}
				want, err := x.SearchWith(ctx, q, k, nil, all0)
				if err != nil {
					t.Fatal(err)
				}
				hits, err := x.SearchWith(ctx, q, k, nil, c.o)
				if err != nil {
					t.Fatal(err)
				}
				if c.sameHits && !slices.Equal(hits, want) {
					t.Fatalf("%d lists: hits %v, want those of all %d lists %v", len(got), hits, np, want)
				}
			}
			if short < c.fewer[0] || short > c.fewer[1] {
				t.Errorf("%d of %d queries scanned fewer than %d lists, want %d to %d", short, nq, np, c.fewer[0], c.fewer[1])
			}
		})
	}
}
