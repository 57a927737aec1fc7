package bm25

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// refMatch is the reference semantics of a MetaFilter over one document's metadata,
// written from the documented rules (not from the bitmap code).
func refMatch(f *MetaFilter, md map[string]any) bool {
	if f == nil {
		return true
	}
	if !f.leaf {
		for _, s := range f.subs {
			if refMatch(s, md) != f.and {
				return !f.and
			}
		}
		return f.and
	}
	raw, present := md[f.key]
	if !present {
		return f.op == MetaNe || f.op == MetaNin // as Chroma: "not equal" holds without the key
	}
	got, _ := metaValue(raw)
	eqAny := false
	for _, v := range f.vals {
		if got == v {
			eqAny = true
		}
	}
	switch f.op {
	case MetaEq, MetaIn:
		return eqAny
	case MetaNe, MetaNin:
		return !eqAny
	}
	var c int
	switch x := got.(type) {
	case float64:
		y, ok := f.vals[0].(float64)
		if !ok {
			return false
		}
		c = 0
		if x < y {
			c = -1
		} else if x > y {
			c = 1
		}
	case string:
		y, ok := f.vals[0].(string)
		if !ok {
			return false
		}
		c = strings.Compare(x, y)
	default:
		return false
	}
	switch f.op {
	case MetaGt:
		return c > 0
	case MetaGte:
		return c >= 0
	case MetaLt:
		return c < 0
	}
	return c <= 0
}

// metaPool are the values the random documents and filters draw from: strings (with a
// common prefix and the empty string), numbers of both signs (-0, infinities, integers and
// fractions), bools, so orderings cross sign and type boundaries.
var metaPool = []any{
	"", "a", "ab", "b", "ba", "z\xffz", "ü",
	math.Inf(-1), -1e300, -2, -1.5, -1, math.Copysign(0, -1), 0, 0.5, 1, 2, 3, 1e300, math.Inf(1),
	true, false,
}

var metaKeys = []string{"k", "n", "s", "kk", "\x01"}

func randMeta(rng *rand.Rand) map[string]any {
	md := map[string]any{}
	for _, k := range metaKeys {
		if rng.IntN(3) > 0 {
			md[k] = metaPool[rng.IntN(len(metaPool))]
		}
	}
	if rng.IntN(4) == 0 {
		md["i"] = rng.IntN(4) // an int: indexed as the number
	}
	return md
}

