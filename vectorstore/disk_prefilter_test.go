package vectorstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/agentmem/memory/internal/vectest"
)

// TestHamming: the POPCNT kernel and the portable count agree with a bit-by-bit count on
// codes of every length from 0 to 20 words.
func TestHamming(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for n := range 21 {
		for range 20 {
			a, b := make([]uint64, n), make([]uint64, n)
			for i := range a {
				a[i], b[i] = rng.Uint64(), rng.Uint64()
				if rng.IntN(4) == 0 {
					b[i] = a[i] // runs of equal words
				}
			}
			want := 0
			for i := range a {
				for bit := range 64 {
					if (a[i]>>bit)&1 != (b[i]>>bit)&1 {
						want++
					}
				}
			}
			if got := hammingGeneric(a, b); got != want {
				t.Fatalf("%d words: hammingGeneric %d, want %d", n, got, want)
			}
			if got := hamming(a, b); got != want {
				t.Fatalf("%d words: hamming %d (kernel %v), want %d", n, got, hammingAsm, want)
			}
		}
	}
}

// TestHammingFilter: hammingFilter and hammingDists (the AVX-512 kernels where the machine
// has them, and the portable ones) count each row's distance exactly and keep exactly the
// rows within the cut of every length of code from 1 to 20 words (whole chunks of eight
// words, a tail, both), at cuts from none to every row, for row counts that are whole
// groups of eight rows (the AVX-512 kernel's step), a group and a rest, and less.
func TestHammingFilter(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	old, oldGroups := hammingAVX512, hammingGroups
	defer func() { hammingAVX512, hammingGroups = old, oldGroups }()
	for _, c := range []struct{ avx, groups bool }{{old, true}, {old, false}, {false, false}} {
		avx := c.avx
		hammingAVX512, hammingGroups = avx, c.groups
		for W := 1; W <= 20; W++ {
			for _, n := range []int{1, 2, 7, 8, 16, 33} {
				q, codes := make([]uint64, W), make([]uint64, n*W)
				for i := range q {
					q[i] = rng.Uint64()
				}
				for i := range codes {
					codes[i] = rng.Uint64()
					if rng.IntN(3) == 0 {
						codes[i] = q[i%W] ^ 1<<rng.IntN(64) // near the query
					}
				}
				for _, cut := range []int{-1, 0, 16 * W, 32 * W, 40 * W, 64 * W} {
					var want []int32
					for r := range n {
						if hammingGeneric(q, codes[r*W:(r+1)*W]) <= cut {
							want = append(want, int32(r))
						}
					}
					dists := make([]int32, n+1)
					dists[n] = -7
					hammingDists(q, codes, dists[:n])
					for r := range n {
						if want := int32(hammingGeneric(q, codes[r*W:(r+1)*W])); dists[r] != want || dists[n] != -7 {
							t.Fatalf("kernel %v (groups %v), %d words, row %d of %d: distance %d, want %d", avx, c.groups, W, r, n, dists[r], want)
						}
					}
					out := make([]int32, n+1)
					out[n] = -7
					m := hammingFilter(q, codes, cut, out[:n])
					if !slices.Equal(out[:m], want) && !(m == 0 && len(want) == 0) || out[n] != -7 {
						t.Fatalf("kernel %v, %d words, %d rows, cut %d: %v, want %v", avx, W, n, cut, out[:m], want)
					}
				}
			}
		}
	}
	hammingAVX512, hammingGroups = old, oldGroups
	t.Logf("AVX-512 kernel on this machine: %v", hammingAVX512)
}

