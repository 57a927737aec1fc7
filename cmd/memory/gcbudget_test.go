package main

import (
	"runtime/debug"
	"testing"
)

// TestIngestGC: an index run raises GOGC to 400 under a soft heap limit and restores both
// after; GOGC or GOMEMLIMIT in the environment leave the collector alone.
func TestIngestGC(t *testing.T) {
	gc := func() int { p := debug.SetGCPercent(-1); debug.SetGCPercent(p); return p }
	lim := func() int64 { return debug.SetMemoryLimit(-1) } // a negative limit reads it
	base, baseLim := gc(), lim()
	for _, tc := range []struct {
		name, gogc, memlimit string
		want                 int
		wantLim              int64
	}{
		{"default", "", "", 400, ingestHeapLimit},
		{"GOGC set", "50", "", base, baseLim},
		{"GOMEMLIMIT set", "", "4GiB", base, baseLim},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.gogc)
			t.Setenv("GOMEMLIMIT", tc.memlimit)
			restore := ingestGC()
			if got, gotLim := gc(), lim(); got != tc.want || gotLim != tc.wantLim {
				t.Errorf("during the run: GOGC %d, limit %d; want %d, %d", got, gotLim, tc.want, tc.wantLim)
			}
			restore()
			if got, gotLim := gc(), lim(); got != base || gotLim != baseLim {
				t.Errorf("after: GOGC %d, limit %d; want %d, %d", got, gotLim, base, baseLim)
			}
		})
	}
}
