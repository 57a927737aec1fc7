package bm25

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifySegments checks that every segment of a fresh index passes its CRC, that a
// recorded segment is not read again, and that one flipped byte anywhere is ErrCorrupt.
func TestVerifySegments(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ix")
	ix, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for b := range 3 {
		var docs []Doc
		for i := range 50 {
			docs = append(docs, Doc{ID: fmt.Sprintf("d%d-%d", b, i), Text: fmt.Sprintf("word%d common text %d", i, b), Meta: map[string]any{"n": float64(i)}})
		}
		if err := ix.Apply(docs, nil, uint64(b+1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	n, err := VerifySegments(dir)
	if err != nil || n == 0 {
		t.Fatalf("fresh index: checked %d segments, err %v", n, err)
	}
	if err := RecordSegments(dir); err != nil {
		t.Fatal(err)
	}
	if n, err := VerifySegments(dir); err != nil || n != 0 {
		t.Fatalf("recorded index: checked %d segments, err %v (want 0, nil)", n, err)
	}
	live, err := segmentFiles(dir)
	if err != nil || len(live) == 0 {
		t.Fatalf("segment files of the snapshot: %v, %v", live, err)
	}
	var files []string
	for name := range live {
		files = append(files, filepath.Join(dir, "store", name))
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{0, len(data) / 3, len(data) / 2, len(data) - 1} {
		bad := append([]byte(nil), data...)
		bad[at] ^= 0x10
		if err := os.WriteFile(files[0], bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := VerifySegments(dir); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("byte %d of %d flipped: %v, want ErrCorrupt", at, len(data), err)
		}
	}
	if err := os.WriteFile(files[0], data[:20], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifySegments(dir); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated segment: %v, want ErrCorrupt", err)
	}
	if err := os.WriteFile(files[0], data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifySegments(dir); err != nil {
		t.Fatalf("restored segment: %v", err)
	}
}

// TestVerifySegmentsIgnoresOrphans leaves segment files that no snapshot names (empty, and
// partly written, as a kill during a segment write leaves them) in an index: they are not
// read nor recorded, and the index opens read-only with them; a snapshot's segment that
// is missing is ErrCorrupt.
func TestVerifySegmentsIgnoresOrphans(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ix")
	ix, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Apply([]Doc{{ID: "a", Text: "alpha beta"}, {ID: "b", Text: "beta gamma"}}, nil, 1); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	orphans := []string{"000000000abc.zap", "000000000abd.zap"}
	if err := os.WriteFile(filepath.Join(dir, "store", orphans[0]), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "store", orphans[1]), []byte("a segment cut short by a kill"), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := VerifySegments(dir)
	if err != nil || n == 0 {
		t.Fatalf("index with orphan segments: checked %d, err %v", n, err)
	}
	if err := RecordSegments(dir); err != nil {
		t.Fatal(err)
	}
	for _, o := range orphans {
		if _, ok := readVerified(dir)[o]; ok {
			t.Fatalf("orphan %s recorded as checked", o)
		}
	}
	ro, err := OpenWith(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := ro.Count(); err != nil || n != 2 {
		t.Fatalf("read-only count %d, %v", n, err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	live, err := segmentFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	for name := range live {
		if !strings.HasSuffix(name, ".zap") {
			continue
		}
		if err := os.Remove(filepath.Join(dir, "store", name)); err != nil {
			t.Fatal(err)
		}
		break
	}
	if _, err := VerifySegments(dir); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a snapshot's segment removed: %v, want ErrCorrupt", err)
	}
}
