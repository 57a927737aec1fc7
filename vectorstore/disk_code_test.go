package vectorstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/vecmath"
	"github.com/agentmem/memory/internal/vectest"
)

// refRotatedCode is the reference rotated code of v (normalised for Cosine as the index
// stores it): bit j set when component j (of the first nbits) of its rotation is > 0, by
// the definition (vecmath's tests hold Rotation.Apply to the dense matrix product), with
// the rotated values.
func refRotatedCode(r *vecmath.Rotation, v []float32, nbits int) ([]uint64, []float32) {
	rv := r.Apply(make([]float32, r.Padded()), v)
	code := make([]uint64, (nbits+63)/64)
	for j := range nbits {
		if rv[j] > 0 {
			code[j/64] |= 1 << (j % 64)
		}
	}
	return code, rv
}

// TestDiskRotatedCodesMatchReference: the .b1 codes a rotated index writes are, row by
// row, the signs of the reference rotation of its rows (the first dim bits, or every
// padded bit), and a binary search with oversample 1 (its candidates are then its results)
// returns the k rows whose reference code scores best against the rotated query (the sum
// over bits of +-rq_j), up to float rounding at the cut-off.
func TestDiskRotatedCodesMatchReference(t *testing.T) {
	for _, tc := range []struct {
		dim    int
		padded bool
		metric Metric
	}{
		{24, false, Cosine}, {24, true, Cosine}, {100, false, InnerProduct}, {100, true, Cosine}, {64, false, Cosine},
	} {
		t.Run(fmt.Sprintf("d%d-padded%v-%s", tc.dim, tc.padded, tc.metric), func(t *testing.T) {
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(11, uint64(tc.dim)))
			params := map[string]int{"quant": DiskQuantBinary, "code": DiskCodeRotated, "codeseed": 77, "segrows": 50}
			nbits := tc.dim
			if tc.padded {
				nbits = 1 << bits.Len(uint(tc.dim-1))
				params["codebits"] = nbits
			}
			cfg := IndexConfig{Dim: tc.dim, Metric: tc.metric, Dir: t.TempDir(), Params: params}
			x := openDisk(t, cfg)
			defer x.Close()
			const n = 120
			vecs := sparseVecs(rng, n, tc.dim)
			ids := make([]string, n)
			for i := range ids {
				ids[i] = fmt.Sprintf("r%03d", i)
			}
			if err := x.Add(ctx, ids, vecs); err != nil {
				t.Fatal(err)
			}
			if err := x.Close(); err != nil {
				t.Fatal(err)
			}
			x = openDisk(t, cfg)
			rot, err := vecmath.NewRotation(tc.dim, 77)
			if err != nil {
				t.Fatal(err)
			}
			W := (nbits + 63) / 64
			stored := make([][]float32, n)
			codes := make([][]uint64, n)
			for i := range n {
				stored[i] = slices.Clone(vecs[i])
				if tc.metric == Cosine {
					vecmath.NormalizeInto(stored[i], stored[i])
				}
				codes[i], _ = refRotatedCode(rot, stored[i], nbits)
				s, j := x.segs[i/x.segRows], i%x.segRows
				if got := s.b1[j*W : (j+1)*W]; !slices.Equal(got, codes[i]) {
					t.Fatalf("row %d: code %x, the reference %x", i, got, codes[i])
				}
			}
			for qn := range 20 {
				q := vectest.RandVecs(rng, 1, tc.dim)[0]
				nq := slices.Clone(q)
				if tc.metric == Cosine {
					vecmath.NormalizeInto(nq, nq)
				}
				_, rq := refRotatedCode(rot, nq, nbits)
				ref := make([]float64, n)
				for i := range n {
					for j := range nbits {
						if codes[i][j/64]>>(j%64)&1 == 1 {
							ref[i] += float64(rq[j])
						} else {
							ref[i] -= float64(rq[j])
						}
					}
				}
				const k = 7
				order := make([]int, n)
				for i := range order {
					order[i] = i
				}
				sort.Slice(order, func(a, b int) bool { return ref[order[a]] > ref[order[b]] })
				cut := ref[order[k-1]]
				hits, err := x.SearchWith(ctx, q, k, nil, DiskSearchOptions{Mode: DiskBinary, Oversample: 1})
				if err != nil {
					t.Fatal(err)
				}
				got := map[int]bool{}
				for _, h := range hits {
					var i int
					fmt.Sscanf(h.ID, "r%03d", &i)
					got[i] = true
					if ref[i] < cut-1e-4 {
						t.Fatalf("query %d: candidate %s scores %v under the reference, below the %dth best %v", qn, h.ID, ref[i], k, cut)
					}
				}
				for _, i := range order[:k] {
					if !got[i] && ref[i] > cut+1e-4 {
						t.Fatalf("query %d: row %d (reference score %v, cut-off %v) is not a candidate", qn, i, ref[i], cut)
					}
				}
			}
		})
	}
}

