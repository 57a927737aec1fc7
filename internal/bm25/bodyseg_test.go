package bm25

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	zap "github.com/blevesearch/zapx/v16"

	"github.com/agentmem/memory/internal/atomicfile"
)

// bodyFiles lists the body postings files in the index's segment directory.
func bodyFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "store", "*.zap"+bodyExt))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestBodyFiles: every segment of an index has a body postings file and its zap file no
// body field; searches answer the same before and after the segments merge into one, and
// from a read-only open; Bleve's own scoring reads the body files too (the same ids as the
// default path); body files of merged-away segments are removed, as are leftovers a killed
// process leaves (a temporary file, a body file without its zap file).
func TestBodyFiles(t *testing.T) {
	testMergePlan = map[string]any{"maxSegmentsPerTier": 1000, "segmentsPerMergeTask": 10, "floorSegmentSize": 1, "floorSegmentFileSize": 1}
	defer func() { testMergePlan = nil }()
	dir := filepath.Join(t.TempDir(), "bm25")
	rng := rand.New(rand.NewPCG(11, 12))
	var b *Index
	for batch := range 4 {
		var err error
		if b, err = Open(dir); err != nil {
			t.Fatal(err)
		}
		var docs []Doc
		for i := range 200 {
			docs = append(docs, randomDoc(rng, fmt.Sprintf("d%d-%03d", batch, i)))
		}
		docs = append(docs, Doc{ID: fmt.Sprintf("empty%d", batch)})
		if err := b.Apply(docs, nil, uint64(batch+1)); err != nil {
			t.Fatal(err)
		}
		if batch < 3 {
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Apply(nil, []string{"d1-007", "d2-100"}, 5); err != nil {
		t.Fatal(err)
	}
	queries := []string{"insulin", "cell protein", "the effect of insulin on cell growth", "gene expression tumour", "zzzunknown"}
	before := searchAll(t, b, queries)
	if n, _ := b.SegmentCount(); n < 4 {
		t.Fatalf("%d segments, want 4", n)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	live, err := segmentFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	zaps := 0
	for name := range live {
		if !strings.HasSuffix(name, ".zap") {
			continue
		}
		zaps++
		if _, ok := live[name+bodyExt]; !ok {
			t.Fatalf("segment %s has no body file", name)
		}
		seg, err := (&zap.ZapPlugin{}).Open(filepath.Join(dir, "store", name))
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(seg.Fields(), bodyField) {
			t.Fatalf("segment %s keeps the body in zap: fields %v", name, seg.Fields())
		}
		_ = seg.Close()
	}
	if zaps < 4 || len(bodyFiles(t, dir)) != zaps {
		t.Fatalf("%d segments, %d body files", zaps, len(bodyFiles(t, dir)))
	}

	// Leftovers of a killed process: removed by a writable open.
	store := filepath.Join(dir, "store")
	orphan := filepath.Join(store, "0000000000ff.zap"+bodyExt)
	temp := filepath.Join(store, atomicfile.TempPrefix("0000000000fe.zap"+bodyExt)+"123")
	for _, f := range []string{orphan, temp} {
		if err := os.WriteFile(f, []byte("left by a kill"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if b, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{orphan, temp} {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s not removed: %v", filepath.Base(f), err)
		}
	}
	if got := searchAll(t, b, queries); !slices.Equal(got, before) {
		t.Fatalf("reopened: %v, want %v", got, before)
	}
	// Bleve's own execution reads the body files through Bleve's segment interfaces.
	b.SetBleveScoring(true)
	for _, q := range queries[:4] {
		hits, err := b.Search(context.Background(), q, 1000, nil)
		if err != nil || len(hits) == 0 {
			t.Fatalf("Bleve scoring %q: %d hits, %v", q, len(hits), err)
		}
	}
	b.SetBleveScoring(false)
	if err := b.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, _ := b.SegmentCount(); n != 1 {
		t.Fatalf("%d segments after Compact", n)
	}
	if got := searchAll(t, b, queries); !slices.Equal(got, before) {
		t.Fatalf("compacted: %v, want %v", got, before)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// The merged-away segments' body files go with their zap files (by the next writable
	// open at the latest).
	if b, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if live, err = segmentFiles(dir); err != nil {
		t.Fatal(err)
	}
	if got := len(bodyFiles(t, dir)); got != 1 || len(live) != 2 {
		t.Fatalf("after compaction: %d body files, snapshot files %v", got, live)
	}
	ro, err := OpenWith(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := searchAll(t, ro, queries); !slices.Equal(got, before) {
		t.Fatalf("read-only: %v, want %v", got, before)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}

	// Damage: a flipped byte of the body file is found by VerifySegments; a truncated or
	// missing body file fails the open (ErrBM25: the caller rebuilds the index).
	body := bodyFiles(t, dir)[0]
	data, err := os.ReadFile(body)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{0, len(data) / 4, len(data) / 2, len(data) - 90, len(data) - 1} {
		bad := slices.Clone(data)
		bad[at] ^= 0x04
		if err := os.WriteFile(body, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := VerifySegments(dir); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("byte %d of %d flipped: %v, want ErrCorrupt", at, len(data), err)
		}
	}
	if err := os.WriteFile(body, data[:len(data)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifySegments(dir); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated body file: %v, want ErrCorrupt", err)
	}
	if _, err := OpenWith(dir, Options{ReadOnly: true}); !errors.Is(err, ErrBM25) {
		t.Fatalf("truncated body file: open %v, want ErrBM25", err)
	}
	if err := os.Remove(body); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenWith(dir, Options{ReadOnly: true}); !errors.Is(err, ErrBM25) {
		t.Fatalf("body file removed: open %v, want ErrBM25", err)
	}
}
