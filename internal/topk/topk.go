// Package topk keeps the k best of a stream of scored values in a bounded heap: O(log k)
// per accepted value, one float comparison for most rejected ones, and a deterministic
// order among equal scores given by a tie-break the caller supplies.
package topk

import "sort"

// Item is a scored value.
type Item[T any] struct {
	Score float32
	Value T
}

// Heap keeps the k items of highest score seen by [Heap.Offer]. Among equal scores, the
// item whose value comes first under the tie-break ranks higher. NaN scores are dropped.
// The zero Heap keeps nothing; build one with [New]. A Heap is not safe for concurrent use;
// parallel scans keep one each and [Heap.Merge] them.
type Heap[T any] struct {
	k      int
	items  []Item[T] // a min-heap: the worst kept item is items[0]
	before func(a, b T) bool
}

// New returns a heap keeping the k best items; before(a, b) reports whether value a ranks
// ahead of b when their scores are equal (nil: ties keep no particular order). Room for
// min(k, 1024) items is allocated up front.
func New[T any](k int, before func(a, b T) bool) Heap[T] {
	return Heap[T]{k: max(k, 0), items: make([]Item[T], 0, min(max(k, 0), 1024)), before: before}
}

// K is the number of items the heap keeps at most.
func (h *Heap[T]) K() int { return h.k }

// Len is the number of items kept so far.
func (h *Heap[T]) Len() int { return len(h.items) }

// Full reports whether the heap holds k items, so that [Heap.Min] is the bar to beat.
func (h *Heap[T]) Full() bool { return len(h.items) >= h.k }

// Min is the lowest kept score; only a score >= Min can still enter a full heap. It
// panics on an empty heap.
func (h *Heap[T]) Min() float32 { return h.items[0].Score }

// worse reports whether a ranks below b.
func (h *Heap[T]) worse(a, b Item[T]) bool {
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	return h.before != nil && h.before(b.Value, a.Value)
}

// Offer considers one scored value.
func (h *Heap[T]) Offer(score float32, v T) {
	if score != score || h.k == 0 {
		return
	}
	if len(h.items) < h.k {
		h.items = append(h.items, Item[T]{score, v})
		h.up(len(h.items) - 1)
		return
	}
	if score < h.items[0].Score {
		return // the common case, decided without the tie-break
	}
	it := Item[T]{score, v}
	if !h.worse(h.items[0], it) {
		return
	}
	h.items[0] = it
	h.down(0)
}

// Merge offers every item of o (which is left unchanged).
func (h *Heap[T]) Merge(o *Heap[T]) {
	for _, it := range o.items {
		h.Offer(it.Score, it.Value)
	}
}

func (h *Heap[T]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.worse(h.items[i], h.items[p]) {
			return
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *Heap[T]) down(i int) {
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && h.worse(h.items[r], h.items[l]) {
			c = r
		}
		if !h.worse(h.items[c], h.items[i]) {
			return
		}
		h.items[i], h.items[c] = h.items[c], h.items[i]
		i = c
	}
}

// Sorted returns the kept items best first (score descending, then the tie-break) and
// empties the heap; the slice is the heap's own storage.
func (h *Heap[T]) Sorted() []Item[T] {
	items := h.items
	sort.Slice(items, func(i, j int) bool { return h.worse(items[j], items[i]) })
	h.items = nil
	return items
}
