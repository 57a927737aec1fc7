package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/vecfile"
	"github.com/agentmem/memory/vectorstore"
)

// vecDocs writes n JSONL documents and returns their texts.
// vecFixture makes a test folder with empty model and cache folders (so no model is found)
// and n documents in dir/c.jsonl (see vecDocs).
func vecFixture(t *testing.T, n int) (dir, docs string) {
	t.Helper()
	dir = t.TempDir()
	t.Setenv("MEMORY_MODELS", filepath.Join(dir, "models"))
	t.Setenv("MEMORY_CACHE", filepath.Join(dir, "cache"))
	docs = filepath.Join(dir, "c.jsonl")
	vecDocs(t, docs, n)
	return dir, docs
}

func vecDocs(t *testing.T, path string, n int) []string {
	t.Helper()
	var b strings.Builder
	var texts []string
	for i := range n {
		text := fmt.Sprintf("passage %d about otters number%d", i, i)
		texts = append(texts, text)
		j, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("d%d", i), "text": text})
		b.Write(append(j, '\n'))
	}
	writeFile(t, path, b.String())
	return texts
}

func writeMatrix(t *testing.T, path string, format vecfile.Format, m [][]float32) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := vecfile.NewWriter(f, format, int64(len(m)), len(m[0]))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range m {
		if err := w.Write(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeFaissFlat writes what faiss::write_index writes for an IndexFlatIP of m.
func writeFaissFlat(t *testing.T, path string, m [][]float32) {
	t.Helper()
	d := len(m[0])
	b := []byte("IxFI")
	b = binary.LittleEndian.AppendUint32(b, uint32(d))
	b = binary.LittleEndian.AppendUint64(b, uint64(len(m)))
	b = binary.LittleEndian.AppendUint64(b, 1<<20)
	b = binary.LittleEndian.AppendUint64(b, 1<<20)
	b = append(b, 1)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(m)*d))
	for _, v := range m {
		for _, f := range v {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
		}
	}
	writeFile(t, path, string(b))
}

func unitAxis(dim, i int) []float32 {
	v := make([]float32, dim)
	v[i%dim] = 1
	return v
}

// Vectors from a .npy, .fvecs or FAISS flat file, made by a model that is not here, are
// recorded under its name: get returns them, search falls back to BM25 and says why.
func TestIndexVectorsFileWithoutModel(t *testing.T) {
	dir, docs := vecFixture(t, 6)
	var m [][]float32
	for i := range 6 {
		m = append(m, unitAxis(8, i))
	}
	for _, kind := range []string{"npy", "fvecs", "index"} {
		t.Run(kind, func(t *testing.T) {
			vf := filepath.Join(dir, "v."+kind)
			switch kind {
			case "npy":
				writeMatrix(t, vf, vecfile.NPY, m)
			case "fvecs":
				writeMatrix(t, vf, vecfile.FVecs, m)
			default:
				writeFaissFlat(t, vf, m)
			}
			store := filepath.Join(dir, "s-"+kind)
			_, errs := mustCLI(t, 0, "index", "--store", store, "--embedder-id", "e5-absent", "--vectors", vf, docs)
			if !strings.Contains(errs, `"e5-absent" is not loaded`) {
				t.Fatalf("index stderr: %s", errs)
			}
			out, _ := mustCLI(t, 0, "get", "--store", store, "--json", "--vectors", "d4")
			var got docWithVectors
			if err := json.Unmarshal([]byte(out), &got); err != nil || !slices.Equal(got.Embedding, m[4]) {
				t.Fatalf("get --vectors: %s (%v)", out, err)
			}
			out, errs = mustCLI(t, 0, "search", "--store", store, "otters")
			if !strings.Contains(out, "passage") || !strings.Contains(errs, "BM25 only") || !strings.Contains(errs, "e5-absent") {
				t.Fatalf("search: %s\n%s", out, errs)
			}
		})
	}
}