// sparseVecs returns n vectors shaped like the hash embedder's: most components 0, the
// others heavy-tailed.
func sparseVecs(rng *rand.Rand, n, d int) [][]float32 {
	out := make([][]float32, n)
	for i := range out {
		v := make([]float32, d)
		for range 1 + rng.IntN(6) {
			v[rng.IntN(d)] += float32(rng.ExpFloat64() * float64(1-2*rng.IntN(2)))
		}
		if rng.IntN(4) == 0 { // a few dense ones among them
			for j := range v {
				v[j] += float32(0.1 * rng.NormFloat64())
			}
		}
		out[i] = v
	}
	return out
}

// TestDiskCodeKinds: an index of each code kind (sign codes as every index before them,
// rotated ones, rotated with every padded bit, and the default: signs with rows of its
// own, rotated with every padded bit without), with its own rows and without, written in
// several segments, reopens with default params to the same answers (binary searches at
// several oversamplings), records its kind in disk.json (a sign-coded index records
// nothing, as indexes did before: its disk.json has the keys it had), names it and its
// default oversampling in SearchPlan, and refuses params that ask for another kind, seed
// or width (ErrConfigMismatch).
func TestDiskCodeKinds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		params   map[string]int
		code     string // disk.json's "code"
		bits     int    // its "code_bits"
		planWord string
	}{
		{"signs", map[string]int{"code": DiskCodeSigns}, "", 0, "dense: binary codes"},
		{"auto", map[string]int{}, "auto", 0, ""},
		{"rotated", map[string]int{"code": DiskCodeRotated}, "rotated", 0, "dense: rotated binary codes"},
		{"rotated-explicit", map[string]int{"code": DiskCodeRotated, "codeseed": 5}, "rotated", 0, "dense: rotated binary codes"},
		{"rotated-padded", map[string]int{"code": DiskCodeRotated, "codebits": 64}, "rotated", 64, "dense: rotated binary codes"},
	} {
		for _, rowless := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s-rowless%v", tc.name, rowless), func(t *testing.T) {
				tc := tc
				if tc.code == "auto" && rowless {
					tc.code, tc.bits, tc.planWord = "rotated", 64, "dense: rotated binary codes"
				} else if tc.code == "auto" {
					tc.code, tc.planWord = "", "dense: binary codes"
				}
				over := diskOversampleBinary
				if rowless && tc.code != "" {
					over = diskOversampleRowless
				}
				smallDiskWrites(t, 9)
				ctx := context.Background()
				const dim = 40
				rng := rand.New(rand.NewPCG(3, 4))
				params := map[string]int{"quant": DiskQuantBinary, "segrows": 16, "threads": 2}
				for k, v := range tc.params {
					params[k] = v
				}
				cfg := IndexConfig{Dim: dim, Metric: Cosine, Dir: t.TempDir(), Params: params}
				rows := RowMap{}
				if rowless {
					cfg.Rows = rows
				}
				x := openDisk(t, cfg)
				vecs := append(diskClustered(rng, 40, dim, 4, 0.3), sparseVecs(rng, 40, dim)...)
				for lo := 0; lo < len(vecs); lo += 10 {
					ids := make([]string, 10)
					for i := range ids {
						ids[i] = fmt.Sprintf("v%02d", lo+i)
						rows[ids[i]] = vecs[lo+i]
					}
					if err := x.Add(ctx, ids, vecs[lo:lo+10]); err != nil {
						t.Fatal(err)
					}
					if err := x.Commit(uint64(lo + 10)); err != nil {
						t.Fatal(err)
					}
				}
				if err := x.Close(); err != nil {
					t.Fatal(err)
				}
				qs := vectest.RandVecs(rng, 6, dim)
				ask := func(x *DiskIndex) [][]Hit {
					var out [][]Hit
					for _, over := range []int{1, 2, 4} {
						for _, q := range qs {
							hs, err := x.SearchWith(ctx, q, 5, nil, DiskSearchOptions{Mode: DiskBinary, Oversample: over})
							if err != nil {
								t.Fatal(err)
							}
							out = append(out, hs)
						}
					}
					return out
				}
				x = openDisk(t, cfg)
				want := ask(x)
				plan, approx := x.SearchPlan()
				x.Close()
				if !approx || !strings.HasPrefix(plan, tc.planWord) || !strings.Contains(plan, fmt.Sprintf("the best %dx k", over)) {
					t.Fatalf("plan %q (approximate %v), want it to start %q and rescore %dx k", plan, approx, tc.planWord, over)
				}
				raw, err := os.ReadFile(filepath.Join(cfg.Dir, diskMetaFile))
				if err != nil {
					t.Fatal(err)
				}
				var keys map[string]any
				if err := json.Unmarshal(raw, &keys); err != nil {
					t.Fatal(err)
				}
				m := readMeta(t, cfg.Dir)
				if m.Code != tc.code || m.CodeBits != tc.bits {
					t.Fatalf("disk.json: code %q bits %d, want %q %d", m.Code, m.CodeBits, tc.code, tc.bits)
				}
				if tc.code == "" {
					for _, k := range []string{"code", "code_seed", "code_bits"} {
						if _, ok := keys[k]; ok {
							t.Fatalf("a sign-coded index's disk.json has %q (indexes before code kinds had none): %s", k, raw)
						}
					}
				} else if want := uint64(orDefault(tc.params["codeseed"], diskCodeSeedDefault)); m.CodeSeed != want {
					t.Fatalf("disk.json: seed %d, want %d", m.CodeSeed, want)
				}
				def := cfg
				def.Params = map[string]int{"quant": DiskQuantBinary, "segrows": 16, "threads": 2}
				y := openDisk(t, def)
				if got := ask(y); !reflect.DeepEqual(got, want) {
					t.Fatalf("reopened with default params: %v, want %v", got, want)
				}
				y.Close()
				for _, other := range []map[string]int{
					{"code": map[bool]int{true: DiskCodeRotated, false: DiskCodeSigns}[tc.code == ""]},
					{"codeseed": orDefault(tc.params["codeseed"], diskCodeSeedDefault) + 1},
					{"codebits": map[bool]int{true: 64, false: dim}[tc.bits == 0]},
				} {
					if tc.code == "" && other["codeseed"] != 0 {
						continue // sign codes have no seed
					}
					c := def
					c.Params = map[string]int{"quant": DiskQuantBinary, "segrows": 16}
					for k, v := range other {
						c.Params[k] = v
					}
					_, err := NewDiskIndex(c)
					if !errors.Is(err, ErrConfigMismatch) {
						t.Fatalf("opened with %v: %v, want ErrConfigMismatch", other, err)
					}
				}
			})
		}
	}
}

