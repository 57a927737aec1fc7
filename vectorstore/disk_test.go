package vectorstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/agentmem/memory/internal/vecmath"
	"github.com/agentmem/memory/internal/vectest"
)

// smallDiskWrites makes the disk index write its rows every few rows, so that tests cross
// segment boundaries, compaction and reopen with few vectors.
func smallDiskWrites(t *testing.T, flush int) {
	old := diskFlushRows
	diskFlushRows = flush
	t.Cleanup(func() { diskFlushRows = old })
}

func openDisk(t *testing.T, cfg IndexConfig) *DiskIndex {
	t.Helper()
	x, err := NewDiskIndex(cfg)
	if err != nil {
		t.Fatalf("NewDiskIndex: %v", err)
	}
	return x
}

// diskClustered returns n vectors of a mixture of c Gaussians (centres N(0,1), spread
// sigma), the shape of embedding sets.
func diskClustered(rng *rand.Rand, n, d, c int, sigma float64) [][]float32 {
	centres := make([][]float32, c)
	for i := range centres {
		centres[i] = make([]float32, d)
		for j := range centres[i] {
			centres[i][j] = float32(rng.NormFloat64())
		}
	}
	out := make([][]float32, n)
	slab := make([]float32, n*d)
	for i := range out {
		ctr := centres[rng.IntN(c)]
		v := slab[i*d : (i+1)*d : (i+1)*d]
		for j := range v {
			v[j] = ctr[j] + float32(sigma*rng.NormFloat64())
		}
		out[i] = v
	}
	return out
}

// TestDiskMatchesFlat holds the disk index to the flat index: after rounds of adds,
// replacements, deletes, commits (rows written to small segments, compaction) and
// reopens, every search (filtered or not, one query or a batch, by an allow list) returns
// exactly the flat index's hits: same ids, same scores bit for bit, same tie order.
func TestDiskMatchesFlat(t *testing.T) {
	for _, tc := range []struct {
		name   string
		metric Metric
		dim    int
		quant  int
		flush  int
	}{
		{"cosine", Cosine, 19, DiskQuantAuto, 3},
		{"ip", InnerProduct, 16, DiskQuantNone, 4},
		{"cosine-int8", Cosine, 33, DiskQuantInt8, 7},
		{"cosine-binary", Cosine, 64, DiskQuantBinary, 2},
		{"cosine-binary-ivf", Cosine, 20, -1, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			smallDiskWrites(t, tc.flush)
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(7, uint64(tc.dim)))
			dir := t.TempDir()
			cfg := IndexConfig{Backend: "disk", Dim: tc.dim, Metric: tc.metric, Dir: dir,
				Params: map[string]int{"segrows": 5, "quant": tc.quant, "threads": 2}}
			if tc.quant < 0 { // inverted lists over binary codes
				cfg.Params["quant"], cfg.Params["nlist"] = DiskQuantBinary, 3
			}
			flat, err := newFlatIndex(IndexConfig{Dim: tc.dim, Metric: tc.metric})
			if err != nil {
				t.Fatal(err)
			}
			x := openDisk(t, cfg)
			defer func() { x.Close() }()
			shared := vectest.RandVecs(rng, 1, tc.dim)[0] // a vector several ids hold: ties
			var seq uint64
			for round := range 30 {
				n := rng.IntN(12)
				ids := make([]string, n)
				vecs := make([][]float32, n)
				for i := range ids {
					ids[i] = fmt.Sprintf("d%03d", rng.IntN(80))
					vecs[i] = vectest.RandVecs(rng, 1, tc.dim)[0]
					if rng.IntN(5) == 0 {
						vecs[i] = shared
					}
				}
				var dels []string
				for range rng.IntN(6) {
					dels = append(dels, fmt.Sprintf("d%03d", rng.IntN(80)))
				}
				for _, ix := range []Index{flat, x} {
					if err := ix.Delete(ctx, dels...); err != nil {
						t.Fatal(err)
					}
					if err := ix.Add(ctx, ids, vecs); err != nil {
						t.Fatal(err)
					}
				}
				seq++
				if err := x.Commit(seq); err != nil {
					t.Fatal(err)
				}
				if round%7 == 6 {
					if err := x.Close(); err != nil {
						t.Fatal(err)
					}
					x = openDisk(t, cfg)
					if x.Seq() != seq {
						t.Fatalf("reopened at seq %d, want %d", x.Seq(), seq)
					}
				}
				if x.Len() != flat.Len() {
					t.Fatalf("round %d: Len %d, flat %d", round, x.Len(), flat.Len())
				}
				compareWithFlat(t, ctx, rng, flat, x, tc.dim, shared)
			}
			if tc.quant != DiskQuantNone && len(x.segs) == 0 {
				t.Fatal("no segment was written")
			}
		})
	}
}

