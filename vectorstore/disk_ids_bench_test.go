package vectorstore

import (
	"fmt"
	"testing"
)

// BenchmarkDiskWriteIDs writes the id table of n ordinals (ids like zipfgen's, p00000000):
// what every flush of a bulk load rewrites. B/op is the heap it takes beyond the ids
// themselves (the sort's permutation, and whatever the write buffers).
func BenchmarkDiskWriteIDs(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("p%08d", i)
		}
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			x := &DiskIndex{dir: b.TempDir()}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				m := &diskMeta{Gen: uint64(i + 1)}
				f, err := x.writeIDs(m, n, func(o int32) string { return ids[o] }, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				f.unmap()
			}
		})
	}
}
