package memory

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/memtest"
	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/vectorstore"
)

// srcDoc is document id of source src, at version v (its text names both).
func srcDoc(src, id string, v int) Document {
	return Document{ID: id, Source: src, Title: id, Text: fmt.Sprintf("%s version%d of %s", id, v, src)}
}

// contents is id -> text of every document of the default collection.
func contents(t *testing.T, m *Memory) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, id := range memtest.IDs(t, m.Collection("")) {
		d, err := m.Get(bg, id)
		must(t, err)
		out[id] = d.Text
	}
	return out
}

// seed stores sources a (a1..a3), b (b1, b2) and a document without a source.
func seed(t *testing.T, m *Memory) {
	t.Helper()
	must(t, m.Add(bg, srcDoc("a", "a1", 0), srcDoc("a", "a2", 0), srcDoc("a", "a3", 0),
		srcDoc("b", "b1", 0), srcDoc("b", "b2", 0), Document{ID: "loose", Title: "loose", Text: "no source version0"}))
}

func TestReplace(t *testing.T) {
	for _, tc := range []struct {
		name        string
		where       Where
		docs        []Document
		wantRemoved int
		want        map[string]int // id -> version (0: untouched)
	}{
		{"in place and stale", Where{"source": "a"}, []Document{srcDoc("a", "a1", 1), srcDoc("a", "a4", 1)}, 2,
			map[string]int{"a1": 1, "a4": 1, "b1": 0, "b2": 0, "loose": 0}},
		{"several sources", Where{"source": map[string]any{"$in": []any{"a", "b"}}}, []Document{srcDoc("b", "b2", 1)}, 4,
			map[string]int{"b2": 1, "loose": 0}},
		{"no documents: a delete", Where{"source": "b"}, nil, 2,
			map[string]int{"a1": 0, "a2": 0, "a3": 0, "loose": 0}},
		{"a document outside the filter is upserted", Where{"source": "b"}, []Document{srcDoc("c", "c1", 1), srcDoc("b", "b1", 1)}, 1,
			map[string]int{"a1": 0, "a2": 0, "a3": 0, "b1": 1, "c1": 1, "loose": 0}},
		{"a document moves between sources", Where{"source": "a"}, []Document{srcDoc("a", "b1", 1)}, 3,
			map[string]int{"b1": 1, "b2": 0, "loose": 0}},
		{"nothing matches", Where{"source": "zzz"}, []Document{srcDoc("zzz", "z", 1)}, 0,
			map[string]int{"a1": 0, "a2": 0, "a3": 0, "b1": 0, "b2": 0, "loose": 0, "z": 1}},
		{"other metadata", Where{"$and": []any{map[string]any{"source": "a"}, map[string]any{"source": map[string]any{"$ne": "b"}}}},
			[]Document{srcDoc("a", "a2", 1)}, 2, map[string]int{"a2": 1, "b1": 0, "b2": 0, "loose": 0}},
	} {
		for _, scan := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/scan=%v", tc.name, scan), func(t *testing.T) {
				filterScan.Store(scan) // the filter runs in the BM25 index, or scans the records
				defer filterScan.Store(false)
				m := openT(t, "")
				seed(t, m)
				before := contents(t, m)
				n, err := m.Replace(bg, tc.where, tc.docs...)
				if err != nil {
					t.Fatal(err)
				}
				if n != tc.wantRemoved {
					t.Errorf("removed %d, want %d", n, tc.wantRemoved)
				}
				got := contents(t, m)
				if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(tc.want))) {
					t.Fatalf("ids %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(tc.want)))
				}
				for id, v := range tc.want {
					if v == 0 && got[id] != before[id] {
						t.Errorf("%s changed: %q", id, got[id])
					}
					if v == 1 && !strings.Contains(got[id], "version1") {
						t.Errorf("%s not replaced: %q", id, got[id])
					}
				}
				if memtest.Count(t, m) != len(tc.want) {
					t.Errorf("count %d, want %d", memtest.Count(t, m), len(tc.want))
				}
				// The BM25 index followed: no removed document is found, every kept one is.
				for id := range before {
					res := searchT(t, m, id, WithMode(BM25), TopK(10))
					found := slices.ContainsFunc(res, func(r Result) bool { return r.ID == id })
					if _, kept := tc.want[id]; found != kept {
						t.Errorf("search %q: found %v, kept %v", id, found, kept)
					}
				}
			})
		}
	}
}

