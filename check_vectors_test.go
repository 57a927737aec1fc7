package memory

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/vectorstore"
)

// vecDamageDim is the hash embedder's dimension in these tests.
const vecDamageDim = 16

func vecDamageOptions(extra ...Option) []Option {
	return append([]Option{WithEmbedder(vectorstore.NewHashEmbedder(vecDamageDim))}, extra...)
}

// vecDamageQueries are the dense queries whose answers the tests compare.
var vecDamageQueries = []string{"topic 3 notes", "document 150", "widgets and gears", "topic 7 document 99"}

// buildVecDamageStore writes a closed store of 300 short documents (one vector each, in
// one segment of the disk index) and returns the dense answers to vecDamageQueries.
func buildVecDamageStore(t *testing.T, dir string) map[string][]string {
	t.Helper()
	m, err := Open(dir, vecDamageOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	var docs []Document
	for i := range 300 {
		docs = append(docs, Document{ID: fmt.Sprintf("d%04d", i),
			Text: fmt.Sprintf("document %d about topic %d, widgets %d and gears %d", i, i%11, i%7, i%5)})
	}
	if err := m.Add(bg, docs...); err != nil {
		t.Fatal(err)
	}
	want := vecDamageAnswers(t, m)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	return want
}

// vecDamageAnswers asks m the dense queries: each query's ids, or its error's text.
func vecDamageAnswers(t *testing.T, m *Memory) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, q := range vecDamageQueries {
		for _, mode := range []Mode{Dense, Hybrid} {
			key := fmt.Sprintf("%v|%s", mode, q)
			res, err := m.Search(bg, q, WithMode(mode), TopK(10))
			if err != nil {
				out[key] = []string{"!" + err.Error()}
				continue
			}
			out[key] = ids(res)
			for _, r := range res {
				if r.Explain.Dense != nil && r.Explain.Dense.Score != r.Explain.Dense.Score {
					t.Errorf("%s: %s has a dense score that is not a number", key, r.ID)
				}
			}
		}
	}
	return out
}

// vecRowOf returns the disk index file of collection col's float32 rows in dir and the
// row of each index id (from disk.json and the id table: "MVIDS001", n, n+1 offsets, n
// ordinals, the ids).
func vecRowOf(t *testing.T, dir, col string) (string, map[string]int) {
	t.Helper()
	vdir := filepath.Join(dir, vecDir, url.PathEscape(col))
	raw, err := os.ReadFile(filepath.Join(vdir, "disk.json"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Segs []struct {
			F32 struct{ Name string } `json:"f32"`
		} `json:"segs"`
		IDs struct{ Name string } `json:"ids"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		t.Fatal(err)
	}
	if len(meta.Segs) != 1 {
		t.Fatalf("%d segments, want 1", len(meta.Segs))
	}
	b, err := os.ReadFile(filepath.Join(vdir, meta.IDs.Name))
	if err != nil {
		t.Fatal(err)
	}
	n := int(binary.LittleEndian.Uint64(b[8:]))
	offs := func(o int) int { return int(binary.LittleEndian.Uint64(b[16+8*o:])) }
	data := b[16+8*(n+1)+4*n:]
	rows := map[string]int{}
	for o := range n {
		rows[string(data[offs(o):offs(o+1)])] = o
	}
	return filepath.Join(vdir, meta.Segs[0].F32.Name), rows
}

// damageUnsampledRow flips the exponent of a value of the float32 row of a document that
// neither the open-time verification nor Check samples, in place, the file's time kept,
// and returns the document's id.
func damageUnsampledRow(t *testing.T, dir string) string {
	t.Helper()
	m, err := Open(dir, vecDamageOptions(ReadOnly())...)
	if err != nil {
		t.Fatal(err)
	}
	checked, err := m.db.StepSample(DefaultCollection, checkSample)
	if err != nil {
		t.Fatal(err)
	}
	opened, err := m.db.SampleUnits(DefaultCollection, store.SampleSize)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	sampled := append(checked[:min(len(checked), vectorSample)], opened...)
	f32, rows := vecRowOf(t, dir, DefaultCollection)
	id := ""
	for i := 150; i < 300; i++ {
		if c := fmt.Sprintf("d%04d", i); !slices.Contains(sampled, c) {
			id = c
			break
		}
	}
	o, ok := rows[id]
	if id == "" || !ok {
		t.Fatalf("no unsampled row (%q in the index: %v)", id, ok)
	}
	fi, err := os.Stat(f32)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(f32, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	off := int64(o*4*vecDamageDim + 4*3 + 3) // the top byte of the row's 4th value
	var b [1]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(f32, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestCheckReadsEveryVector: Check reads every vector of the disk index back, not a
// sample of 20: a row damaged in place (its file's time kept) that no sample picks is
// reported, as damage that a repair fixes (the store of record holds the vectors), and a
// repair rebuilds the index so that searches answer as before the damage.
func TestCheckReadsEveryVector(t *testing.T) {
	dir := t.TempDir()
	want := buildVecDamageStore(t, dir)
	id := damageUnsampledRow(t, dir)

	m, err := Open(dir, vecDamageOptions(ReadOnly())...)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := m.Check(bg, false)
	m.Close()
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, c := range rep.Indexes {
		if c.Index == vecDir && c.Collection == DefaultCollection {
			found = append(found, c.Problems...)
		}
	}
	if !slices.ContainsFunc(found, func(p string) bool { return strings.Contains(p, "vector files are damaged") }) {
		t.Fatalf("the row of %s damaged: check reports %v", id, rep.Indexes)
	}
	if !rep.Repairable() || rep.StoreDamaged() || rep.OK() {
		t.Fatalf("repairable %v, store damaged %v, ok %v; want a repairable derived index", rep.Repairable(), rep.StoreDamaged(), rep.OK())
	}

	m, err = Open(dir, vecDamageOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	rep, err = m.Check(bg, true)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("after a repair: %v", rep.Indexes)
	}
	if got := vecDamageAnswers(t, m); !vecAnswersEqual(got, want) {
		t.Fatalf("after the repair: %v, want %v", got, want)
	}
}

// TestDenseSearchDamagedRowKeepMTime is issue #39's case through the store: one float32
// row damaged in place, its file's time kept, the row outside every sample. A dense or
// hybrid search answers as before the damage or fails with a typed error; it never
// returns the damaged row's score (the base answered with it first, at +Inf).
func TestDenseSearchDamagedRowKeepMTime(t *testing.T) {
	dir := t.TempDir()
	want := buildVecDamageStore(t, dir)
	damageUnsampledRow(t, dir)
	m, err := Open(dir, vecDamageOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for key, g := range vecDamageAnswers(t, m) {
		if slices.Equal(g, want[key]) {
			continue
		}
		if len(g) == 1 && strings.HasPrefix(g[0], "!") {
			res, err := m.Search(bg, strings.SplitN(key, "|", 2)[1], WithMode(Dense))
			if errors.Is(err, vectorstore.ErrCorrupt) || errors.Is(err, ErrCorrupt) {
				continue
			}
			t.Errorf("%s: %v, %v: an untyped error", key, res, err)
			continue
		}
		t.Errorf("%s: %v, want %v", key, g, want[key])
	}
}

func vecAnswersEqual(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}
