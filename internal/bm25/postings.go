package bm25

import (
	"math"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/blevesearch/bleve/v2/index/scorch"
)

// This file holds what the MaxScore evaluator keeps between queries: each queried term's
// block metadata per segment (bm25_blocks.go; small: a count and a few (frequency, length)
// pairs per block of about 1,024 postings), read from the segment's body file, and the decoded blocks queries have scored, within a byte budget
// (BM25Options.PostingsCacheBytes). Blocks, not whole lists, are cached: a query decodes
// only the blocks whose bound can reach its top k, so the cache holds what queries score
// rather than every posting of every term they name, and a large index does not thrash it.
// Blocks are evicted in CLOCK order (a reference bit set on each use, cleared by the sweep).
// Segments are immutable, so an entry stays valid for the segment's life; documents deleted
// later are skipped through the snapshot's deletion bitmap.
//
// Cached blocks live in the block arena, off the Go heap (bm25_arena.go), so their memory
// is reused by hand rather than collected: a block dropped from the cache may still be
// read by a query that took it earlier. Each query's pass over a segment pins the cache's
// epoch when it starts (pin, unpin); a dropped block is retired at the current epoch, which
// then moves on, and its slot goes back to the arena once every pass pinned at or before
// that epoch has ended. A pass pinned later cannot see the block: it left its slot, under
// the cache's lock, before the retirement.

// postingsKey names one term of one segment of one index.
type postingsKey struct {
	seg  uint64 // scorch segment id
	term string
}

// blockRef names one cached block.
type blockRef struct {
	tb *termBlocks
	i  int32
}

// postingsCache holds block metadata and decoded blocks.
type postingsCache struct {
	mu        sync.Mutex
	budget    int
	used      int // bytes of the cached decoded blocks
	metaBytes int
	metaCap   int // metaBytes beyond which metadata is dropped (recomputed or reread when needed)
	meta      map[postingsKey]*termBlocks
	ring      []blockRef // the cached blocks, in CLOCK order
	hand      int
	epoch     uint64         // advances at each retirement
	pins      map[uint64]int // epoch -> passes pinned at it and still running
	retired   []retiredSlot  // dropped blocks' arena slots, epochs ascending
	freeing   [][]uint32     // reclaim's scratch
	closed    bool           // released: nothing is cached any more

	hits, misses atomic.Uint64
	decoded      atomic.Uint64 // postings decoded (whole blocks)
	lookups      atomic.Uint64 // postings read alone, their blocks not decoded (blockCursor.lookup)
	floors       atomic.Uint64 // segment passes started from a threshold floor (thresholdFloor)
	// full is set once the cache has had to evict (or to refuse) a block: from then on a
	// block probed for a few documents in a pass has its postings read alone rather than
	// decoded (blockCursor.lookup). While everything queries decode fits, a block probed
	// warmProbes times over all queries is decoded once and kept: that costs less than
	// reading its postings alone query after query.
	full atomic.Bool
}

func newPostingsCache(budget int) *postingsCache {
	return &postingsCache{budget: budget, metaCap: max(budget/2, 16<<20),
		meta: map[postingsKey]*termBlocks{}, pins: map[uint64]int{}}
}

// retiredSlot is the arena slot of a block dropped at epoch.
type retiredSlot struct {
	slot  []uint32
	epoch uint64
}

// pin marks the start of a pass that may read cached blocks; unpin(the epoch returned)
// marks its end.
func (c *postingsCache) pin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.epoch
	c.pins[e]++
	return e
}

// unpin ends a pass pinned at epoch e and frees the slots no pass can still read.
func (c *postingsCache) unpin(e uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pins[e]--; c.pins[e] <= 0 {
		delete(c.pins, e)
	}
	c.reclaim()
}

// retire drops block b, now out of its slot, from the budget and parks it (c.mu held).
func (c *postingsCache) retire(b *postBlock) {
	c.used -= b.bytes
	c.park(b)
}

// park hands b's arena slot back once the passes that may hold b have ended (c.mu held).
func (c *postingsCache) park(b *postBlock) {
	if b.slot == nil {
		return // on the heap: the collector knows who still holds it
	}
	c.retired = append(c.retired, retiredSlot{slot: b.slot, epoch: c.epoch})
	c.epoch++
	c.reclaim()
}