// TestReplaceChunked replaces a long chunked document with a short one and a short one with
// a long one: no chunk of an earlier version stays in the store or the indexes.
func TestReplaceChunked(t *testing.T) {
	dir := t.TempDir()
	opts := []Option{WithEmbedder(vectorstore.NewHashEmbedder(16)), WithChunking(ChunkOptions{Budget: 200})}
	m := openT(t, dir, opts...)
	long := func(word string, n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "Paragraph %d speaks of %s%d at some length to fill a chunk.\n\n", i, word, i)
		}
		return b.String()
	}
	must(t, m.Add(bg, Document{ID: "big", Source: "s", Text: long("walrus", 20)}, Document{ID: "small", Source: "s", Text: "tiny puffin"}))
	units := m.Collection("").unitsT(t)
	if units < 5 {
		t.Fatalf("the long document has too few chunks (%d) to prove anything", units)
	}
	n, err := m.ReplaceSource(bg, "s", Document{ID: "big", Text: "now short: seal"}, Document{ID: "small", Text: long("gannet", 12)})
	if err != nil || n != 0 {
		t.Fatalf("ReplaceSource: %d %v", n, err)
	}
	if res := searchT(t, m, "walrus7", WithMode(BM25)); len(res) != 0 {
		t.Fatalf("a chunk of the old long version is still found: %v", res)
	}
	if res := searchT(t, m, "gannet9", WithMode(BM25)); len(res) != 1 || res[0].ID != "small" {
		t.Fatalf("the new long version is not found: %v", res)
	}
	rep, err := m.Check(bg, false)
	if err != nil || !rep.OK() {
		t.Fatalf("check after replacing chunked documents: %+v %v", rep, err)
	}
	must(t, m.Close())
	m2 := openT(t, dir, opts...)
	rep, err = m2.Check(bg, false)
	if err != nil || !rep.OK() {
		t.Fatalf("check after reopening: %+v %v", rep, err)
	}
}

// unitsT is the collection's count of index ids (chunks).
func (c *Collection) unitsT(t *testing.T) int {
	t.Helper()
	s, err := c.state(false)
	if err != nil || s == nil {
		t.Fatalf("state: %v", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.Units
}

// TestReplaceAtomicUnderFault fails a replacement inside its transaction, after its
// deletes and before its puts (as a crash or a full disk would): nothing of it is visible,
// in the store of record, the counts or the indexes, before or after reopening.
func TestReplaceAtomicUnderFault(t *testing.T) {
	dir := t.TempDir()
	m := openT(t, dir)
	seed(t, m)
	before := contents(t, m)
	boom := errors.New("injected fault")
	store.SetReplaceFault(func() error { return boom })
	_, err := m.ReplaceSource(bg, "a", srcDoc("a", "a1", 1))
	store.SetReplaceFault(nil)
	if !errors.Is(err, boom) {
		t.Fatalf("Replace under a fault: %v", err)
	}
	check := func(m *Memory) {
		t.Helper()
		if got := contents(t, m); !maps.Equal(got, before) {
			t.Fatalf("a failed replacement changed the store:\n got %v\nwant %v", got, before)
		}
		if memtest.Count(t, m) != len(before) {
			t.Fatalf("count %d, want %d", memtest.Count(t, m), len(before))
		}
		for _, id := range []string{"a2", "a3"} {
			if res := searchT(t, m, id, WithMode(BM25)); len(res) != 1 {
				t.Fatalf("%s not found after a failed replacement: %v", id, res)
			}
		}
		rep, err := m.Check(bg, false)
		if err != nil || !rep.OK() {
			t.Fatalf("check: %+v %v", rep, err)
		}
	}
	check(m)
	must(t, m.Close())
	check(openT(t, dir))
}

func TestReplaceErrors(t *testing.T) {
	m := openT(t, "")
	seed(t, m)
	before := contents(t, m)
	for _, tc := range []struct {
		name string
		run  func() error
		want error
	}{
		{"empty filter", func() error { _, err := m.Replace(bg, nil, srcDoc("a", "a1", 1)); return err }, ErrInvalidFilter},
		{"bad filter", func() error { _, err := m.Replace(bg, Where{"source": map[string]any{"$regex": "a"}}); return err }, ErrInvalidFilter},
		{"empty id", func() error { _, err := m.ReplaceSource(bg, "a", Document{Text: "x"}); return err }, ErrEmptyID},
		{"no text", func() error { _, err := m.ReplaceSource(bg, "a", Document{ID: "a1"}); return err }, ErrEmptyText},
		{"an id twice", func() error {
			_, err := m.ReplaceSource(bg, "a", srcDoc("a", "a1", 1), srcDoc("a", "a1", 2))
			return err
		}, ErrDuplicateID},
		{"bad metadata", func() error {
			_, err := m.ReplaceSource(bg, "a", Document{ID: "a1", Text: "x", Metadata: map[string]any{"k": map[string]any{"x": 1}}})
			return err
		}, ErrInvalidMetadata},
		{"another source", func() error { _, err := m.ReplaceSource(bg, "a", srcDoc("b", "b1", 1)); return err }, ErrInvalidMetadata},
		{"empty source", func() error { _, err := m.ReplaceSource(bg, "", srcDoc("a", "a1", 1)); return err }, ErrInvalidFilter},
		{"missing collection", func() error {
			_, err := m.Collection("nope").Replace(bg, Where{"source": "a"})
			return err
		}, ErrCollectionNotFound},
		{"stream: empty filter", func() error { _, err := m.BeginReplace(Where{}); return err }, ErrInvalidFilter},
		{"stream: bad document", func() error {
			r, err := m.BeginReplace(Where{"source": "a"})
			if err != nil {
				return err
			}
			return r.Upsert(bg, srcDoc("a", "a1", 1), Document{ID: "x\x00", Text: "nul"})
		}, ErrInvalidOption},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.run(); !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if got := contents(t, m); !maps.Equal(got, before) {
				t.Fatalf("a refused replacement wrote: %v", got)
			}
		})
	}
	// A store opened read-only refuses both forms with ErrReadOnly.
	dir := t.TempDir()
	w := openT(t, dir)
	seed(t, w)
	must(t, w.Close())
	ro := openT(t, dir, ReadOnly())
	if _, err := ro.ReplaceSource(bg, "a", srcDoc("a", "a1", 1)); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only Replace: %v", err)
	}
	if _, err := ro.BeginReplace(Where{"source": "a"}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only BeginReplace: %v", err)
	}
	// A closed store: ErrClosed.
	c := openT(t, "")
	must(t, c.Close())
	if _, err := c.ReplaceSource(bg, "a", srcDoc("a", "a1", 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed Replace: %v", err)
	}
}