// TestDiskPrefilter: a binary scan with the prefilter scores only the rows within the
// Hamming distance hammingCut returns (every hit lies within it, while without the
// prefilter some query has a hit beyond it), that cut is the smallest holding twice keep
// of the sampled rows (hammingSampled) in the sample's proportion, every hit keeps its exact score, and a prefilter
// keeping every row, a negative one, a filter or inverted lists give the plain scan's
// answer. With the portable counts too (no POPCNT, no AVX-512 kernel).
func TestDiskPrefilter(t *testing.T) {
	for _, asm := range []bool{hammingAsm, false} {
		t.Run(fmt.Sprint("kernel=", asm), func(t *testing.T) {
			old, oldAVX := hammingAsm, hammingAVX512
			hammingAsm, hammingAVX512 = asm, asm && hammingAVX512
			defer func() { hammingAsm, hammingAVX512 = old, oldAVX }()
			smallDiskWrites(t, 64)
			ctx := context.Background()
			const n, dim, k, os = 2000, 48, 5, 4
			rng := rand.New(rand.NewPCG(8, 9))
			x := openClusteredDisk(t, rng, n, dim, map[string]int{"segrows": 256})
			defer x.Close()
			var runs []codeRun
			for i, s := range x.segs {
				runs = append(runs, codeRun{s, int32(i * x.segRows), 0, s.rows})
			}
			W := x.codeWords()
			codeOf := func(o int32) []uint64 {
				s, j := x.segs[int(o)/x.segRows], int(o)%x.segRows
				return s.b1[j*W : (j+1)*W]
			}
			ordOf := map[string]int32{}
			for _, r := range runs {
				for j := r.lo; j < r.hi; j++ {
					ordOf[x.idView(r.base+int32(j))] = r.base + int32(j)
				}
			}
			beyond := 0
			for qi, q := range vectest.RandVecs(rng, 12, dim) {
				score := exactScores(t, x, q, n)
				nq, _ := x.prepQuery(q, "q")
				qc := make([]uint64, W)
				binaryCode(x.binaryView(nq), qc)
				for _, pf := range []int{1, 2, 3} {
					keep := k * os * pf
					cut, err := x.hammingCut(ctx, qc, runs, nil, n, keep, 2)
					if err != nil {
						t.Fatal(err)
					}
					// The cut: the smallest distance holding twice keep of the sampled rows, in
					// the sample's proportion.
					within := func(d int) int {
						c := 0
						for _, r := range runs {
							for j := r.lo; j < r.hi; j++ {
								if o := r.base + int32(j); hammingSampled(o) && hamming(qc, codeOf(o)) <= d {
									c++
								}
							}
						}
						return c
					}
					if want := hammingWant(keep, within(64*W), n); within(cut) < want || (cut > 0 && within(cut-1) >= want) {
						t.Fatalf("query %d keep %d: cut %d holds %d sampled rows (%d below it), want the smallest holding %d", qi, keep, cut, within(cut), within(cut-1), want)
					}
					got, err := x.SearchWith(ctx, q, k, nil, DiskSearchOptions{Mode: DiskBinary, Oversample: os, Prefilter: pf})
					if err != nil {
						t.Fatal(err)
					}
					plain, err := x.SearchWith(ctx, q, k, nil, DiskSearchOptions{Mode: DiskBinary, Oversample: os, Prefilter: -1})
					if err != nil {
						t.Fatal(err)
					}
					checkWithinCut(t, qi, pf, k, got, cut, func(id string) int { return hamming(qc, codeOf(ordOf[id])) }, score)
					for _, h := range plain {
						if hamming(qc, codeOf(ordOf[h.ID])) > cut {
							beyond++
						}
					}
				}
				plain, err := x.SearchWith(ctx, q, k, nil, DiskSearchOptions{Mode: DiskBinary, Oversample: os, Prefilter: -1})
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range []DiskSearchOptions{
					{Mode: DiskBinary, Oversample: os, Prefilter: n}, // keeps every row: no prefilter
				} {
					same, err := x.SearchWith(ctx, q, k, nil, o)
					if err != nil || !reflect.DeepEqual(same, plain) {
						t.Fatalf("%+v: %v %v, want the plain scan's %v", o, same, err, plain)
					}
				}
				all := func(string) bool { return true }
				filtered, err := x.SearchWith(ctx, q, k, all, DiskSearchOptions{Mode: DiskBinary, Oversample: os, Prefilter: 1})
				if err != nil || !reflect.DeepEqual(filtered, plain) {
					t.Fatalf("with a filter: %v %v, want the plain scan's %v", filtered, err, plain)
				}
			}
			if beyond == 0 {
				t.Fatal("no hit of the plain scan lies beyond a prefilter's cut: the test cannot tell the prefilter from none")
			}
		})
	}
}

// openClusteredDisk opens a disk index of rotated binary codes with params (and rows
// read from a RowMap), and commits n clustered vectors of rng's to it.
func openClusteredDisk(t *testing.T, rng *rand.Rand, n, dim int, params map[string]int) *DiskIndex {
	t.Helper()
	params["code"] = DiskCodeRotated
	src := RowMap{}
	x := openDisk(t, IndexConfig{Dim: dim, Metric: Cosine, Dir: filepath.Join(t.TempDir(), "x"), Params: params, Rows: src})
	ids := vectest.IDs(n)
	vecs := diskClustered(rng, n, dim, 20, 0.8)
	for i, id := range ids {
		src[id] = vecs[i]
	}
	if err := x.Add(context.Background(), ids, vecs); err != nil {
		x.Close()
		t.Fatal(err)
	}
	if err := x.Commit(1); err != nil {
		x.Close()
		t.Fatal(err)
	}
	return x
}

