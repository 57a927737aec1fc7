package main

import (
	"os"
	"runtime/debug"
)

// Bulk ingest allocates fast (analysis, records, segments) with a small live heap, so at
// Go's default (GOGC=100) the collector ran often: about a fifth of `memory index`'s CPU.
// For the length of an index run the collector lets the heap grow to 5x its live size
// (GOGC=400), within a soft limit of ingestHeapLimit (the collector works harder near it
// rather than exceed it); on the 100k-passage held-out corpus this cut the run's CPU by
// about a quarter (32-38 -> 24-27 user s) at 1.1 GB peak RSS instead of 0.6. GOGC or
// GOMEMLIMIT in the environment keep their meaning: either one set leaves both alone.
//
// The limit is 2 GiB: a bulk load's live heap passes 1 GiB by a few million passages, and
// under a 1 GiB limit the collector then ran almost without pause (21 % of a 21M load's CPU
// at 7M passages, 40 % at 11M, 55 % at 18M). At 4M passages 2 GiB took the load from
// 5 min 11 s and 566 CPU-s to 4 min 30–37 s and 472–490 CPU-s, at 2.9–3.0 GB peak RSS
// instead of 1.9 (BENCHMARKS.md §0zp).

// ingestHeapLimit is the soft heap limit of an index run (debug.SetMemoryLimit).
const ingestHeapLimit = 2 << 30

// ingestGC sets the collector for an index run and returns the function that restores it.
func ingestGC() (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	pct := debug.SetGCPercent(400)
	lim := debug.SetMemoryLimit(ingestHeapLimit)
	return func() {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(lim)
	}
}
