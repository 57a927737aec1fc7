package main

import (
	"fmt"
	"runtime"
	"testing"
)

// TestIDSeen: an id is new once, then a duplicate reported with the place it was first
// read, small and large places alike; ids differing in a byte or in length are distinct.
func TestIDSeen(t *testing.T) {
	s := newIDSeen()
	locs := []docLoc{{0, 1}, {3, 0}, {locFileMax, 1<<locLineBits - 1}, {locFileMax + 1, 5}, {2, 1 << locLineBits}, {-1, -1}}
	ids := []string{"", "a", "a ", "b", "p00000001", "p00000002", "p0000001", "日本"}
	for i := range 20000 {
		ids = append(ids, fmt.Sprintf("d%d", i))
	}
	where := map[string]docLoc{}
	for i, id := range ids {
		l := locs[i%len(locs)]
		if l.line >= 0 && l.line < 1<<locLineBits-1 {
			l.line += i
		}
		if first, dup := s.add(id, l); dup {
			t.Fatalf("%q (#%d) taken as read before at %+v", id, i, first)
		}
		where[id] = l
	}
	for i, id := range ids {
		first, dup := s.add(id, docLoc{file: 9, line: 9})
		if !dup || first != where[id] {
			t.Fatalf("%q (#%d) again: %+v %v, want %+v true", id, i, first, dup, where[id])
		}
	}
	if len(s.far) == 0 {
		t.Fatal("no place was too large to pack")
	}
	for _, id := range ids {
		if !s.has(id) {
			t.Fatalf("has(%q) is false after it was added", id)
		}
	}
	for _, id := range []string{"c", "a  ", "d20000", "p00000003", "日"} {
		if s.has(id) {
			t.Fatalf("has(%q) is true, and it was never added", id)
		}
	}
}

// BenchmarkIDSeenMemory reports the heap the set takes for corpus-like ids beside a map of
// the ids themselves (the layout before it: about 85 bytes an id, 1.8 GB at 21M). A
// benchmark, not a test: heap figures move with whatever else the process allocates.
//
//	go test -run '^$' -bench IDSeenMemory -benchtime 1x ./cmd/memory
func BenchmarkIDSeenMemory(b *testing.B) {
	const n = 300000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("p%08d", i)
	}
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for b.Loop() {
		h0 := heap()
		old := map[string]docLoc{}
		for i, id := range ids {
			old[string([]byte(id))] = docLoc{file: 0, line: i + 1} // a decoded id is a copy
		}
		h1 := heap()
		s := newIDSeen()
		for i, id := range ids {
			s.add(id, docLoc{file: 0, line: i + 1})
		}
		h2 := heap()
		runtime.KeepAlive(old)
		runtime.KeepAlive(s)
		b.ReportMetric(float64(h2-h1)/n, "bytes/id")
		b.ReportMetric(float64(h1-h0)/n, "map-bytes/id")
	}
	runtime.KeepAlive(ids)
}
