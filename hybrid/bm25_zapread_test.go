package hybrid

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/blevesearch/bleve/v2/index/scorch"
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
	if !zapFields.ok {
		t.Fatal("zap's PostingsList fields were not found: the direct reader is off")
	}
	withChunkMode(t, 16)
	b, _ := openRandomOnDisk(t, 3000)
	r := snapshotReader(t, b)
	defer r.Close()
	snap := r.(*scorch.IndexSnapshot)
	var direct, blocks, lookups int
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
			tb, want, err := buildBlocks(dict, term, ref, &acc, true) // zap's iterator, every block
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
				if len(got.docs) != len(w.docs) {
					t.Fatalf("%q block %d: %d postings, want %d", term, i, len(got.docs), len(w.docs))
				}
				for j := range w.docs {
					gf, gdl := got.at(j)
					wf, wdl := w.at(j)
					if got.docs[j] != w.docs[j] || gf != wf || gdl != wdl {
						t.Fatalf("%q block %d posting %d: (%d, %d, %d), want (%d, %d, %d)", term, i, j, got.docs[j], gf, gdl, w.docs[j], wf, wdl)
					}
				}
				// Every document of the block's span, looked up alone, as decoded.
				lo, hi := tb.span(i)
				for d, j := lo, 0; d < min(hi, lo+600); d++ {
					f, dl, present, err := lookupDirect(&src.z, tb, i, uint32(d), j%2 == 1)
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
			// A chunk whose uvarint ends are not two a posting (two merged into one) or
			// that does not end one fails the lookup's count: the caller decodes instead.
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
				if _, _, _, err := lookupDirect(&z2, tb, last, uint32(lo), false); !errors.Is(err, errBlockMeta) {
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
	if direct < 10 || blocks < 100 || lookups < 1000 {
		t.Fatalf("%d lists, %d blocks read directly, %d postings looked up: too few to tell", direct, blocks, lookups)
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
