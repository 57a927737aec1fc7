package memory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/docfilter"
	"github.com/agentmem/memory/internal/memtest"
	"github.com/agentmem/memory/vectorstore"
	"github.com/blevesearch/bleve/v2"
)

// nestAnd returns a Where whose $and lists nest depth deep around {"lang": "go"}.
func nestAnd(depth int) Where {
	w := Where{"lang": "go"}
	for range depth {
		w = Where{"$and": []any{map[string]any(w)}}
	}
	return w
}

// inList returns n distinct $in operands.
func inList(n int) []any {
	l := make([]any, n)
	for i := range l {
		l[i] = fmt.Sprintf("v%d", i)
	}
	return l
}

// TestFilterCaps: a filter over any cap (depth, clauses, $in items, bytes) is
// ErrFilterTooLarge, which matches ErrInvalidFilter and names the cap, from the parser, a
// search and DeleteWhere alike; a filter at each cap still works.
func TestFilterCaps(t *testing.T) {
	m := openT(t, "")
	must(t, m.Add(bg, corpus...))
	manyClauses := func(n int) Where {
		list := make([]any, n)
		for i := range list {
			list[i] = map[string]any{"lang": fmt.Sprint("l", i)}
		}
		return Where{"$or": list}
	}
	big := strings.Repeat("x", docfilter.MaxBytes/2)
	cases := []struct {
		name    string
		w       Where
		wd      WhereDocument
		tooBig  bool
		capName string
	}{
		{"depth at cap", nestAnd(MaxFilterDepth), nil, false, ""},
		{"depth over cap", nestAnd(MaxFilterDepth + 1), nil, true, "MaxFilterDepth"},
		{"clauses at cap", manyClauses(docfilter.MaxClauses - 1), nil, false, ""},
		{"clauses over cap", manyClauses(docfilter.MaxClauses), nil, true, "condition cap"},
		{"$in at cap", Where{"lang": map[string]any{"$in": inList(MaxFilterInItems)}}, nil, false, ""},
		{"$in over cap", Where{"lang": map[string]any{"$in": inList(MaxFilterInItems + 1)}}, nil, true, "MaxFilterInItems"},
		{"$in 1M", Where{"lang": map[string]any{"$in": inList(1_000_000)}}, nil, true, "MaxFilterInItems"},
		{"$nin typed slice over cap", Where{"year": map[string]any{"$nin": make([]int, MaxFilterInItems+1)}}, nil, true, "MaxFilterInItems"},
		{"bytes over cap", Where{"$or": []any{map[string]any{"a": big}, map[string]any{"b": big}}}, nil, true, "byte cap"},
		{"where_document depth over cap", nil, WhereDocument{"$and": []any{map[string]any(docNest(MaxFilterDepth))}}, true, "MaxFilterDepth"},
		{"where_document bytes over cap", nil, WhereDocument{"$or": []any{map[string]any{"$contains": big}, map[string]any{"$contains": big + "y"}}}, true, "byte cap"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Search(bg, "language", WithMode(BM25), TopK(3), WithWhere(tc.w), WithWhereDocument(tc.wd))
			if !tc.tooBig {
				if err != nil {
					t.Fatalf("search at the cap: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrFilterTooLarge) || !errors.Is(err, ErrInvalidFilter) {
				t.Fatalf("search: got %v, want ErrFilterTooLarge (and ErrInvalidFilter)", err)
			}
			if !strings.Contains(err.Error(), tc.capName) {
				t.Fatalf("error %q does not name %s", err, tc.capName)
			}
			if tc.w != nil {
				if _, err := m.Collection("").DeleteWhere(bg, tc.w); !errors.Is(err, ErrFilterTooLarge) {
					t.Fatalf("DeleteWhere: got %v, want ErrFilterTooLarge", err)
				}
			}
		})
	}
	if n := memtest.Count(t, m.Collection("")); n != len(corpus) {
		t.Fatalf("count after refused DeleteWheres = %d, want %d", n, len(corpus))
	}
	// The parser: a $in of 1M items decoded from JSON.
	var sb strings.Builder
	sb.WriteString(`{"lang":{"$in":[`)
	for i := range 1_000_000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"v%d"`, i)
	}
	sb.WriteString(`]}}`)
	if _, err := ParseWhere([]byte(sb.String())); !errors.Is(err, ErrFilterTooLarge) {
		t.Fatalf("ParseWhere of a 1M $in: %v", err)
	}
	if _, err := ParseWhereDocument([]byte(`{"$and":` + strings.Repeat(`[{"$and":`, 40) + `[{"$contains":"a"}]` + strings.Repeat(`}]`, 40) + `}`)); !errors.Is(err, ErrFilterTooLarge) {
		t.Fatalf("ParseWhereDocument nested 41 deep: %v", err)
	}
}

// docNest returns a WhereDocument whose $or lists nest depth deep around a $contains.
func docNest(depth int) WhereDocument {
	w := WhereDocument{"$contains": "go"}
	for range depth {
		w = WhereDocument{"$or": []any{map[string]any(w)}}
	}
	return w
}

// filterValues are the metadata values and operands of the random filters: strings,
// numbers of both signs (integers, fractions, -0), bools, so that orderings cross types.
var filterValues = []any{"", "a", "ab", "b", "go", "rust", "ü", -3, -1.5, math.Copysign(0, -1), 0, 1, 2, 2.5, 7, true, false}

var filterKeys = []string{"lang", "year", "ok", "tag"}

func randWhereValue(rng *rand.Rand) any { return filterValues[rng.IntN(len(filterValues))] }

// randWhere builds a random Where tree with every operator, implicit AND of several keys,
// operator objects with several operators, and empty sub-filters.
func randWhere(rng *rand.Rand, depth int) map[string]any {
	w := map[string]any{}
	if depth > 0 && rng.IntN(3) == 0 {
		op := "$and"
		if rng.IntN(2) == 0 {
			op = "$or"
		}
		var subs []any
		for range 1 + rng.IntN(3) {
			if rng.IntN(8) == 0 {
				subs = append(subs, map[string]any{})
				continue
			}
			subs = append(subs, randWhere(rng, depth-1))
		}
		w[op] = subs
		return w
	}
	for range 1 + rng.IntN(2) {
		key := append(filterKeys, "absent")[rng.IntN(len(filterKeys)+1)]
		ops := map[string]any{}
		for range 1 + rng.IntN(2) {
			switch op := []string{"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$contains", "$not_contains"}[rng.IntN(10)]; op {
			case "$contains":
				if rng.IntN(2) == 0 { // a list: every one of its values
					ops[op] = []any{randWhereValue(rng), randWhereValue(rng)}[:1+rng.IntN(2)]
				} else {
					ops[op] = randWhereValue(rng)
				}
			case "$in", "$nin":
				var list []any
				for range rng.IntN(4) {
					list = append(list, randWhereValue(rng))
				}
				ops[op] = list
			case "$gt", "$gte", "$lt", "$lte":
				v := randWhereValue(rng)
				if _, isBool := v.(bool); isBool {
					v = 1
				}
				ops[op] = v
			default:
				ops[op] = randWhereValue(rng)
			}
		}
		if eq, ok := ops["$eq"]; ok && len(ops) == 1 && rng.IntN(2) == 0 {
			w[key] = eq // the short form
		} else {
			w[key] = ops
		}
	}
	return w
}

func randFilterDoc(rng *rand.Rand, id string) Document {
	words := strings.Fields("tumor growth cell insulin glucose mice protein gene cancer blood liver brain")
	var text []string
	n := 3 + rng.IntN(12)
	if rng.IntN(4) == 0 {
		n = 80 + rng.IntN(120) // long enough to be chunked
	}
	for i := range n {
		text = append(text, words[rng.IntN(len(words))])
		if i%15 == 14 {
			text = append(text, "\n\n")
		}
	}
	md := map[string]any{}
	for _, k := range filterKeys {
		switch rng.IntN(8) {
		case 0, 1: // absent
		case 2: // a list (possibly empty or repeating a value): conditions match any value
			var list []any
			for range rng.IntN(4) {
				list = append(list, randWhereValue(rng))
			}
			md[k] = list
		default:
			md[k] = randWhereValue(rng)
		}
	}
	return Document{ID: id, Title: "t " + words[rng.IntN(len(words))], Text: strings.Join(text, " "), Metadata: md}
}

// TestWhereIndexedMatchesScan: a Where evaluated in the BM25 index's metadata terms gives
// exactly the results of the store-of-record scan (same ids, chunks, order and scores, and
// the same Allowed count), in every mode and at several k, over random metadata of mixed
// types, chunked documents, upserts and deletes, in memory and on disk (reopened).
func TestWhereIndexedMatchesScan(t *testing.T) {
	ctx := context.Background()
	for _, disk := range []bool{false, true} {
		t.Run(fmt.Sprintf("disk=%v", disk), func(t *testing.T) {
			dir := ""
			if disk {
				dir = t.TempDir()
			}
			opts := []Option{WithEmbedder(vectorstore.NewHashEmbedder(32)), WithChunking(ChunkOptions{Budget: 200})}
			m, err := Open(dir, opts...)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(11, 12))
			var docs []Document
			for i := range 300 {
				docs = append(docs, randFilterDoc(rng, fmt.Sprintf("d%03d", i)))
			}
			if err := m.Add(ctx, docs...); err != nil {
				t.Fatal(err)
			}
			for round := range 3 {
				var up []Document
				seen := map[string]bool{}
				for range 40 {
					id := fmt.Sprintf("d%03d", rng.IntN(320))
					if !seen[id] {
						seen[id] = true
						up = append(up, randFilterDoc(rng, id))
					}
				}
				if err := m.Upsert(ctx, up...); err != nil {
					t.Fatal(err)
				}
				var del []string
				for range 15 {
					if id := fmt.Sprintf("d%03d", rng.IntN(320)); !seen[id] {
						del = append(del, id)
					}
				}
				if err := m.Delete(ctx, del...); err != nil {
					t.Fatal(err)
				}
				if disk && round == 1 {
					if err := m.Close(); err != nil {
						t.Fatal(err)
					}
					if m, err = Open(dir, opts...); err != nil {
						t.Fatal(err)
					}
				}
			}
			defer m.Close()
			defer filterScan.Store(false)
			run := func(scan bool, q string, w Where, mode Mode, k int, all bool) ([]Result, SearchStats) {
				t.Helper()
				filterScan.Store(scan)
				var st SearchStats
				so := []SearchOption{WithWhere(w), WithMode(mode), TopK(k), WithStats(&st)}
				if all {
					so = append(so, WithAllChunks())
				}
				res, err := m.Search(ctx, q, so...)
				if err != nil {
					t.Fatalf("where %v mode %s: %v", w, mode, err)
				}
				return res, st
			}
			words := strings.Fields("tumor growth cell insulin glucose mice protein gene cancer blood liver brain")
			nonEmpty := 0
			for i := range 150 {
				w := Where(randWhere(rng, 3))
				q := words[rng.IntN(len(words))] + " " + words[rng.IntN(len(words))]
				for _, mode := range []Mode{BM25, Hybrid, Dense} {
					for _, k := range []int{1, 5, 40} {
						all := (i+k)%3 == 0
						got, gst := run(false, q, w, mode, k, all)
						want, wst := run(true, q, w, mode, k, all)
						if gst.Allowed != wst.Allowed {
							t.Fatalf("where %v: Allowed %d, scan %d", w, gst.Allowed, wst.Allowed)
						}
						if len(got) != len(want) {
							t.Fatalf("where %v mode %s k %d: %d results, scan %d", w, mode, k, len(got), len(want))
						}
						for j := range got {
							g, s := got[j], want[j]
							if g.ID != s.ID || g.ChunkIndex != s.ChunkIndex || g.Score != s.Score {
								t.Fatalf("where %v mode %s k %d result %d: %s#%d %v, scan %s#%d %v", w, mode, k, j, g.ID, g.ChunkIndex, g.Score, s.ID, s.ChunkIndex, s.Score)
							}
						}
						if len(got) > 0 {
							nonEmpty++
						}
					}
				}
			}
			if nonEmpty < 300 {
				t.Fatalf("only %d of 1350 searches found anything: the filters are too narrow to test", nonEmpty)
			}
		})
	}
}

// TestOldBM25LayoutRebuilt: a store whose BM25 index has layout 2 (written before
// metadata was indexed) is rebuilt from the store of record at open, so its Where
// searches find what they should.
func TestOldBM25LayoutRebuilt(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	m, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	docs := []Document{
		{ID: "a", Text: "tumor growth", Metadata: map[string]any{"year": 2020}},
		{ID: "b", Text: "tumor cells", Metadata: map[string]any{"year": 2021}},
	}
	if err := m.Add(ctx, docs...); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	var indexes []string
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "index_meta.json" {
			indexes = append(indexes, filepath.Dir(path))
		}
		return err
	})
	if err != nil || len(indexes) != 1 {
		t.Fatalf("BM25 indexes %v (err %v), want one", indexes, err)
	}
	idx, err := bleve.Open(indexes[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.SetInternal([]byte("memory.bm25.format"), []byte("2")); err != nil {
		t.Fatal(err)
	}
	if err := idx.Close(); err != nil {
		t.Fatal(err)
	}
	if m, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var st SearchStats
	res, err := m.Search(ctx, "tumor", WithMode(BM25), WithWhere(Where{"year": map[string]any{"$gte": 2021}}), WithStats(&st))
	if err != nil || len(res) != 1 || res[0].ID != "b" || st.Allowed != 1 {
		t.Fatalf("after rebuild: %v (allowed %d), err %v", res, st.Allowed, err)
	}
}

// TestDeleteWhereIndexedMatchesScan: DeleteWhere with a Where evaluated in the BM25 index
// deletes exactly the documents that the store-of-record scan deletes, over random filters
// and chunked documents (two stores with the same writes, one scanning).
func TestDeleteWhereIndexedMatchesScan(t *testing.T) {
	ctx := context.Background()
	opts := []Option{WithChunking(ChunkOptions{Budget: 200})}
	indexed, scanned := openT(t, "", opts...), openT(t, "", opts...)
	defer filterScan.Store(false)
	rng := rand.New(rand.NewPCG(21, 22))
	deleted := 0
	for round := range 60 {
		if round%10 == 0 { // refill: every id written again, most with new metadata
			var docs []Document
			for i := range 200 {
				docs = append(docs, randFilterDoc(rng, fmt.Sprintf("d%03d", i)))
			}
			for _, m := range []*Memory{indexed, scanned} {
				if err := m.Upsert(ctx, docs...); err != nil {
					t.Fatal(err)
				}
			}
		}
		w := Where(randWhere(rng, 2))
		if len(w) == 0 {
			continue
		}
		filterScan.Store(false)
		n, err := indexed.DeleteWhere(ctx, w)
		filterScan.Store(true)
		ns, errs := scanned.DeleteWhere(ctx, w)
		if (err != nil) != (errs != nil) || n != ns {
			t.Fatalf("where %v: deleted %d (%v), scan %d (%v)", w, n, err, ns, errs)
		}
		if a, b := memtest.IDs(t, indexed.Collection("")), memtest.IDs(t, scanned.Collection("")); !slices.Equal(a, b) {
			t.Fatalf("where %v: left %d ids, scan %d", w, len(a), len(b))
		}
		deleted += n
	}
	if deleted < 100 {
		t.Fatalf("only %d documents deleted: the filters are too narrow to test", deleted)
	}
}

// TestListMetadata: list-valued metadata (as []string, []int or []any) is stored as []any
// of normalised values, read back by Get and after a reopen, and matched by value
// conditions, $contains (one value or all of a list) and where_document $regex, in the
// BM25 index and by scan alike; bad lists are ErrInvalidMetadata naming the key, and
// nothing already stored changes.
func TestListMetadata(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	opts := []Option{WithEmbedder(vectorstore.NewHashEmbedder(32))}
	m, err := Open(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { m.Close() }()
	docs := []Document{
		{ID: "a", Text: "error 404 page not found", Metadata: map[string]any{"tags": []string{"web", "http"}, "years": []int{2023, 2024}}},
		{ID: "b", Text: "database error: deadlock found", Metadata: map[string]any{"tags": []any{"db", "sql", "db"}}},
		{ID: "c", Text: "the page loads fine", Metadata: map[string]any{"tags": []string{}}},
		{ID: "d", Text: "no tags on this page", Metadata: map[string]any{"tags": "web"}},
	}
	if err := m.Add(ctx, docs...); err != nil {
		t.Fatal(err)
	}
	for i, bad := range []Document{
		{ID: "x1", Text: "t", Metadata: map[string]any{"tags": []any{"a", []any{"nested"}}}},
		{ID: "x2", Text: "t", Metadata: map[string]any{"tags": []any{map[string]any{"k": "v"}}}},
		{ID: "x3", Text: "t", Metadata: map[string]any{"tags": make([]any, MaxMetadataListItems+1)}},
		{ID: "x4", Text: "t", Metadata: map[string]any{"source": []string{"a", "b"}}},
		{ID: "x5", Text: "t", Metadata: map[string]any{"n": []float64{1, math.Inf(1)}}},
	} {
		err := m.Add(ctx, bad)
		if !errors.Is(err, ErrInvalidMetadata) {
			t.Fatalf("bad list %d: %v, want ErrInvalidMetadata", i, err)
		}
		if !strings.Contains(err.Error(), bad.ID) {
			t.Errorf("bad list %d: %q does not name the document", i, err)
		}
	}
	check := func(stage string) {
		t.Helper()
		got, err := m.Get(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if tags := fmt.Sprint(got.Metadata["tags"]); tags != "[web http]" {
			t.Errorf("%s: Get a: tags %s", stage, tags)
		}
		if years, ok := got.Metadata["years"].([]any); !ok || len(years) != 2 || years[0] != 2023.0 {
			t.Errorf("%s: Get a: years %#v, want []any of float64", stage, got.Metadata["years"])
		}
		if n, err := m.Count(ctx); err != nil || n != 4 {
			t.Fatalf("%s: Count %d, %v", stage, n, err)
		}
		for _, tc := range []struct {
			where Where
			doc   WhereDocument
			want  string
		}{
			{Where{"tags": "web"}, nil, "a,d"},
			{Where{"tags": Where{"$contains": "db"}}, nil, "b"},
			{Where{"tags": Where{"$contains": []string{"web", "http"}}}, nil, "a"},
			{Where{"tags": Where{"$contains": []string{"web", "db"}}}, nil, ""},
			{Where{"tags": Where{"$in": []any{"sql", "http"}}}, nil, "a,b"},
			{Where{"tags": Where{"$nin": []any{"sql", "http"}}}, nil, "c,d"},
			{Where{"tags": Where{"$not_contains": "web"}}, nil, "b,c"},
			{Where{"years": Where{"$gt": 2023}}, nil, "a"},
			{nil, WhereDocument{"$regex": `error \d+`}, "a"},
			{nil, WhereDocument{"$not_regex": `(?i)ERROR`}, "c,d"},
			{Where{"tags": "web"}, WhereDocument{"$regex": `^no\b`}, "d"},
		} {
			for _, scan := range []bool{false, true} {
				filterScan.Store(scan)
				res, err := m.Search(ctx, "error page found tags loads database", WithMode(BM25), TopK(10), WithWhere(tc.where), WithWhereDocument(tc.doc))
				filterScan.Store(false)
				if err != nil {
					t.Fatalf("%s: where %v %v: %v", stage, tc.where, tc.doc, err)
				}
				var ids []string
				for _, r := range res {
					ids = append(ids, r.ID)
				}
				slices.Sort(ids)
				if got := strings.Join(ids, ","); got != tc.want {
					t.Errorf("%s: where %v %v (scan %v): %s, want %s", stage, tc.where, tc.doc, scan, got, tc.want)
				}
			}
		}
	}
	check("open")
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if m, err = Open(dir, opts...); err != nil {
		t.Fatal(err)
	}
	check("reopened")
	if _, err := m.Search(ctx, "x", WithWhereDocument(WhereDocument{"$regex": "(?:ab){1000}"})); !errors.Is(err, ErrFilterTooLarge) {
		t.Errorf("a $regex over MaxRegexInsts: %v, want ErrFilterTooLarge", err)
	}
	if _, err := ParseWhereDocument([]byte(`{"$regex": "a(b"}`)); !errors.Is(err, ErrInvalidFilter) {
		t.Errorf("ParseWhereDocument of a bad pattern: %v, want ErrInvalidFilter", err)
	}
}