// reclaim returns to the arena the retired slots of epochs before every running pass's
// (c.mu held).
func (c *postingsCache) reclaim() {
	oldest := uint64(math.MaxUint64)
	for e := range c.pins {
		oldest = min(oldest, e)
	}
	n := 0
	for n < len(c.retired) && c.retired[n].epoch < oldest {
		n++
	}
	if n == 0 {
		return
	}
	c.freeing = c.freeing[:0]
	for _, r := range c.retired[:n] {
		c.freeing = append(c.freeing, r.slot)
	}
	blockArena.release(c.freeing...)
	clear(c.freeing)
	m := copy(c.retired, c.retired[n:])
	clear(c.retired[m:])
	c.retired = c.retired[:m]
}

// newBlock returns an empty block with room for n postings, in an arena slot when n fits
// one (a slot's owner hands it back: putBlock, park, or dropBlock for one never shown to
// anyone). Its docs and packed have length n when full, else length 0.
func newBlock(n int, full bool) *postBlock {
	l := 0
	if full {
		l = n
	}
	if s := blockArena.alloc(2 * n); s != nil && n > 0 {
		return &postBlock{docs: s[:l:n], packed: s[n : n+l : 2*n], slot: s}
	}
	return &postBlock{docs: make([]uint32, l, n), packed: make([]uint32, l, n)}
}

// newNarrowBlock returns a block of n postings (docs, or d16 when short, and narrow, of
// length n), in an arena slot when n fits one: the documents (n words, or ⌈n/2⌉ short),
// then the narrow frequencies and lengths, two a word.
func newNarrowBlock(n int, short bool) *postBlock {
	half := (n + 1) / 2
	dw := n
	if short {
		dw = half
	}
	var s []uint32
	if n > 0 {
		s = blockArena.alloc(dw + half)
	}
	slot := s
	if s == nil {
		s = make([]uint32, dw+half)
	}
	p := &postBlock{narrow: s[dw : dw+half : dw+half], slot: slot}
	if short {
		p.d16 = u16s(s, n)
	} else {
		p.docs = s[:n:n]
	}
	return p
}

// u16s returns the first n uint16s of w's words (2n <= 2*len(w)).
func u16s(w []uint32, n int) []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(w))), 2*len(w))[:n:n]
}

// dropBlock hands back the arena slot of a block nobody else has seen (a decode that
// failed, or lost the race to cache).
func dropBlock(p *postBlock) {
	if p != nil && p.slot != nil {
		blockArena.release(p.slot)
		p.slot = nil
	}
}

// offHeap returns p in an arena slot: p itself when it is in one already, else its copy
// (p then stays as it is: the caller may be reading it), or p when it does not go there
// (wide frequencies or lengths, or too large).
func offHeap(p *postBlock) *postBlock {
	n := len(p.docs)
	if p.slot != nil || p.wide != nil || p.narrow != nil || p.d16 != nil || len(p.packed) != n || n == 0 {
		return p
	}
	q := newBlock(n, true)
	if q.slot == nil {
		return p
	}
	copy(q.docs, p.docs)
	copy(q.packed, p.packed)
	q.finish()
	return q
}

// release drops every cached block (the index is closing, or was collected unclosed) and
// caches nothing after.
func (c *postingsCache) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, r := range c.ring {
		if b := r.tb.slots[r.i].Swap(nil); b != nil {
			c.retire(b)
		}
	}
	c.ring = nil
	c.reclaim()
}

// terms returns the block metadata of term in ss (nil: not read yet).
func (c *postingsCache) terms(ss *scorch.SegmentSnapshot, term string) *termBlocks {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.meta[postingsKey{seg: ss.Id(), term: term}]
}

// addTerms records tb as term's metadata in ss (unless another query did first). It
// returns the entry kept.
func (c *postingsCache) addTerms(ss *scorch.SegmentSnapshot, term string, tb *termBlocks) *termBlocks {
	k := postingsKey{seg: ss.Id(), term: term}
	c.mu.Lock()
	if old := c.meta[k]; old != nil {
		c.mu.Unlock()
		return old
	}
	c.meta[k] = tb
	c.metaBytes += tb.bytes
	if c.metaBytes > c.metaCap {
		c.shedMeta(k)
	}
	c.mu.Unlock()
	return tb
}

// shedMeta drops block metadata (and its cached blocks) until metaBytes is under half of
// metaCap, one-block lists first, keeping keep (c.mu held). A list shed is read again
// from its segment's body file when next used.
func (c *postingsCache) shedMeta(keep postingsKey) {
	for _, oneBlock := range []bool{true, false} {
		for k, tb := range c.meta {
			if c.metaBytes <= c.metaCap/2 {
				return
			}
			if k == keep || (len(tb.count) == 1) != oneBlock {
				continue
			}
			delete(c.meta, k)
			c.metaBytes -= tb.bytes
			for i := range tb.slots {
				if b := tb.slots[i].Swap(nil); b != nil {
					c.retire(b)
				}
			}
		}
	}
}