// orDefault is a, or b when a is 0.
func orDefault(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// TestDiskCodeMetaDamage: a disk.json whose code fields are wrong (an unknown kind, a seed
// or a width on sign codes, a width that is neither dim nor the padded dimension, a kind
// recorded for an index without binary codes) is corrupt even with a valid checksum, and
// a changed seed without one fails the checksum: never a search whose query is rotated
// other than its codes.
func TestDiskCodeMetaDamage(t *testing.T) {
	build := func(t *testing.T, params map[string]int) IndexConfig {
		cfg := IndexConfig{Dim: 24, Dir: t.TempDir(), Params: params}
		diskDamageIndex(t, cfg)
		return cfg
	}
	rewrite := func(t *testing.T, dir string, f func(*diskMeta), fixCRC bool) {
		m := readMeta(t, dir)
		f(&m)
		if fixCRC {
			m.CRC = m.checksum()
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, diskMetaFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		params map[string]int
		edit   func(*diskMeta)
		fixCRC bool
	}{
		{"unknown kind", map[string]int{"segrows": 16, "code": DiskCodeRotated}, func(m *diskMeta) { m.Code = "rotated2" }, true},
		{"signs with a seed", map[string]int{"segrows": 16, "code": DiskCodeSigns}, func(m *diskMeta) { m.CodeSeed = 9 }, true},
		{"signs with bits", map[string]int{"segrows": 16, "code": DiskCodeSigns}, func(m *diskMeta) { m.CodeBits = 32 }, true},
		{"rotated, bad width", map[string]int{"segrows": 16, "code": DiskCodeRotated}, func(m *diskMeta) { m.CodeBits = 40 }, true},
		{"rotated, width dim", map[string]int{"segrows": 16, "code": DiskCodeRotated}, func(m *diskMeta) { m.CodeBits = 24 }, true},
		{"int8 with a code", map[string]int{"segrows": 16, "quant": DiskQuantInt8}, func(m *diskMeta) { m.Code = "rotated" }, true},
		{"rotated, seed changed", map[string]int{"segrows": 16, "code": DiskCodeRotated}, func(m *diskMeta) { m.CodeSeed++ }, false},
		{"signs to rotated", map[string]int{"segrows": 16, "code": DiskCodeSigns}, func(m *diskMeta) { m.Code = "rotated" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := build(t, tc.params)
			rewrite(t, cfg.Dir, tc.edit, tc.fixCRC)
			open := cfg
			open.Params = map[string]int{"segrows": 16, "quant": tc.params["quant"]}
			x, err := NewDiskIndex(open)
			if err == nil {
				x.Close()
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestDiskRotatedRanksSparse: on sparse, heavy-tailed vectors (the hash embedder's shape)
// rotated codes find the exact top 10 where sign codes cannot (a component that is 0 has
// no sign), both rescoring the same number of candidates.
func TestDiskRotatedRanksSparse(t *testing.T) {
	ctx := context.Background()
	const dim, n, k, over = 256, 3000, 10, 16
	e := NewHashEmbedder(dim)
	rng := rand.New(rand.NewPCG(1, 1))
	text := func(words int) string {
		var b strings.Builder
		for w := range words {
			if w > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "w%d", int(math.Exp(rng.Float64()*8)))
		}
		return b.String()
	}
	texts := make([]string, n)
	ids := make([]string, n)
	for i := range texts {
		texts[i], ids[i] = text(20+rng.IntN(40)), fmt.Sprintf("d%05d", i)
	}
	vecs, err := e.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	qt := make([]string, 40)
	for i := range qt {
		qt[i] = text(3 + rng.IntN(4))
	}
	qs, err := e.Embed(ctx, qt)
	if err != nil {
		t.Fatal(err)
	}
	recall := map[int]float64{}
	for _, code := range []int{DiskCodeSigns, DiskCodeRotated} {
		cfg := IndexConfig{Dim: dim, Metric: Cosine, Dir: t.TempDir(), Params: map[string]int{"quant": DiskQuantBinary, "code": code}}
		x := openDisk(t, cfg)
		if err := x.Add(ctx, ids, vecs); err != nil {
			t.Fatal(err)
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		x = openDisk(t, cfg)
		exact, err := x.SearchBatchWith(ctx, qs, k, nil, DiskSearchOptions{Mode: DiskExact})
		if err != nil {
			t.Fatal(err)
		}
		got, err := x.SearchBatchWith(ctx, qs, k, nil, DiskSearchOptions{Mode: DiskBinary, Oversample: over})
		if err != nil {
			t.Fatal(err)
		}
		x.Close()
		recall[code] = diskRecall(got, exact, k)
	}
	t.Logf("recall@%d at oversample %d: signs %.3f, rotated %.3f", k, over, recall[DiskCodeSigns], recall[DiskCodeRotated])
	if recall[DiskCodeRotated] < 0.9 || recall[DiskCodeRotated] < recall[DiskCodeSigns]+0.2 {
		t.Fatalf("rotated codes: recall %.3f (signs %.3f), want >= 0.9 and well above signs", recall[DiskCodeRotated], recall[DiskCodeSigns])
	}
}
