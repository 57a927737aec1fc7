package hybrid

import (
	"container/list"
	"fmt"
	"math"
	"sync"

	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// This file holds the decoded-postings cache of the MaxScore evaluator. Zap's postings
// iterator can only advance linearly (its Advance walks every posting in between and
// decodes their frequencies), which defeats dynamic pruning. So the first time a query
// needs a term in a segment, its postings are decoded once into arrays — ascending document
// numbers, frequencies, field lengths — with what pruning needs: the Pareto frontier of
// (frequency, length) pairs, whose best BM25 ratio is the term's exact score bound in the
// segment for any avgdl, and per block of blockSize postings the largest frequency and
// smallest length. Segments are immutable, so an entry stays valid for the segment's life;
// documents deleted after decoding are skipped through the snapshot's deletion bitmap.
// Entries are kept in LRU order within a byte budget (BM25Options.PostingsCacheBytes).

// blockSize is the number of postings per block-max entry.
const blockSize = 128

// decodedPostings is one term's postings in one segment, all documents (deleted included).
type decodedPostings struct {
	docs []uint32 // segment-local document numbers, ascending
	// packed holds f<<16 | dl per posting when every f and dl of the term is below 1<<16
	// (8 bytes a posting in all); otherwise wide holds f and dl in full.
	packed []uint32
	wide   []fl
	front  []fl // Pareto frontier: no other posting has f >= and dl <= (one strictly)
	blocks []fl // per blockSize postings: the largest f and the smallest dl
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
func decodePostings(dict segment.TermDictionary, term []byte, pl segment.PostingsList, it segment.PostingsIterator) (*decodedPostings, segment.PostingsList, segment.PostingsIterator, error) {
	pl, err := dict.PostingsList(term, nil, pl)
	if err != nil {
		return nil, pl, it, err
	}
	n := int(pl.Count())
	d := &decodedPostings{docs: make([]uint32, 0, n), packed: make([]uint32, 0, n)}
	freqs, lens := make([]uint32, 0, n), make([]uint32, 0, n)
	it = pl.Iterator(true, true, false, it)
	wide := false
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
		num, f, dl := p.Number(), p.Frequency(), nm.NormUint64()
		if num > math.MaxUint32 || f > math.MaxUint32 || dl > math.MaxUint32 {
			return nil, pl, it, fmt.Errorf("posting out of range: doc %d freq %d length %d", num, f, dl)
		}
		i := len(d.docs)
		d.docs = append(d.docs, uint32(num))
		freqs = append(freqs, uint32(f))
		lens = append(lens, uint32(dl))
		wide = wide || f >= 1<<16 || dl >= 1<<16
		if i%blockSize == 0 {
			d.blocks = append(d.blocks, fl{f: uint32(f), dl: uint32(dl)})
		} else {
			b := &d.blocks[len(d.blocks)-1]
			b.f, b.dl = max(b.f, uint32(f)), min(b.dl, uint32(dl))
		}
	}
	if wide {
		d.packed = nil
		d.wide = make([]fl, len(freqs))
		for i := range freqs {
			d.wide[i] = fl{f: freqs[i], dl: lens[i]}
		}
	} else {
		d.packed = d.packed[:len(freqs)]
		for i := range freqs {
			d.packed[i] = freqs[i]<<16 | lens[i]
		}
	}
	d.front = frontier(freqs, lens)
	d.bytes = 4*cap(d.docs) + 4*cap(d.packed) + 8*(len(d.wide)+len(d.blocks)+len(d.front)) + 128
	return d, pl, it, nil
}

// frontier returns the Pareto frontier of the (f, dl) pairs: for each frequency, the
// smallest length, kept only where no larger frequency has a length as small.
func frontier(freqs, lens []uint32) []fl {
	minLen := map[uint32]uint32{}
	for i, f := range freqs {
		if l, ok := minLen[f]; !ok || lens[i] < l {
			minLen[f] = lens[i]
		}
	}
	fs := make([]uint32, 0, len(minLen))
	for f := range minLen {
		fs = append(fs, f)
	}
	// descending frequency; keep a pair when its length beats every larger frequency's
	sortDesc(fs)
	out := make([]fl, 0, 8)
	best := uint32(math.MaxUint32)
	for _, f := range fs {
		if l := minLen[f]; l < best {
			out = append(out, fl{f: f, dl: l})
			best = l
		}
	}
	return out
}

func sortDesc(a []uint32) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] > a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
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
