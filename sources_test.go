package memory

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/store"
)

// TestSourcesOlderStore: a collection stored before the sources index was kept lists its
// sources from the records when opened read-only, and builds the index once on a writable
// open (one log line), which later writes keep.
func TestSourcesOlderStore(t *testing.T) {
	dir := t.TempDir()
	m := openT(t, dir)
	must(t, m.Add(bg,
		Document{ID: "a1", Text: "one", Source: "dir/a.md"},
		Document{ID: "b1", Text: "two", Source: "dir/b.md"},
		Document{ID: "c1", Text: "three"}))
	must(t, m.db.DropSources(DefaultCollection)) // as an older version left it
	must(t, m.Close())

	want := []string{"dir/a.md", "dir/b.md"}
	ro := openT(t, dir, ReadOnly())
	if got, err := ro.Collection("").Sources(bg); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("read-only, from the records: %q, %v", got, err)
	}
	if _, ans, _ := ro.db.Sources(DefaultCollection); ans != store.SourcesNotKept {
		t.Fatal("a read-only open built the index")
	}
	must(t, ro.Close())

	var logs countLog
	w := openT(t, dir, WithLogger(logs.logger()))
	for range 2 {
		if got, err := w.Collection("").Sources(bg); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("writable: %q, %v", got, err)
		}
	}
	if n := strings.Count(logs.String(), "indexing the sources"); n != 1 {
		t.Fatalf("built %d times, want once:\n%s", n, logs.String())
	}
	must(t, w.Upsert(bg, Document{ID: "b1", Text: "two", Source: "dir/c.md"}))
	if _, ans, err := w.db.Sources(DefaultCollection); ans != store.SourcesListed || err != nil {
		t.Fatalf("the built index is not kept: %v %v", ans, err)
	}
	if got, err := w.Collection("").Sources(bg); err != nil || !reflect.DeepEqual(got, []string{"dir/a.md", "dir/c.md"}) {
		t.Fatalf("after an upsert that moves b1: %q, %v", got, err)
	}
}

// TestCheckSourcesIndex: Check finds a sources index that disagrees with the records (here
// made by a write that names the wrong earlier source: it adds up, so listings trust it)
// and builds it again.
func TestCheckSourcesIndex(t *testing.T) {
	m := openT(t, t.TempDir())
	must(t, m.Add(bg,
		Document{ID: "a1", Text: "one", Source: "dir/a.md"},
		Document{ID: "b1", Text: "two", Source: "dir/b.md"}))
	r := &store.Record{Text: "one", Metadata: map[string]any{sourceKey: "dir/a.md"}}
	if _, err := m.db.Write(DefaultCollection, []store.Put{{ID: "a1", Record: r, Units: []string{"a1"}, Replaces: true, OldSource: "dir/b.md"}}, 0, 0); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Collection("").Sources(bg); !reflect.DeepEqual(got, []string{"dir/a.md"}) {
		t.Fatalf("the wrong index should answer (it adds up): %q", got)
	}
	rep, err := m.Check(bg, false)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ix := range rep.Indexes {
		for _, p := range ix.Problems {
			if strings.Contains(p, "sources index") {
				found = found || ix.Repaired
			}
		}
	}
	if !found {
		t.Fatalf("check did not find and mend the sources index: %+v", rep)
	}
	if got, err := m.Collection("").Sources(bg); err != nil || !reflect.DeepEqual(got, []string{"dir/a.md", "dir/b.md"}) {
		t.Fatalf("after check: %q, %v", got, err)
	}
}

// TestSourcesLongSource: a source too long for the index to key is listed from the records,
// and a writable store does not rebuild the index for it at each listing.
func TestSourcesLongSource(t *testing.T) {
	var logs countLog
	m := openT(t, t.TempDir(), WithLogger(logs.logger()))
	long := "dir/" + strings.Repeat("x", 5000)
	must(t, m.Add(bg, Document{ID: "a", Text: "one", Source: long}, Document{ID: "b", Text: "two", Source: "dir/b.md"}))
	for range 2 {
		if got, err := m.Collection("").Sources(bg); err != nil || !reflect.DeepEqual(got, []string{"dir/b.md", long}) {
			t.Fatalf("sources: %d of them, %v", len(got), err)
		}
	}
	if strings.Contains(logs.String(), "indexing the sources") {
		t.Fatalf("rebuilt for a long source:\n%s", logs.String())
	}
}
