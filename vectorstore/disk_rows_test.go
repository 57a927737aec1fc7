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
	"sync/atomic"
	"testing"

	"github.com/agentmem/memory/internal/vecmath"
	"github.com/agentmem/memory/internal/vectest"
)

// countingRows is a RowMap that counts its calls and the ids asked for (searches call it
// concurrently).
type countingRows struct {
	m     RowMap
	calls atomic.Int64
	ids   atomic.Int64
}

func (c *countingRows) Rows(ctx context.Context, ids []string, dst [][]float32) error {
	c.calls.Add(1)
	c.ids.Add(int64(len(ids)))
	return c.m.Rows(ctx, ids, dst)
}

// TestDiskRowlessMatchesRowful: the same vectors in an index with its own rows and in one
// that reads them from a RowSource (a map, from which deleted ids are removed as a store
// would) give the same hits, ids and scores bit for bit, in every mode (exact, binary and
// int8 codes at several oversamplings, the default, with lists at several nprobes),
// filtered, by an allow list and batched, and the same vectors; through rounds of adds,
// replacements, deletes, writes to small segments, compactions and reopens. The row-less
// index writes no .f32 file and records itself row-less.
func TestDiskRowlessMatchesRowful(t *testing.T) {
	for _, tc := range []struct {
		name   string
		metric Metric
		dim    int
		params map[string]int
	}{
		// Rotated codes (the row-less default: every padded bit), and sign codes (the
		// default with rows), the same kind on both sides.
		{"cosine-binary", Cosine, 40, map[string]int{"code": DiskCodeRotated, "codebits": 64}},
		{"cosine-binary-signs", Cosine, 40, map[string]int{"code": DiskCodeSigns}},
		{"ip-int8", InnerProduct, 24, map[string]int{"quant": DiskQuantInt8}},
		{"cosine-binary-ivf", Cosine, 20, map[string]int{"quant": DiskQuantBinary, "nlist": 3, "code": DiskCodeRotated}},
		{"cosine-int8-ivf", Cosine, 33, map[string]int{"quant": DiskQuantInt8, "nlist": 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			smallDiskWrites(t, 5)
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(9, uint64(tc.dim)))
			params := map[string]int{"segrows": 7, "threads": 2}
			for k, v := range tc.params {
				params[k] = v
			}
			full := IndexConfig{Dim: tc.dim, Metric: tc.metric, Dir: filepath.Join(t.TempDir(), "full"), Params: params}
			src := &countingRows{m: RowMap{}}
			less := full
			less.Dir, less.Rows = filepath.Join(t.TempDir(), "less"), src
			a, b := openDisk(t, full), openDisk(t, less)
			defer func() { a.Close(); b.Close() }()
			var seq uint64
			for round := range 24 {
				n := 1 + rng.IntN(12)
				ids := make([]string, n)
				vecs := vectest.RandVecs(rng, n, tc.dim)
				for i := range ids {
					ids[i] = fmt.Sprintf("d%03d", rng.IntN(70))
				}
				var dels []string
				for range rng.IntN(8) {
					dels = append(dels, fmt.Sprintf("d%03d", rng.IntN(70)))
				}
				for _, x := range []*DiskIndex{a, b} {
					if err := x.Delete(ctx, dels...); err != nil {
						t.Fatal(err)
					}
					if err := x.Add(ctx, ids, vecs); err != nil {
						t.Fatal(err)
					}
				}
				for _, id := range dels {
					delete(src.m, id)
				}
				for i, id := range ids {
					src.m[id] = vecs[i]
				}
				seq++
				for _, x := range []*DiskIndex{a, b} {
					if err := x.Commit(seq); err != nil {
						t.Fatal(err)
					}
				}
				if round%6 == 5 {
					if err := errors.Join(a.Close(), b.Close()); err != nil {
						t.Fatal(err)
					}
					a, b = openDisk(t, full), openDisk(t, less)
				}
				compareRowless(t, ctx, rng, a, b, tc.dim)
			}
			if len(b.segs) == 0 || src.calls.Load() == 0 {
				t.Fatalf("the row-less index wrote %d segments, read its rows %d times", len(b.segs), src.calls.Load())
			}
			ents, _ := os.ReadDir(less.Dir)
			for _, e := range ents {
				if strings.HasSuffix(e.Name(), ".f32") {
					t.Fatalf("the row-less index wrote %s", e.Name())
				}
			}
			if m := readMeta(t, less.Dir); !m.Rowless {
				t.Fatal("disk.json does not record the index row-less")
			}
			if m := readMeta(t, full.Dir); m.Rowless {
				t.Fatal("disk.json records a rowful index row-less")
			}
		})
	}
}

