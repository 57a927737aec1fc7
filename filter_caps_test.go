package memory

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/docfilter"
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
	if n := countOf(t, m.Collection("")); n != len(corpus) {
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
