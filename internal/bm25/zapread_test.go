package bm25

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	segment "github.com/blevesearch/scorch_segment_api/v2"
	zap "github.com/blevesearch/zapx/v16"
)

// anyTerm is an automaton that accepts every term (a whole-dictionary iterator).
type anyTerm struct{}

func (anyTerm) Start() int               { return 0 }
func (anyTerm) IsMatch(int) bool         { return true }
func (anyTerm) CanMatch(int) bool        { return true }
func (anyTerm) WillAlwaysMatch(int) bool { return true }
func (anyTerm) Accept(int, byte) int     { return 0 }

// TestZapBlocksDirect holds the direct block reader (bm25_zapread.go) to zap's iterator:
// for every term of every segment of an on-disk index whose lists have many blocks (chunks
// of 16 documents), every block read straight from the segment's bytes has the documents,
// frequencies and lengths zap's iterator gives, read in order, skipping blocks, and going
// back. A chunk table cut short, or a block whose count is off, is errBlockMeta, and the
// failed decode gives its arena slot back.
func TestZapBlocksDirect(t *testing.T) {
	withBodyInZap(t) // (the zap reader of the earlier layout)
	if !zapFields.ok {
		t.Fatal("zap's PostingsList fields were not found: the direct reader is off")
	}
	withChunkMode(t, 16)
	b, _ := openRandomOnDisk(t, 3000)
	r := snapshotReader(t, b)
	defer r.Close()
	snap := r.(*scorch.IndexSnapshot)
	var direct, blocks, lookups, short int
	for _, ss := range snap.Segments() {
		dict, err := ss.Segment().Dictionary(bodyField)
		if err != nil {
			t.Fatal(err)
		}
		it := dict.AutomatonIterator(anyTerm{}, nil, nil)
		for e, err := it.Next(); e != nil || err != nil; e, err = it.Next() {
			if err != nil {
				t.Fatal(err)
			}
			term := []byte(e.Term)
			var acc frontAcc
			ref := &blockSource{next: -1}
			tb, want, err := buildBlocksIter(dict, term, ref, &acc, true) // zap's iterator, every block
			if err != nil {
				t.Fatalf("%q: %v", term, err)
			}
			if tb.cs == 0 {
				continue
			}
			src := &blockSource{next: -1}
			// in order, then every other block, then backwards
			var order []int
			for i := range tb.count {
				order = append(order, i)
			}
			for i := 0; i < len(tb.count); i += 2 {
				order = append(order, i)
			}
			for i := len(tb.count) - 1; i >= 0; i-- {
				order = append(order, i)
			}
			for _, i := range order {
				if tb.count[i] == 0 {
					continue
				}
				got, err := src.decode(dict, term, tb, i)
				if err != nil {
					t.Fatalf("%q block %d: %v", term, i, err)
				}
				if !src.direct || !src.z.docsOK {
					t.Fatalf("%q: not read directly (list %v, bitmap %v)", term, src.direct, src.z.docsOK)
				}
				w := want[i]
				if got.count() != len(w.docs) {
					t.Fatalf("%q block %d: %d postings, want %d", term, i, got.count(), len(w.docs))
				}
				short += b2i(got.d16 != nil)
				for j := range w.docs {
					gf, gdl := got.at(j)
					wf, wdl := w.at(j)
					if got.doc(j) != w.docs[j] || gf != wf || gdl != wdl {
						t.Fatalf("%q block %d posting %d: (%d, %d, %d), want (%d, %d, %d)", term, i, j, got.doc(j), gf, gdl, w.docs[j], wf, wdl)
					}
				}
				// Every document of the block's span, looked up alone, as decoded.
				// One state for the block (each lookup counting on from the last), and a
				// fresh one for every other document.
				lo, hi := tb.span(i)
				var st lookupState
				for d, j := lo, 0; d < min(hi, lo+600); d++ {
					fresh := lookupState{}
					sp := &st
					if d%2 == 1 {
						sp = &fresh
					}
					f, dl, present, err := lookupDirect(&src.z, tb, i, uint32(d), sp)
					if err != nil {
						t.Fatalf("%q block %d doc %d: lookup: %v", term, i, d, err)
					}
					held := j < len(w.docs) && w.docs[j] == uint32(d)
					if present != held {
						t.Fatalf("%q block %d doc %d: looked up present %v, decoded %v", term, i, d, present, held)
					}
					if held {
						if wf, wdl := w.at(j); f != wf || dl != wdl {
							t.Fatalf("%q block %d doc %d: looked up (%d, %d), decoded (%d, %d)", term, i, d, f, dl, wf, wdl)
						}
						j++
						lookups++
					}
				}
				blocks++
				dropBlock(got)
			}
			direct++
			_, inUse := blockArena.stats()
			// Damage: a count one too high, then a chunk table missing its last chunk.
			last := len(tb.count) - 1
			for tb.count[last] == 0 {
				last--
			}
			tb.count[last]++
			if _, err := (&blockSource{next: -1}).decode(dict, term, tb, last); !errors.Is(err, errBlockMeta) {
				t.Fatalf("%q: a count one too high: %v", term, err)
			}
			tb.count[last]--
			var z zapList
			pl, err := dict.PostingsList(term, nil, nil)
			if err != nil || !zapListOf(pl, &z) {
				t.Fatalf("%q: %v", term, err)
			}
			// The lookups above checked the chunk's uvarint ends once for the block.
			if tb.probed[last].Load()&chunkChecked == 0 {
				t.Fatalf("%q: block %d looked up, its chunk not marked checked", term, last)
			}
			// A chunk whose uvarint ends are not two a posting (two merged into one) or
			// that does not end one fails the lookup's count: the caller decodes instead.
			// (The damaged bytes below are a copy: the block is marked unchecked, as a
			// block never looked up is.)
			tb.probed[last].Store(0)
			for _, mut := range []func(c []byte){
				func(c []byte) { c[0] |= 0x80 },
				func(c []byte) { c[len(c)-1] |= 0x80 },
			} {
				c, _ := z.chunk(uint64(last))
				start := z.data + z.ends[last] - uint64(len(c))
				z2 := z
				z2.mem = slices.Clone(z.mem)
				mut(z2.mem[start : start+uint64(len(c))])
				lo, _ := tb.span(last)
				if _, _, _, err := lookupDirect(&z2, tb, last, uint32(lo), &lookupState{}); !errors.Is(err, errBlockMeta) {
					t.Fatalf("%q: a damaged chunk looked up: %v", term, err)
				}
			}
			z.ends = z.ends[:last]
			if _, err := decodeDirect(&z, z.bm.Iterator(), tb, last); !errors.Is(err, errBlockMeta) {
				t.Fatalf("%q: a chunk table cut short: %v", term, err)
			}
			if _, after := blockArena.stats(); after != inUse {
				t.Fatalf("%q: failed decodes kept %d bytes of arena slots", term, after-inUse)
			}
		}
	}
	if direct < 10 || blocks < 100 || lookups < 1000 || short < 100 {
		t.Fatalf("%d lists, %d blocks read directly (%d with 16-bit documents), %d postings looked up: too few to tell", direct, blocks, short, lookups)
	}
	t.Logf("%d lists, %d blocks read directly, %d postings looked up alone", direct, blocks, lookups)
}

