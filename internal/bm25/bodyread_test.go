package bm25

import (
	"errors"
	"fmt"
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
					lens := rng.IntN(2) == 0
					blk, err := src.decode(tb, i, lens)
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
					if blk.lensRead.Load() != (lens || blk.wide != nil) {
						t.Fatalf("%q block %d decoded with lengths %v: lensRead %v", term, i, lens, blk.lensRead.Load())
					}
					for j, p := range want {
						// A length is known once read (decode with lens, or setLen) where
						// the block's form holds it, and not before.
						f, dl := blk.at(j)
						holds := blk.wide != nil || (blk.narrow != nil && p.dl < narrowLen) || (blk.narrow == nil && p.dl < 1<<16)
						read := lens || blk.wide != nil
						if blk.doc(j) != p.d || f != p.f || (read && holds && dl != p.dl) || ((!read || !holds) && dl != 0) {
							t.Fatalf("%q block %d posting %d (lengths %v): (%d %d %d), want %v", term, i, j, lens, blk.doc(j), f, dl, p)
						}
						if got := r.Length(p.d); got != p.dl {
							t.Fatalf("%q: document %d's length %d, the iterator's norm %d", term, p.d, got, p.dl)
						}
						blk.setLen(j, p.dl)
						blk.setLen(j, p.dl) // (recorded twice: the same bits)
						f, dl = blk.at(j)
						if f != p.f || (holds && dl != p.dl) || (!holds && dl != 0) {
							t.Fatalf("%q block %d posting %d: (%d %d) after setLen(%d), want %v", term, i, j, f, dl, p.dl, p)
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
						dl := uint32(0)
						if int(d) < r.NumDocs() {
							dl = r.Length(d)
						}
						f, present, err := src.lookup(tb, i, d, dl)
						if err != nil {
							t.Fatalf("%q lookup %d: %v", term, d, err)
						}
						p, want := in[d]
						if present != want || (want && f != p.f) {
							t.Fatalf("%q lookup %d: (%d %v), want %v %v", term, d, f, present, p, want)
						}
						if want {
							// A length under what the block's frontier allows its
							// frequency is a disagreement.
							if _, _, err := src.lookup(tb, i, d, 0); !errors.Is(err, errBlockMeta) {
								t.Fatalf("%q lookup %d of length 0: %v", term, d, err)
							}
						}
						lookups++
					}
				}
				// Metadata that disagrees with the file.
				if n := tb.count[0]; n > 0 {
					tb.count[0]++
					src.pf.chunk = -1
					if _, err := src.decode(tb, 0, rng.IntN(2) == 0); !errors.Is(err, errBlockMeta) {
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

// TestTermCount holds termCount, which reads a term's document frequency from its block
// metadata in a segment without deletions (reading the metadata into the cache the first
// time), to the count of the segment's postings list, before and after deletions (then the
// list counts, without the deleted documents), for every term of every segment.
func TestTermCount(t *testing.T) {
	withChunkMode(t, 16)
	b, _ := openRandomOnDisk(t, 2000)
	check := func(stage string, wantDeleted bool) {
		t.Helper()
		terms, fromMeta := 0, 0
		err := b.withSnapshot(func(snap *scorch.IndexSnapshot) error {
			segs := snap.Segments()
			e := new(evalState)
			if err := e.bind(snap, segs); err != nil {
				return err
			}
			deleted := false
			for si, ss := range segs {
				c := e.cur[si]
				del := ss.Deleted()
				deleted = deleted || (del != nil && !del.IsEmpty())
				it := c.dict.AutomatonIterator(anyTerm{}, nil, nil)
				for {
					de, err := it.Next()
					if err != nil {
						return err
					}
					if de == nil {
						break
					}
					pl, err := c.dict.PostingsList([]byte(de.Term), del, nil)
					if err != nil {
						return err
					}
					want := pl.Count()
					for pass := range 2 { // (the second from the cache)
						var tc termCursor
						got, err := e.termCount(b.postings, ss, c, &tc, de.Term)
						if err != nil {
							return fmt.Errorf("%s: %q: %v", stage, de.Term, err)
						}
						if got != want {
							return fmt.Errorf("%s: %q pass %d: df %d, the postings list counts %d", stage, de.Term, pass, got, want)
						}
						segDel := del != nil && !del.IsEmpty()
						if (tc.pl == nil) == segDel {
							return fmt.Errorf("%s: %q: counted from the metadata %v in a segment with deletions %v", stage, de.Term, tc.pl == nil, segDel)
						}
						if tc.pl == nil {
							fromMeta++
						}
					}
					terms++
				}
			}
			if deleted != wantDeleted {
				return fmt.Errorf("%s: deletions %v, want %v", stage, deleted, wantDeleted)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if terms < 50 || (fromMeta == 0) != wantDeleted {
			t.Fatalf("%s: %d terms, %d counts from the metadata", stage, terms, fromMeta)
		}
	}
	check("no deletions", false)
	var dels []string
	for i := 0; i < 2000; i += 7 {
		dels = append(dels, fmt.Sprintf("d%04d", i))
	}
	if err := b.Apply(nil, dels, 2); err != nil {
		t.Fatal(err)
	}
	check("deletions", true)
}

// TestLowerBound: lowerBound and gallop (from any start at or before the answer) find
// the first document at or after d, for every d around every document of rising lists of
// 0 to 130 documents.
func TestLowerBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := range 131 {
		docs := make([]uint32, n)
		d := uint32(rng.IntN(3))
		for i := range docs {
			d += 1 + uint32(rng.IntN(4))
			docs[i] = d
		}
		for x := uint32(0); x <= d+2; x++ {
			want, _ := slices.BinarySearch(docs, x)
			if got := lowerBound(docs, x); got != want {
				t.Fatalf("n %d, d %d: lowerBound %d, want %d", n, x, got, want)
			}
			for from := range want + 1 {
				if from < n {
					if got := gallop(docs, from, x); got != want {
						t.Fatalf("n %d, d %d, from %d: gallop %d, want %d", n, x, from, got, want)
					}
				}
			}
		}
	}
}
