package bm25

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestStraySegmentNames: files in the segment directory that Bleve cannot number (a 0-byte
// "zzz.zap", a "junk.zap" with bytes in it, ".zap", an id of 17 digits) and that no
// snapshot names do not fail an open (issue 39, item 7): a read-only open answers from the
// index as it is (twice: it changes nothing, and leaves no temporary directory), a damaged
// segment that the snapshot names is still ErrCorrupt beside them, and a writable open
// removes them and goes on writing new segments beside the live ones.
func TestStraySegmentNames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ix")
	tmp := t.TempDir() // where a read-only open may keep its links
	t.Setenv("TMPDIR", tmp)
	ix, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	apply := func(ix *Index, batch int) {
		t.Helper()
		var docs []Doc
		for i := range 20 {
			docs = append(docs, Doc{ID: fmt.Sprintf("d%d-%d", batch, i), Text: fmt.Sprintf("word%d batch%d common", i, batch)})
		}
		if err := ix.Apply(docs, nil, uint64(batch+1)); err != nil {
			t.Fatal(err)
		}
		n += len(docs)
	}
	for b := range 3 {
		apply(ix, b)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	segDir := filepath.Join(dir, "store")
	strays := map[string][]byte{"zzz.zap": nil, "junk.zap": []byte("not a segment"), ".zap": nil, "10000000000000000.zap": nil}
	for name, data := range strays {
		if err := os.WriteFile(filepath.Join(segDir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	search := func(ix *Index, q string) []string {
		t.Helper()
		hits, err := ix.Search(context.Background(), q, 100, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range hits {
			out = append(out, h.ID)
		}
		slices.Sort(out)
		return out
	}
	for round := range 2 {
		ro, err := OpenWith(dir, Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("round %d: read-only open beside stray files: %v", round, err)
		}
		if c, err := ro.Count(); err != nil || int(c) != n {
			t.Fatalf("round %d: read-only count %d, %v, want %d", round, c, err, n)
		}
		if got := search(ro, "batch1"); len(got) != 20 || got[0] != "d1-0" {
			t.Fatalf("round %d: read-only search: %v", round, got)
		}
		if err := ro.Close(); err != nil {
			t.Fatal(err)
		}
		if left, err := os.ReadDir(tmp); err != nil || len(left) != 0 {
			t.Fatalf("round %d: the read-only index left %v in the temporary directory (%v)", round, left, err)
		}
		for name := range strays {
			if _, err := os.Stat(filepath.Join(segDir, name)); err != nil {
				t.Fatalf("round %d: a read-only open changed the directory: %v", round, err)
			}
		}
	}

	// A damaged segment that the snapshot names is still found, strays or not.
	live, err := segmentFiles(dir)
	if err != nil || len(live) == 0 {
		t.Fatalf("segments of the snapshot: %v, %v", live, err)
	}
	var named string
	for name := range live {
		named = filepath.Join(segDir, name)
		break
	}
	data, err := os.ReadFile(named)
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), data...)
	bad[len(bad)/2] ^= 0x10
	if err := os.WriteFile(named, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifySegments(dir); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a named segment damaged beside strays: %v, want ErrCorrupt", err)
	}
	if err := os.WriteFile(named, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifySegments(dir); err != nil {
		t.Fatalf("restored: %v", err)
	}

	// A writer removes the strays, and its new segments take new names.
	ix, err = Open(dir)
	if err != nil {
		t.Fatalf("writable open beside stray files: %v", err)
	}
	for name := range strays {
		if _, err := os.Stat(filepath.Join(segDir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the writable open left %s: %v", name, err)
		}
	}
	for b := 3; b < 8; b++ {
		apply(ix, b)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenWith(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if c, err := ro.Count(); err != nil || int(c) != n {
		t.Fatalf("count after the writer: %d, %v, want %d", c, err, n)
	}
	for b := range 8 {
		if got := search(ro, fmt.Sprintf("batch%d", b)); len(got) != 20 {
			t.Fatalf("batch %d: %d hits after the writer", b, len(got))
		}
	}
	if _, err := VerifySegments(dir); err != nil {
		t.Fatalf("segments after the writer: %v", err)
	}
}
