package bm25

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// TestArenaClasses: a slot holds what was asked and wastes at most a fifth of its words;
// a released slot is the next one its class hands out; blocks too large for the arena, and
// slots it never handed out, are refused.
func TestArenaClasses(t *testing.T) {
	a := newSlabArena()
	for _, n := range []int{1, 63, 64, 65, 80, 81, 127, 128, 129, 1000, 1024, 1025, 4097, arenaMaxWords - 1, arenaMaxWords} {
		s := a.alloc(n)
		if len(s) < n || cap(s) != len(s) {
			t.Fatalf("alloc(%d): len %d cap %d", n, len(s), cap(s))
		}
		if n >= arenaMinWords && (len(s)-n)*5 > len(s) {
			t.Fatalf("alloc(%d): a slot of %d words wastes more than a fifth", n, len(s))
		}
		s[0], s[len(s)-1] = 7, 9 // writable to its last word
		a.release(s)
		if again := a.alloc(n); &again[0] != &s[0] {
			t.Fatalf("alloc(%d) after release: a new slot, not the freed one", n)
		} else {
			a.release(again)
		}
	}
	if s := a.alloc(arenaMaxWords + 1); s != nil {
		t.Fatalf("alloc past the largest class: %d words", len(s))
	}
	if mapped, inUse := a.stats(); inUse != 0 || mapped == 0 {
		t.Fatalf("after releasing everything: mapped %d, in use %d", mapped, inUse)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("releasing a heap slice did not panic")
		}
	}()
	a.release(make([]uint32, 70))
}

// TestArenaSlabs: a class's slots are cut from a small first slab, then from large ones,
// each slot its own words (no two overlap, across slabs), and handed-back slots are reused
// before any new one is cut.
func TestArenaSlabs(t *testing.T) {
	a := newSlabArena()
	const n = 2048 // 8 KiB slots: 32 in the first slab, 512 in each later one
	first := a.alloc(n)
	if mapped, _ := a.stats(); mapped != arenaFirstSlab {
		t.Fatalf("one slot mapped %d bytes, want a first slab of %d", mapped, arenaFirstSlab)
	}
	slots := [][]uint32{first}
	for range 540 { // past the first slab and into the second
		slots = append(slots, a.alloc(n))
	}
	if mapped, inUse := a.stats(); mapped != arenaFirstSlab+arenaSlab || inUse != int64(4*n*len(slots)) {
		t.Fatalf("541 slots: mapped %d, in use %d; want %d and %d", mapped, inUse, arenaFirstSlab+arenaSlab, 4*n*len(slots))
	}
	for i, s := range slots {
		for j := range s {
			s[j] = uint32(i)
		}
	}
	for i, s := range slots {
		if len(s) != n || cap(s) != n || s[0] != uint32(i) || s[n-1] != uint32(i) {
			t.Fatalf("slot %d: len %d cap %d, holds %d..%d", i, len(s), cap(s), s[0], s[n-1])
		}
	}
	a.release(slots[5], slots[7])
	if s := a.alloc(n); &s[0] != &slots[7][0] {
		t.Fatal("a new slot was cut while a handed-back one waited")
	}
	if s := a.alloc(n); &s[0] != &slots[5][0] {
		t.Fatal("a new slot was cut while a handed-back one waited")
	}
	if mapped, _ := a.stats(); mapped != arenaFirstSlab+arenaSlab {
		t.Fatalf("reusing slots mapped more: %d", mapped)
	}
}

// testBlock is a decoded block of n postings, document numbers from base.
func testBlock(base, n int) *postBlock {
	p := &postBlock{}
	for i := range n {
		p.add(uint32(base+i), uint32(i%7+1), uint32(100+i))
	}
	p.finish()
	return p
}

// TestCacheEpochs: a block evicted while a pass that may hold it is running keeps its
// memory until that pass ends; a pass pinned after the eviction does not hold it back.
func TestCacheEpochs(t *testing.T) {
	c := newPostingsCache(3 * (testBlock(0, 100).bytes))
	const nb = 20
	tb := &termBlocks{count: make([]uint32, nb), slots: make([]atomic.Pointer[postBlock], nb)}
	early := c.pin()
	a := c.putBlock(tb, 0, testBlock(0, 100))
	if a.slot == nil {
		t.Fatal("the cached block is not in the arena")
	}
	if got := c.block(tb, 0); got != a {
		t.Fatal("the cached block is not the one putBlock returned")
	}
	a.ref.Store(false)        // no second chance: the next eviction takes it
	for i := 1; i < nb; i++ { // evicts block 0
		c.putBlock(tb, i, testBlock(1000*i, 100))
	}
	if tb.slots[0].Load() != nil {
		t.Fatal("block 0 was not evicted")
	}
	late := c.pin() // after the eviction
	for i := range 50 {
		s := blockArena.alloc(len(a.slot))
		if &s[0] == &a.slot[0] {
			t.Fatalf("alloc %d handed out the slot of a block a running pass holds", i)
		}
		defer blockArena.release(s)
	}
	for i, d := range a.docs {
		if d != uint32(i) {
			t.Fatalf("held block changed: doc %d is %d", i, d)
		}
	}
	c.unpin(early)
	if !arenaHolds(&a.slot[0]) {
		t.Fatal("the evicted block's slot was not freed when the last pass that could hold it ended (a later pass is still pinned)")
	}
	c.unpin(late)
	if len(c.pins) != 0 {
		t.Fatalf("pins left: %v", c.pins)
	}
	c.release()
	if c.used != 0 || len(c.retired) != 0 || len(c.ring) != 0 {
		t.Fatalf("after release: used %d, retired %d, ring %d", c.used, len(c.retired), len(c.ring))
	}
	if p := c.putBlock(tb, 0, testBlock(0, 10)); p.slot != nil || tb.slots[0].Load() != nil {
		t.Fatal("a released cache cached a block")
	}
}

