package bm25

import (
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// This file holds the memory of the decoded-blocks cache (bm25_postings.go), kept outside
// the Go heap. The cached blocks are the bulk of a serving process's memory (448 MiB by
// default), and on the heap the collector's headroom (GOGC) about doubles them: at 21M
// passages a full 512 MiB cache left 1.28 GB of anonymous memory (RssAnon), with a live
// heap of 625 MB. Off the heap they count once. A block holds no Go pointers (document
// numbers and packed frequencies), so the collector has nothing to find in them.
//
// Slots come from slabs mapped anonymously (mmap; on platforms without it, or when a map
// fails, from the heap) in size classes, four per doubling, so a slot wastes at most a
// fifth of its words; a class's slots are cut from its last slab as they are asked for. A slot the cache drops goes back to its class's free list once no
// query can still be reading it (the cache's epochs, bm25_postings.go). Slabs are never
// unmapped: a freed slot is reused by the next block of its class, in any index of the
// process, so the mapped bytes stay at the peak the caches reached.
//
// A slab's pages are faulted in ahead of its slots, popStep bytes at a time, by one
// madvise(MADV_POPULATE_WRITE) (Linux 5.14; elsewhere, or when refused, the first touch
// faults them as before): a fresh process's first queries at 21M passages fill the cache
// with ~465 MB of new pages, and one fault a page, each a trap and, once the page cache is
// full, a reclaim, cost 0.87–1.29 ms of system CPU a query; populated in steps, 0.53–0.96
// ms, and that round's p50 / p99 went from 0.85x / 0.93x Lucene's to 0.74x / 0.82x
// (BENCHMARKS.md §0zm). The step after the one being cut from is populated by a goroutine
// of its own (populateNext), so the query cutting slots does not wait for it (§0zw).

const (
	arenaMinWords  = 64        // the smallest slot, in uint32s (256 bytes)
	arenaMaxWords  = 1 << 17   // larger blocks stay on the heap (512 KiB)
	arenaSlab      = 4 << 20   // bytes mapped at a time for a class (or one slot, when larger)
	arenaFirstSlab = 256 << 10 // bytes of a class's first slab, in small pages
	popStep        = 512 << 10 // bytes of a slab populated at a time (a power of two)
)

// arenaSizes is each class's slot size in words, ascending: 64, 80, 96, 112, 128, 160, …
var arenaSizes = func() []int {
	var s []int
	for w := arenaMinWords; w < arenaMaxWords; w *= 2 {
		s = append(s, w, w+w/4, w+w/2, w+3*w/4)
	}
	return append(s, arenaMaxWords)
}()

// slabArena hands out word slots by size class.
type slabArena struct {
	mu     sync.Mutex
	free   [][][]uint32 // per class: slots handed back
	bump   [][]uint32   // per class: the part of its last slab no slot has taken yet
	slabs  []int        // per class: slabs mapped
	popTo  []uintptr    // per class: the address up to which its last slab is populated
	mapped int64        // bytes taken from the OS (or the heap) so far
	inUse  int64        // bytes of slots handed out and not freed
}

// newSlabArena returns an empty arena.
func newSlabArena() *slabArena {
	return &slabArena{free: make([][][]uint32, len(arenaSizes)), bump: make([][]uint32, len(arenaSizes)), slabs: make([]int, len(arenaSizes)),
		popTo: make([]uintptr, len(arenaSizes))}
}

// blockArena is the process's arena: every index's cache takes its slots here.
var blockArena = newSlabArena()

// arenaClass returns the class whose slots hold n words (ok false: too large for the arena).
func arenaClass(n int) (int, bool) {
	if n > arenaMaxWords {
		return 0, false
	}
	c, _ := slices.BinarySearch(arenaSizes, n)
	return c, true
}

// alloc returns a slot of at least n words (its length is its class's size), or nil when
// n is too large for the arena.
func (a *slabArena) alloc(n int) []uint32 {
	c, ok := arenaClass(n)
	if !ok {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	size := arenaSizes[c]
	var s []uint32
	if last := len(a.free[c]) - 1; last >= 0 {
		s = a.free[c][last]
		a.free[c][last] = nil
		a.free[c] = a.free[c][:last]
	} else {
		// Slots are cut from the class's last slab as they are asked for (no list of them
		// made ahead). A class's first slab is small and not aligned for huge pages: where
		// the kernel backs every mapping with them, the memory a huge page would zero at
		// its first touch is not spent on a class little used (an index's first queries
		// touch a score of classes); its later slabs are large and aligned (mapWords).
		if len(a.bump[c]) < size {
			bytes, aligned := arenaSlab, true
			if a.slabs[c] == 0 {
				bytes, aligned = arenaFirstSlab, false
			}
			a.bump[c] = mapWords(max(bytes/4/size, 1)*size, aligned)
			a.slabs[c]++
			a.mapped += int64(4 * len(a.bump[c]))
			a.popTo[c] = wordsAddr(a.bump[c])
		}
		a.popTo[c] = populateAhead(a.bump[c], size, a.popTo[c])
		s = a.bump[c][:size:size]
		a.bump[c] = a.bump[c][size:]
		a.popTo[c] = populateNext(a.bump[c], a.popTo[c])
	}
	a.inUse += int64(4 * len(s))
	return s
}

// release returns slots to their free lists. Each must have come from alloc and no longer
// be read by anyone.
func (a *slabArena) release(slots ...[]uint32) {
	if len(slots) == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range slots {
		c, ok := arenaClass(len(s))
		if !ok || arenaSizes[c] != len(s) || cap(s) != len(s) {
			panic("hybrid: a slot returned to the block arena was not taken from it")
		}
		a.free[c] = append(a.free[c], s)
		a.inUse -= int64(4 * len(s))
	}
}

// stats reports the bytes mapped and the bytes of slots in use.
func (a *slabArena) stats() (mapped, inUse int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mapped, a.inUse
}

// wordsAddr is the address of w's first word.
func wordsAddr(w []uint32) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(w))) }