// compareWithFlat checks searches of x against flat.
func compareWithFlat(t *testing.T, ctx context.Context, rng *rand.Rand, flat *flatIndex, x *DiskIndex, dim int, shared []float32) {
	t.Helper()
	qs := append(vectest.RandVecs(rng, 4, dim), shared)
	odd := func(id string) bool { return id[len(id)-1]%2 == 1 }
	var allow []string
	for i := range 80 {
		if i%3 == 0 {
			allow = append(allow, fmt.Sprintf("d%03d", i))
		}
	}
	allowF := func(id string) bool { return slices.Contains(allow, id) }
	for _, k := range []int{1, 5, 200} {
		for fi, f := range []Filter{nil, odd} {
			want, err := flat.SearchBatch(ctx, qs, k, f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := x.SearchBatchWith(ctx, qs, k, f, DiskSearchOptions{Mode: DiskExact})
			if err != nil {
				t.Fatal(err)
			}
			for i, q := range qs {
				one, err := x.SearchWith(ctx, q, k, f, DiskSearchOptions{Mode: DiskExact})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(one, want[i]) || !reflect.DeepEqual(got[i], want[i]) {
					t.Fatalf("k=%d filter %d query %d:\n disk  %v\n batch %v\n flat  %v", k, fi, i, one, got[i], want[i])
				}
			}
		}
		for i, q := range qs {
			want, _ := flat.Search(ctx, q, k, allowF)
			got, err := x.SearchAllowed(ctx, q, k, allow)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("allow k=%d query %d:\n disk %v\n flat %v", k, i, got, want)
			}
		}
	}
}

// TestDiskTamper damages each file of a persisted disk index (deleted, truncated to
// nothing or to half, bytes flipped) and opens it: the open fails with errDiskCorrupt (the
// store then rebuilds the index from its store of record), never panics, and never opens
// on wrong data. A deleted disk.json opens empty at Seq 0, which the store also rebuilds.
func TestDiskTamper(t *testing.T) {
	smallDiskWrites(t, 4)
	ctx := context.Background()
	src := t.TempDir()
	for _, quant := range []int{DiskQuantAuto, DiskQuantInt8} {
		dir := filepath.Join(src, fmt.Sprint(quant))
		cfg := IndexConfig{Dim: 24, Dir: dir, Params: map[string]int{"segrows": 8, "quant": quant}}
		if quant == DiskQuantInt8 {
			cfg.Params["nlist"] = 4 // and inverted lists: ivf-G.bin, seg-N.ivl
		}
		x := openDisk(t, cfg)
		rng := rand.New(rand.NewPCG(1, 2))
		vecs := vectest.RandVecs(rng, 30, 24)
		if err := x.Add(ctx, vectest.IDs(30), vecs); err != nil {
			t.Fatal(err)
		}
		if err := x.Commit(1); err != nil {
			t.Fatal(err)
		}
		if err := x.Delete(ctx, "doc-00003", "doc-00011"); err != nil {
			t.Fatal(err)
		}
		if err := x.Commit(2); err != nil {
			t.Fatal(err)
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]bool{}
		for _, e := range ents {
			kinds[strings.SplitN(filepath.Ext(e.Name())+"|"+strings.SplitN(e.Name(), "-", 2)[0], ".", 2)[1]] = true
		}
		damages := map[string]func(p string) error{
			"delete":        os.Remove,
			"truncate-0":    func(p string) error { return os.Truncate(p, 0) },
			"truncate-half": func(p string) error { fi, _ := os.Stat(p); return os.Truncate(p, fi.Size()/2) },
		}
		for seed := range 4 {
			damages[fmt.Sprintf("flip-%d", seed)] = func(p string) error {
				b, err := os.ReadFile(p)
				if err != nil || len(b) == 0 {
					return err
				}
				r := rand.New(rand.NewPCG(uint64(seed), 9))
				b[r.IntN(len(b))] ^= byte(1 + r.IntN(255))
				return os.WriteFile(p, b, 0o644)
			}
		}
		for _, e := range ents {
			for dname, damage := range damages {
				t.Run(fmt.Sprintf("quant%d/%s/%s", quant, e.Name(), dname), func(t *testing.T) {
					cp := filepath.Join(t.TempDir(), "v")
					if err := os.CopyFS(cp, os.DirFS(dir)); err != nil {
						t.Fatal(err)
					}
					if err := damage(filepath.Join(cp, e.Name())); err != nil {
						t.Fatal(err)
					}
					c := cfg
					c.Dir = cp
					y, err := NewDiskIndex(c)
					if err == nil {
						defer y.Close()
						if e.Name() == diskMetaFile && dname == "delete" && y.Seq() == 0 && y.Len() == 0 {
							return
						}
						t.Fatalf("opened a damaged index (seq %d, %d vectors)", y.Seq(), y.Len())
					}
					if !errors.Is(err, errDiskCorrupt) {
						t.Fatalf("error %v does not match errDiskCorrupt", err)
					}
				})
			}
		}
		if len(kinds) < 4+2*(quant/DiskQuantInt8) {
			t.Fatalf("only file kinds %v were damaged", kinds)
		}
	}
}

