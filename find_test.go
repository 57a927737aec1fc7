package memory

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func findIDs(docs []Document) []string {
	out := []string{}
	for _, d := range docs {
		out = append(out, d.ID)
	}
	return out
}

// findCollection returns collection "kb" of a new in-memory store, closed when t ends.
func findCollection(t *testing.T) *Collection {
	t.Helper()
	m, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m.Collection("kb")
}

// TestCollectionFind: ids (in their order), metadata and text filters, offset, limit and
// keyset pages (After) select the documents a get-by-filter returns.
func TestCollectionFind(t *testing.T) {
	ctx := context.Background()
	c := findCollection(t)
	for i := range 10 {
		kind := "odd"
		if i%2 == 0 {
			kind = "even"
		}
		if err := c.Add(ctx, Document{ID: fmt.Sprintf("d%d", i), Title: "doc", Text: fmt.Sprintf("number %d is %s", i, kind), Metadata: map[string]any{"kind": kind, "n": i}}); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		o    FindOptions
		want []string
	}{
		{"all", FindOptions{}, []string{"d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9"}},
		{"ids in their order, unknown and repeated skipped", FindOptions{IDs: []string{"d7", "zz", "d2", "d7"}}, []string{"d7", "d2"}},
		{"empty ids", FindOptions{IDs: []string{}}, []string{}},
		{"where", FindOptions{Where: Where{"kind": "even"}}, []string{"d0", "d2", "d4", "d6", "d8"}},
		{"where and where_document", FindOptions{Where: Where{"n": map[string]any{"$gte": 5}}, WhereDocument: WhereDocument{"$contains": "odd"}}, []string{"d5", "d7", "d9"}},
		{"where_document $not_contains", FindOptions{WhereDocument: WhereDocument{"$not_contains": "number"}}, []string{}},
		{"ids and where", FindOptions{IDs: []string{"d1", "d2", "d3"}, Where: Where{"kind": "odd"}}, []string{"d1", "d3"}},
		{"offset and limit", FindOptions{Where: Where{"kind": "odd"}, Offset: 1, Limit: 2}, []string{"d3", "d5"}},
		{"after", FindOptions{After: "d6", Limit: 2}, []string{"d7", "d8"}},
		{"after an id not stored", FindOptions{After: "d55"}, []string{"d6", "d7", "d8", "d9"}},
		{"where after an id", FindOptions{Where: Where{"kind": "odd"}, After: "d3"}, []string{"d5", "d7", "d9"}},
		{"where after an id not stored, limit", FindOptions{Where: Where{"kind": "even"}, After: "d55", Limit: 1}, []string{"d6"}},
		{"where after the last", FindOptions{Where: Where{"kind": "even"}, After: "d9"}, []string{}},
		{"where matching nothing", FindOptions{Where: Where{"kind": "none"}}, []string{}},
	}
	// A Where on metadata is answered from the keyword index's list of the documents it
	// selects, or (filterScan) by reading every record: both the same.
	defer filterScan.Store(false)
	for _, scan := range []bool{false, true} {
		filterScan.Store(scan)
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/scan=%v", tc.name, scan), func(t *testing.T) {
				docs, err := c.Find(ctx, tc.o)
				if err != nil {
					t.Fatal(err)
				}
				if got := findIDs(docs); !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			})
		}
	}
	docs, err := c.Find(ctx, FindOptions{IDs: []string{"d3"}})
	if err != nil || docs[0].Text != "number 3 is odd" || docs[0].Title != "doc" || docs[0].Metadata["n"] != 3.0 {
		t.Fatalf("document: %+v %v", docs, err)
	}
	for _, bad := range []FindOptions{{Limit: -1}, {Offset: -1}, {Where: Where{"$bad": 1}}, {WhereDocument: WhereDocument{"$contains": 3}}, {IDs: make([]string, maxFindIDs+1)}} {
		if _, err := c.Find(ctx, bad); !errors.Is(err, ErrInvalidOption) && !errors.Is(err, ErrInvalidFilter) {
			t.Errorf("%+v: err %v", bad.Where, err)
		}
	}
	if _, err := c.m.Collection("nope").Find(ctx, FindOptions{}); !errors.Is(err, ErrCollectionNotFound) {
		t.Errorf("missing collection: %v", err)
	}
}

// TestFindPagesWhere: keyset pages of a Find with a Where on metadata, over chunked
// documents and ids that sort around the chunks' separator, put together give the whole
// match list, from the index and from a scan; and a page looks at its own units only (a
// Find paged through a million matches once read every match for every page: quadratic).
func TestFindPagesWhere(t *testing.T) {
	ctx := context.Background()
	c := findCollection(t)
	long := strings.Repeat("a long passage of prose that the chunker splits in parts. ", 60)
	var want []string
	var docs []Document
	for i := range 300 {
		for _, suffix := range []string{"", "!", "-x", "/y", "z"} {
			id := fmt.Sprintf("d%03d%s", i, suffix)
			text := fmt.Sprintf("number %d", i)
			if i%7 == 0 {
				text = long + text // chunked: several index units
			}
			src := "a.txt"
			if suffix == "z" {
				src = "b.txt"
			} else {
				want = append(want, id)
			}
			docs = append(docs, Document{ID: id, Text: text, Source: src})
		}
	}
	if err := c.Add(ctx, docs...); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	defer filterScan.Store(false)
	for _, scan := range []bool{false, true} {
		filterScan.Store(scan)
		for _, limit := range []int{1, 7, 100} {
			var got []string
			before := unitsVisited.Load()
			o := FindOptions{Where: Where{"source": "a.txt"}, Limit: limit}
			pages := 0
			for {
				page, err := c.Find(ctx, o)
				if err != nil {
					t.Fatal(err)
				}
				pages++
				got = append(got, findIDs(page)...)
				if len(page) < limit {
					break
				}
				o.After = page[len(page)-1].ID
			}
			if !slices.Equal(got, want) {
				t.Fatalf("scan=%v limit %d: %d ids, want %d (first %v)", scan, limit, len(got), len(want), got[:min(len(got), 5)])
			}
			// Each page looks at the units of its own documents (a chunked document's
			// several) and at most one document past them: not every match's.
			units := unitsVisited.Load() - before
			if !scan && units > int64(3*len(want)+2*pages) {
				t.Errorf("limit %d: %d pages looked at %d units for %d matches", limit, pages, units, len(want))
			}
		}
	}
}
