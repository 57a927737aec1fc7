package vectorstore

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// byteLUT and byteScore are the byte tables the binary scan used before the nibble tables
// (binaryLUT, binaryScore): 256 values for each 8 bits of a code, 128 KiB a query at
// 1,024 bits, here made from the nibble tables (a byte's value is its two nibbles'). Kept
// only as BenchmarkBinaryScore's reference.
func byteLUT(q []float32) []float32 {
	nib := binaryLUT(q, nil)
	out := make([]float32, len(nib)/32*256)
	for b := range len(nib) / 32 {
		lo, hi := nib[2*b*16:(2*b+1)*16], nib[(2*b+1)*16:(2*b+2)*16]
		for v := range 256 {
			out[b*256+v] = lo[v&15] + hi[v>>4]
		}
	}
	return out
}

func byteScore(lut []float32, code []uint64) float32 {
	var a0, a1 float32
	for w, c := range code {
		t := lut[w*2048 : (w+1)*2048 : (w+1)*2048]
		a0 += t[c&0xff] + t[256+(c>>8)&0xff] + t[512+(c>>16)&0xff] + t[768+(c>>24)&0xff]
		a1 += t[1024+(c>>32)&0xff] + t[1280+(c>>40)&0xff] + t[1536+(c>>48)&0xff] + t[1792+(c>>56)]
	}
	return a0 + a1
}

// BenchmarkBinaryScore: scoring 1,024-bit codes with a query's tables, as a batch scores a
// block of a list's rows for one query after another: 32 rows of a block for each of q
// queries in turn. With one query its tables stay in the core's caches either way, and
// the byte tables' half as many lookups score a row faster; with 64, in isolation, the
// two measured alike here (BENCHMARKS §0zz6: in a batch, where rows and pages compete for
// the caches and the byte tables are 128 KiB of heap a query, the nibble tables won).
// ns/row is one row scored.
func BenchmarkBinaryScore(b *testing.B) {
	const dim, W, rows = 1024, 16, 32
	rng := rand.New(rand.NewPCG(5, 6))
	codes := make([]uint64, rows*W)
	for i := range codes {
		codes[i] = rng.Uint64()
	}
	for _, nq := range []int{1, 64} {
		var nib, byt [][]float32
		for range nq {
			q := make([]float32, dim)
			for j := range q {
				q[j] = float32(rng.NormFloat64())
			}
			nib = append(nib, binaryLUT(q, nil))
			byt = append(byt, byteLUT(q))
		}
		for _, c := range []struct {
			name  string
			luts  [][]float32
			score func([]float32, []uint64) float32
		}{{"nibble", nib, binaryScore}, {"byte", byt, byteScore}} {
			b.Run(fmt.Sprintf("tables=%s/queries=%d", c.name, nq), func(b *testing.B) {
				var sink float32
				n := 0
				for b.Loop() {
					for _, lut := range c.luts {
						for r := range rows {
							sink += c.score(lut, codes[r*W:(r+1)*W])
						}
					}
					n++
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*nq*rows), "ns/row")
				_ = sink
			})
		}
	}
}