// dropTerms forgets term's metadata in segment seg (it disagreed with the postings): it
// is read again when next needed.
func (c *postingsCache) dropTerms(ss *scorch.SegmentSnapshot, term string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := ss.Id()
	k := postingsKey{seg: id, term: term}
	if tb := c.meta[k]; tb != nil {
		delete(c.meta, k)
		c.metaBytes -= tb.bytes
		c.forgetBlocks(tb)
	}
}

// block returns block i of tb when cached (the caller counts hits and misses).
func (c *postingsCache) block(tb *termBlocks, i int) *postBlock {
	if p := tb.slots[i].Load(); p != nil {
		if !p.ref.Load() {
			p.ref.Store(true)
		}
		return p
	}
	return nil
}

// putBlock caches p as block i of tb (unless another query did first) and evicts blocks in
// CLOCK order beyond the budget. It returns the block now cached (p when the budget keeps
// nothing).
func (c *postingsCache) putBlock(tb *termBlocks, i int, p *postBlock) *postBlock {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := tb.slots[i].Load(); old != nil {
		dropBlock(p) // another pass cached the block first; p was never shown to anyone
		return old
	}
	if p.bytes > c.budget || c.closed {
		c.full.Store(true)
		c.park(p) // the caller scores p, then its slot goes back
		return p
	}
	p = offHeap(p)
	tb.slots[i].Store(p)
	c.used += p.bytes
	// The budget holds the blocks and the terms' metadata together (the metadata is
	// shed past half of it, see shedMeta), so a process holding both stays within it.
	// The blocks keep at least half of it: under 32 MiB the metadata may fill more than
	// half (metaCap), and blocks evicted as soon as cached would all be decoded again.
	blockBudget := c.budget - min(c.metaBytes, c.budget/2)
	if c.used > blockBudget && !c.full.Load() {
		c.full.Store(true)
	}
	for c.used > blockBudget && len(c.ring) > 0 {
		if c.hand >= len(c.ring) {
			c.hand = 0
		}
		r := c.ring[c.hand]
		b := r.tb.slots[r.i].Load()
		if b != nil && b.ref.Load() {
			b.ref.Store(false)
			c.hand++
			continue
		}
		if b != nil {
			r.tb.slots[r.i].Store(nil)
			c.retire(b)
		}
		last := len(c.ring) - 1
		c.ring[c.hand] = c.ring[last]
		c.ring = c.ring[:last]
	}
	c.ring = append(c.ring, blockRef{tb: tb, i: int32(i)})
	return p
}

// forgetBlocks drops tb's cached blocks (c.mu held).
func (c *postingsCache) forgetBlocks(tb *termBlocks) {
	n := 0
	for _, r := range c.ring {
		if r.tb == tb {
			if b := tb.slots[r.i].Swap(nil); b != nil {
				c.retire(b)
			}
			continue
		}
		c.ring[n] = r
		n++
	}
	clear(c.ring[n:])
	c.ring = c.ring[:n]
}

// dropSegments removes the entries of segments not in live (merged away).
func (c *postingsCache) dropSegments(live map[uint64]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gone := false
	for k, tb := range c.meta {
		if !live[k.seg] {
			delete(c.meta, k)
			c.metaBytes -= tb.bytes
			for i := range tb.slots {
				if b := tb.slots[i].Swap(nil); b != nil {
					c.retire(b)
				}
			}
			gone = true
		}
	}
	if !gone {
		return
	}
	n := 0
	for _, r := range c.ring {
		if r.tb.slots[r.i].Load() == nil {
			continue
		}
		c.ring[n] = r
		n++
	}
	clear(c.ring[n:])
	c.ring = c.ring[:n]
	c.used = 0
	for _, r := range c.ring {
		c.used += r.tb.slots[r.i].Load().bytes
	}
}

// CacheStats reports the decoded-postings cache: bytes held (decoded blocks and block
// metadata), decoded blocks held, and block hits and misses.
func (b *Index) CacheStats() (bytes, entries int, hits, misses uint64) {
	c := b.postings
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used + c.metaBytes, len(c.ring), c.hits.Load(), c.misses.Load()
}
