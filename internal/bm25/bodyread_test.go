package bm25

import (
	"errors"
	"math"
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

// TestBodyBlocks holds the evaluator's reading of body files (bodyread.go) to Bleve's
// segment interfaces over the same files (package postfile's adapter, a separate reader):
// for every term of every segment of an on-disk index whose lists have many blocks
// (chunks of 16 documents), each block decoded has the documents, frequencies and lengths
// the iterator gives, in order and out of order; each posting looked up alone (and each
// document just past one, which is not in the list) is found or not as the iterator says,
// in rising and in random order. A block whose metadata count is off is errBlockMeta.
func TestBodyBlocks(t *testing.T) {
	withChunkMode(t, 16)
	b, _ := openRandomOnDisk(t, 3000)
	rng := rand.New(rand.NewPCG(4, 4))
	lists, blocks, lookups := 0, 0, 0
	err := b.withSnapshot(func(snap *scorch.IndexSnapshot) error {
		for _, ss := range snap.Segments() {
			bs, ok := ss.Segment().(bodySegment)
			if !ok {
				t.Fatalf("segment %T has no body file", ss.Segment())
			}
			r := bs.bodyPostings()
			dict := r.Dictionary()
			it := dict.AutomatonIterator(anyTerm{}, nil, nil)
			for {
				de, err := it.Next()
				if err != nil {
					t.Fatal(err)
				}
				if de == nil {
					break
				}
				term := []byte(de.Term)
				type post struct{ d, f, dl uint32 }
				var ref []post
				pl, err := dict.PostingsList(term, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				pi := pl.Iterator(true, true, false, nil)
				for {
					p, err := pi.Next()
					if err != nil {
						t.Fatal(err)
					}
					if p == nil {
						break
					}
					ref = append(ref, post{uint32(p.Number()), uint32(p.Frequency()), uint32(p.(normer).NormUint64())})
				}
				src := blockSource{pf: &pfSource{r: r, chunk: -1, blk: -1}}
				tb, err := buildBlocks(&src, term)
				if err != nil {
					t.Fatalf("%q: %v", term, err)
				}
				if tb.total != uint64(len(ref)) {
					t.Fatalf("%q: %d postings, the iterator gives %d", term, tb.total, len(ref))
				}
				lists++
				order := rng.Perm(len(tb.count))
				if rng.IntN(2) == 0 {
					slices.Sort(order)
				}
				for _, i := range order {
					blk, err := src.decode(tb, i)
					if err != nil {
						t.Fatalf("%q block %d: %v", term, i, err)
					}
					lo, hi := tb.span(i)
					var want []post
					for _, p := range ref {
						if uint64(p.d) >= lo && uint64(p.d) < hi {
							want = append(want, p)
						}
					}
					if blk.count() != len(want) {
						t.Fatalf("%q block %d: %d postings, want %d", term, i, blk.count(), len(want))
					}
					for j, p := range want {
						f, dl := blk.at(j)
						if blk.doc(j) != p.d || f != p.f || dl != p.dl {
							t.Fatalf("%q block %d posting %d: (%d %d %d), want %v", term, i, j, blk.doc(j), f, dl, p)
						}
					}
					dropBlock(blk)
					blocks++
				}
				// Lookups, rising then shuffled; documents just past a posting too.
				probes := make([]uint32, 0, 2*len(ref))
				in := map[uint32]post{}
				for _, p := range ref {
					probes = append(probes, p.d, p.d+1)
					in[p.d] = p
				}
				for pass := range 2 {
					if pass == 1 {
						rng.Shuffle(len(probes), func(i, j int) { probes[i], probes[j] = probes[j], probes[i] })
					}
					for _, d := range probes {
						i := tb.blockOf(uint64(d))
						if i >= len(tb.count) {
							continue
						}
						f, dl, present, err := src.lookup(tb, i, d)
						if err != nil {
							t.Fatalf("%q lookup %d: %v", term, d, err)
						}
						p, want := in[d]
						if present != want || (want && (f != p.f || dl != p.dl)) {
							t.Fatalf("%q lookup %d: (%d %d %v), want %v %v", term, d, f, dl, present, p, want)
						}
						lookups++
					}
				}
				// Metadata that disagrees with the file.
				if n := tb.count[0]; n > 0 {
					tb.count[0]++
					src.pf.chunk = -1
					if _, err := src.decode(tb, 0); !errors.Is(err, errBlockMeta) {
						t.Fatalf("%q: a count off by one decoded: %v", term, err)
					}
					tb.count[0] = n
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if lists < 50 || blocks < 1000 || lookups < 1000 {
		t.Fatalf("%d lists, %d blocks, %d lookups: too few to tell", lists, blocks, lookups)
	}
	_ = math.MaxUint32
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