// arenaHolds reports whether the slot starting at w is on the block arena's free lists.
func arenaHolds(w *uint32) bool {
	blockArena.mu.Lock()
	defer blockArena.mu.Unlock()
	for _, class := range blockArena.free {
		for _, s := range class {
			if &s[0] == w {
				return true
			}
		}
	}
	return false
}

// inParallel runs fn(0..n-1) on n goroutines and fails t with the first error any returns.
func inParallel(t *testing.T, n int, fn func(g int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(g); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestCacheConcurrentEviction: queries from several goroutines over a cache far too small
// for them (every pass evicts blocks others are scoring) answer exactly as exhaustive
// evaluation, and closing the index gives every slot back to the arena. The budget is
// sized from what the queries cache: half their blocks' bytes, of which the blocks keep
// a quarter to a half whatever the metadata's size (the metadata takes at most half the
// budget from them), so blocks are evicted and read again (more misses than distinct
// blocks) and still found cached at times (hits), on one core as on many. (A fixed
// 8 KiB budget once left no block cached on one core: the metadata filled it.)
func TestCacheConcurrentEviction(t *testing.T) {
	_, before := blockArena.stats()
	b, err := OpenWith("", Options{})
	if err != nil {
		t.Fatal(err)
	}
	qs := randomIndexQueries(t, b, 9, 9, 60, 5)
	ctx := context.Background()
	want := make([]string, len(qs))
	b.SetExhaustive(true)
	for i := range qs {
		hits, err := b.Search(ctx, qs[i], 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = fmt.Sprint(hits)
	}
	b.SetExhaustive(false)
	for i := range qs { // fill the (default, ample) cache with every block the queries use
		if _, err := b.Search(ctx, qs[i], 10, nil); err != nil {
			t.Fatal(err)
		}
	}
	c := b.postings
	c.mu.Lock()
	blocks, blockBytes := len(c.ring), c.used
	c.budget = blockBytes / 2
	c.mu.Unlock()
	if blocks < 20 {
		t.Fatalf("the queries cached %d blocks: too few to evict", blocks)
	}
	_, _, hits0, misses0 := b.CacheStats()
	inParallel(t, 4, func(g int) error {
		for r := range 5 {
			for j := range qs {
				i := (j*7 + g*13 + r) % len(qs)
				hits, err := b.Search(ctx, qs[i], 10, nil)
				if err != nil {
					return err
				}
				if fmt.Sprint(hits) != want[i] {
					return fmt.Errorf("query %q: got %v, want %s", qs[i], hits, want[i])
				}
			}
		}
		return nil
	})
	_, held, hits, misses := b.CacheStats()
	if hits, misses = hits-hits0, misses-misses0; misses <= uint64(blocks) || hits == 0 {
		t.Fatalf("the cache was not exercised: %d hits, %d misses of %d distinct blocks", hits, misses, blocks)
	}
	t.Logf("%d hits, %d misses of %d distinct blocks, %d held at the end", hits, misses, blocks, held)
	if held >= blocks {
		t.Fatalf("%d blocks held of %d within half their bytes", held, blocks)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, after := blockArena.stats(); after != before {
		t.Fatalf("arena bytes in use: %d before the index, %d after its Close", before, after)
	}
}

// TestCacheSmallBudgetKeepsBlocks: under a budget smaller than the queried terms'
// metadata (kept up to 16 MiB whatever the budget), blocks still get half of it: the same
// queries run twice in one goroutine find blocks cached (a hit for every 4 misses; with
// the metadata counted first, 2 hits in 604), and the blocks fill a quarter to a half of
// the budget.
func TestCacheSmallBudgetKeepsBlocks(t *testing.T) {
	const budget = 16 << 10
	b, err := OpenWith("", Options{PostingsCacheBytes: budget})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	qs := randomIndexQueries(t, b, 9, 9, 60, 5)
	ctx := context.Background()
	for range 2 {
		for _, q := range qs {
			if _, err := b.Search(ctx, q, 10, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	c := b.postings
	c.mu.Lock()
	used, meta := c.used, c.metaBytes
	c.mu.Unlock()
	_, _, hits, misses := b.CacheStats()
	t.Logf("blocks %d B, metadata %d B, %d hits, %d misses", used, meta, hits, misses)
	if meta <= budget {
		t.Fatalf("the metadata (%d B) fits the budget: the test needs more terms", meta)
	}
	if hits < misses/4 || used < budget/4 || used > budget/2 {
		t.Fatalf("%d hits, %d misses, %d B of blocks held: want a hit for every 4 misses or more, and %d to %d B",
			hits, misses, used, budget/4, budget/2)
	}
}
