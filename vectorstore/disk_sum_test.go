package vectorstore

import (
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// diskKernelModes runs f with each form of the checksum kernels this machine has (AVX-512,
// AVX2, portable), restoring the selection after; the last run is the machine's own.
func diskKernelModes(t *testing.T, f func(t *testing.T)) {
	a2, a5 := flatAVX2, diskAVX512Enabled()
	t.Cleanup(func() { flatAVX2 = a2; setDiskAVX512(a5) })
	modes := []struct {
		name   string
		avx2   bool
		avx512 bool
	}{{"portable", false, false}}
	if a2 {
		modes = append(modes, struct {
			name   string
			avx2   bool
			avx512 bool
		}{"avx2", true, false})
	}
	if a5 {
		modes = append(modes, struct {
			name   string
			avx2   bool
			avx512 bool
		}{"avx512", true, true})
	}
	for _, m := range modes {
		flatAVX2 = m.avx2
		setDiskAVX512(m.avx512)
		t.Run(m.name, f)
	}
	flatAVX2 = a2
	setDiskAVX512(a5)
}

// TestDiskSumKernels holds the kernels to the portable lanes: the sum of any length, and
// the fused scan (scores equal to flatDots's, lanes of every block) over rows of several
// widths with blocks ending inside rows.
func TestDiskSumKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	p := make([]byte, 3*diskBlock+100)
	for i := range p {
		p[i] = byte(rng.IntN(256))
	}
	diskKernelModes(t, func(t *testing.T) {
		for n := 0; n <= len(p); n += 64 * (1 + n/900) {
			var got, want diskLanes
			diskSumLanes(p[:n], &got)
			diskSumLanesGeneric(p[:n], &want)
			if got != want {
				t.Fatalf("%d bytes: lanes %+v, portable %+v", n, got, want)
			}
		}
		for _, d := range []int{16, 48, 384, 1024} {
			if !diskFusable(d) {
				continue
			}
			q := vectest1(rng, d)
			for _, n := range []int{1, 3, 7, 60, 257} {
				rows := make([]float32, n*d)
				for i := range rows {
					rows[i] = float32(rng.NormFloat64())
				}
				got, want := make([]float32, n), make([]float32, n)
				nb := diskBlocks(int64(4 * n * d))
				gl, wl := make([]diskLanes, nb), make([]diskLanes, nb)
				diskDotsSum(q, rows, got, gl)
				diskDotsSumGeneric(q, rows, want, wl)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("d %d n %d: score %d %v, flatDots %v", d, n, i, got[i], want[i])
					}
				}
				for k := range wl {
					if gl[k] != wl[k] {
						t.Fatalf("d %d n %d: block %d lanes differ", d, n, k)
					}
				}
			}
		}
	})
}

// vectest1 is a random vector of d floats.
func vectest1(rng *rand.Rand, d int) []float32 {
	v := make([]float32, d)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// TestDiskBlockSum checks the damage a block sum must see: every single-bit flip of a
// block, flips of two top bits (float signs) of words of one lane at any distance (what a
// sum modulo 2^64 alone misses), two top-byte changes of one lane, a one-word change
// whose byte sums cancel its value's change, and a byte more.
func TestDiskBlockSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	p := make([]byte, diskBlock)
	for i := range p {
		p[i] = byte(rng.IntN(256))
	}
	want := diskBlockSum(p)
	for i := range 8 * len(p) {
		p[i/8] ^= 1 << (i % 8)
		if diskBlockSum(p) == want {
			t.Fatalf("bit %d flipped: same sum", i)
		}
		p[i/8] ^= 1 << (i % 8)
	}
	steps := len(p) / 64
	for lane := range 8 {
		for t1 := range steps {
			for t2 := t1 + 1; t2 < steps; t2++ {
				i, j := 64*t1+8*lane+7, 64*t2+8*lane+7 // bytes holding bit 63 of the words
				for _, m := range [][2]byte{{0x80, 0x80}, {0x80, 0x40}, {0x08, 0x18}} {
					p[i] ^= m[0]
					p[j] ^= m[1]
					if diskBlockSum(p) == want {
						t.Fatalf("lane %d steps %d and %d: top bits %#x and %#x flipped, same sum", lane, t1, t2, m[0], m[1])
					}
					p[i] ^= m[0]
					p[j] ^= m[1]
				}
			}
		}
	}
	// One word 0x00ff01 -> 0x010000: its value grows by 0xff, its byte sum falls by 0xff.
	q := make([]byte, 256)
	binary.LittleEndian.PutUint64(q[40:], 0x00ff01)
	w := diskBlockSum(q)
	binary.LittleEndian.PutUint64(q[40:], 0x010000)
	if diskBlockSum(q) == w {
		t.Fatal("a word whose change its byte sum cancels: same sum")
	}
	if diskBlockSum(p[:100]) == diskBlockSum(append(p[:100:100], 0)) {
		t.Fatal("a zero byte more: same sum")
	}
}

// BenchmarkDiskBlockSum: the block sum against CRC-32C, over a block in cache and over
// 256 MiB (read from memory).
//
//	go test -run '^$' -bench DiskBlockSum ./vectorstore/
func BenchmarkDiskBlockSum(b *testing.B) {
	big := make([]byte, 256<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	tab := crc32.MakeTable(crc32.Castagnoli)
	var sink uint64
	for _, c := range []struct {
		name string
		f    func(p []byte) uint64
	}{
		{"sum", diskBlockSum},
		{"crc32c", func(p []byte) uint64 { return uint64(crc32.Checksum(p, tab)) }},
	} {
		b.Run(c.name+"/cached", func(b *testing.B) {
			b.SetBytes(diskBlock)
			for b.Loop() {
				sink += c.f(big[:diskBlock])
			}
		})
		b.Run(c.name+"/memory", func(b *testing.B) {
			b.SetBytes(int64(len(big)))
			for b.Loop() {
				for o := 0; o < len(big); o += diskBlock {
					sink += c.f(big[o : o+diskBlock])
				}
			}
		})
	}
	if sink == 42 {
		b.Log(sink)
	}
}