// TestVarintEnds holds varintEnds and skipVarints to a byte-at-a-time count, across the
// eight-byte words they read and the bytes after the last word.
func TestVarintEnds(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for range 300 {
		var b []byte
		for range rng.IntN(40) {
			b = binary.AppendUvarint(b, rng.Uint64N(1<<uint(1+rng.IntN(35))))
		}
		var ends []int // offsets just past each uvarint end
		for p, c := range b {
			if c < 0x80 {
				ends = append(ends, p+1)
			}
		}
		if got := varintEnds(b); got != len(ends) {
			t.Fatalf("%x: %d ends, want %d", b, got, len(ends))
		}
		for n := 1; n <= len(ends)+1; n++ {
			want := -1
			if n <= len(ends) {
				want = ends[n-1]
			}
			if got := skipVarints(b, n); got != want {
				t.Fatalf("%x: past end %d at %d, want %d", b, n, got, want)
			}
		}
	}
}

// TestDominatedOrdered holds dominatedOrdered, and smallFront's table, to dominated on every ordered frontier of up
// to four pairs over small values and every posting over those values, and frontOrdered to
// its definition.
func TestDominatedOrdered(t *testing.T) {
	var pairs []fl
	for f := uint32(0); f < 5; f++ {
		for dl := uint32(0); dl < 5; dl++ {
			pairs = append(pairs, fl{f: f, dl: dl})
		}
	}
	var walk func(front []fl)
	checked := 0
	walk = func(front []fl) {
		if frontOrdered(front) {
			small := smallFront(front)
			for _, p := range pairs {
				want := dominated(front, p.f, p.dl)
				if got := dominatedOrdered(front, p.f, p.dl); got != want {
					t.Fatalf("front %v, posting %v: %v, want %v", front, p, got, want)
				}
				if got := p.dl >= small[p.f]; got != want {
					t.Fatalf("front %v, posting %v: table says %v, want %v", front, p, got, want)
				}
				checked++
			}
		}
		if len(front) == 4 {
			return
		}
		for _, p := range pairs {
			walk(append(front[:len(front):len(front)], p))
		}
	}
	walk(nil)
	if checked == 0 {
		t.Fatal("nothing checked")
	}
	for _, bad := range [][]fl{{{2, 5}, {2, 4}}, {{3, 2}, {2, 2}}, {{1, 1}, {2, 0}}} {
		if frontOrdered(bad) {
			t.Fatalf("%v ordered", bad)
		}
	}
}

