package store

import (
	"bytes"
	"encoding/binary"
	"slices"
	"sort"

	bolt "go.etcd.io/bbolt"
)

// A batch of lookups at random keys (the rows that rescore a dense search's candidates:
// hundreds a query) reads one leaf page each, and a leaf not in the page cache is a read
// the lookup waits for, one after the other: on a cold 21M x 768 store, seconds a query
// on a disk that answers about 1,000 random reads a second one at a time and 4,000 when
// asked for several at once (BENCHMARKS §0zz). prefetchKeys asks for them all at once.

// prefetchMin is the fewest lookups a batch needs for prefetchKeys to read its pages ahead.
const prefetchMin = 8

// prefetchKeys asks the kernel to read ahead the pages that lookups in bucket b of the n
// keys key(0), ..., key(n-1) (in increasing order) will read, one level of the tree at a
// time: the pages of a level that are not resident
// are all asked for at once (readahead, without waiting), then each key's page at that
// level is read and the key's child taken from it, down to the leaves, which are asked
// for and not parsed (the lookups read them). A hint only: the branch pages are read
// through the store's shared lookup mapping, checked only as far as bounds (the lookups
// that follow check what they read), a key stops at anything odd, and nothing is done in
// a write transaction, for a bucket kept inline, for fewer than prefetchMin keys, or
// where pages cannot be asked for ahead (no mapping; systems other than Linux).
func prefetchKeys(b *bolt.Bucket, n int, key func(i int) string) {
	if !canReadAhead || n < prefetchMin || b == nil || b.Root() == 0 || b.Tx().Writable() {
		return
	}
	w, done, err := lookupWalk(b.Tx())
	if err != nil {
		return
	}
	defer done()
	if w.data == nil {
		return
	}
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte(key(i))
	}
	descendAhead(w.data, w.pageSize, w.hwm, uint64(b.Root()), keys, func(_ int, off, n int64) { readAhead(w.data[off : off+n]) })
}

// descendAhead walks keys down the tree of pages from root in data (the file, pages of
// pageSize, hwm of them in use), a level at a time: ahead(depth, off, n) is called once for
// each distinct page of a level (its first pageSize bytes; the root's level is depth 0),
// in increasing order, before any of them is read, and the leaf each key reached is
// returned (0 where it stopped: a page out of bounds, not a branch or a leaf, a branch
// whose elements do not lie in it).
func descendAhead(data []byte, pageSize int64, hwm, root uint64, keys [][]byte, ahead func(depth int, off, n int64)) []uint64 {
	ids := make([]uint64, len(keys))
	leaves := make([]uint64, len(keys))
	live := make([]int, 0, len(keys)) // the keys still going down
	for i := range keys {
		ids[i] = root
		live = append(live, i)
	}
	pages := make([]uint64, 0, len(keys))
	for depth := 0; len(live) > 0 && depth <= maxTreeDepth; depth++ {
		pages = pages[:0]
		for _, k := range live {
			if id := ids[k]; id >= 2 && id < hwm && int64(id+1)*pageSize <= int64(len(data)) {
				pages = append(pages, id)
			}
		}
		slices.Sort(pages)
		for i, id := range pages {
			if i == 0 || id != pages[i-1] {
				ahead(depth, int64(id)*pageSize, pageSize)
			}
		}
		next := live[:0]
		for _, k := range live {
			id := ids[k]
			if id < 2 || id >= hwm || int64(id+1)*pageSize > int64(len(data)) {
				continue
			}
			off := int64(id) * pageSize
			switch binary.LittleEndian.Uint16(data[off+8:]) {
			case leafFlag:
				leaves[k] = id
			case branchFlag:
				end := min(int64(len(data)), off+(1+int64(binary.LittleEndian.Uint32(data[off+12:])))*pageSize)
				if child, ok := branchChild(data[off:end], keys[k]); ok {
					ids[k] = child
					next = append(next, k)
				}
			}
		}
		live = next
	}
	return leaves
}

// branchChild is the child page a lookup of key descends to from branch page p (its
// header and elements): the last element whose key is at most key, or the first, as
// bbolt's lookups choose. ok is false when p's elements or their keys do not lie in p.
func branchChild(p, key []byte) (child uint64, ok bool) {
	if len(p) < pageHeaderSize {
		return 0, false
	}
	n := int(binary.LittleEndian.Uint16(p[10:]))
	if n == 0 || pageHeaderSize+n*elemSize > len(p) {
		return 0, false
	}
	keyAt := func(i int) ([]byte, bool) {
		e := pageHeaderSize + i*elemSize
		pos, size := int64(binary.LittleEndian.Uint32(p[e:])), int64(binary.LittleEndian.Uint32(p[e+4:]))
		if lo := int64(e) + pos; lo+size <= int64(len(p)) {
			return p[lo : lo+size], true
		}
		return nil, false
	}
	sound := true
	i := sort.Search(n, func(i int) bool {
		k, ok := keyAt(i)
		if !ok {
			sound = false
			return true
		}
		return bytes.Compare(k, key) > 0
	})
	if !sound {
		return 0, false
	}
	e := pageHeaderSize + max(0, i-1)*elemSize
	return binary.LittleEndian.Uint64(p[e+8:]), true
}