func randFilter(t *testing.T, rng *rand.Rand, depth int) *MetaFilter {
	if depth > 0 && rng.IntN(3) == 0 {
		n := 1 + rng.IntN(3)
		subs := make([]*MetaFilter, n)
		for i := range subs {
			subs[i] = randFilter(t, rng, depth-1)
		}
		if rng.IntN(2) == 0 {
			return MetaAnd(subs...)
		}
		return MetaOr(subs...)
	}
	keys := append(slices.Clone(metaKeys), "i", "absent")
	key := keys[rng.IntN(len(keys))]
	op := MetaOp(rng.IntN(int(MetaNin) + 1))
	var ops []any
	switch op {
	case MetaIn, MetaNin:
		for range rng.IntN(4) {
			ops = append(ops, metaPool[rng.IntN(len(metaPool))])
		}
	default:
		for {
			v := metaPool[rng.IntN(len(metaPool))]
			if _, isBool := v.(bool); isBool && op >= MetaGt && op <= MetaLte {
				continue
			}
			ops = append(ops, v)
			break
		}
	}
	f, err := MetaCompare(key, op, ops...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFilterMatchesReference: over random metadata (every value type, unit chunks,
// upserts and deletes, several segments), every random filter's FilterIDs, FilterCount and
// SearchFiltered (MaxScore and exhaustive, several k) equal the reference: the ids the
// reference semantics select, and Search restricted to them.
func TestFilterMatchesReference(t *testing.T) {
	for _, disk := range []bool{false, true} {
		t.Run(fmt.Sprintf("disk=%v", disk), func(t *testing.T) {
			ctx := context.Background()
			path := ""
			if disk {
				path = filepath.Join(t.TempDir(), "bm25")
			}
			b, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(7, 9))
			words := strings.Fields("tumor growth cell insulin glucose mice protein gene cancer blood")
			type unit struct {
				md    map[string]any
				chunk int
			}
			live := map[string]unit{}
			seq := uint64(0)
			for round := range 6 {
				var puts []Doc
				var dels []string
				for i := range 60 {
					id := fmt.Sprintf("d%03d", rng.IntN(200))
					if rng.IntN(6) == 0 {
						dels = append(dels, id)
						delete(live, id)
						continue
					}
					var text []string
					for range 1 + rng.IntN(6) {
						text = append(text, words[rng.IntN(len(words))])
					}
					d := Doc{ID: id, Text: strings.Join(text, " "), Meta: randMeta(rng), Chunk: rng.IntN(3)}
					if slices.ContainsFunc(puts, func(p Doc) bool { return p.ID == id }) || slices.Contains(dels, id) {
						continue
					}
					puts = append(puts, d)
					live[id] = unit{md: d.Meta, chunk: d.Chunk}
					_ = i
				}
				seq++
				if err := b.Apply(puts, dels, seq); err != nil {
					t.Fatal(err)
				}
				if disk && round == 3 {
					if err := b.Close(); err != nil {
						t.Fatal(err)
					}
					if b, err = Open(path); err != nil {
						t.Fatal(err)
					}
				}
			}
			defer b.Close()
			for fi := range 300 {
				f := randFilter(t, rng, 3)
				want := []string{}
				docs := 0
				for id, u := range live {
					if refMatch(f, u.md) {
						want = append(want, id)
						if u.chunk == 0 {
							docs++
						}
					}
				}
				slices.Sort(want)
				if f != nil {
					got, err := b.FilterIDs(ctx, f)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, want) {
						t.Fatalf("filter %d %s: ids %q, want %q", fi, f, got, want)
					}
				}
				units, gotDocs, err := b.FilterCount(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				if f == nil {
					want = nil // every unit: compare with Search unrestricted
				}
				if f != nil && (units != len(want) || gotDocs != docs) {
					t.Fatalf("filter %s: count %d units %d docs, want %d, %d", f, units, gotDocs, len(want), docs)
				}
				q := words[rng.IntN(len(words))] + " " + words[rng.IntN(len(words))]
				for _, k := range []int{1, 3, 10, 1000} {
					for _, ex := range []bool{false, true} {
						b.SetExhaustive(ex)
						ref, err := b.Search(ctx, q, k, want)
						if err != nil {
							t.Fatal(err)
						}
						got, err := b.SearchFiltered(ctx, q, k, f)
						if err != nil {
							t.Fatal(err)
						}
						if !slices.Equal(got, ref) {
							t.Fatalf("filter %s q %q k %d exhaustive %v:\n got %v\nwant %v", f, q, k, ex, got, ref)
						}
					}
				}
				b.SetExhaustive(false)
			}
		})
	}
}

// TestMetaCompareErrors: bad filters are refused with ErrMetaFilter, bad metadata with
// ErrBM25 wrapping ErrMetaFilter.
func TestMetaCompareErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  string
		op   MetaOp
		ops  []any
	}{
		{"empty key", "", MetaEq, []any{1}},
		{"no operand", "k", MetaEq, nil},
		{"two operands", "k", MetaLt, []any{1, 2}},
		{"ordered bool", "k", MetaGt, []any{true}},
		{"NaN", "k", MetaEq, []any{math.NaN()}},
		{"slice", "k", MetaIn, []any{[]int{1}}},
		{"unknown op", "k", MetaOp(42), []any{1}},
	} {
		if _, err := MetaCompare(tc.key, tc.op, tc.ops...); !errors.Is(err, ErrMetaFilter) {
			t.Errorf("%s: err %v, want ErrMetaFilter", tc.name, err)
		}
	}
	b, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, md := range []map[string]any{{"": 1}, {"k": []any{[]string{"x"}}}, {"k": []any{"x", math.NaN()}}, {"k": math.NaN()}} {
		err := b.Apply([]Doc{{ID: "a", Text: "x", Meta: md}}, nil, 1)
		if !errors.Is(err, ErrBM25) || !errors.Is(err, ErrMetaFilter) {
			t.Errorf("metadata %v: err %v", md, err)
		}
	}
	// A list is one term a value, duplicates once: conditions match any of its values.
	if err := b.Apply([]Doc{{ID: "l", Text: "x", Meta: map[string]any{"tags": []string{"p", "q", "p"}}}}, nil, 2); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		op   MetaOp
		v    any
		want int
	}{{MetaEq, "p", 1}, {MetaEq, "q", 1}, {MetaEq, "r", 0}, {MetaNe, "q", 0}, {MetaGt, "p", 1}, {MetaGt, "q", 0}} {
		f, err := MetaCompare("tags", tc.op, tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if _, docs, err := b.FilterCount(context.Background(), f); err != nil || docs != tc.want {
			t.Errorf("tags [p q p] %v %v: %d documents, %v; want %d", tc.op, tc.v, docs, err, tc.want)
		}
	}
	if err := b.Apply(nil, []string{"l"}, 3); err != nil {
		t.Fatal(err)
	}
	// A long value is one term like any other.
	long := strings.Repeat("x", 1<<20)
	if err := b.Apply([]Doc{{ID: "a", Text: "x", Meta: map[string]any{"k": long}}}, nil, 4); err != nil {
		t.Fatal(err)
	}
	f, _ := MetaCompare("k", MetaEq, long)
	if ids, err := b.FilterIDs(context.Background(), f); err != nil || len(ids) != 1 {
		t.Fatalf("long value: %v %v", ids, err)
	}
	if _, err := b.FilterIDs(context.Background(), nil); !errors.Is(err, ErrMetaFilter) {
		t.Errorf("FilterIDs(nil): %v", err)
	}
}

