package docfilter

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/store"
)

// docs are the records the table's filters are evaluated on.
var docs = map[string]*store.Record{
	"go":   {Title: "Go", Text: "Go is a compiled language.", Metadata: map[string]any{"lang": "go", "year": 2009.0, "typed": true, "tags": []any{"compiled", "google"}}},
	"py":   {Title: "Python", Text: "Python is interpreted.", Metadata: map[string]any{"lang": "python", "year": 1991.0, "tags": "interpreted"}},
	"rust": {Title: "Rust", Text: "Rust is compiled too.", Metadata: map[string]any{"lang": "rust", "year": 2015.0, "typed": true, "tags": []any{"compiled", "mozilla", 2015.0, "compiled"}}},
	"none": {Text: "A note without metadata."},
}

// matches is the sorted ids of docs that p accepts (nil p: all).
func matches(p Pred) string {
	var out []string
	for _, id := range []string{"go", "none", "py", "rust"} {
		if p == nil || p(docs[id]) {
			out = append(out, id)
		}
	}
	return strings.Join(out, ",")
}

func TestCompile(t *testing.T) {
	for _, tc := range []struct {
		where string
		want  string // the ids that match; "" with err set: an error is wanted
		meta  bool   // the filter runs in the BM25 index's metadata terms
		err   error
	}{
		{`{}`, "go,none,py,rust", false, nil},
		{`{"lang": "go"}`, "go", true, nil},
		{`{"lang": {"$ne": "go"}}`, "none,py,rust", true, nil}, // a missing key matches $ne
		{`{"year": {"$gte": 2009}}`, "go,rust", true, nil},
		{`{"year": {"$lt": 2009.5}}`, "go,py", true, nil},
		{`{"lang": {"$in": ["go", "rust"]}}`, "go,rust", true, nil},
		{`{"lang": {"$nin": ["go", "rust"]}}`, "none,py", true, nil},
		{`{"typed": true, "year": {"$gt": 2010}}`, "rust", true, nil},
		{`{"$or": [{"lang": "py"}, {"lang": "python"}]}`, "py", true, nil},
		{`{"$and": [{"typed": true}, {"$or": [{"year": 2009}, {"year": 1991}]}]}`, "go", true, nil},
		{`{"lang": {"$regex": "g"}}`, "", false, ErrInvalid},
		{`{"$and": []}`, "", false, ErrInvalid},
		{`{"$and": [1]}`, "", false, ErrInvalid},
		{`{"$or": "x"}`, "", false, ErrInvalid},
		{`{"year": {"$gt": [1]}}`, "", false, ErrInvalid},
		{`{"lang": {"$in": "go"}}`, "", false, ErrInvalid},
		// List values match a condition when one of their values does.
		{`{"tags": "compiled"}`, "go,rust", true, nil},
		{`{"tags": {"$contains": "compiled"}}`, "go,rust", true, nil},
		{`{"tags": {"$contains": "interpreted"}}`, "py", true, nil}, // a single value: $eq
		{`{"tags": {"$contains": ["compiled", "google"]}}`, "go", true, nil},
		{`{"tags": {"$ne": "compiled"}}`, "none,py", true, nil},
		{`{"tags": {"$not_contains": "google"}}`, "none,py,rust", true, nil},
		{`{"tags": {"$in": ["google", "interpreted"]}}`, "go,py", true, nil},
		{`{"tags": {"$nin": ["google", "interpreted"]}}`, "none,rust", true, nil},
		{`{"tags": {"$gte": 2000}}`, "rust", true, nil},
		{`{"tags": {"$lt": "d"}}`, "go,rust", true, nil},
		{`{"tags": ["compiled"]}`, "", false, ErrInvalid},
		{`{"tags": {"$eq": ["compiled"]}}`, "", false, ErrInvalid},
		{`{"tags": {"$not_contains": ["compiled"]}}`, "", false, ErrInvalid},
		{`{"tags": {"$contains": []}}`, "", false, ErrInvalid},
		{`{"tags": {"$contains": [["compiled"]]}}`, "", false, ErrInvalid},
		{strings.Repeat(`{"$and": [`, MaxDepth+1) + `{"a": 1}` + strings.Repeat(`]}`, MaxDepth+1), "", false, ErrTooLarge},
	} {
		var w map[string]any
		if err := json.Unmarshal([]byte(tc.where), &w); err != nil {
			t.Fatal(err)
		}
		c, err := Compile(w)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("%s: %v, want %v", tc.where, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.where, err)
			continue
		}
		if got := matches(c.Pred); got != tc.want {
			t.Errorf("%s matches %s, want %s", tc.where, got, tc.want)
		}
		if (c.Meta != nil) != tc.meta {
			t.Errorf("%s: meta filter %v, want %v", tc.where, c.Meta != nil, tc.meta)
		}
	}
}