// TestDecodeShapes reads chunks of every posting shape by decodeDirect and lookupDirect
// against the values written: one- and two-byte frequencies, with and without the
// locations bit, lengths of one, two and more bytes, shapes mixed in one chunk (the
// four-byte fast path hands over to the general loop at the first other shape) and
// postings at the chunk's end.
func TestDecodeShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	var narrowed, givenUp int
	defer func() {
		if !t.Failed() && (narrowed < 20 || givenUp < 5) {
			t.Errorf("%d blocks decoded narrow, %d given up for a long length: too few to tell", narrowed, givenUp)
		}
	}()
	lengths := [][2]uint32{{0, 128}, {128, 1 << 14}, {1 << 14, 1 << 21}, {1 << 21, math.MaxUint32 - 1}}
	for iter := range 400 {
		n := 1 + rng.IntN(300)
		shortOnly := iter%3 == 0  // only the fast path's shapes
		narrowOnly := iter%4 == 0 // (with shortOnly) frequencies a narrow block holds
		var docs []uint32
		for d := uint32(rng.IntN(5)); len(docs) < n; d += 1 + uint32(rng.IntN(9)) {
			docs = append(docs, d)
		}
		type post struct{ f, dl uint32 }
		want := make([]post, n)
		var chunk []byte
		for j := range want {
			f := 1 + uint32(rng.IntN(63))
			if narrowOnly {
				f = 1 + uint32(rng.IntN(narrowFreqs-1))
			}
			if !shortOnly && rng.IntN(10) == 0 {
				f = 64 + uint32(rng.IntN(1000))
			}
			r := lengths[rng.IntN(2)]
			if narrowOnly && rng.IntN(n) != 0 {
				r = [2]uint32{0, narrowLen} // (now and then one longer: the narrow decode is given up)
			}
			if !shortOnly && rng.IntN(10) == 0 {
				r = lengths[2+rng.IntN(2)]
			}
			dl := r[0] + uint32(rng.Uint64N(uint64(r[1]-r[0])))
			if narrowOnly && j == n-1 && rng.IntN(3) == 0 {
				dl = narrowLen + uint32(rng.IntN(1<<14-narrowLen)) // too long, in the last bytes (the general loop)
			}
			want[j] = post{f, dl}
			chunk = binary.AppendUvarint(chunk, uint64(f)<<1|uint64(rng.IntN(2)))
			chunk = binary.AppendUvarint(chunk, uint64(dl))
		}
		bm, err := roaring.BitmapOf(docs...).ToBytes()
		if err != nil {
			t.Fatal(err)
		}
		z := zapList{mem: chunk, ends: []uint64{uint64(len(chunk))}}
		if z.docsOK = z.docs.parse(bm); !z.docsOK {
			t.Fatal("bitmap not parsed")
		}
		tb := &termBlocks{cs: 1 << 20, total: uint64(n), count: []uint32{uint32(n)}, fstart: []uint32{0, 1}, front: []fl{{f: math.MaxUint32, dl: 0}}}
		tb.makeSlots()
		// The postings' own frontier (as a metadata pass writes it): a block whose
		// frequencies are all below narrowFreqs is decoded narrow, unless a length is
		// narrowLen or more.
		var acc frontAcc
		maxF, maxDL := uint32(0), uint32(0)
		for _, w := range want {
			acc.add(w.f, w.dl)
			maxF, maxDL = max(maxF, w.f), max(maxDL, w.dl)
		}
		cs := uint64(1 << 20)
		if iter%2 == 0 {
			cs = 1 << 16 // a narrow block's documents in 16 bits
		}
		own := &termBlocks{cs: cs, total: uint64(n), count: []uint32{uint32(n)}, front: acc.flush(nil)}
		own.fstart = []uint32{0, uint32(len(own.front))}
		nb, err := decodeDirect(&z, nil, own, 0)
		if err != nil {
			t.Fatalf("chunk %d, its own frontier: %v", iter, err)
		}
		if isNarrow := nb.narrow != nil; isNarrow != (maxF < narrowFreqs && maxDL < narrowLen) {
			t.Fatalf("chunk %d (frequencies to %d, lengths to %d): narrow %v", iter, maxF, maxDL, isNarrow)
		}
		if (nb.d16 != nil) != (nb.narrow != nil && cs <= 1<<16) {
			t.Fatalf("chunk %d: narrow %v, 16-bit documents %v, blocks of %d documents", iter, nb.narrow != nil, nb.d16 != nil, cs)
		}
		narrowed += b2i(nb.narrow != nil)
		givenUp += b2i(maxF < narrowFreqs && maxDL >= narrowLen)
		for j, w := range want {
			if f, dl := nb.at(j); nb.doc(j) != docs[j] || f != w.f || dl != w.dl {
				t.Fatalf("chunk %d posting %d (own frontier): (%d, %d, %d), want (%d, %d, %d)", iter, j, nb.doc(j), f, dl, docs[j], w.f, w.dl)
			}
		}
		dropBlock(nb)
		if maxF > 1 && maxF < narrowFreqs { // a frontier one below the largest frequency: refused narrow too
			bad := &termBlocks{cs: 1 << 20, total: uint64(n), count: []uint32{uint32(n)}, fstart: []uint32{0, 1}, front: []fl{{f: maxF - 1, dl: 0}}}
			if _, err := decodeDirect(&z, nil, bad, 0); !errors.Is(err, errBlockMeta) {
				t.Fatalf("chunk %d: a frontier below frequency %d decoded narrow: %v", iter, maxF, err)
			}
		}
		blk, err := decodeDirect(&z, nil, tb, 0)
		if err != nil {
			t.Fatalf("chunk %d: %v", iter, err)
		}
		var st lookupState
		for j, w := range want {
			if f, dl := blk.at(j); blk.doc(j) != docs[j] || f != w.f || dl != w.dl {
				t.Fatalf("chunk %d posting %d: (%d, %d, %d), want (%d, %d, %d)", iter, j, blk.doc(j), f, dl, docs[j], w.f, w.dl)
			}
			// in rising order, counting on; and each again from a state past it (a lower
			// document starts again from the block's first)
			for _, sp := range []*lookupState{&st, {checked: true, d: uint64(docs[n-1]) + 1, pos: n, off: len(chunk)}} {
				f, dl, present, err := lookupDirect(&z, tb, 0, docs[j], sp)
				if err != nil || !present || f != w.f || dl != w.dl {
					t.Fatalf("chunk %d doc %d looked up: (%d, %d) present %v, %v; want (%d, %d)", iter, docs[j], f, dl, present, err, w.f, w.dl)
				}
			}
			if _, _, present, err := lookupDirect(&z, tb, 0, docs[j]+1, &st); err != nil || present != (j+1 < n && docs[j+1] == docs[j]+1) {
				t.Fatalf("chunk %d doc %d looked up: present %v, %v", iter, docs[j]+1, present, err)
			}
		}
		dropBlock(blk)
		// A frontier that does not cover the largest frequency fails both readers.
		tb.front = []fl{{f: maxF - 1, dl: 0}}
		if maxF > 1 {
			if _, err := decodeDirect(&z, nil, tb, 0); !errors.Is(err, errBlockMeta) {
				t.Fatalf("chunk %d: a frontier below frequency %d decoded: %v", iter, maxF, err)
			}
		}
	}
}