// exactScores is the exact search's score of each of x's n rows for q.
func exactScores(t *testing.T, x *DiskIndex, q []float32, n int) map[string]float64 {
	t.Helper()
	exact, err := x.SearchWith(context.Background(), q, n, nil, DiskSearchOptions{Mode: DiskExact})
	if err != nil {
		t.Fatal(err)
	}
	score := make(map[string]float64, len(exact))
	for _, h := range exact {
		score[h.ID] = h.Score
	}
	return score
}

// checkWithinCut fails t unless got holds k hits, each at a distance (dist) within cut of
// query qi's code and scored as the exact search scores it.
func checkWithinCut(t *testing.T, qi, pf, k int, got []Hit, cut int, dist func(id string) int, score map[string]float64) {
	t.Helper()
	if len(got) != k {
		t.Fatalf("query %d prefilter %d: %d hits, want %d", qi, pf, len(got), k)
	}
	for _, h := range got {
		if d := dist(h.ID); d > cut {
			t.Fatalf("query %d prefilter %d: hit %s at distance %d, beyond the cut %d", qi, pf, h.ID, d, cut)
		}
		if h.Score != score[h.ID] {
			t.Fatalf("query %d prefilter %d: hit %s scored %v, exact %v", qi, pf, h.ID, h.Score, score[h.ID])
		}
	}
}