// compareRowless checks every search and vector of b (row-less) against a (rowful).
func compareRowless(t *testing.T, ctx context.Context, rng *rand.Rand, a, b *DiskIndex, dim int) {
	t.Helper()
	qs := vectest.RandVecs(rng, 3, dim)
	odd := func(id string) bool { return id[len(id)-1]%2 == 1 }
	var allow []string
	for i := range 70 {
		if i%3 == 0 {
			allow = append(allow, fmt.Sprintf("d%03d", i))
		}
	}
	modes := []DiskMode{DiskExact, DiskBinary}
	if a.keepsInt8() {
		modes = []DiskMode{DiskExact, DiskInt8}
	}
	same := func(what string, x, y any, ex, ey error) {
		t.Helper()
		if ex != nil || ey != nil || !reflect.DeepEqual(x, y) {
			t.Fatalf("%s:\n rowful   %v (%v)\n row-less %v (%v)", what, x, ex, y, ey)
		}
	}
	for _, k := range []int{1, 5, 100} {
		for _, m := range modes {
			for _, os := range []int{1, 3, 64} {
				for _, np := range []int{0, 1, 4} {
					o := DiskSearchOptions{Mode: m, Oversample: os, NProbe: np}
					for fi, f := range []Filter{nil, odd} {
						x, ex := a.SearchBatchWith(ctx, qs, k, f, o)
						y, ey := b.SearchBatchWith(ctx, qs, k, f, o)
						same(fmt.Sprintf("batch k=%d %v os=%d np=%d filter %d", k, m, os, np, fi), x, y, ex, ey)
						for i, q := range qs {
							x, ex := a.SearchWith(ctx, q, k, f, o)
							y, ey := b.SearchWith(ctx, q, k, f, o)
							same(fmt.Sprintf("k=%d %v os=%d np=%d filter %d query %d", k, m, os, np, fi, i), x, y, ex, ey)
						}
					}
				}
			}
		}
		// The default: rowful exact while small, row-less codes; equal when the
		// oversampling covers every row.
		for i, q := range qs {
			o := DiskSearchOptions{Oversample: 200, NProbe: 64}
			x, ex := a.SearchWith(ctx, q, k, nil, DiskSearchOptions{Mode: DiskExact})
			y, ey := b.SearchWith(ctx, q, k, nil, o)
			same(fmt.Sprintf("default k=%d query %d", k, i), x, y, ex, ey)
			x, ex = a.SearchAllowed(ctx, q, k, allow)
			y, ey = b.SearchAllowed(ctx, q, k, allow)
			same(fmt.Sprintf("allowed k=%d query %d", k, i), x, y, ex, ey)
		}
	}
	for i := range 70 {
		id := fmt.Sprintf("d%03d", i)
		x, okx := a.Vector(id)
		y, oky := b.Vector(id)
		if okx != oky || !reflect.DeepEqual(x, y) {
			t.Fatalf("Vector(%s): rowful %v %v, row-less %v %v", id, x, okx, y, oky)
		}
	}
	if a.Len() != b.Len() {
		t.Fatalf("Len: rowful %d, row-less %d", a.Len(), b.Len())
	}
}