// TestBlockSearch holds postBlock.search to a linear scan, over blocks of both forms (the
// documents in 32 bits, and in 16 bits above a base), from every start, for documents
// below, inside, between and past the block's.
func TestBlockSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 12))
	for iter := range 200 {
		base := uint32(rng.IntN(1 << 20))
		var docs []uint32
		for d := base + uint32(rng.IntN(3)); len(docs) < rng.IntN(300) && d < base+1<<16; d += 1 + uint32(rng.IntN(1+rng.IntN(600))) {
			docs = append(docs, d)
		}
		n := len(docs)
		wide := &postBlock{docs: docs}
		short := newNarrowBlock(n, true)
		short.base = base
		for j, d := range docs {
			short.d16[j] = uint16(d - base)
		}
		for _, p := range []*postBlock{wide, short} {
			if p.count() != n {
				t.Fatalf("block %d: count %d, want %d", iter, p.count(), n)
			}
			for j := range docs {
				if p.doc(j) != docs[j] {
					t.Fatalf("block %d: doc %d is %d, want %d", iter, j, p.doc(j), docs[j])
				}
			}
			targets := []uint32{0, base, base + 1<<16, base + 1<<16 + 5, math.MaxUint32}
			for range 30 {
				targets = append(targets, base+uint32(rng.IntN(1<<16+10)))
			}
			for _, d := range docs[:min(n, 5)] {
				targets = append(targets, d, d+1, d-1)
			}
			for _, d := range targets {
				for from := range n + 1 {
					want := from
					for want < n && docs[want] < d {
						want++
					}
					if got := p.search(from, d); got != want {
						t.Fatalf("block %d (16-bit %v): search from %d for %d = %d, want %d", iter, p.d16 != nil, from, d, got, want)
					}
				}
			}
		}
		dropBlock(short)
	}
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestBuildBlocksDirect: block metadata read straight from the segment's bytes equals what
// zap's iterator gives, list by list (counts, frontiers, kept blocks), over every term of
// an index of chunks of 16 documents and of one of zap's default chunking; a list whose
// bytes disagree with its bitmap is refused (the caller falls back to the iterator).
func TestBuildBlocksDirect(t *testing.T) {
	withBodyInZap(t) // (the zap reader of the earlier layout)
	for _, mode := range []uint32{16, zap.DefaultChunkMode} {
		t.Run(fmt.Sprint("chunkmode=", mode), func(t *testing.T) {
			withChunkMode(t, mode)
			b, _ := openRandomOnDisk(t, 3000)
			r := snapshotReader(t, b)
			defer r.Close()
			var direct, multi int
			_, before := blockArena.stats()
			eachBodyTerm(t, r.(*scorch.IndexSnapshot), func(dict segment.TermDictionary, term []byte) {
				{
					for _, keep := range []bool{false, true} {
						var acc, acc2 frontAcc
						want, wblks, err := buildBlocksIter(dict, term, &blockSource{next: -1}, &acc, keep)
						if err != nil {
							t.Fatalf("%q: %v", term, err)
						}
						pl, err := dict.PostingsList(term, nil, nil)
						if err != nil {
							t.Fatal(err)
						}
						got, gblks, ok := buildBlocksDirect(pl, &blockSource{next: -1}, &acc2, keep)
						if !ok {
							if want.cs != 0 && zapListOf(pl, &zapList{}) {
								t.Fatalf("%q: a plain list of %d blocks not read directly", term, len(want.count))
							}
							continue
						}
						direct++
						if len(got.count) > 1 {
							multi++
						}
						if got.cs != want.cs || got.total != want.total || !slices.Equal(got.count, want.count) ||
							!slices.Equal(got.fstart, want.fstart) || !slices.Equal(got.front, want.front) {
							t.Fatalf("%q keep %v: direct cs %d total %d count %v front %v,\n iterator cs %d total %d count %v front %v", term, keep,
								got.cs, got.total, got.count, got.front, want.cs, want.total, want.count, want.front)
						}
						if keep {
							if len(gblks) != len(wblks) {
								t.Fatalf("%q: %d blocks kept, iterator %d", term, len(gblks), len(wblks))
							}
							for i := range wblks {
								g, w := gblks[i], wblks[i]
								if (g == nil) != (w == nil) || (g != nil && (!slices.Equal(g.docs, w.docs) || !slices.Equal(g.packed, w.packed))) {
									t.Fatalf("%q block %d: direct %+v, iterator %+v", term, i, g, w)
								}
								dropBlock(g)
							}
						}
					}
				}
			})
			if _, after := blockArena.stats(); after != before {
				t.Fatalf("kept blocks hold %d bytes of arena slots after each was handed back", after-before)
			}
			if direct < 100 || (mode == 16 && multi < 20) {
				t.Fatalf("only %d lists read directly (%d of several blocks)", direct, multi)
			}
			t.Logf("%d lists read directly, %d of several blocks", direct, multi)
		})
	}
}

// eachBodyTerm calls fn with every term of the body field of every segment of snap.
func eachBodyTerm(t *testing.T, snap *scorch.IndexSnapshot, fn func(dict segment.TermDictionary, term []byte)) {
	t.Helper()
	for _, ss := range snap.Segments() {
		dict, err := ss.Segment().Dictionary(bodyField)
		if err != nil {
			t.Fatal(err)
		}
		it := dict.AutomatonIterator(anyTerm{}, nil, nil)
		for e, err := it.Next(); e != nil || err != nil; e, err = it.Next() {
			if err != nil {
				t.Fatal(err)
			}
			fn(dict, []byte(e.Term))
		}
	}
}