// An "embedding" field per line, under a model that loads (hash:16): queries are embedded
// by it, so a dense search for a passage's text finds it.
func TestIndexEmbeddingFieldWithModel(t *testing.T) {
	dir := t.TempDir()
	emb := vectorstore.NewHashEmbedder(16)
	var b strings.Builder
	for i := range 10 {
		text := fmt.Sprintf("passage %d about otters number%d", i, i)
		v, _ := emb.Embed(context.Background(), []string{text})
		j, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("d%d", i), "text": text, "embedding": v[0]})
		b.Write(append(j, '\n'))
	}
	docs := filepath.Join(dir, "c.jsonl")
	writeFile(t, docs, b.String())
	store := filepath.Join(dir, "s")
	mustCLI(t, 0, "index", "--store", store, "--embedder-id", "hash:16", docs)
	out, _ := mustCLI(t, 0, "search", "--store", store, "--json", "--mode", "dense", "--k", "1", "passage 7 about otters number7")
	if !strings.Contains(out, `"id":"d7"`) {
		t.Fatalf("dense search: %s", out)
	}
	m := openTest(t, store)
	if id, dim, ok := m.StoredEmbedder(); !ok || id != "hash-bigram-v1/16" || dim != 16 {
		t.Fatalf("recorded %q %d %v", id, dim, ok)
	}
	m.Close()
}

// Bad vector input is an error naming the file and the row, or a skipped line naming both.
func TestIndexVectorsBadInput(t *testing.T) {
	dir, docs := vecFixture(t, 4)
	m4 := [][]float32{unitAxis(8, 0), unitAxis(8, 1), unitAxis(8, 2), unitAxis(8, 3)}
	five := filepath.Join(dir, "five.npy")
	writeMatrix(t, five, vecfile.NPY, append(m4, unitAxis(8, 4)))
	good := filepath.Join(dir, "good.npy")
	writeMatrix(t, good, vecfile.NPY, m4)
	raw, _ := os.ReadFile(good)
	trunc := filepath.Join(dir, "trunc.npy")
	writeFile(t, trunc, string(raw[:len(raw)-7]))
	nan := slices.Clone(m4)
	nan[2] = []float32{0, float32(math.NaN()), 0, 0, 0, 0, 0, 0}
	nanFile := filepath.Join(dir, "nan.fvecs")
	writeMatrix(t, nanFile, vecfile.FVecs, nan)

	cases := []struct {
		name string
		args []string
		code int
		say  []string
	}{
		{"row count", []string{"--embedder-id", "x", "--vectors", five}, 1, []string{"row count", "five.npy has 5 rows", "c.jsonl has 4 lines"}},
		{"truncated", []string{"--embedder-id", "x", "--vectors", trunc}, 1, []string{"trunc.npy: row 3", "truncated"}},
		{"NaN row", []string{"--embedder-id", "x", "--vectors", nanFile, "--strict"}, 1, []string{"c.jsonl:3", "nan.fvecs: row 2", "NaN"}},
		{"model of another dimension", []string{"--embedder-id", "hash:16", "--vectors", good}, 1, []string{"16 dimensions", "have 8"}},
		{"no model named", []string{"--vectors", good}, 1, []string{"dimension 8", "--embedder-id"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"index", "--store", filepath.Join(dir, fmt.Sprintf("s%d", i))}, tc.args...)
			_, errs := mustCLI(t, tc.code, append(args, docs)...)
			for _, s := range tc.say {
				if !strings.Contains(errs, s) {
					t.Fatalf("stderr lacks %q:\n%s", s, errs)
				}
			}
		})
	}
}

// A store remembers its dense index: search without --index uses it, another --index is
// an error with the way out, and --rebuild-index switches.
func TestSearchUsesRecordedIndex(t *testing.T) {
	dir := t.TempDir()
	docs := filepath.Join(dir, "c.jsonl")
	jsonl(t, docs, 20, nil)
	store := filepath.Join(dir, "s")
	mustCLI(t, 0, "index", "--store", store, "--embedder", "hash:32", "--index", "chromem", docs)
	m := openTest(t, store)
	if got := m.IndexConfig().Backend; got != "chromem" {
		t.Fatalf("recorded backend %q", got)
	}
	m.Close()
	mustCLI(t, 0, "search", "--store", store, "--mode", "dense", "otters")
	_, errs := mustCLI(t, 1, "search", "--store", store, "--index", "flat", "otters")
	if !strings.Contains(errs, "backend chromem") || !strings.Contains(errs, "backend flat") || !strings.Contains(errs, "--rebuild-index") {
		t.Fatalf("another index: %s", errs)
	}
	mustCLI(t, 0, "index", "--store", store, "--index", "flat", "--rebuild-index", docs)
	m = openTest(t, store)
	if got := m.IndexConfig().Backend; got != "flat" {
		t.Fatalf("after --rebuild-index: %q", got)
	}
	m.Close()
}