// TestNamedFilterTypes: nested filters of a named map type (memory.Where) compile as
// plain objects do.
func TestNamedFilterTypes(t *testing.T) {
	type where map[string]any
	w := map[string]any{"$or": []where{{"lang": "go"}, {"lang": "rust"}}}
	c, err := Compile(w)
	if err != nil {
		t.Fatal(err)
	}
	if got := matches(c.Pred); got != "go,rust" {
		t.Fatalf("matches %s", got)
	}
}

func TestCompileDocument(t *testing.T) {
	for _, tc := range []struct {
		where, want string
		err         error
	}{
		{`{"$contains": "compiled"}`, "go,rust", nil},
		{`{"$not_contains": "compiled"}`, "none,py", nil},
		{`{"$or": [{"$contains": "Python"}, {"$contains": "note"}]}`, "none,py", nil},
		{`{"$and": [{"$contains": "compiled"}, {"$not_contains": "too"}]}`, "go", nil},
		{`{"$regex": "comp[a-z]+ed"}`, "go,rust", nil},
		{`{"$regex": "^Py"}`, "py", nil}, // the title
		{`{"$not_regex": "(?i)rust|\\bgo\\b"}`, "none,py", nil},
		{`{"$and": [{"$regex": "\\.$"}, {"$contains": "too"}]}`, "rust", nil},
		{`{"$regex": "("}`, "", ErrInvalid},
		{`{"$regex": "(a)\\1"}`, "", ErrInvalid}, // no backreferences in RE2
		{`{"$regex": ""}`, "", ErrInvalid},
		{`{"$regex": 1}`, "", ErrInvalid},
		{`{"$regex": "(?:ab){1000}"}`, "", ErrTooLarge},
		{`{"$regex": "` + strings.Repeat("a", MaxRegexBytes+1) + `"}`, "", ErrTooLarge},
		{`{"$contains": 3}`, "", ErrInvalid},
		{`{"lang": "go"}`, "", ErrInvalid},
	} {
		var w map[string]any
		if err := json.Unmarshal([]byte(tc.where), &w); err != nil {
			t.Fatal(err)
		}
		p, err := CompileDocument(w)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("%s: %v, want %v", tc.where, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.where, err)
		} else if got := matches(p); got != tc.want {
			t.Errorf("%s matches %s, want %s", tc.where, got, tc.want)
		}
	}
}

// TestDamagedListValues: a record whose metadata holds what validation never lets in (a
// list of objects, an object) matches no value condition and never panics.
func TestDamagedListValues(t *testing.T) {
	rec := &store.Record{Text: "x", Metadata: map[string]any{
		"tags": []any{map[string]any{"a": 1.0}, []any{"b"}}, "obj": map[string]any{"c": "d"}}}
	for _, where := range []string{`{"tags": {"$in": ["b"]}}`, `{"obj": {"$in": ["d"]}}`, `{"tags": "b"}`,
		`{"tags": {"$gt": "a"}}`, `{"obj": {"$contains": "d"}}`, `{"tags": {"$contains": ["b", "c"]}}`} {
		var w map[string]any
		if err := json.Unmarshal([]byte(where), &w); err != nil {
			t.Fatal(err)
		}
		c, err := Compile(w)
		if err != nil {
			t.Fatal(err)
		}
		if c.Pred(rec) {
			t.Errorf("%s matches a damaged record", where)
		}
	}
}

// FuzzCompile: any JSON object compiles to a filter or to an ErrInvalid error, never a
// panic, and a compiled filter evaluates on any record.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{`{"a": 1}`, `{"$or": [{"a": {"$in": [1, "x"]}}, {"b": {"$gte": "m"}}]}`,
		`{"$contains": "x"}`, `{"$and": [{"$not_contains": ""}]}`, `{"a": {"$ne": null}}`,
		`{"a": {"$contains": ["x", 1]}}`, `{"$regex": "x+y?"}`, `{"$not_regex": "[^a]"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var w map[string]any
		if json.Unmarshal([]byte(s), &w) != nil {
			return
		}
		if c, err := Compile(w); err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Compile(%s): untyped error %v", s, err)
			}
		} else {
			matches(c.Pred)
		}
		if p, err := CompileDocument(w); err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("CompileDocument(%s): untyped error %v", s, err)
			}
		} else {
			matches(p)
		}
	})
}
