package hybrid

import (
	"errors"
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
	var direct, blocks int
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
			z.ends = z.ends[:last]
			if _, err := decodeDirect(&z, z.bm.Iterator(), tb, last); !errors.Is(err, errBlockMeta) {
				t.Fatalf("%q: a chunk table cut short: %v", term, err)
			}
			if _, after := blockArena.stats(); after != inUse {
				t.Fatalf("%q: failed decodes kept %d bytes of arena slots", term, after-inUse)
			}
		}
	}
	if direct < 10 || blocks < 100 {
		t.Fatalf("%d lists, %d blocks read directly: too few to tell", direct, blocks)
	}
	t.Logf("%d lists, %d blocks read directly", direct, blocks)
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