// populateAhead makes sure the first size words of bump, the unused rest of a slab whose
// pages are populated up to address popTo (bump's start or past it), are populated: when
// they reach past popTo it populates up to the next multiple of popStep (at most to the
// slab's end) and returns that address; else popTo.
func populateAhead(bump []uint32, size int, popTo uintptr) uintptr {
	start := wordsAddr(bump)
	end := start + uintptr(4*size)
	if end <= popTo {
		return popTo
	}
	to := min((end+popStep-1)&^(popStep-1), start+uintptr(4*len(bump)))
	// popTo is a page boundary in a mapped slab; in one taken from the heap (mapWords'
	// fallback) it may not be, and the part of its page before it is left to fault in.
	from := (popTo + uintptr(pageSize-1)) &^ uintptr(pageSize-1)
	if from < to {
		populate(unsafe.Add(unsafe.Pointer(unsafe.SliceData(bump)), int(from-start)), int(to-from))
	}
	return to
}

// populateNext asks the populator (populateAsync) for the next popStep of the unused rest
// of a slab, bump, when less than half a step of it is populated ahead (popTo), and
// returns the address populated or asked for up to (popTo when nothing is asked). The
// slots the cache cuts next then find their pages in memory without the query that cuts
// them waiting for the kernel to zero and map them: in a fresh process's first queries
// that was 0.4 ms of system CPU a query at 21M passages (BENCHMARKS.md §0zu), about a
// tenth of the round.
func populateNext(bump []uint32, popTo uintptr) uintptr {
	if len(bump) == 0 || populateOff.Load() {
		return popTo
	}
	start, end := wordsAddr(bump), wordsAddr(bump)+uintptr(4*len(bump))
	if popTo >= end || popTo < start || popTo-start >= popStep/2 {
		return popTo
	}
	from := (popTo + uintptr(pageSize-1)) &^ uintptr(pageSize-1)
	to := min(popTo+popStep, end)
	if from >= to || !populateAsync(unsafe.Add(unsafe.Pointer(unsafe.SliceData(bump)), int(from-start)), int(to-from)) {
		return popTo
	}
	return to
}

// popRange is a request to the populator: n bytes at p, or, when done is not nil, a
// signal once the requests before it are done (populatorIdle).
type popRange struct {
	p    unsafe.Pointer
	n    int
	done chan struct{}
}

// populator is the process's one goroutine that populates slab pages ahead of their
// slots (populateNext), started with the first request; its queue is short, and a request
// that finds it full is not made (those pages then fault in at their first touch, or a
// later step populates them).
var populator struct {
	once sync.Once
	ch   chan popRange
}

// populateAsync queues the population of the n bytes of anonymous memory at p (a page
// boundary); false when the queue is full.
func populateAsync(p unsafe.Pointer, n int) bool {
	select {
	case populatorQueue() <- popRange{p: p, n: n}:
		return true
	default:
		return false
	}
}

// populatorQueue returns the populator's queue, starting it the first time.
func populatorQueue() chan<- popRange {
	populator.once.Do(func() {
		populator.ch = make(chan popRange, 16)
		go func() {
			for r := range populator.ch {
				if r.done != nil {
					close(r.done)
					continue
				}
				populate(r.p, r.n)
			}
		}()
	})
	return populator.ch
}

// populatorIdle waits until the requests queued so far are done (tests).
func populatorIdle() {
	done := make(chan struct{})
	populatorQueue() <- popRange{done: done}
	<-done
}

// populateOff is set where pages cannot be populated ahead: off Linux, or once the kernel
// does not know MADV_POPULATE_WRITE (before Linux 5.14); pages are then faulted in by
// their first touch. Other failures (no memory now, a fatal signal pending) leave it
// clear: those pages then fault in at their first touch.
var populateOff atomic.Bool

// pageSize is the size of the system's pages.
var pageSize = os.Getpagesize()
