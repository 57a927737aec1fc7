package bm25

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// randomBitmap is a bitmap mixing array, bitmap and (when runs) run containers.
func randomBitmap(rng *rand.Rand, runs bool) *roaring.Bitmap {
	bm := roaring.New()
	for c := range 1 + rng.IntN(6) {
		base := uint32(c*3+rng.IntN(3)) << 16
		switch rng.IntN(3) {
		case 0: // sparse: an array
			for range 1 + rng.IntN(300) {
				bm.Add(base | uint32(rng.IntN(1<<16)))
			}
		case 1: // dense: a bitmap
			for x := range uint32(1 << 16) {
				if rng.IntN(3) == 0 {
					bm.Add(base | x)
				}
			}
		default: // ranges: runs once optimized
			for range 1 + rng.IntN(5) {
				s := uint64(base) + uint64(rng.IntN(1<<16))
				bm.AddRange(s, min(s+uint64(rng.IntN(5000)), uint64(base)+1<<16))
			}
		}
	}
	if rng.IntN(4) == 0 { // the largest array and the smallest bitmap (both 8 KiB)
		for c, n := range []int{roaringArrayMax, roaringArrayMax + 1} {
			base := uint32(20+c) << 16
			for x := range n {
				bm.Add(base | uint32(x*13))
			}
		}
	}
	if runs {
		bm.RunOptimize()
	}
	return bm
}

// TestRoaringView holds appendRange to roaring's own iterator over random ranges of random
// bitmaps, with and without run containers (both cookies, with and without offset tables).
func TestRoaringView(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for iter := range 300 {
		bm := randomBitmap(rng, iter%2 == 0)
		b, err := bm.ToBytes()
		if err != nil {
			t.Fatal(err)
		}
		var v roaringView
		if !v.parse(b) {
			t.Fatalf("bitmap %d: not parsed", iter)
		}
		all := bm.ToArray()
		for range 20 {
			lo := uint64(rng.IntN(22 << 16))
			hi := lo + uint64(rng.IntN(3<<16))
			if rng.IntN(4) == 0 {
				hi = lo + uint64(rng.IntN(1000))
			}
			var want []uint32
			for _, x := range all {
				if uint64(x) >= lo && uint64(x) < hi {
					want = append(want, x)
				}
			}
			got, ok := v.appendRange(nil, lo, hi)
			if !ok || !slices.Equal(got, want) {
				t.Fatalf("bitmap %d [%d, %d): ok %v, %d values, want %d", iter, lo, hi, ok, len(got), len(want))
			}
			checkFill(t, &v, lo, hi, want)
			// rank: from lo to a value held, to one not held, and to the range's end
			ds := []uint64{hi, lo + uint64(rng.IntN(1<<16))}
			if len(want) > 0 {
				ds = append(ds, uint64(want[rng.IntN(len(want))]), uint64(want[len(want)-1]))
			}
			for _, d := range ds {
				if d > 0xffffffff {
					continue
				}
				n, has, ok := v.rank(lo, uint32(d))
				wantN, _ := slices.BinarySearch(all, uint32(d))
				lowN, _ := slices.BinarySearch(all, uint32(min(lo, d)))
				if !ok || n != wantN-lowN || has != bm.Contains(uint32(d)) {
					t.Fatalf("bitmap %d rank [%d, %d): ok %v, %d (holds it: %v), want %d (%v)", iter, lo, d, ok, n, has, wantN-lowN, bm.Contains(uint32(d)))
				}
			}
		}
	}
}

// checkFill holds fillRange over [lo, hi) to want (the values there, rising): into a
// destination of exactly their count, of more room (the values, the rest untouched), and of
// one fewer (refused).
func checkFill(t *testing.T, v *roaringView, lo, hi uint64, want []uint32) {
	t.Helper()
	for _, extra := range []int{0, 3, -1} {
		if len(want)+extra < 0 {
			continue
		}
		dst := make([]uint32, len(want)+extra)
		for i := range dst {
			dst[i] = 7
		}
		n, ok := v.fillRange(dst, lo, hi)
		switch {
		case extra < 0:
			if ok && len(want) > 0 {
				t.Fatalf("[%d, %d): %d values filled into room for %d", lo, hi, len(want), len(dst))
			}
		case !ok || n != len(want) || !slices.Equal(dst[:n], want):
			t.Fatalf("[%d, %d): filled %d (ok %v) %v, want %d %v", lo, hi, n, ok, dst[:min(n, 8)], len(want), want[:min(len(want), 8)])
		case slices.ContainsFunc(dst[n:], func(x uint32) bool { return x != 7 }):
			t.Fatalf("[%d, %d): wrote past the %d values", lo, hi, n)
		}
	}
}

