package vectorstore

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// damageKeepMTime xors mask into byte off of the file at path, in place, and puts its
// modification time back: what bit rot, or a tool that keeps times, leaves.
func damageKeepMTime(t *testing.T, path string, off int64, mask byte) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= mask
	if _, err := f.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// TestDiskDamagedRowKeepMTime is issue #39's case: one flipped byte of a committed float32
// row, the file's modification time kept. The index used to reopen without a check of the
// row and answer [{a +Inf} {b 0} {c 0}]; every search that reads the row now fails with
// ErrCorrupt, and none returns a score that is not finite.
func TestDiskDamagedRowKeepMTime(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := IndexConfig{Dim: 4, Dir: dir}
	x := openDisk(t, cfg)
	if err := x.Add(ctx, []string{"a", "b", "c"}, [][]float32{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}}); err != nil {
		t.Fatal(err)
	}
	if err := x.Commit(1); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	// a's first value, 1.0 = 0x3f800000, becomes 0x7f800000 (+Inf).
	damageKeepMTime(t, filepath.Join(dir, "seg-000000.f32"), 3, 0x40)
	y, err := NewDiskIndex(cfg)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("open: %v, want ErrCorrupt", err)
		}
		return
	}
	defer y.Close()
	q := []float32{1, 0, 0, 0}
	check := func(what string, hits []Hit, err error) {
		t.Helper()
		for _, h := range hits {
			if math.IsInf(h.Score, 0) || math.IsNaN(h.Score) {
				t.Errorf("%s: %v: a score that is not finite", what, hits)
			}
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, %v; want ErrCorrupt", what, hits, err)
		}
	}
	hits, err := y.Search(ctx, q, 3, nil)
	check("Search", hits, err)
	hits, err = y.Search(ctx, q, 3, func(id string) bool { return id != "c" })
	check("filtered Search", hits, err)
	hits, err = y.SearchWith(ctx, q, 3, nil, DiskSearchOptions{Mode: DiskBinary})
	check("binary codes, rescored", hits, err)
	hits, err = y.SearchAllowed(ctx, q, 3, []string{"a", "b"})
	check("SearchAllowed", hits, err)
	batch, err := y.SearchBatch(ctx, [][]float32{q, {0, 1, 0, 0}}, 3, nil)
	var flat []Hit
	for _, b := range batch {
		flat = append(flat, b...)
	}
	check("SearchBatch", flat, err)
	if v, ok := y.Vector("a"); ok {
		t.Errorf("Vector(a) = %v from a damaged row", v)
	}
}
