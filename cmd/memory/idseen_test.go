package main

import (
	"fmt"
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
}