// TestDiskReopenCopies checks that an index copied elsewhere (new modification times: every
// segment is checked by its CRC) opens with the same answers, and that a config that
// differs from the recorded one is errDiskConfig.
func TestDiskReopenCopies(t *testing.T) {
	smallDiskWrites(t, 10)
	ctx := context.Background()
	dir := t.TempDir()
	cfg := IndexConfig{Dim: 12, Dir: dir, Params: map[string]int{"segrows": 16}}
	x := openDisk(t, cfg)
	vecs := vectest.RandVecs(rand.New(rand.NewPCG(3, 4)), 50, 12)
	if err := x.Add(ctx, vectest.IDs(50), vecs); err != nil {
		t.Fatal(err)
	}
	if err := x.Commit(5); err != nil {
		t.Fatal(err)
	}
	want, _ := x.Search(ctx, vecs[7], 5, nil)
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(cp, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	c := cfg
	c.Dir = cp
	y := openDisk(t, c)
	got, _ := y.Search(ctx, vecs[7], 5, nil)
	if !reflect.DeepEqual(got, want) || y.Seq() != 5 || y.Len() != 50 {
		t.Fatalf("copy: %v seq %d len %d, want %v", got, y.Seq(), y.Len(), want)
	}
	y.Close()
	for _, bad := range []IndexConfig{
		{Dim: 13, Dir: cp},
		{Dim: 12, Dir: cp, Metric: InnerProduct},
		{Dim: 12, Dir: cp, Params: map[string]int{"quant": DiskQuantInt8}},
	} {
		if _, err := NewDiskIndex(bad); !errors.Is(err, errDiskConfig) {
			t.Errorf("%+v: err %v, want errDiskConfig", bad, err)
		}
	}
}

// TestDiskReadOnly checks that a read-only index writes nothing.
func TestDiskReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	x := openDisk(t, IndexConfig{Dim: 8, Dir: dir})
	if err := x.Add(ctx, vectest.IDs(3), vectest.RandVecs(rand.New(rand.NewPCG(1, 1)), 3, 8)); err != nil {
		t.Fatal(err)
	}
	x.Commit(3)
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, diskMetaFile))
	y := openDisk(t, IndexConfig{Dim: 8, Dir: dir, ReadOnly: true})
	if err := y.Add(ctx, []string{"new"}, vectest.RandVecs(rand.New(rand.NewPCG(1, 2)), 1, 8)); err != nil {
		t.Fatal(err)
	}
	if err := y.Delete(ctx, "doc-00000"); err != nil {
		t.Fatal(err)
	}
	y.Commit(9)
	if y.Len() != 3 {
		t.Fatalf("Len %d, want 3", y.Len())
	}
	if err := y.Close(); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, diskMetaFile))
	if !reflect.DeepEqual(before, after) {
		t.Fatal("a read-only index rewrote disk.json")
	}
}

// diskRecall is the mean recall@k of got against want.
func diskRecall(got, want [][]Hit, k int) float64 {
	sum := 0.0
	for i := range want {
		ids := map[string]bool{}
		for _, h := range want[i][:min(k, len(want[i]))] {
			ids[h.ID] = true
		}
		n := 0
		for _, h := range got[i][:min(k, len(got[i]))] {
			if ids[h.ID] {
				n++
			}
		}
		sum += float64(n) / float64(len(ids))
	}
	return sum / float64(len(want))
}

// TestDiskQuantizedRecall checks the code scans with rescoring on clustered vectors:
// int8 and binary codes find nearly every exact top-10 hit, the rescored scores are exact
// float32 scores, and the plan says what was chosen.
func TestDiskQuantizedRecall(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(11, 12))
	const n, d, nq, k = 20000, 96, 50, 10
	all := diskClustered(rng, n+nq, d, 200, 0.5)
	vecs, qs := all[:n], all[n:]
	ids := vectest.IDs(n)
	for _, tc := range []struct {
		quant int
		mode  DiskMode
		min   float64
		plan  string
		nlist int
	}{
		{DiskQuantInt8, DiskModeDefault, 0.99, "int8 codes", 0},
		{DiskQuantBinary, DiskModeDefault, 0.9, "the 2 of 32 inverted lists", 32},
		{DiskQuantInt8, DiskModeDefault, 0.9, "the 2 of 32 inverted lists", 32},
		{DiskQuantBinary, DiskModeDefault, 0.9, "binary codes", 0},
		{DiskQuantAuto, DiskModeDefault, 0.9, "exceed the 1 MiB kept", 0},
		{DiskQuantAuto, DiskExact, 1, "", 0},
	} {
		t.Run(fmt.Sprintf("quant%d-%s-nlist%d", tc.quant, tc.mode, tc.nlist), func(t *testing.T) {
			x := openDisk(t, IndexConfig{Dim: d, Dir: t.TempDir(), Params: map[string]int{"quant": tc.quant, "exactmb": 1, "segrows": 4096, "nlist": tc.nlist}})
			defer x.Close()
			if err := x.Add(ctx, ids, vecs); err != nil {
				t.Fatal(err)
			}
			if err := x.Close(); err != nil { // writes the segments and codes
				t.Fatal(err)
			}
			x = openDisk(t, IndexConfig{Dim: d, Dir: x.dir, Params: map[string]int{"quant": tc.quant, "exactmb": 1, "segrows": 4096, "nlist": tc.nlist}})
			exact, err := x.SearchBatchWith(ctx, qs, k, nil, DiskSearchOptions{Mode: DiskExact})
			if err != nil {
				t.Fatal(err)
			}
			got, err := x.SearchBatchWith(ctx, qs, k, nil, DiskSearchOptions{Mode: tc.mode})
			if err != nil {
				t.Fatal(err)
			}
			r := diskRecall(got, exact, k)
			plan, _ := x.SearchPlan()
			t.Logf("recall@%d %.4f (%s)", k, r, plan)
			if r < tc.min {
				t.Errorf("recall@%d %.4f < %.2f", k, r, tc.min)
			}
			if !strings.Contains(plan, tc.plan) {
				t.Errorf("plan %q lacks %q", plan, tc.plan)
			}
			// Rescored scores are the exact ones.
			for i := range got {
				for _, h := range got[i] {
					v, _ := x.Vector(h.ID)
					var one [1]float32
					q, _ := x.prepQuery(qs[i], "q")
					flatDots(q, v, one[:])
					if float64(one[0]) != h.Score {
						t.Fatalf("hit %s scored %v, exact %v", h.ID, h.Score, one[0])
					}
				}
			}
		})
	}
	x := openDisk(t, IndexConfig{Dim: d, Params: map[string]int{"quant": DiskQuantNone}})
	defer x.Close()
	if _, err := x.SearchWith(ctx, qs[0], 3, nil, DiskSearchOptions{Mode: DiskBinary}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("binary search without codes: err %v, want ErrBadConfig", err)
	}
}