// TestDiskPrefilterLists: with inverted lists, the prefilter's first pass samples the
// probed lists' rows in sampled blocks of ordinals (hammingSampled), its cut is the
// smallest distance holding twice keep of them in the sample's proportion, every hit of a prefiltered search
// lies within it and keeps its exact score, some hit of the unfiltered scan lies beyond it,
// and lists read from their packed copies and from the segments (no pack budget) answer
// alike.
func TestDiskPrefilterLists(t *testing.T) {
	smallDiskWrites(t, 4000)
	ctx := context.Background()
	const n, dim, k, os, nlist, nprobe = 4000, 48, 5, 4, 8, 3
	rng := rand.New(rand.NewPCG(10, 11))
	x := openClusteredDisk(t, rng, n, dim, map[string]int{"segrows": 512, "nlist": nlist})
	defer x.Close()
	if len(x.lists) != nlist {
		t.Fatalf("%d lists, want %d", len(x.lists), nlist)
	}
	W := x.codeWords()
	codeOf := func(o int32) []uint64 {
		s, j := x.segs[int(o)/x.segRows], int(o)%x.segRows
		return s.b1[j*W : (j+1)*W]
	}
	ordOf := map[string]int32{}
	for o := range int32(n) {
		ordOf[x.idView(o)] = o
	}
	beyond, cut1 := 0, 0
	for qi, q := range vectest.RandVecs(rng, 12, dim) {
		score := exactScores(t, x, q, n)
		nq, _ := x.prepQuery(q, "q")
		probed := x.probeWith(nq, DiskSearchOptions{NProbe: nprobe})
		qc := make([]uint64, W)
		binaryCode(x.binaryView(nq), qc)
		within := func(d int) int {
			c := 0
			for _, l := range probed {
				for o := range x.lists[l].all() {
					if hammingSampled(o) && hamming(qc, codeOf(o)) <= d {
						c++
					}
				}
			}
			return c
		}
		rows := 0
		for _, l := range probed {
			rows += x.lists[l].len()
		}
		for _, pf := range []int{1, 2} {
			keep := k * os * pf
			cut, err := x.hammingCut(ctx, qc, nil, probed, rows, keep, 2)
			if err != nil {
				t.Fatal(err)
			}
			if want := hammingWant(keep, within(64*W), rows); within(cut) < want || (cut > 0 && within(cut-1) >= want) {
				t.Fatalf("query %d keep %d: cut %d holds %d sampled rows (%d below it), want the smallest holding %d", qi, keep, cut, within(cut), within(cut-1), want)
			}
			if pf == 1 {
				cut1 = cut
			}
			o := DiskSearchOptions{Mode: DiskBinary, Oversample: os, Prefilter: pf, NProbe: nprobe}
			got, err := x.SearchWith(ctx, q, k, nil, o)
			if err != nil {
				t.Fatal(err)
			}
			checkWithinCut(t, qi, pf, k, got, cut, func(id string) int { return hamming(qc, codeOf(ordOf[id])) }, score)
			old := diskPackBudget
			diskPackBudget = 0 // the lists read from the segments
			x.dropPacks()
			scattered, err := x.SearchWith(ctx, q, k, nil, o)
			diskPackBudget = old
			if err != nil || !reflect.DeepEqual(scattered, got) {
				t.Fatalf("query %d prefilter %d without packs: %v %v, want %v", qi, pf, scattered, err, got)
			}
		}
		plain, err := x.SearchWith(ctx, q, k, nil, DiskSearchOptions{Mode: DiskBinary, Oversample: os, Prefilter: -1, NProbe: nprobe})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range plain {
			if hamming(qc, codeOf(ordOf[h.ID])) > cut1 {
				beyond++
			}
		}
	}
	if beyond == 0 {
		t.Fatal("no hit of the unfiltered scan lies beyond a prefilter's cut: the test cannot tell the prefilter from none")
	}
	// Lists in order: a probed list's codes are read in place, pieces of consecutive
	// ordinals, sampled a block at a time (sampleCodes), counting what a row-by-row count
	// does.
	if err := x.OrderLists(ctx); err != nil || !x.listsInOrder() {
		t.Fatalf("OrderLists: %v, lists in order %v", err, x.listsInOrder())
	}
	runs := 0
	for _, q := range vectest.RandVecs(rng, 6, dim) {
		nq, _ := x.prepQuery(q, "q")
		qc := make([]uint64, W)
		binaryCode(x.binaryView(nq), qc)
		for _, l := range x.probeWith(nq, DiskSearchOptions{NProbe: nprobe}) {
			got, want := make([]int, 64*W+1), make([]int, 64*W+1)
			if err := x.sampleList(l, qc, got); err != nil {
				t.Fatal(err)
			}
			for o := range x.lists[l].all() {
				if hammingSampled(o) {
					want[hamming(qc, codeOf(o))]++
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("list %d in order: counts %v, want %v", l, got, want)
			}
			p, err := x.pack(l, DiskBinary)
			if err != nil || p == nil {
				t.Fatalf("list %d: pack %v %v", l, p, err)
			}
			for _, pc := range p.pieces {
				if n := pc.n; n > 1 && int(pc.at(n-1)-pc.at(0)) == n-1 {
					runs++
				}
			}
		}
	}
	if runs == 0 {
		t.Fatal("no list read in place as a run of consecutive ordinals")
	}
}

// TestSampleRun: the prefilter's first pass over a run counts exactly the rows whose
// ordinals lie in sampled blocks (hammingSampled), whatever the run's bounds and its
// segment's first ordinal, and hammingWant keeps twice keep in the sample's proportion.
func TestSampleRun(t *testing.T) {
	const W, rows = 2, 1500
	rng := rand.New(rand.NewPCG(12, 13))
	seg := &diskSeg{rows: rows, b1: make([]uint64, rows*W)}
	for i := range seg.b1 {
		seg.b1[i] = rng.Uint64()
	}
	qc := []uint64{rng.Uint64(), rng.Uint64()}
	for _, base := range []int32{0, 64, 448, 1000, 3 * 512} {
		for range 50 {
			lo := rng.IntN(rows)
			hi := lo + rng.IntN(rows-lo+1)
			r := codeRun{seg, base, lo, hi}
			got, want := make([]int, 64*W+1), make([]int, 64*W+1)
			sampleRun(r, qc, W, got)
			for j := lo; j < hi; j++ {
				if hammingSampled(base + int32(j)) {
					want[hamming(qc, seg.b1[j*W:(j+1)*W])]++
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("base %d rows [%d, %d): counts %v, want %v", base, lo, hi, got, want)
			}
		}
	}
	for _, c := range []struct{ keep, sampled, rows, want int }{
		{100, 125, 1000, 25}, {100, 0, 1000, 1}, {100, 10, 0, 1}, {1000, 1, 8, 250}, {3, 1, 1000, 1},
	} {
		if got := hammingWant(c.keep, c.sampled, c.rows); got != c.want {
			t.Errorf("hammingWant(%d, %d, %d) = %d, want %d", c.keep, c.sampled, c.rows, got, c.want)
		}
	}
}
