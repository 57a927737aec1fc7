package hybrid

import (
	"cmp"
	"container/list"
	"fmt"
	"math"
	"slices"
	"sync"

	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// This file holds the decoded-postings cache of the MaxScore evaluator. Zap's postings
// iterator can only advance linearly (its Advance walks every posting in between and
// decodes their frequencies), which defeats dynamic pruning. So the first time a query
// needs a term in a segment, its postings are decoded once into arrays — ascending document
// numbers, frequencies, field lengths — with what pruning needs: the Pareto frontier of
// (frequency, length) pairs, whose best BM25 ratio is the term's exact score bound in the
// segment for any avgdl. Segments are immutable, so an entry stays valid for the segment's life;
// documents deleted after decoding are skipped through the snapshot's deletion bitmap.
// Entries are kept in LRU order within a byte budget (BM25Options.PostingsCacheBytes).

// decodedPostings is one term's postings in one segment, all documents (deleted included).
type decodedPostings struct {
	docs []uint32 // segment-local document numbers, ascending
	// packed holds f<<16 | dl per posting when every f and dl of the term is below 1<<16
	// (8 bytes a posting in all); otherwise wide holds f and dl in full.
	packed []uint32
	wide   []fl
	front  []fl // Pareto frontier: no other posting has f >= and dl <= (one strictly)
	bytes  int
}

// at returns the frequency and length of posting i.
func (d *decodedPostings) at(i int) (f, dl uint32) {
	if d.wide != nil {
		return d.wide[i].f, d.wide[i].dl
	}
	v := d.packed[i]
	return v >> 16, v & 0xffff
}

// fl is a (frequency, length) pair.
type fl struct{ f, dl uint32 }

// bestRatio is the largest BM25 ratio f/(f+K(dl)) over pairs, for st's length normalisation.
func bestRatio(st *snapStats, pairs []fl) float64 {
	best := 0.0
	for _, p := range pairs {
		f := float64(p.f)
		if r := f / (f + st.kOf(uint64(p.dl))); r > best {
			best = r
		}
	}
	return best
}

// decodePostings reads every posting of term in seg (deleted documents included).
func decodePostings(dict segment.TermDictionary, term []byte, pl segment.PostingsList, it segment.PostingsIterator, scratch *[]uint32) (*decodedPostings, segment.PostingsList, segment.PostingsIterator, error) {
	pl, err := dict.PostingsList(term, nil, pl)
	if err != nil {
		return nil, pl, it, err
	}
	n := int(pl.Count())
	d := &decodedPostings{docs: make([]uint32, 0, n), packed: make([]uint32, 0, n)}
	// minLen[f] is the smallest length among postings of frequency f (0: none yet)
	minLen := (*scratch)[:0]
	it = pl.Iterator(true, true, false, it)
	var big []fl // postings with f >= 1<<16
	for {
		p, err := it.Next()
		if err != nil {
			return nil, pl, it, err
		}
		if p == nil {
			break
		}
		nm, ok := p.(normer)
		if !ok {
			return nil, pl, it, errNotScorch
		}
		num, f64, dl64 := p.Number(), p.Frequency(), nm.NormUint64()
		if num > math.MaxUint32 || f64 > math.MaxUint32 || dl64 >= math.MaxUint32 {
			return nil, pl, it, fmt.Errorf("posting out of range: doc %d freq %d length %d", num, f64, dl64)
		}
		f, dl := uint32(f64), uint32(dl64)
		d.docs = append(d.docs, uint32(num))
		if d.wide == nil && (f >= 1<<16 || dl >= 1<<16) {
			d.widen()
		}
		if d.wide != nil {
			d.wide = append(d.wide, fl{f: f, dl: dl})
		} else {
			d.packed = append(d.packed, f<<16|dl)
		}
		if f >= 1<<16 {
			big = append(big, fl{f: f, dl: dl}) // rare: kept aside, not in the array
			continue
		}
		if int(f) >= len(minLen) {
			minLen = append(minLen, make([]uint32, int(f)+1-len(minLen))...)
		}
		if m := minLen[f]; m == 0 || dl+1 < m {
			minLen[f] = dl + 1
		}
	}
	// Pareto frontier: walking frequencies down, keep a pair whose length beats every
	// larger frequency's.
	best := uint32(math.MaxUint32)
	slices.SortFunc(big, func(a, b fl) int { return cmp.Compare(b.f, a.f)*2 + cmp.Compare(a.dl, b.dl) })
	for _, p := range big {
		if p.dl < best {
			d.front = append(d.front, p)
			best = p.dl
		}
	}
	for f := len(minLen) - 1; f >= 0; f-- {
		if m := minLen[f]; m != 0 && m-1 < best {
			d.front = append(d.front, fl{f: uint32(f), dl: m - 1})
			best = m - 1
		}
	}
	clear(minLen)
	*scratch = minLen
	d.bytes = 4*cap(d.docs) + 4*cap(d.packed) + 8*(cap(d.wide)+cap(d.front)) + 128
	return d, pl, it, nil
}

// widen switches d to the wide layout (a frequency or length does not fit 16 bits).
func (d *decodedPostings) widen() {
	d.wide = make([]fl, len(d.packed), cap(d.packed))
	for i, v := range d.packed {
		d.wide[i] = fl{f: v >> 16, dl: v & 0xffff}
	}
	d.packed = nil
}

// postingsKey names one term of one segment of one index.
type postingsKey struct {
	seg  uint64 // scorch segment id
	term string
}

type cacheEntry struct {
	key postingsKey
	p   *decodedPostings
}

// postingsCache is an LRU of decoded postings within a byte budget.
type postingsCache struct {
	mu     sync.Mutex
	budget int
	used   int
	lru    *list.List // front = most recent
	m      map[postingsKey]*list.Element
	hits   uint64
	misses uint64
}

func newPostingsCache(budget int) *postingsCache {
	return &postingsCache{budget: budget, lru: list.New(), m: map[postingsKey]*list.Element{}}
}

func (c *postingsCache) get(k postingsKey) *decodedPostings {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[k]; ok {
		c.lru.MoveToFront(e)
		c.hits++
		return e.Value.(*cacheEntry).p
	}
	c.misses++
	return nil
}

// put stores p under k (unless another goroutine stored it first) and evicts the least
// recently used entries beyond the budget. It returns the entry now cached.
func (c *postingsCache) put(k postingsKey, p *decodedPostings) *decodedPostings {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[k]; ok {
		c.lru.MoveToFront(e)
		return e.Value.(*cacheEntry).p
	}
	c.m[k] = c.lru.PushFront(&cacheEntry{key: k, p: p})
	c.used += p.bytes
	for c.used > c.budget && c.lru.Len() > 1 {
		e := c.lru.Back()
		ce := e.Value.(*cacheEntry)
		c.lru.Remove(e)
		delete(c.m, ce.key)
		c.used -= ce.p.bytes
	}
	return p
}

// dropSegments removes the entries of segments not in live (merged away).
func (c *postingsCache) dropSegments(live map[uint64]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.m {
		if !live[k.seg] {
			c.lru.Remove(e)
			delete(c.m, k)
			c.used -= e.Value.(*cacheEntry).p.bytes
		}
	}
}

// CacheStats reports the decoded-postings cache: bytes held, entries, hits and misses.
func (b *BM25Index) CacheStats() (bytes, entries int, hits, misses uint64) {
	c := b.postings
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used, c.lru.Len(), c.hits, c.misses
}