// TestDiskDotInt8 holds the int8 kernel (AVX2 where the CPU has it) to the portable one,
// every length up to 100 with extreme values.
func TestDiskDotInt8(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for n := range 100 {
		qi := make([]int16, n)
		c := make([]int8, n)
		for j := range n {
			qi[j] = int16(rng.IntN(2*diskQueryQuant+1) - diskQueryQuant)
			c[j] = int8(rng.IntN(255) - 127)
			if rng.IntN(4) == 0 {
				qi[j], c[j] = diskQueryQuant, -127
			}
		}
		if got, want := dotInt8Q(qi, c), dotInt8QGeneric(qi, c); got != want {
			t.Fatalf("n=%d: %d, portable %d", n, got, want)
		}
	}
}

// TestDiskBinaryScore holds the nibble-table score of a sign code to its definition, the dot
// product of the query with the code's signs, for dimensions that do and do not fill the
// code's words.
func TestDiskBinaryScore(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for _, d := range []int{1, 7, 8, 63, 64, 65, 96, 384} {
		q, v := vectest.RandVecs(rng, 1, d)[0], vectest.RandVecs(rng, 1, d)[0]
		code := make([]uint64, (d+63)/64)
		binaryCode(v, code)
		var want float64
		for j := range d {
			if v[j] > 0 {
				want += float64(q[j])
			} else {
				want -= float64(q[j])
			}
		}
		got := binaryScore(binaryLUT(q, nil), code)
		if math.Abs(float64(got)-want) > 1e-4*(1+math.Abs(want)) {
			t.Errorf("d=%d: score %v, want %v", d, got, want)
		}
	}
}

// TestDiskBinaryRecallTightClusters checks binary codes where they are weakest: a thousand
// vectors a cluster, whose nearest neighbours differ from the rest of their cluster by
// little. Scoring the float32 query against the codes' signs (not the Hamming distance of
// two sign codes) with the default oversampling keeps recall@10 above 0.95.
func TestDiskBinaryRecallTightClusters(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(21, 22))
	const n, d, nq, k = 20000, 384, 40, 10
	all := diskClustered(rng, n+nq, d, 20, 0.5)
	x := openDisk(t, IndexConfig{Dim: d, Dir: t.TempDir(), Params: map[string]int{"quant": DiskQuantBinary}})
	defer x.Close()
	if err := x.Add(ctx, vectest.IDs(n), all[:n]); err != nil {
		t.Fatal(err)
	}
	if err := x.Commit(1); err != nil {
		t.Fatal(err)
	}
	x.mu.Lock()
	err := x.persistLocked() // the rows to segments, with their codes
	x.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	exact, err := x.SearchBatchWith(ctx, all[n:], k, nil, DiskSearchOptions{Mode: DiskExact})
	if err != nil {
		t.Fatal(err)
	}
	got, err := x.SearchBatch(ctx, all[n:], k, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := diskRecall(got, exact, k); r < 0.95 {
		t.Errorf("binary recall@10 %.3f < 0.95", r)
	}
}

// TestDiskAddAllocs bounds the allocations of a bulk Add into the rows kept in memory: the
// id's copy and its map slot, and no more than a few per batch for the row buffer. A label
// built for every vector's check and a row buffer grown a row at a time made bulk ingest
// with vectors allocate (and collect) per vector what it needs per batch.
func TestDiskAddAllocs(t *testing.T) {
	const dim, batch, batches = 64, 1000, 8
	rng := rand.New(rand.NewPCG(7, 7))
	vecs := diskClustered(rng, batch*batches, dim, 4, 0.3)
	ids := make([]string, len(vecs))
	for i := range ids {
		ids[i] = fmt.Sprintf("doc-%06d", i)
	}
	ctx := context.Background()
	var x *DiskIndex
	next := 0
	allocs := testing.AllocsPerRun(batches-1, func() {
		if x == nil || next == batches {
			x, next = openDisk(t, IndexConfig{Dim: dim, Metric: Cosine}), 0
		}
		lo := next * batch
		if err := x.Add(ctx, ids[lo:lo+batch], vecs[lo:lo+batch]); err != nil {
			t.Fatal(err)
		}
		next++
	})
	perVec := allocs / batch
	t.Logf("%.0f allocations a batch of %d (%.2f a vector)", allocs, batch, perVec)
	// strings.Clone and the map's buckets: about 1.1 a vector.
	if perVec > 1.5 {
		t.Errorf("Add allocates %.2f times a vector, want <= 1.5", perVec)
	}
}

