package bm25

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/agentmem/memory/internal/smaps"
	"github.com/blevesearch/bleve/v2/index/scorch"
)

// zapMapped reports whether the bytes at p lie in a mapping of a .zap file
// (/proc/self/maps).
func zapMapped(t *testing.T, p uintptr) bool {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		lo, hi, _ := strings.Cut(fields[0], "-")
		a, _ := strconv.ParseUint(lo, 16, 64)
		b, _ := strconv.ParseUint(hi, 16, 64)
		if uint64(p) >= a && uint64(p) < b {
			return len(fields) >= 6 && strings.HasSuffix(fields[5], ".zap")
		}
	}
	return false
}

// zapRSS returns the resident kB of this process's .zap file mappings.
func zapRSS(t *testing.T) int {
	kb, err := smaps.ResidentKB(func(p string) bool { return strings.HasSuffix(p, ".zap") })
	if err != nil {
		t.Fatal(err)
	}
	return kb
}

// TestMappedResident: the mappings segmentMapping hands to madvise are the segment files'
// own (never the heap: MADV_DONTNEED on anonymous memory would zero it), an in-memory
// index has none, and an index trimming after every search answers exactly as one that
// does not.
func TestMappedResident(t *testing.T) {
	mem := openMemBM25(t)
	applyRandomBatches(t, mem, newRef(), rand.New(rand.NewPCG(1, 1)), 1)
	r := snapshotReader(t, mem)
	for _, ss := range r.(*scorch.IndexSnapshot).Segments() {
		if m := segmentMapping(ss); m != nil {
			t.Fatalf("an in-memory segment has a mapping of %d bytes", len(m))
		}
	}
	r.Close()

	b, _ := openRandomOnDisk(t, 3000)
	defer b.Close()
	r = snapshotReader(t, b)
	mapped := 0
	for _, ss := range r.(*scorch.IndexSnapshot).Segments() {
		if m := segmentMapping(ss); len(m) > 0 {
			if !zapMapped(t, uintptr(unsafe.Pointer(&m[0]))) || !zapMapped(t, uintptr(unsafe.Pointer(&m[len(m)-1]))) {
				t.Fatal("a segment's mapping is not a .zap file's")
			}
			mapped++
		}
	}
	r.Close()
	if mapped == 0 {
		t.Fatal("no segment of the on-disk index is mapped")
	}

	ctx := context.Background()
	rng := rand.New(rand.NewPCG(2, 2))
	var qs, want []string
	for range 8 {
		q := randomQuery(rng, 5)
		hits, err := b.Search(ctx, q, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		qs, want = append(qs, q), append(want, fmt.Sprint(hits))
	}
	b.trim.limit = 1 // every check finds the process over it
	var also atomic.Int32
	b.trim.also = func() { also.Add(1) }
	for i, q := range qs {
		b.trim.last.Store(0) // as if residentCheckEvery had passed: this search checks
		hits, err := b.Search(ctx, q, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(hits); got != want[i] {
			t.Fatalf("%q after trimming: %s, want %s", q, got, want[i])
		}
	}
	if n := b.trim.trims.Load(); n < uint64(len(qs)) {
		t.Fatalf("%d trims over %d searches that each checked", n, len(qs))
	}
	// The owner's trim runs on its own goroutine: wait for it, with no clock of our own
	// (a hang is go test's -timeout).
	for also.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	// A trim leaves none of the segments' pages mapped.
	if _, err := b.Search(ctx, qs[0], 10, nil); err != nil {
		t.Fatal(err)
	}
	r = snapshotReader(t, b)
	defer r.Close()
	before := zapRSS(t)
	b.trim.last.Store(0)
	b.trim.after(r.(*scorch.IndexSnapshot))
	if after := zapRSS(t); before == 0 || after != 0 {
		t.Fatalf("resident kB of the .zap mappings: %d after a search, %d after a trim (want > 0, then 0)", before, after)
	}
}

// TestTrimDuring: while a compaction runs, the index drops its segments' resident pages
// each period the process is over the bound (and asks the owner to drop its own), leaves
// the answers as they were, and stops when told.
func TestTrimDuring(t *testing.T) {
	b, _ := openRandomOnDisk(t, 3000)
	defer b.Close()
	ctx := context.Background()
	q := randomQuery(rand.New(rand.NewPCG(3, 3)), 5)
	want, err := b.Search(ctx, q, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if zapRSS(t) == 0 {
		t.Fatal("a search left no segment page resident: nothing to trim")
	}
	var also atomic.Int32
	b.trim.also = func() { also.Add(1) }
	stop := b.trimDuring(1, time.Millisecond) // every check finds the process over it
	// Wait for two trims, with no clock of our own (a hang is go test's -timeout).
	for b.trim.trims.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	stop()
	n := b.trim.trims.Load()
	if kb := zapRSS(t); kb != 0 || also.Load() < 2 {
		t.Fatalf("after the trims: %d kB of .zap mappings resident (want 0), the owner asked %d times", kb, also.Load())
	}
	got, err := b.Search(ctx, q, 10, nil)
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after trimming: %v %v, want %v", got, err, want)
	}
	time.Sleep(5 * time.Millisecond)
	if m := b.trim.trims.Load(); m != n {
		t.Fatalf("%d trims after stop", m-n)
	}
	// Under the bound nothing is dropped.
	b.trimMapped(1 << 60)
	if m := b.trim.trims.Load(); m != n {
		t.Fatal("a trim under the bound")
	}
}

// TestWriterTrims: a writable index with MappedResidentBytes trims its segment mappings
// while it is open (its merges read whole segments), a read-only one only after searches;
// Close stops the trimming, and a second Close is harmless.
func TestWriterTrims(t *testing.T) {
	b, dir := openRandomOnDisk(t, 3000)
	if b.stopTrim != nil {
		t.Fatal("a writer without MappedResidentBytes trims")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	w, err := OpenWith(dir, Options{MappedResidentBytes: 1}) // every check finds the process over it
	if err != nil {
		t.Fatal(err)
	}
	// Wait for a trim, with no clock of our own (a hang is go test's -timeout).
	for w.trim.trims.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	n := w.trim.trims.Load()
	time.Sleep(5 * time.Millisecond)
	if m := w.trim.trims.Load(); m != n {
		t.Fatalf("%d trims after Close", m-n)
	}
	if err := w.Close(); err != nil && !strings.Contains(err.Error(), "closed") {
		t.Fatalf("a second Close: %v", err)
	}
	r, err := OpenWith(dir, Options{MappedResidentBytes: 1, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.stopTrim != nil {
		t.Fatal("a read-only index trims on a clock")
	}
}
