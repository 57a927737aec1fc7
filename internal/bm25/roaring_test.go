package bm25

import (
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
			v.rank(uint64(lo), uint32(min(uint64(lo)+uint64(span), 0xffffffff)))
		}
	})
}