// TestDiskRowlessConfig: files written row-less opened without a RowSource, or rowful ones
// with one, are ErrRowSource (an ErrBadConfig); a row-less index needs codes; an index in
// memory keeps its rows whatever Rows says; a search that rescores an id the RowSource
// lacks fails with ErrNoRow; a row-less search reads its candidates in one call; the plan
// says where the rows come from.
func TestDiskRowlessConfig(t *testing.T) {
	smallDiskWrites(t, 8)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 1))
	ids := vectest.IDs(40)
	vecs := vectest.RandVecs(rng, 40, 16)
	src := &countingRows{m: RowMap{}}
	for i, id := range ids {
		src.m[id] = vecs[i]
	}
	less := IndexConfig{Dim: 16, Dir: filepath.Join(t.TempDir(), "less"), Params: map[string]int{"segrows": 16}, Rows: src}
	full := IndexConfig{Dim: 16, Dir: filepath.Join(t.TempDir(), "full"), Params: map[string]int{"segrows": 16}}
	for _, cfg := range []IndexConfig{less, full} {
		x := openDisk(t, cfg)
		if err := x.Add(ctx, ids, vecs); err != nil {
			t.Fatal(err)
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
	}
	swapped := []IndexConfig{less, full}
	swapped[0].Rows, swapped[1].Rows = nil, src
	for _, cfg := range swapped {
		_, err := NewDiskIndex(cfg)
		if !errors.Is(err, ErrRowSource) || !errors.Is(err, ErrBadConfig) {
			t.Fatalf("%s opened with Rows %v: %v, want ErrRowSource", cfg.Dir, cfg.Rows != nil, err)
		}
	}
	none := less
	none.Dir, none.Params = t.TempDir(), map[string]int{"quant": DiskQuantNone}
	if _, err := NewDiskIndex(none); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("row-less without codes: %v", err)
	}
	mem := openDisk(t, IndexConfig{Dim: 16, Rows: RowMap{}})
	if err := mem.Add(ctx, ids, vecs); err != nil {
		t.Fatal(err)
	}
	if v, ok := mem.Vector(ids[3]); !ok || len(v) != 16 {
		t.Fatalf("in memory: Vector %v %v", v, ok)
	}

	x := openDisk(t, less)
	defer x.Close()
	if plan, approx := x.SearchPlan(); !approx || !strings.Contains(plan, "store of record") {
		t.Fatalf("plan %q approx %v", plan, approx)
	}
	src.calls.Store(0)
	src.ids.Store(0)
	if _, err := x.SearchWith(ctx, vecs[0], 3, nil, DiskSearchOptions{Oversample: 5}); err != nil {
		t.Fatal(err)
	}
	if src.calls.Load() != 1 || src.ids.Load() != 15 {
		t.Fatalf("a search read %d rows in %d calls, want 15 in 1", src.ids.Load(), src.calls.Load())
	}
	delete(src.m, ids[0])
	if _, err := x.SearchWith(ctx, vecs[0], 3, nil, DiskSearchOptions{Oversample: 100}); !errors.Is(err, ErrNoRow) {
		t.Fatalf("a candidate the row source lacks: %v, want ErrNoRow", err)
	}
	if _, ok := x.Vector(ids[0]); ok {
		t.Fatal("Vector of an id the row source lacks")
	}
}

// TestDiskTrainingSample: the rows a write trains on when some are not in memory are read
// from the row source (normalised for Cosine), the others taken as they are, at even steps.
func TestDiskTrainingSample(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 5))
	ids := vectest.IDs(30)
	vecs := vectest.RandVecs(rng, 30, 8)
	src := RowMap{}
	for i, id := range ids {
		src[id] = vecs[i]
	}
	smallDiskWrites(t, 10)
	x := openDisk(t, IndexConfig{Dim: 8, Dir: t.TempDir(), Rows: src, Params: map[string]int{"segrows": 10}})
	defer x.Close()
	if err := x.Add(ctx, ids, vecs); err != nil {
		t.Fatal(err)
	}
	if err := x.Commit(1); err != nil {
		t.Fatal(err)
	}
	mem := []float32{9, 9, 9, 9, 9, 9, 9, 9}
	row := func(i int) []float32 {
		if i == 4 {
			return mem
		}
		return nil
	}
	train, n, err := x.trainingSample(30, row, func(i int) int32 { return int32(i) })
	if err != nil || n != 30 {
		t.Fatalf("%d rows, %v", n, err)
	}
	for i := range n {
		want, _ := x.Vector(ids[i])
		if i == 4 {
			want = mem
		}
		if !reflect.DeepEqual(train(i), want) {
			t.Fatalf("row %d: %v, want %v", i, train(i), want)
		}
	}
	delete(src, ids[7])
	if _, _, err := x.trainingSample(30, row, func(i int) int32 { return int32(i) }); !errors.Is(err, ErrNoRow) {
		t.Fatalf("a row the source lacks: %v", err)
	}
}

// TestDiskUnitRow holds unitRow (the rescoring's normalisation, four partial sums) to
// vecmath.NormalizeInto within float32 rounding, for lengths that do and do not fill its
// four sums, and leaves a row of zeros as it is.
func TestDiskUnitRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, d := range []int{1, 3, 4, 5, 8, 383, 768} {
		for _, scale := range []float32{1e-3, 1, 1e3} {
			v := vectest.RandVecs(rng, 1, d)[0]
			for j := range v {
				v[j] *= scale
			}
			want := make([]float32, d)
			vecmath.NormalizeInto(want, v)
			got := slices.Clone(v)
			unitRow(got)
			var ss float64
			for j := range got {
				if diff := math.Abs(float64(got[j] - want[j])); diff > 1e-6*math.Abs(float64(want[j]))+1e-12 {
					t.Fatalf("d=%d scale %g: value %d is %v, NormalizeInto %v", d, scale, j, got[j], want[j])
				}
				ss += float64(got[j]) * float64(got[j])
			}
			if math.Abs(ss-1) > 1e-5 {
				t.Errorf("d=%d scale %g: squared norm %v after unitRow", d, scale, ss)
			}
		}
	}
	zero := make([]float32, 5)
	unitRow(zero)
	if !slices.Equal(zero, make([]float32, 5)) {
		t.Errorf("a row of zeros became %v", zero)
	}
}
