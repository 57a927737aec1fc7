package vectorstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/memory/internal/vectest"
)

// diskDamageIndex writes an index of 70 rows in segments of 16 (the last one part full),
// with a few deleted, to dir, with cfg's dimension and params; it returns the ids.
func diskDamageIndex(t *testing.T, cfg IndexConfig) []string {
	t.Helper()
	smallDiskWrites(t, 16)
	ctx := context.Background()
	x := openDisk(t, cfg)
	ids, vecs := diskDamageVectors(cfg.Dim)
	for lo := 0; lo < 70; lo += 20 {
		hi := min(lo+20, 70)
		if err := x.Add(ctx, ids[lo:hi], vecs[lo:hi]); err != nil {
			t.Fatal(err)
		}
		if err := x.Commit(uint64(hi)); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Delete(ctx, ids[3], ids[40]); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// diskDamageVectors are the ids and vectors diskDamageIndex writes.
func diskDamageVectors(dim int) ([]string, [][]float32) {
	rng := rand.New(rand.NewPCG(11, uint64(dim)))
	return vectest.IDs(70), diskClustered(rng, 70, dim, 5, 0.3)
}

// diskDamageRows is a RowSource of diskDamageIndex's vectors.
func diskDamageRows(dim int) RowMap {
	ids, vecs := diskDamageVectors(dim)
	m := RowMap{}
	for i, id := range ids {
		m[id] = vecs[i]
	}
	return m
}

// diskAnswers is every answer a test asks of an index: exact, filtered, allowed, batched
// and quantized searches, and each id's vector; a search's error as diskCorruptAnswer
// (ErrCorrupt) or "!" and its text.
type diskAnswers map[string]any

const diskCorruptAnswer = "!corrupt"

func diskAsk(x *DiskIndex, ids []string, dim int) diskAnswers {
	ctx := context.Background()
	out := diskAnswers{}
	rec := func(key string, hits any, err error) {
		switch {
		case errors.Is(err, ErrCorrupt):
			out[key] = diskCorruptAnswer
		case err != nil:
			out[key] = "!" + err.Error()
		default:
			out[key] = hits
		}
	}
	rng := rand.New(rand.NewPCG(3, 3))
	qs := vectest.RandVecs(rng, 3, dim)
	for i, q := range qs {
		h, err := x.Search(ctx, q, 5, nil)
		rec(fmt.Sprint("exact", i), h, err)
		h, err = x.Search(ctx, q, 5, func(id string) bool { return id[len(id)-1]%2 == 0 })
		rec(fmt.Sprint("filtered", i), h, err)
		h, err = x.SearchAllowed(ctx, q, 5, ids[10:50])
		rec(fmt.Sprint("allowed", i), h, err)
		for _, m := range []DiskMode{DiskBinary, DiskInt8} {
			h, err = x.SearchWith(ctx, q, 5, nil, DiskSearchOptions{Mode: m, NProbe: 2})
			if errors.Is(err, ErrBadConfig) {
				continue // the index keeps no such codes
			}
			rec(fmt.Sprint(m, i), h, err)
		}
		// The binary scan's prefilter (a first pass over every code: at 70 rows, k 5,
		// oversample 1, it keeps 5 x 1 rows' worth).
		h, err = x.SearchWith(ctx, q, 5, nil, DiskSearchOptions{Mode: DiskBinary, Oversample: 1, Prefilter: 1})
		if !errors.Is(err, ErrBadConfig) {
			rec(fmt.Sprint("prefilter", i), h, err)
		}
	}
	b, err := x.SearchBatch(ctx, qs, 5, nil)
	rec("batch", b, err)
	for _, id := range ids {
		if v, ok := x.Vector(id); ok {
			out["vec "+id] = v
		}
	}
	return out
}

// diskDamageConfigs are the shapes of index the damage tests write: binary codes (the
// default), int8 codes with inverted lists, binary codes with inverted lists; at 32
// dimensions (rows of a multiple of 64 bytes: the exact scan checks blocks as it scores)
// and 24 (checked first, then scored); and at 32 dimensions, binary codes and int8 codes
// with lists of an index without rows of its own (IndexConfig.Rows).
func diskDamageConfigs(dir string) []IndexConfig {
	var out []IndexConfig
	for _, dim := range []int{32, 24} {
		for _, p := range []map[string]int{
			{"segrows": 16},
			{"segrows": 16, "quant": DiskQuantInt8, "nlist": 3},
			{"segrows": 16, "quant": DiskQuantBinary, "nlist": 3},
		} {
			name := fmt.Sprintf("d%d-q%d-l%d", dim, p["quant"], p["nlist"])
			out = append(out, IndexConfig{Dim: dim, Dir: filepath.Join(dir, name), Params: p})
		}
	}
	for _, p := range []map[string]int{{"segrows": 16}, {"segrows": 16, "quant": DiskQuantInt8, "nlist": 3}} {
		name := fmt.Sprintf("rowless-q%d-l%d", p["quant"], p["nlist"])
		out = append(out, IndexConfig{Dim: 32, Dir: filepath.Join(dir, name), Params: p, Rows: diskDamageRows(32)})
	}
	return out
}

// TestDiskTamperInPlace damages each file of written indexes in place and puts its
// modification time back (the tamper suite's copies all have new times, so they never
// reached the case where size and time match): bytes flipped at seeded places, a byte of
// the first and of the last row, the file cut short. Each damaged index must fail to open
// with ErrCorrupt, or open and answer every search, quantized or exact, filtered, allowed
// or batched, and every vector lookup, exactly as before or with ErrCorrupt (a lookup: not
// at all); and Verify must then report the damage. With each form of the checksum kernels.
func TestDiskTamperInPlace(t *testing.T) {
	a2, a5 := flatAVX2, diskAVX512Enabled()
	diskKernelModes(t, func(t *testing.T) {
		root := t.TempDir()
		own := flatAVX2 == a2 && diskAVX512Enabled() == a5 // this machine's kernels
		for _, cfg := range diskDamageConfigs(root) {
			if !own && (cfg.Dim != 32 || cfg.Params["quant"] != 0) {
				continue // the other kernels: the exact scan of one shape is enough
			}
			ids := diskDamageIndex(t, cfg)
			x := openDisk(t, cfg)
			want := diskAsk(x, ids, cfg.Dim)
			if err := x.Verify(context.Background()); err != nil {
				t.Fatalf("%s: Verify of the sound index: %v", cfg.Dir, err)
			}
			x.Close()
			ents, err := os.ReadDir(cfg.Dir)
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[string]bool{}
			for _, e := range ents {
				name := e.Name()
				kinds[diskFileKind(name)] = true
				fi, err := e.Info()
				if err != nil {
					t.Fatal(err)
				}
				damages := map[string]func(p string){
					"first-byte": func(p string) { damageKeepMTime(t, p, 0, 0x01) },
					"last-byte":  func(p string) { damageKeepMTime(t, p, fi.Size()-1, 0x80) },
					"cut": func(p string) {
						if err := os.Truncate(p, fi.Size()/2); err != nil {
							t.Fatal(err)
						}
						if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
							t.Fatal(err)
						}
					},
				}
				for seed := range 3 {
					damages[fmt.Sprint("flip", seed)] = func(p string) {
						r := rand.New(rand.NewPCG(uint64(seed), uint64(fi.Size())))
						damageKeepMTime(t, p, r.Int64N(fi.Size()), byte(1+r.IntN(255)))
					}
				}
				for dname, damage := range damages {
					t.Run(filepath.Base(cfg.Dir)+"/"+name+"/"+dname, func(t *testing.T) {
						cp := filepath.Join(t.TempDir(), "v")
						copyKeepMTimes(t, cfg.Dir, cp)
						damage(filepath.Join(cp, name))
						c := cfg
						c.Dir = cp
						y, err := NewDiskIndex(c)
						if err != nil {
							if !errors.Is(err, ErrCorrupt) {
								t.Fatalf("open: %v, want ErrCorrupt", err)
							}
							return
						}
						defer y.Close()
						got := diskAsk(y, ids, cfg.Dim)
						for k, w := range want {
							g, ok := got[k]
							switch {
							case strings.HasPrefix(k, "vec "):
								if ok && !reflect.DeepEqual(g, w) {
									t.Errorf("%s: %v, want %v", k, g, w)
								}
							case !ok:
								t.Errorf("%s: no answer", k)
							case !reflect.DeepEqual(g, w) && g != diskCorruptAnswer:
								t.Errorf("%s: %v, want %v or ErrCorrupt", k, g, w)
							}
						}
						if err := y.Verify(context.Background()); !errors.Is(err, ErrCorrupt) {
							t.Errorf("Verify: %v, want ErrCorrupt", err)
						}
					})
				}
			}
			need := []string{"seg.f32", "ids.bin", "tomb.bin", "sums.bin", "disk.json"}
			if cfg.Rows != nil {
				need[0] = "seg.b1"
				if cfg.Params["quant"] == DiskQuantInt8 {
					need[0] = "seg.i8"
				}
				if kinds["seg.f32"] {
					t.Errorf("%s: a row-less index wrote rows", cfg.Dir)
				}
			}
			for _, k := range need {
				if !kinds[k] {
					t.Errorf("%s: no %s file was damaged (%v)", cfg.Dir, k, kinds)
				}
			}
		}
	})
}

// diskFileKind is the kind of an index file: its name's prefix and extension.
func diskFileKind(name string) string {
	if name == diskMetaFile {
		return name
	}
	return strings.SplitN(name, "-", 2)[0] + filepath.Ext(name)
}

// copyKeepMTimes copies the files of src to dst with their modification times.
func copyKeepMTimes(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(dst, e.Name()), fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDiskCopyKeepMTimesReadsNothing checks the copies the damage tests start from: a copy
// with the original times opens without reading its segment files (no block checked
// before a search), and its answers are the original's.
func TestDiskCopyKeepMTimesReadsNothing(t *testing.T) {
	cfg := IndexConfig{Dim: 32, Dir: filepath.Join(t.TempDir(), "a"), Params: map[string]int{"segrows": 16}}
	ids := diskDamageIndex(t, cfg)
	x := openDisk(t, cfg)
	want := diskAsk(x, ids, 32)
	x.Close()
	c := cfg
	c.Dir = filepath.Join(t.TempDir(), "b")
	copyKeepMTimes(t, cfg.Dir, c.Dir)
	y := openDisk(t, c)
	defer y.Close()
	for _, s := range y.segs {
		for k := range s.ok {
			for i := range s.ok[k] {
				if s.ok[k][i].Load() != 0 {
					t.Fatalf("segment %d file %d: blocks checked on open", s.meta.Num, k)
				}
			}
		}
	}
	if got := diskAsk(y, ids, 32); !reflect.DeepEqual(got, want) {
		t.Fatalf("copy answers %v, want %v", got, want)
	}
}

// TestDiskVerify: Verify of a sound index (on disk or in memory) is nil; of one with a
// flipped byte in a row that no search has read, ErrCorrupt naming the file and bytes,
// though searches that do not read that row go on answering.
func TestDiskVerify(t *testing.T) {
	ctx := context.Background()
	mem := openDisk(t, IndexConfig{Dim: 8})
	if err := mem.Add(ctx, []string{"a"}, [][]float32{{1, 2, 3, 4, 5, 6, 7, 8}}); err != nil {
		t.Fatal(err)
	}
	if err := mem.Verify(ctx); err != nil {
		t.Fatalf("in memory: %v", err)
	}
	cfg := IndexConfig{Dim: 32, Dir: t.TempDir(), Params: map[string]int{"segrows": 16}}
	ids := diskDamageIndex(t, cfg)
	x := openDisk(t, cfg)
	if err := x.Verify(ctx); err != nil {
		t.Fatalf("sound: %v", err)
	}
	x.Close()
	// Row 65 is in the last segment (rows 64-69), far from row 0's block.
	damageKeepMTime(t, filepath.Join(cfg.Dir, "seg-000004.f32"), 4*32+5, 0x10)
	y := openDisk(t, cfg)
	defer y.Close()
	if v, ok := y.Vector(ids[0]); !ok || len(v) != 32 {
		t.Fatalf("Vector of a sound row: %v %v", v, ok)
	}
	err := y.Verify(ctx)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "seg-000004.f32: bytes 0-") {
		t.Fatalf("Verify: %v, want ErrCorrupt naming seg-000004.f32", err)
	}
	if _, err := y.Search(ctx, make32(1), 3, nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Search: %v, want ErrCorrupt", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := y.Verify(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Verify, cancelled: %v", err)
	}
}

