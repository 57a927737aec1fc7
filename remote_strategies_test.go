package memory

import "testing"

// A store that reads through its writer runs cascades and source de-duplication as the
// writer does (they were dropped on the way: a cascade searched only the collection it was
// called on, and every result of a source came back).
func TestRemoteCascadeAndSourceDedup(t *testing.T) {
	w, r := remotePair(t, t.TempDir())
	if err := w.Collection("other").Add(bg, Document{ID: "o3", Text: "otters otters otters sleep", Source: "a.md"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		name string
		col  string
		opts []SearchOption
	}{
		{"source dedup", "other", []SearchOption{WithMode(BM25), WithSourceDedup()}},
		{"cascade", "", []SearchOption{WithMode(BM25), WithCascade(100, "default", "other")}},
		{"cascade stops", "", []SearchOption{WithMode(BM25), WithCascade(0, "other", "default")}},
		{"cascade with dedup", "", []SearchOption{WithMode(BM25), WithCascade(100, "default", "other"), WithSourceDedup()}},
	} {
		want, werr := w.Collection(s.col).Search(bg, "otters", s.opts...)
		got, gerr := r.Collection(s.col).Search(bg, "otters", s.opts...)
		if werr != nil || gerr != nil || len(want) == 0 || jsonOf(got) != jsonOf(want) {
			t.Errorf("%s: reader %s (%v)\nwriter %s (%v)", s.name, jsonOf(got), gerr, jsonOf(want), werr)
		}
	}
	if _, err := r.Search(bg, "otters", WithCascade(100, "default", "nope")); err == nil {
		t.Error("a cascade through the writer of a missing collection: no error")
	}
}