// TestFillRangeContainers holds fillRange to the values of bitmaps of one kind of
// container each (array, bitmap, run; empty, one value, a full 65,536, the largest array
// and the smallest bitmap), over ranges at the containers' edges: starting and ending on a
// value, just before and after one, at a 64-bit word's edge, across two containers.
func TestFillRangeContainers(t *testing.T) {
	every := func(step, n uint32) []uint32 {
		var v []uint32
		for x := range n {
			v = append(v, x*step)
		}
		return v
	}
	cases := []struct {
		name string
		vals []uint32
		runs bool
	}{
		{"empty", nil, false},
		{"one", []uint32{65535}, false},
		{"array", every(13, 300), false},
		{"array max", every(16, roaringArrayMax), false},
		{"bitmap min", every(13, roaringArrayMax+1), false},
		{"bitmap", every(3, 20000), false},
		{"full", every(1, 1<<16), false},
		{"full run", every(1, 1<<16), true},
		{"runs", append(append(every(1, 100), every(1, 64)[10:]...), 70000, 70001, 70002, 1<<17+5), true},
		{"two containers", append(every(7, 9000), every(5, 4000)...), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bm := roaring.BitmapOf(tc.vals...)
			for _, x := range tc.vals {
				bm.Add(x + 1<<16) // a second container of the same kind
			}
			if tc.runs {
				bm.RunOptimize()
			}
			b, err := bm.ToBytes()
			if err != nil {
				t.Fatal(err)
			}
			var v roaringView
			if !v.parse(b) {
				t.Fatal("not parsed")
			}
			all := bm.ToArray()
			bounds := []uint64{0, 1, 63, 64, 65, 127, 128, 1000, 4095, 65535, 1 << 16, 1<<16 + 1, 1<<16 + 64, 1<<17 - 1, 1 << 17, 1<<17 + 6, 1 << 20}
			for _, x := range all[:min(len(all), 3)] {
				bounds = append(bounds, uint64(x), uint64(x)+1)
			}
			if len(all) > 0 {
				l := uint64(all[len(all)-1])
				bounds = append(bounds, l, l+1)
			}
			for _, lo := range bounds {
				for _, hi := range bounds {
					var want []uint32
					for _, x := range all {
						if uint64(x) >= lo && uint64(x) < hi {
							want = append(want, x)
						}
					}
					checkFill(t, &v, lo, hi, want)
				}
			}
		})
	}
}

// TestRoaringViewDamage: truncated or flipped bitmaps never fault; what a damaged bitmap
// yields still rises and stays in its range.
func TestRoaringViewDamage(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	for iter := range 200 {
		b, err := randomBitmap(rng, iter%2 == 0).ToBytes()
		if err != nil {
			t.Fatal(err)
		}
		for range 30 {
			d := slices.Clone(b)
			if rng.IntN(3) == 0 {
				d = d[:rng.IntN(len(d))]
			} else {
				for range 1 + rng.IntN(4) {
					d[rng.IntN(min(len(d), 64+rng.IntN(len(d))))] ^= byte(1 + rng.IntN(255))
				}
			}
			var v roaringView
			if !v.parse(d) {
				continue
			}
			lo := uint64(rng.IntN(20 << 16))
			hi := lo + uint64(rng.IntN(4<<16))
			if n, _, ok := v.rank(lo, uint32(min(hi, 0xffffffff))); ok && (n < 0 || uint64(n) > hi-lo) {
				t.Fatalf("damaged bitmap ranked %d values in [%d, %d)", n, lo, hi)
			}
			dst := make([]uint32, rng.IntN(3000))
			if n, ok := v.fillRange(dst, lo, hi); ok {
				for i, x := range dst[:n] {
					if uint64(x) < lo || uint64(x) >= hi || (i > 0 && x <= dst[i-1]) {
						t.Fatalf("damaged bitmap filled %d at %d of [%d, %d)", x, i, lo, hi)
					}
				}
			}
			got, ok := v.appendRange(nil, lo, hi)
			if !ok {
				continue
			}
			for i, x := range got {
				if uint64(x) < lo || uint64(x) >= hi || (i > 0 && x <= got[i-1]) {
					t.Fatalf("damaged bitmap gave %d at %d of [%d, %d)", x, i, lo, hi)
				}
			}
		}
	}
}

// FuzzRoaringView: no bytes make parse, appendRange or rank fault.
func FuzzRoaringView(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 4 {
		b, _ := randomBitmap(rng, i%2 == 0).ToBytes()
		f.Add(b, uint32(0), uint32(1<<20))
	}
	f.Fuzz(func(t *testing.T, b []byte, lo, span uint32) {
		var v roaringView
		if v.parse(b) {
			v.appendRange(nil, uint64(lo), uint64(lo)+uint64(span))
			v.fillRange(make([]uint32, span%5000), uint64(lo), uint64(lo)+uint64(span))
			v.rank(uint64(lo), uint32(min(uint64(lo)+uint64(span), 0xffffffff)))
		}
	})
}

// BenchmarkRoaringRange reads a block of about 1,024 documents from a bitmap of each
// density (an array container at 2 %, a bitmap container at 20 %), growing a slice
// (appendRange) and into one sized beforehand (fillRange, as decodeDirect reads).
func BenchmarkRoaringRange(b *testing.B) {
	for _, density := range []int{50, 5} { // one document in density
		rng := rand.New(rand.NewPCG(1, 2))
		bm := roaring.New()
		for x := range uint32(1 << 20) {
			if rng.IntN(density) == 0 {
				bm.Add(x)
			}
		}
		buf, err := bm.ToBytes()
		if err != nil {
			b.Fatal(err)
		}
		var v roaringView
		if !v.parse(buf) {
			b.Fatal("not parsed")
		}
		span := uint64(1024 * density)
		lo := uint64(3 << 16)
		want, _ := v.appendRange(nil, lo, lo+span)
		dst := make([]uint32, len(want))
		b.Run(fmt.Sprintf("1in%d/append", density), func(b *testing.B) {
			for b.Loop() {
				v.appendRange(dst[:0], lo, lo+span)
			}
		})
		b.Run(fmt.Sprintf("1in%d/fill", density), func(b *testing.B) {
			for b.Loop() {
				if n, ok := v.fillRange(dst, lo, lo+span); !ok || n != len(want) {
					b.Fatal(n, ok)
				}
			}
		})
	}
}