func make32(v float32) []float32 {
	q := make([]float32, 32)
	for i := range q {
		q[i] = v + float32(i)
	}
	return q
}

// TestDiskWritesNoDamagedRow: a write that would carry a damaged row into new checksums
// fails with ErrCorrupt instead: appending to a segment whose part-full last block is
// damaged, and a compaction that copies a damaged row. The files stay as they were.
func TestDiskWritesNoDamagedRow(t *testing.T) {
	smallDiskWrites(t, 4)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		write func(x *DiskIndex) error
	}{
		{"append", func(x *DiskIndex) error {
			ids := []string{"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9"}
			if err := x.Add(ctx, ids, vectest.RandVecs(rand.New(rand.NewPCG(1, 1)), 10, 32)); err != nil {
				return err
			}
			return x.Commit(99)
		}},
		{"compact", func(x *DiskIndex) error {
			if err := x.Delete(ctx, vectest.IDs(70)[20:60]...); err != nil {
				return err
			}
			return x.Close()
		}},
	} {
		for _, rowless := range []bool{false, true} {
			t.Run(fmt.Sprint(tc.name, "/rowless=", rowless), func(t *testing.T) {
				cfg := IndexConfig{Dim: 32, Dir: t.TempDir(), Params: map[string]int{"segrows": 16}}
				file := "seg-000004.f32" // row 64, the last segment's first
				if rowless {             // its binary code (8 bytes a row)
					cfg.Rows, file = diskDamageRows(32), "seg-000004.b1"
				}
				diskDamageIndex(t, cfg)
				smallDiskWrites(t, 4)
				damageKeepMTime(t, filepath.Join(cfg.Dir, file), 7, 0x04)
				before, _ := os.ReadFile(filepath.Join(cfg.Dir, diskMetaFile))
				x := openDisk(t, cfg)
				err := tc.write(x)
				x.Close()
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("write: %v, want ErrCorrupt", err)
				}
				after, _ := os.ReadFile(filepath.Join(cfg.Dir, diskMetaFile))
				if !slices.Equal(before, after) {
					t.Fatal("disk.json was rewritten")
				}
			})
		}
	}
}

