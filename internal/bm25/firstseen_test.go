//go:build unix

package bm25

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestFirstSeenRounds measures what an index's first queries cost beside the same queries
// again, on a real store: with MEMORY_FIRSTSEEN_STORE set to a store directory (its
// bm25/default index is opened read-only, with the analyzer its manifest names) and
// MEMORY_FIRSTSEEN_QUERIES to a BEIR queries.jsonl, it runs the queries for three rounds
// (MEMORY_FIRSTSEEN_ROUNDS=1: one) on a fresh open and logs each round's CPU a query (user
// and system) and what the postings cache did: postings decoded, read alone, and the arena's and heap's memory. It checks that every round answers alike
// (later rounds may still decode: a block is decoded once it has been looked up alone
// warmProbes times, see blockCursor.lookup). MEMORY_FIRSTSEEN_OUT
// writes the first round's hits (ids and score bits) for a byte comparison between builds;
// MEMORY_FIRSTSEEN_PROF a CPU profile of the first round. Without the two variables it
// is skipped.
func TestFirstSeenRounds(t *testing.T) {
	store, qpath := os.Getenv("MEMORY_FIRSTSEEN_STORE"), os.Getenv("MEMORY_FIRSTSEEN_QUERIES")
	if store == "" || qpath == "" {
		t.Skip("set MEMORY_FIRSTSEEN_STORE and MEMORY_FIRSTSEEN_QUERIES")
	}
	var man struct {
		Analyzer string `json:"analyzer"`
	}
	if b, err := os.ReadFile(filepath.Join(store, "manifest.json")); err == nil {
		if err := json.Unmarshal(b, &man); err != nil {
			t.Fatal(err)
		}
	}
	o := Options{ReadOnly: true, Analyzer: man.Analyzer}
	if man.Analyzer == LuceneEnglishAnalyzer {
		o.Scoring = ScoringLucene // as the store opens it (memory's bm25Scoring)
	}
	idx, err := OpenWith(filepath.Join(store, "bm25", "default"), o)
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	qs := readQueryTexts(t, qpath)
	usage := func() (user, sys time.Duration, faults int64) {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()), ru.Minflt + ru.Majflt
	}
	rounds := 3
	if os.Getenv("MEMORY_FIRSTSEEN_ROUNDS") == "1" {
		rounds = 1
	}
	c := idx.postings
	ctx := context.Background()
	first := make([][]Hit, len(qs))
	for round := 1; round <= rounds; round++ {
		prof := os.Getenv("MEMORY_FIRSTSEEN_PROF")
		if prof != "" && round == 1 {
			pf, err := os.Create(prof)
			if err != nil {
				t.Fatal(err)
			}
			if err := pprof.StartCPUProfile(pf); err != nil {
				t.Fatal(err)
			}
		}
		u0, s0, f0 := usage()
		d0, l0 := c.decoded.Load(), c.lookups.Load()
		for i, q := range qs {
			hits, err := idx.Search(ctx, q, 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			if round == 1 {
				first[i] = hits
			} else if !slices.Equal(hits, first[i]) {
				t.Fatalf("round %d, query %q: %v, round 1 %v", round, q, hits, first[i])
			}
		}
		u1, s1, f1 := usage()
		if prof != "" && round == 1 {
			pprof.StopCPUProfile()
		}
		n := int64(len(qs))
		decoded := (c.decoded.Load() - d0) / uint64(n)
		t.Logf("round %d: cpu/query %v (user %v, sys %v, faults %d), decoded/query %d, lookups/query %d",
			round, (u1+s1-u0-s0)/time.Duration(n), (u1-u0)/time.Duration(n), (s1-s0)/time.Duration(n), (f1-f0)/n,
			decoded, (c.lookups.Load()-l0)/uint64(n))
		mapped, inUse := blockArena.stats()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		t.Logf("  arena mapped %d MB, in use %d MB; cache %d MB of blocks, %d MB of metadata; heap in use %d MB, %d collections",
			mapped>>20, inUse>>20, c.used>>20, c.metaBytes>>20, ms.HeapInuse>>20, ms.NumGC)

	}
	if p := os.Getenv("MEMORY_FIRSTSEEN_OUT"); p != "" {
		var b []byte
		for _, hits := range first {
			for _, h := range hits {
				b = fmt.Appendf(b, "%s %x\n", h.ID, math.Float64bits(h.Score))
			}
			b = append(b, '\n')
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readQueryTexts reads the text field of each line of a BEIR queries.jsonl.
func readQueryTexts(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var qs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var q struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			t.Fatal(err)
		}
		qs = append(qs, q.Text)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return qs
}