// TestDiskPackedLists: a quantized search over inverted lists answers the same with the
// lists' codes packed in list order (after the first probe) as when it reads them from the
// segments, while rows are added (the lists grow after they were packed), deleted,
// compacted, and after a reopen.
func TestDiskPackedLists(t *testing.T) {
	ctx := context.Background()
	const n, d, nq, k = 6000, 48, 40, 10
	for _, quant := range []int{DiskQuantBinary, DiskQuantInt8} {
		t.Run(fmt.Sprint("quant", quant), func(t *testing.T) {
			smallDiskWrites(t, 500)
			rng := rand.New(rand.NewPCG(5, uint64(quant)))
			all := diskClustered(rng, n+nq, d, 60, 0.5)
			vecs, qs := all[:n], all[n:]
			ids := vectest.IDs(n)
			cfg := IndexConfig{Dim: d, Dir: t.TempDir(), Params: map[string]int{"quant": quant, "segrows": 700, "nlist": 16}}
			x := openDisk(t, cfg)
			defer func() { x.Close() }()
			o := DiskSearchOptions{NProbe: 3, Oversample: 8}
			same := func(stage string) {
				t.Helper()
				old := diskPackBudget
				diskPackBudget = 0
				want, err := x.SearchBatchWith(ctx, qs, k, nil, o)
				diskPackBudget = old
				if err != nil {
					t.Fatal(err)
				}
				for range 2 { // packs the lists, then reads the packs
					got, err := x.SearchBatchWith(ctx, qs, k, nil, o)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("%s: packed lists answer differently", stage)
					}
				}
				if x.lists != nil && x.packs.Load() == nil {
					t.Fatalf("%s: no list was packed", stage)
				}
			}
			for lo := 0; lo < n; lo += 1000 {
				if err := x.Add(ctx, ids[lo:lo+1000], vecs[lo:lo+1000]); err != nil {
					t.Fatal(err)
				}
				if err := x.Commit(uint64(lo + 1000)); err != nil {
					t.Fatal(err)
				}
				same(fmt.Sprint("after ", lo+1000, " rows"))
			}
			if err := x.Delete(ctx, ids[:2000]...); err != nil {
				t.Fatal(err)
			}
			if err := x.Commit(uint64(n + 1)); err != nil {
				t.Fatal(err)
			}
			same("after deletes")
			if err := x.Close(); err != nil { // a third of the rows dead: compacts
				t.Fatal(err)
			}
			x = openDisk(t, cfg)
			same("reopened")
			hits, err := x.SearchBatchWith(ctx, qs, k, nil, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, hs := range hits {
				for _, h := range hs {
					if h.ID < ids[2000] {
						t.Fatalf("deleted %s found", h.ID)
					}
				}
			}
		})
	}
}

// diskRowsAndCheck draws n clustered rows of dim (seeded) with ids, and a check that an
// index returns the first n of them (normalised) as their vectors.
func diskRowsAndCheck(t *testing.T, seed uint64, dim, n int) ([]string, [][]float32, func(x *DiskIndex, n int)) {
	rng := rand.New(rand.NewPCG(seed, 9))
	vecs := diskClustered(rng, n, dim, 4, 0.3)
	ids := make([]string, len(vecs))
	for i := range ids {
		ids[i] = fmt.Sprintf("doc-%06d", i)
	}
	return ids, vecs, func(x *DiskIndex, n int) {
		t.Helper()
		for i := range n {
			want := make([]float32, dim)
			vecmath.NormalizeInto(want, vecs[i])
			if got, ok := x.Vector(ids[i]); !ok || !slices.Equal(got, want) {
				t.Fatalf("%s: vector differs after %d rows (found %v)", ids[i], n, ok)
			}
		}
	}
}

