package vectorstore

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentmem/memory/internal/vectest"
)

// TestDiskProbeCut holds ProbeCut to its contract: on tight clusters most searches scan
// NProbe/diskProbeFloor lists (the nearest, a prefix of the NProbe lists) and find what
// a search of all NProbe finds; on vectors without clusters few do, and on an
// InnerProduct index or with ProbeCut negative none.
func TestDiskProbeCut(t *testing.T) {
	smallDiskWrites(t, 6000)
	ctx := context.Background()
	const n, nq, nlist, nprobe, k = 6000, 64, 32, 16, 10
	open := func(t *testing.T, metric Metric, vecs [][]float32, cut int) *DiskIndex {
		t.Helper()
		p := map[string]int{"nlist": nlist, "nprobe": nprobe, "quant": DiskQuantBinary, "code": DiskCodeRotated}
		if cut != 0 {
			p["probecut"] = cut
		}
		x := openDisk(t, IndexConfig{Dim: len(vecs[0]), Metric: metric, Dir: filepath.Join(t.TempDir(), "x"), Params: p})
		t.Cleanup(func() { x.Close() })
		if err := x.Add(ctx, vectest.IDs(len(vecs)), vecs); err != nil {
			t.Fatal(err)
		}
		if err := x.Commit(1); err != nil {
			t.Fatal(err)
		}
		if len(x.lists) != nlist {
			t.Fatalf("%d lists, want %d", len(x.lists), nlist)
		}
		return x
	}
	rng := rand.New(rand.NewPCG(55, 1))
	tight := diskClustered(rng, n+nq, 96, 24, 0.15)
	spread := vectest.RandVecs(rng, n+nq, 256)
	cases := []struct {
		name     string
		metric   Metric
		vecs     [][]float32
		cut      int    // the option (Params["probecut"] stays unset)
		fewer    [2]int // how many of the nq queries scan fewer than nprobe lists: at least, at most
		sameHits bool   // the hits equal those of a search of all nprobe lists
	}{
		{"tight clusters", Cosine, tight, 0, [2]int{nq / 2, nq}, true},
		{"tight clusters, off", Cosine, tight, -1, [2]int{0, 0}, true},
		{"tight clusters, inner product", InnerProduct, tight, 0, [2]int{0, 0}, true},
		{"no clusters", Cosine, spread, 0, [2]int{0, nq / 8}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := open(t, c.metric, c.vecs[:n], 0)
			short := 0
			for _, q := range c.vecs[n:] {
				pq, _ := x.prepQuery(q, "q")
				all := x.probeWith(pq, DiskSearchOptions{ProbeCut: -1})
				got := x.probeWith(pq, DiskSearchOptions{ProbeCut: c.cut})
				if len(all) != nprobe {
					t.Fatalf("%d lists without a cut, want %d", len(all), nprobe)
				}
				if (len(got) != nprobe && len(got) != nprobe/diskProbeFloor) || !slices.Equal(got, all[:len(got)]) {
					t.Fatalf("cut %d scans lists %v, want the first %d or all of %v", c.cut, got, nprobe/diskProbeFloor, all)
				}
				if len(got) < nprobe {
					short++
				}
				want, err := x.SearchWith(ctx, q, k, nil, DiskSearchOptions{ProbeCut: -1})
				if err != nil {
					t.Fatal(err)
				}
				hits, err := x.SearchWith(ctx, q, k, nil, DiskSearchOptions{ProbeCut: c.cut})
				if err != nil {
					t.Fatal(err)
				}
				if c.sameHits && !slices.Equal(hits, want) {
					t.Fatalf("cut %d (%d lists): hits %v, want those of all %d lists %v", c.cut, len(got), hits, nprobe, want)
				}
			}
			if short < c.fewer[0] || short > c.fewer[1] {
				t.Errorf("%d of %d queries scanned fewer than %d lists, want %d to %d", short, nq, nprobe, c.fewer[0], c.fewer[1])
			}
		})
	}
	// The index's parameter is the option's default: off, every search scans all nprobe.
	x := open(t, Cosine, tight[:n], -1)
	for _, q := range tight[n:] {
		pq, _ := x.prepQuery(q, "q")
		if got := x.probeWith(pq, DiskSearchOptions{}); len(got) != nprobe {
			t.Fatalf("Params[probecut] -1: %d lists, want %d", len(got), nprobe)
		}
	}
}