// --index-param sets the disk index's inverted lists when the store first gets vectors (the
// manifest records nlist); a search may change nprobe but not nlist, and an unknown or
// negative parameter is a usage error naming it.
func TestIndexParamLists(t *testing.T) {
	dir := t.TempDir()
	docs := filepath.Join(dir, "c.jsonl")
	jsonl(t, docs, 20, nil)
	store := filepath.Join(dir, "s")
	mustCLI(t, 0, "index", "--store", store, "--embedder", "hash:32", "--index-param", "nlist=4", docs)
	m := openTest(t, store)
	if got := m.IndexConfig(); got.Backend != "disk" || got.Params["nlist"] != 4 {
		t.Fatalf("recorded index %+v, want disk with nlist 4", got)
	}
	m.Close()
	out, _ := mustCLI(t, 0, "search", "--store", store, "--mode", "dense", "--index-param", "nprobe=4", "-k", "1", "document number 7 about otters")
	if !strings.Contains(out, "d7") {
		t.Fatalf("dense search with nprobe 4: %s", out)
	}
	_, errs := mustCLI(t, 1, "search", "--store", store, "--mode", "dense", "--index-param", "nlist=8", "otters")
	if !strings.Contains(errs, "nlist=4") || !strings.Contains(errs, "nlist=8") {
		t.Fatalf("another nlist: %s", errs)
	}
	for _, bad := range []string{"lists=4", "nprobe=-1", "nprobe"} {
		_, errs := mustCLI(t, 2, "search", "--store", store, "--index-param", bad, "otters")
		if k, _, _ := strings.Cut(bad, "="); !strings.Contains(errs, k) {
			t.Errorf("--index-param %s: %s", bad, errs)
		}
	}
}

// serve --retrieve on a store of vectors imported without their model serves BM25 (as
// search does) instead of failing every query.
func TestServeVectorsWithoutModelServesBM25(t *testing.T) {
	dir, docs := vecFixture(t, 6)
	var m [][]float32
	for i := range 6 {
		m = append(m, unitAxis(8, i))
	}
	vf := filepath.Join(dir, "v.npy")
	writeMatrix(t, vf, vecfile.NPY, m)
	store := filepath.Join(dir, "s")
	mustCLI(t, 0, "index", "--store", store, "--embedder-id", "e5-absent", "--vectors", vf, docs)
	base := startServe(t, store)
	resp, err := http.Post(base+"/retrieve", "application/json", strings.NewReader(`{"queries": ["otters number3"], "topk": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "number3") {
		t.Fatalf("retrieve: %d %s", resp.StatusCode, body)
	}
}

// --vector-precision float16 or int8 makes a store that keeps its vectors so (recorded:
// later commands need no flag; int8's disk index keeps no float32 rows of its own), and
// another precision on it is an error naming both.
func TestVectorPrecisionFlag(t *testing.T) {
	for _, prec := range []string{"float16", "int8"} {
		t.Run(prec, func(t *testing.T) {
			dir := t.TempDir()
			docs := filepath.Join(dir, "c.jsonl")
			jsonl(t, docs, 20, nil)
			store := filepath.Join(dir, "s")
			mustCLI(t, 0, "index", "--store", store, "--embedder", "hash:32", "--vector-precision", prec, docs)
			man, err := os.ReadFile(filepath.Join(store, "manifest.json"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(man), `"vector_precision": "`+prec+`"`) {
				t.Fatalf("manifest: %s", man)
			}
			out, _ := mustCLI(t, 0, "search", "--store", store, "--mode", "dense", "--json", "otters")
			if !strings.Contains(out, `"precision":"`+prec+`"`) && !strings.Contains(out, `"precision": "`+prec+`"`) {
				t.Fatalf("dense results do not name the precision %s: %s", prec, out)
			}
			f32, _ := filepath.Glob(filepath.Join(store, "vectors", "*", "*.f32"))
			if (prec == "int8") != (len(f32) == 0) {
				t.Fatalf("%s store: float32 row files %v", prec, f32)
			}
			_, errs := mustCLI(t, 1, "search", "--store", store, "--vector-precision", "float32", "otters")
			if !strings.Contains(errs, prec) || !strings.Contains(errs, "float32") {
				t.Fatalf("another precision: %s", errs)
			}
		})
	}
}