// TestDiskTailReuse: the rows a Commit wrote to disk leave their buffer to the next rows (a
// bulk ingest allocated, zeroed and copied the tail afresh after every flush, doubling it
// up to the flush size), and the rows kept in the reused buffer, those written from it and
// those read back after a reopen are the vectors added.
func TestDiskTailReuse(t *testing.T) {
	smallDiskWrites(t, 1000)
	const dim, batch, batches = 32, 250, 12
	ids, vecs, check := diskRowsAndCheck(t, 3, dim, batch*batches)
	ctx := context.Background()
	dir := t.TempDir()
	x := openDisk(t, IndexConfig{Dim: dim, Metric: Cosine, Dir: dir})
	var buf *float32 // the tail buffer after the first flush
	for b := range batches {
		lo := b * batch
		if err := x.Add(ctx, ids[lo:lo+batch], vecs[lo:lo+batch]); err != nil {
			t.Fatal(err)
		}
		if b >= 4 { // the first flush is behind
			p := unsafe.SliceData(x.tailVecs[:1])
			if buf == nil {
				buf = p
			} else if p != buf {
				t.Fatalf("batch %d: the tail's buffer was allocated again after a flush", b)
			}
		}
		if err := x.Commit(uint64(b + 1)); err != nil {
			t.Fatal(err)
		}
		check(x, lo+batch)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	x = openDisk(t, IndexConfig{Dim: dim, Metric: Cosine, Dir: dir})
	defer x.Close()
	check(x, len(ids))
}

// TestDiskCommitBackground: rows written by a background commit are those added, whether
// read while the write runs (the next call waits for it), after it, or after a reopen; a
// write that fails makes the next call and Close report it.
func TestDiskCommitBackground(t *testing.T) {
	smallDiskWrites(t, 500)
	const dim, batch, batches = 16, 250, 8
	ids, vecs, checkRows := diskRowsAndCheck(t, 5, dim, batch*batches)
	ctx := context.Background()
	dir := t.TempDir()
	x := openDisk(t, IndexConfig{Dim: dim, Metric: Cosine, Dir: dir})
	check := func(x *DiskIndex, n int) {
		t.Helper()
		if got := x.Len(); got != n {
			t.Fatalf("Len %d, want %d", got, n)
		}
		checkRows(x, n)
	}
	for b := range batches {
		lo := b * batch
		if err := x.Add(ctx, ids[lo:lo+batch], vecs[lo:lo+batch]); err != nil {
			t.Fatal(err)
		}
		if err := x.CommitBackground(uint64(b + 1)); err != nil {
			t.Fatal(err)
		}
		if b%2 == 1 {
			check(x, lo+batch)
		}
		if got := x.Seq(); got != uint64(b+1) {
			t.Fatalf("Seq %d, want %d", got, b+1)
		}
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	x = openDisk(t, IndexConfig{Dim: dim, Metric: Cosine, Dir: dir})
	check(x, len(ids))
	if got := x.Seq(); got != batches {
		t.Fatalf("reopened at %d, want %d", got, batches)
	}

	// A write that fails: the directory's parent is a file.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	x.mu.Lock()
	x.dir = filepath.Join(file, "vectors")
	x.mu.Unlock()
	if err := x.Add(ctx, ids[:batch*2], vecs[:batch*2]); err != nil {
		t.Fatal(err)
	}
	if err := x.CommitBackground(batches + 1); err != nil {
		t.Fatalf("CommitBackground: %v (the write's error comes later)", err)
	}
	if err := x.Add(ctx, ids[:1], vecs[:1]); !errors.Is(err, errDiskClosed) {
		t.Fatalf("Add after a failed background write: %v, want errDiskClosed", err)
	}
	if err := x.Close(); !errors.Is(err, errDiskClosed) {
		t.Fatalf("Close after a failed background write: %v, want errDiskClosed", err)
	}
}

// TestBinaryCodeSigns holds the branch-free sign code to its definition (bit j set when
// value j > 0) on the values at the edges: both zeros, the smallest subnormals, the
// largest finite values, and random vectors of 1 to 200 values.
func TestBinaryCodeSigns(t *testing.T) {
	edge := []float32{0, float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
		math.MaxFloat32, -math.MaxFloat32, 1, -1, 1e-40, -1e-40}
	vecs := [][]float32{edge}
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 1; n <= 200; n++ {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
			if rng.IntN(10) == 0 {
				v[i] = edge[rng.IntN(len(edge))]
			}
		}
		vecs = append(vecs, v)
	}
	for _, v := range vecs {
		code := make([]uint64, (len(v)+63)/64)
		binaryCode(v, code)
		for j, f := range v {
			if got, want := code[j>>6]>>(j&63)&1 == 1, f > 0; got != want {
				t.Fatalf("value %d (%v) of %d: bit %v", j, f, len(v), got)
			}
		}
	}
}

// checkIDTable checks x's id table: sorted by id, each of live found at one ordinal
// holding it, none of gone found.
func checkIDTable(t *testing.T, x *DiskIndex, live, gone []string) {
	t.Helper()
	if x.ids.n != x.n0 || len(x.ids.perm) != x.n0 {
		t.Fatalf("id table of %d ordinals (%d sorted), %d written", x.ids.n, len(x.ids.perm), x.n0)
	}
	for i := 1; i < len(x.ids.perm); i++ {
		if x.ids.at(int(x.ids.perm[i-1])) >= x.ids.at(int(x.ids.perm[i])) {
			t.Fatalf("id table not sorted at %d: %q, %q", i, x.ids.at(int(x.ids.perm[i-1])), x.ids.at(int(x.ids.perm[i])))
		}
	}
	for _, id := range live {
		if got := x.ids.find(id); len(got) != 1 || x.idView(got[0]) != id {
			t.Fatalf("%s found at %v", id, got)
		}
	}
	for _, id := range gone {
		if got := x.ids.find(id); len(got) != 0 {
			t.Fatalf("deleted %s found at %v", id, got)
		}
	}
}

// TestDiskOrderLists: OrderLists writes each inverted list's rows in consecutive ordinals
// (the dead rows dropped), after which a probed list's codes are read in place from the
// segments (no copy) and every query's scores are what they were, before and after a
// reopen; the rows still in memory are written into their lists; a second call, and a
// read-only index, write nothing.
func TestDiskOrderLists(t *testing.T) {
	ctx := context.Background()
	const n, d, nq, k = 6000, 48, 40, 10
	for _, rowless := range []bool{false, true} {
		t.Run(fmt.Sprint("rowless=", rowless), func(t *testing.T) {
			smallDiskWrites(t, 500)
			old := diskDropEvery
			diskDropEvery = 64 // the copy drops the old id table's pages from the resident set as it goes
			t.Cleanup(func() { diskDropEvery = old })
			rng := rand.New(rand.NewPCG(7, 8))
			all := diskClustered(rng, n+100+nq, d, 60, 0.5)
			vecs, qs := all[:n+100], all[n+100:]
			ids := vectest.IDs(n + 100)
			cfg := IndexConfig{Dim: d, Dir: t.TempDir(), Params: map[string]int{"quant": DiskQuantBinary, "segrows": 700, "nlist": 16}}
			if rowless {
				src := RowMap{}
				for i, id := range ids {
					src[id] = vecs[i]
				}
				cfg.Rows, cfg.Params = src, map[string]int{"segrows": 700, "nlist": 16, "code": DiskCodeRotated}
			}
			x := openDisk(t, cfg)
			defer func() { x.Close() }()
			for lo := 0; lo < n; lo += 1000 {
				if err := x.Add(ctx, ids[lo:lo+1000], vecs[lo:lo+1000]); err != nil {
					t.Fatal(err)
				}
				if err := x.Commit(uint64(lo + 1000)); err != nil {
					t.Fatal(err)
				}
			}
			if err := x.Delete(ctx, ids[:500]...); err != nil {
				t.Fatal(err)
			}
			if err := x.Commit(uint64(n + 1)); err != nil {
				t.Fatal(err)
			}
			if x.listsInOrder() || len(x.tailIDs) != 0 || x.dead != 500 {
				t.Fatalf("before: lists in order %v, %d rows in memory, %d dead", x.listsInOrder(), len(x.tailIDs), x.dead)
			}
			o := DiskSearchOptions{Mode: DiskBinary, NProbe: 4, Oversample: 8}
			scores := func() [][]float64 {
				t.Helper()
				hits, err := x.SearchBatchWith(ctx, qs, k, nil, o)
				if err != nil {
					t.Fatal(err)
				}
				out := make([][]float64, len(hits))
				for i, hs := range hits {
					if len(hs) != k {
						t.Fatalf("query %d: %d hits", i, len(hs))
					}
					for _, h := range hs {
						if h.ID < ids[500] {
							t.Fatalf("deleted %s found", h.ID)
						}
						out[i] = append(out[i], h.Score)
					}
				}
				return out
			}
			want := scores()
			gen := x.meta.Gen
			if err := x.OrderLists(ctx); err != nil {
				t.Fatal(err)
			}
			if !x.listsInOrder() || x.dead != 0 || x.Len() != n-500 || x.meta.Gen != gen+1 {
				t.Fatalf("after: lists in order %v, %d dead, %d rows, generation %d -> %d", x.listsInOrder(), x.dead, x.Len(), gen, x.meta.Gen)
			}
			if got := scores(); !reflect.DeepEqual(got, want) {
				t.Fatalf("scores after OrderLists differ:\n%v\nwant\n%v", got, want)
			}
			checkIDTable(t, x, ids[500:n], ids[:500])
			// The probed lists' codes are views of the segments, not copies.
			views := 0
			ps := x.packs.Load()
			for c := range ps.lists {
				pk := ps.lists[c].Load()
				if pk == nil {
					continue
				}
				for _, pc := range pk.pieces {
					o := pc.at(0)
					s, j := x.segs[int(o)/x.segRows], int(o)%x.segRows
					if W := x.codeWords(); &pc.b1[0] != &s.b1[j*W] {
						t.Fatalf("list %d: a copy of its codes, not a view", c)
					}
					views++
				}
			}
			if views == 0 {
				t.Fatal("no list read in place")
			}
			if err := x.OrderLists(ctx); err != nil || x.meta.Gen != gen+1 {
				t.Fatalf("a second OrderLists: %v, generation %d", err, x.meta.Gen)
			}
			if err := x.Close(); err != nil {
				t.Fatal(err)
			}
			x = openDisk(t, cfg)
			if got := scores(); !x.listsInOrder() || !reflect.DeepEqual(got, want) {
				t.Fatalf("reopened: lists in order %v, scores equal %v", x.listsInOrder(), reflect.DeepEqual(got, want))
			}
			// Rows in memory go into their lists, in order.
			if err := x.Add(ctx, ids[n:], vecs[n:]); err != nil {
				t.Fatal(err)
			}
			if err := x.Commit(uint64(n + 2)); err != nil {
				t.Fatal(err)
			}
			if len(x.tailIDs) != 100 {
				t.Fatalf("%d rows in memory", len(x.tailIDs))
			}
			if err := x.OrderLists(ctx); err != nil {
				t.Fatal(err)
			}
			if !x.listsInOrder() || len(x.tailIDs) != 0 || x.Len() != n-400 {
				t.Fatalf("with rows in memory: lists in order %v, %d rows in memory, %d rows", x.listsInOrder(), len(x.tailIDs), x.Len())
			}
			checkIDTable(t, x, ids[500:n+100], ids[:500])
			for i := n; i < n+100; i += 9 {
				hits, err := x.SearchWith(ctx, vecs[i], 1, nil, DiskSearchOptions{Mode: DiskBinary, NProbe: 1, Oversample: 8})
				if err != nil || len(hits) != 1 || hits[0].ID != ids[i] {
					t.Fatalf("row %s, once in memory, not found in its list: %v %v", ids[i], hits, err)
				}
			}
			gen = x.meta.Gen
			x.Close()
			ro := cfg
			ro.ReadOnly = true
			x = openDisk(t, ro)
			if err := x.OrderLists(ctx); err != nil || x.meta.Gen != gen {
				t.Fatalf("read-only OrderLists: %v, generation %d", err, x.meta.Gen)
			}
		})
	}
}

// TestDiskListRuns: an index whose rows lie in list order (OrderLists) loads each list as
// a run of ordinals, holding none of them; rows written to segments after it join their
// lists as ordinals beside the run; an index reopened with its rows out of list order
// loads ordinals only. Every form answers with the same scores.
func TestDiskListRuns(t *testing.T) {
	ctx := context.Background()
	const n, more, d, nq, k, nlist = 3000, 700, 32, 30, 10, 16
	smallDiskWrites(t, 200)
	rng := rand.New(rand.NewPCG(21, 22))
	all := diskClustered(rng, n+more+nq, d, 40, 0.5)
	vecs, qs := all[:n+more], all[n+more:]
	ids := vectest.IDs(n + more)
	cfg := IndexConfig{Dim: d, Dir: t.TempDir(), Params: map[string]int{"quant": DiskQuantBinary, "segrows": 500, "nlist": nlist}}
	x := openDisk(t, cfg)
	defer func() { x.Close() }()
	add := func(lo, hi int, seq uint64) {
		t.Helper()
		if err := x.Add(ctx, ids[lo:hi], vecs[lo:hi]); err != nil {
			t.Fatal(err)
		}
		if err := x.Commit(seq); err != nil {
			t.Fatal(err)
		}
	}
	add(0, n, 1)
	// Every list probed, every candidate rescored: the scores are the exact top k, whatever
	// order the rows are kept in.
	o := DiskSearchOptions{Mode: DiskBinary, NProbe: nlist, Oversample: 1000}
	scores := func() [][]float64 {
		t.Helper()
		hits, err := x.SearchBatchWith(ctx, qs, k, nil, o)
		if err != nil {
			t.Fatal(err)
		}
		one, err := x.SearchWith(ctx, qs[0], k, nil, o)
		if err != nil {
			t.Fatal(err)
		}
		out := make([][]float64, len(hits))
		for i, hs := range hits {
			for j, h := range hs {
				out[i] = append(out[i], h.Score)
				if i == 0 && (j >= len(one) || one[j].Score != h.Score) {
					t.Fatalf("a search alone and in a batch disagree: %v vs %v", one, hs)
				}
			}
		}
		return out
	}
	forms := func() (runs, rows int) {
		for _, l := range x.lists {
			if l.n > 0 {
				runs++
			}
			rows += len(l.ords)
		}
		return runs, rows
	}
	reopen := func() {
		t.Helper()
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		x = openDisk(t, cfg)
	}
	if runs, _ := forms(); runs != 0 {
		t.Fatalf("rows added as they came: %d lists held as runs", runs)
	}
	want := scores() // lists of ordinals, the rows as they came
	if err := x.OrderLists(ctx); err != nil {
		t.Fatal(err)
	}
	reopen()
	if runs, rows := forms(); runs == 0 || rows != 0 {
		t.Fatalf("reopened in list order: %d lists held as runs, %d ordinals held; want runs only", runs, rows)
	}
	if got := scores(); !reflect.DeepEqual(got, want) {
		t.Fatalf("lists as runs: scores\n%v\nwant\n%v", got, want)
	}
	// Rows added after it: into segments (smallDiskWrites), beside the runs.
	add(n, n+more, 2)
	if len(x.tailIDs) >= more {
		t.Fatalf("%d of %d new rows still in memory", len(x.tailIDs), more)
	}
	runs, rows := forms()
	if runs == 0 || rows == 0 {
		t.Fatalf("after adding rows: %d runs, %d ordinals; want both", runs, rows)
	}
	if got := x.lists[0].len(); got != int(x.lists[0].n)+len(x.lists[0].ords) {
		t.Fatalf("list 0: len %d", got)
	}
	total := 0
	for c := range x.lists {
		prev := int32(-1)
		for o := range x.lists[c].all() {
			if o <= prev {
				t.Fatalf("list %d: ordinal %d after %d", c, o, prev)
			}
			prev = o
			total++
		}
	}
	if total != x.n0 {
		t.Fatalf("the lists hold %d rows, the segments %d", total, x.n0)
	}
	want = scores()
	reopen() // rows no longer in list order: ordinals only
	if runs, rows := forms(); runs != 0 || rows != x.n0 {
		t.Fatalf("reopened out of list order: %d runs, %d of %d ordinals", runs, rows, x.n0)
	}
	if got := scores(); !reflect.DeepEqual(got, want) {
		t.Fatalf("lists as ordinals: scores\n%v\nwant\n%v", got, want)
	}
}