// TestDiskVersion1 opens an index written before block checksums (disk.json version 1, no
// sums file): its segments are checked whole against their CRCs on open (a damaged one is
// ErrCorrupt even with its time kept), it answers as before, read-only it writes nothing,
// and a writable open writes it as version 2 on Close.
func TestDiskVersion1(t *testing.T) {
	cfg := IndexConfig{Dim: 32, Dir: t.TempDir(), Params: map[string]int{"segrows": 16, "quant": DiskQuantInt8, "nlist": 3}}
	ids := diskDamageIndex(t, cfg)
	x := openDisk(t, cfg)
	want := diskAsk(x, ids, 32)
	x.Close()
	toVersion1(t, cfg.Dir)
	v1 := filepath.Join(t.TempDir(), "v1")
	copyKeepMTimes(t, cfg.Dir, v1)

	ro := cfg
	ro.ReadOnly = true
	y := openDisk(t, ro)
	if got := diskAsk(y, ids, 32); !reflect.DeepEqual(got, want) {
		t.Fatalf("version 1, read-only: %v, want %v", got, want)
	}
	y.Close()
	if readMeta(t, cfg.Dir).Version != 1 {
		t.Fatal("a read-only open rewrote the version 1 index")
	}

	z := openDisk(t, cfg)
	if got := diskAsk(z, ids, 32); !reflect.DeepEqual(got, want) {
		t.Fatalf("version 1: %v, want %v", got, want)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	m := readMeta(t, cfg.Dir)
	if m.Version != diskMetaVersion || m.Sums == nil {
		t.Fatalf("after a writable open: version %d, sums %v", m.Version, m.Sums)
	}
	z = openDisk(t, cfg)
	if got := diskAsk(z, ids, 32); !reflect.DeepEqual(got, want) {
		t.Fatalf("upgraded: %v, want %v", got, want)
	}
	if err := z.Verify(context.Background()); err != nil {
		t.Fatalf("upgraded: Verify: %v", err)
	}
	z.Close()

	for _, f := range []string{"seg-000002.f32", "seg-000004.i8", "seg-000001.ivl"} {
		d := filepath.Join(t.TempDir(), "d")
		copyKeepMTimes(t, v1, d)
		damageKeepMTime(t, filepath.Join(d, f), 9, 0x20)
		c := cfg
		c.Dir = d
		if _, err := NewDiskIndex(c); !errors.Is(err, ErrCorrupt) {
			t.Errorf("version 1, %s damaged: %v, want ErrCorrupt", f, err)
		}
	}
}

// toVersion1 rewrites the index in dir as version 1 wrote it: no sums file.
func toVersion1(t *testing.T, dir string) {
	t.Helper()
	m := readMeta(t, dir)
	if err := os.Remove(filepath.Join(dir, m.Sums.Name)); err != nil {
		t.Fatal(err)
	}
	m.Version, m.Block, m.Sums = 1, 0, nil
	m.CRC = m.checksum()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, diskMetaFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readMeta(t *testing.T, dir string) diskMeta {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, diskMetaFile))
	if err != nil {
		t.Fatal(err)
	}
	var m diskMeta
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestDiskConcurrentFirstSearches: searches racing over blocks no search has checked yet
// (each block checked by whichever comes first, or by several) all answer as one search
// alone does. Run with -race.
func TestDiskConcurrentFirstSearches(t *testing.T) {
	cfg := IndexConfig{Dim: 32, Dir: t.TempDir(), Params: map[string]int{"segrows": 16}}
	ids := diskDamageIndex(t, cfg)
	x := openDisk(t, cfg)
	want := diskAsk(x, ids, 32)
	x.Close()
	for range 3 {
		y := openDisk(t, cfg)
		var wg sync.WaitGroup
		got := make([]diskAnswers, 6)
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i%2 == 0 {
					_ = y.Verify(context.Background())
				}
				got[i] = diskAsk(y, ids, 32)
			}()
		}
		wg.Wait()
		y.Close()
		for i := range got {
			if !reflect.DeepEqual(got[i], want) {
				t.Fatalf("search %d: %v, want %v", i, got[i], want)
			}
		}
	}
}

