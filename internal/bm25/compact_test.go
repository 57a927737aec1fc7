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
)

// TestCompact: an index written in many Applies (a segment each) compacts to one segment,
// in one merge pass though they are more than a merge task's default ten (each pass rewrites
// every posting), that answers every query with the same hits and scores, exhaustive and
// pruned alike; the body files of the segments merged away are gone; a read-only open of the result answers the same; Compact on a read-only index changes
// nothing, and a cancelled context stops it with the context's error.
func TestCompact(t *testing.T) {
	withChunkMode(t, 16)
	// No background merges while the batches go in: the segments to compact stay apart.
	testMergePlan = map[string]any{"maxSegmentsPerTier": 1000, "segmentsPerMergeTask": 10, "floorSegmentSize": 1, "floorSegmentFileSize": 1}
	defer func() { testMergePlan = nil }()
	dir := filepath.Join(t.TempDir(), "bm25")
	o := Options{Analyzer: LuceneEnglishAnalyzer, Scoring: ScoringLucene}
	rng := rand.New(rand.NewPCG(7, 7))
	var b *Index
	const batches = 12           // more than SingleSegmentMergePlanOptions' ten segments a task
	for batch := range batches { // a session a batch: one segment each
		var err error
		if b, err = OpenWith(dir, o); err != nil {
			t.Fatal(err)
		}
		var docs []Doc
		for i := range 150 {
			docs = append(docs, randomDoc(rng, fmt.Sprintf("d%02d-%03d", batch, i)))
		}
		if err := b.Apply(docs, nil, uint64(batch+1)); err != nil {
			t.Fatal(err)
		}
		if batch < batches-1 {
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Apply(nil, []string{"d03-001", "d07-100"}, 13); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if n, _ := b.SegmentCount(); n < batches {
		t.Fatalf("%d segments before compacting, want several", n)
	}
	queries := []string{"insulin", "cell protein", "the effect of insulin on cell growth", "gene expression tumour", "zzzunknown"}
	before := searchAll(t, b, queries)
	passes := compactPasses.Load()
	if err := b.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := b.SegmentCount(); n != 1 {
		t.Fatalf("%d segments after compacting, want 1", n)
	}
	if p := compactPasses.Load() - passes; p != 1 {
		t.Fatalf("compacting %d segments took %d merge passes, want 1", batches, p)
	}
	// Compact returns once the files merged away are gone, body files included, and
	// mergedAwayOnDisk sees a zap file the snapshot does not name.
	if names, _ := os.ReadDir(filepath.Join(dir, "store")); len(names) != 3 || b.mergedAwayOnDisk() {
		t.Fatalf("after Compact the segment directory holds %v, want one segment, its body file and root.bolt", names)
	}
	stale := filepath.Join(dir, "store", "0000000fffff.zap")
	if err := os.WriteFile(stale, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !b.mergedAwayOnDisk() {
		t.Fatal("mergedAwayOnDisk missed the zap file of a segment the snapshot does not have")
	}
	if err := os.Remove(stale); err != nil {
		t.Fatal(err)
	}
	if after := searchAll(t, b, queries); !slices.Equal(before, after) {
		t.Fatalf("hits changed by compacting:\nbefore %v\nafter  %v", before, after)
	}
	b.SetExhaustive(true)
	if after := searchAll(t, b, queries); !slices.Equal(before, after) {
		t.Fatalf("exhaustive hits after compacting differ:\nbefore %v\nafter  %v", before, after)
	}
	b.SetExhaustive(false)
	if n, err := b.Count(); err != nil || n != batches*150-2 {
		t.Fatalf("count %d, %v; want %d", n, err, batches*150-2)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// The newest snapshot names one segment and its body file. (The files merged away are
	// removed by Bleve once no snapshot uses them, at the latest by the next writer's open;
	// their body files then by that writer's Close.)
	files, err := segmentFiles(dir)
	if err != nil || len(files) != 2 {
		t.Fatalf("snapshot segments %v (%v): want one and its body file", files, err)
	}

	ro, err := OpenWith(dir, Options{Analyzer: LuceneEnglishAnalyzer, Scoring: ScoringLucene, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := searchAll(t, ro, queries); !slices.Equal(before, got) {
		t.Fatalf("read-only hits after compacting differ:\nbefore %v\nafter  %v", before, got)
	}
	if err := ro.Compact(ctx); err != nil {
		t.Fatalf("Compact on a read-only index: %v, want nil (nothing done)", err)
	}

	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}

	// Cancelled: the context's error, nothing lost.
	w, err := OpenWith(dir, Options{Analyzer: LuceneEnglishAnalyzer, Scoring: ScoringLucene})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Apply([]Doc{randomDoc(rng, "x1")}, nil, 14); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := w.Compact(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Compact: %v, want context.Canceled", err)
	}
	if n, err := w.Count(); err != nil || n != batches*150-1 {
		t.Fatalf("count after a cancelled Compact %d, %v; want %d", n, err, batches*150-1)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	all, _ := filepath.Glob(filepath.Join(dir, "store", "*.zap"+bodyExt))
	for _, c := range all {
		if _, err := os.Stat(strings.TrimSuffix(c, bodyExt)); err != nil {
			t.Fatalf("body file %s of a segment merged away is still there", c)
		}
	}
}

// searchAll runs each query (k 20) and renders its hits, ids and scores.
func searchAll(t *testing.T, b *Index, queries []string) []string {
	t.Helper()
	var out []string
	for _, q := range queries {
		hits, err := b.Search(context.Background(), q, 20, nil)
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		for _, h := range hits {
			fmt.Fprintf(&sb, "%s:%.6f ", h.ID, h.Score)
		}
		out = append(out, q+" => "+sb.String())
	}
	return out
}

// TestUnpersistedSegments: Compact's wait before its merge counts the segments held in
// memory: every segment of an in-memory index, none of an index whose writes were
// persisted.
func TestUnpersistedSegments(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	mem := openMemBM25(t)
	applyThree(t, mem, rng, "m")
	n, err := mem.unpersistedSegments()
	segs, _ := mem.SegmentCount()
	if err != nil || n == 0 || n != segs {
		t.Fatalf("in-memory index: %d segments held in memory (%v), want all %d", n, err, segs)
	}

	disk, err := OpenWith(filepath.Join(t.TempDir(), "bm25"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer disk.Close()
	applyThree(t, disk, rng, "d")
	if n, err := disk.unpersistedSegments(); err != nil || n != 0 {
		t.Fatalf("persisted index: %d segments held in memory (%v), want 0", n, err)
	}
	if segs, _ := disk.SegmentCount(); segs == 0 {
		t.Fatal("persisted index has no segment")
	}
}

// applyThree applies three batches of 20 random documents (ids prefix0-00...) to b.
func applyThree(t *testing.T, b *Index, rng *rand.Rand, prefix string) {
	t.Helper()
	for batch := range 3 {
		var docs []Doc
		for i := range 20 {
			docs = append(docs, randomDoc(rng, fmt.Sprintf("%s%d-%02d", prefix, batch, i)))
		}
		if err := b.Apply(docs, nil, uint64(batch+1)); err != nil {
			t.Fatal(err)
		}
	}
}