// TestFilterBleveScoring: Bleve's own scoring path honours a filter too.
func TestFilterBleveScoring(t *testing.T) {
	b, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	docs := []Doc{{ID: "a", Text: "tumor growth", Meta: map[string]any{"y": 2020}}, {ID: "b", Text: "tumor", Meta: map[string]any{"y": 2021}}}
	if err := b.Apply(docs, nil, 1); err != nil {
		t.Fatal(err)
	}
	b.SetBleveScoring(true)
	f, _ := MetaCompare("y", MetaGte, 2021)
	hits, err := b.SearchFiltered(context.Background(), "tumor", 10, f)
	if err != nil || len(hits) != 1 || hits[0].ID != "b" {
		t.Fatalf("hits %v err %v", hits, err)
	}
	none, _ := MetaCompare("y", MetaGt, 3000)
	if hits, err := b.SearchFiltered(context.Background(), "tumor", 10, none); err != nil || len(hits) != 0 {
		t.Fatalf("empty filter: hits %v err %v", hits, err)
	}
}

// TestCorruptSegment: bytes flipped in the segment files of a closed index never panic:
// opening or searching either fails (ErrCorrupt for a panic inside Bleve, ErrBM25 for a
// reported error) or gives the right results.
func TestCorruptSegment(t *testing.T) {
	ctx := context.Background()
	build := func(dir string) []Hit {
		b, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		var docs []Doc
		for i := range 300 {
			docs = append(docs, Doc{ID: fmt.Sprintf("d%03d", i), Text: fmt.Sprintf("tumor growth cell %d insulin w%d", i, i%17), Meta: map[string]any{"b": i % 10}})
		}
		if err := b.Apply(docs, nil, 1); err != nil {
			t.Fatal(err)
		}
		f, _ := MetaCompare("b", MetaEq, 3)
		want, err := b.SearchFiltered(ctx, "tumor w3", 10, f)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		return want
	}
	var outcomes [3]int // right results, typed error, corrupt error
	for seed := range 24 {
		dir := filepath.Join(t.TempDir(), "bm25")
		want := build(dir)
		zaps, _ := filepath.Glob(filepath.Join(dir, "store", "*.zap"))
		if len(zaps) == 0 {
			t.Fatal("no .zap segment files")
		}
		data, err := os.ReadFile(zaps[0])
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(seed), 3))
		for range 1 + rng.IntN(64) {
			data[rng.IntN(len(data))] ^= byte(1 + rng.IntN(255))
		}
		if err := os.WriteFile(zaps[0], data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := func() ([]Hit, error) {
			b, err := Open(dir)
			if err != nil {
				return nil, err
			}
			defer b.Close()
			f, _ := MetaCompare("b", MetaEq, 3)
			if _, _, err := b.FilterCount(ctx, f); err != nil {
				return nil, err
			}
			if _, err := b.SearchBatch(ctx, []string{"tumor", "growth cell"}, 5, nil); err != nil {
				return nil, err
			}
			return b.SearchFiltered(ctx, "tumor w3", 10, f)
		}()
		switch {
		case errors.Is(err, ErrCorrupt):
			outcomes[2]++
		case errors.Is(err, ErrBM25):
			outcomes[1]++
		case err != nil:
			t.Fatalf("seed %d: untyped error %v", seed, err)
		case slices.Equal(got, want):
			outcomes[0]++
		default:
			// A flipped byte can change a posting without zap noticing (no checksums
			// on read); what must never happen is a panic. Count it apart.
			t.Logf("seed %d: results differ without an error: %v vs %v", seed, got, want)
		}
	}
	t.Logf("right %d, ErrBM25 %d, ErrCorrupt %d of 24", outcomes[0], outcomes[1], outcomes[2])
}