// TestDiskNonFiniteScoreNeverAResult: a score that is not finite is never returned. A
// row made +Inf behind every checksum (a version 1 index whose whole-file CRC was written
// for the damaged bytes, so that nothing on open can tell) makes the search fail with
// ErrCorrupt; finite rows and query whose product overflows float32 (inner product) fail
// with ErrNonFinite.
func TestDiskNonFiniteScoreNeverAResult(t *testing.T) {
	ctx := context.Background()
	cfg := IndexConfig{Dim: 4, Dir: t.TempDir(), Metric: InnerProduct, Params: map[string]int{"quant": DiskQuantNone}}
	x := openDisk(t, cfg)
	if err := x.Add(ctx, []string{"a", "b", "huge"}, [][]float32{{1, 0, 0, 0}, {0, 1, 0, 0}, {3e38, 0, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	y := openDisk(t, cfg)
	if h, err := y.Search(ctx, []float32{10, 0, 0, 0}, 3, nil); !errors.Is(err, ErrNonFinite) {
		t.Fatalf("overflowing score: %v, %v; want ErrNonFinite", h, err)
	}
	if h, err := y.Search(ctx, []float32{0, 1, 0, 0}, 2, nil); err != nil || h[0].ID != "b" {
		t.Fatalf("finite scores: %v, %v", h, err)
	}
	y.Close()

	toVersion1(t, cfg.Dir)
	m := readMeta(t, cfg.Dir)
	p := filepath.Join(cfg.Dir, m.Segs[0].F32.Name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	copy(b[4*4:], []byte{0, 0, 0x80, 0x7f}) // b's first value: +Inf
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	m.Segs[0].F32.CRC = crc32.Checksum(b, diskCastagnoli)
	if err := stampFile(p, &m.Segs[0].F32); err != nil {
		t.Fatal(err)
	}
	m.CRC = m.checksum()
	raw, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(cfg.Dir, diskMetaFile), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	ro := cfg
	ro.ReadOnly = true
	z := openDisk(t, ro)
	defer z.Close()
	h, err := z.Search(ctx, []float32{1, 1, 0, 0}, 3, nil)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a non-finite row behind sound checksums: %v, %v; want ErrCorrupt", h, err)
	}
}