// TestReplacement streams a replacement in batches: until Commit every earlier document
// stays (those upserted again replaced in place), an abandoned one leaves the earlier
// documents plus the batches stored, and Commit removes the stale ones with its last batch.
func TestReplacement(t *testing.T) {
	dir := t.TempDir()
	m := openT(t, dir)
	var old []Document
	for i := range 30 {
		old = append(old, srcDoc("big", fmt.Sprintf("d%02d", i), 0))
	}
	must(t, m.Add(bg, old...))
	must(t, m.Add(bg, srcDoc("other", "o1", 0)))
	// The new version drops every third document and adds n30..n34.
	var next []Document
	for i := range 35 {
		if i%3 != 0 {
			next = append(next, srcDoc("big", fmt.Sprintf("d%02d", i), 1))
		}
	}

	// An abandoned replacement: two batches stored, no Commit.
	r, err := m.BeginReplace(Where{"source": "big"})
	must(t, err)
	must(t, r.Upsert(bg, next[:8]...))
	must(t, r.Upsert(bg, next[8:16]...))
	if r.Upserted() != 16 {
		t.Fatalf("Upserted %d", r.Upserted())
	}
	got := contents(t, m)
	for _, d := range old {
		if _, ok := got[d.ID]; !ok {
			t.Fatalf("%s lost before Commit", d.ID)
		}
	}
	for _, d := range next[:16] {
		if got[d.ID] != d.Text {
			t.Fatalf("%s: %q, want the acknowledged %q", d.ID, got[d.ID], d.Text)
		}
	}
	must(t, m.Close())
	m = openT(t, dir)
	if n := memtest.Count(t, m); n != 31+(len(next[:16])-countOld(next[:16])) {
		t.Fatalf("after abandoning: %d documents", n)
	}

	// A new replacement, committed with its last batch.
	r, err = m.BeginReplace(Where{"source": "big"})
	must(t, err)
	must(t, r.Upsert(bg, next[:20]...))
	n, err := r.Commit(bg, next[20:]...)
	must(t, err)
	if n != 10 { // d00, d03, ..., d27
		t.Fatalf("Commit removed %d, want 10", n)
	}
	got = contents(t, m)
	want := map[string]string{"o1": srcDoc("other", "o1", 0).Text}
	for _, d := range next {
		want[d.ID] = d.Text
	}
	if !maps.Equal(got, want) {
		t.Fatalf("after Commit:\n got %v\nwant %v", got, want)
	}
	if err := r.Upsert(bg, next[0]); !errors.Is(err, ErrReplacementDone) {
		t.Fatalf("Upsert after Commit: %v", err)
	}
	if _, err := r.Commit(bg); !errors.Is(err, ErrReplacementDone) {
		t.Fatalf("Commit after Commit: %v", err)
	}
	rep, err := m.Check(bg, false)
	if err != nil || !rep.OK() {
		t.Fatalf("check: %+v %v", rep, err)
	}
}

// countOld is how many of docs have ids of the first version (d00..d29).
func countOld(docs []Document) int {
	n := 0
	for _, d := range docs {
		var i int
		if _, err := fmt.Sscanf(d.ID, "d%d", &i); err == nil && i < 30 {
			n++
		}
	}
	return n
}
