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
// asked for several at once (BENCHMARKS §0zz). descendKeys asks for them all at once,
// and finds each key's leaf on the way, so the lookups need not descend a second time.

// prefetchMin is the fewest lookups a batch needs for descendKeys to read its pages ahead
// and find the keys' leaves itself.
const prefetchMin = 8

// leafLookups has FillVectors take vectors from the leaves descendKeys finds; benchmarks
// turn it off to measure bbolt's lookups beside it.
var leafLookups = true

// descendKeys finds the leaf pages that lookups in bucket b of keys (in increasing order)
// read, one level of the tree at a time: the pages of a level that are not resident are
// all asked for at once (readahead, without waiting, where the system can), then each
// key's page at that level is read and the key's child taken from it, down to the leaves.
// leaves[i] is the bytes of keys[i]'s leaf (the page and its overflow pages) in the
// store's shared lookup mapping, nil where the descent stopped at anything odd; done
// releases the mapping, after which no leaf may be read. The caller looks each key up in
// its leaf (leafValue) and asks bbolt where that finds nothing: the pages are checked only
// as far as bounds, page ids and flags, so the values found there must carry their own
// check (a stored vector's checksum covers its key and values). Nothing is found in a
// write transaction (its pages may not be in the file yet), for a bucket kept inline, for
// fewer than prefetchMin keys or where the file is not mapped: leaves is nil then.
func descendKeys(b *bolt.Bucket, keys [][]byte) (leaves [][]byte, done func()) {
	done = func() {}
	if len(keys) < prefetchMin || b == nil || b.Root() == 0 || b.Tx().Writable() {
		return nil, done
	}
	w, release, err := lookupWalk(b.Tx())
	if err != nil {
		return nil, done
	}
	if w.data == nil {
		release()
		return nil, done
	}
	ahead := func(int, []uint64) {}
	if canReadAhead {
		ahead = func(_ int, pages []uint64) { readAheadPages(w.data, w.pageSize, pages) }
	}
	ids := descendAhead(w.data, w.pageSize, w.hwm, uint64(b.Root()), keys, ahead)
	if !leafLookups { // the pages asked for ahead, the lookups left to bbolt (benchmarks)
		release()
		return nil, done
	}
	leaves = make([][]byte, len(keys))
	for i, id := range ids {
		if id != 0 {
			off := int64(id) * w.pageSize
			over := int64(binary.LittleEndian.Uint32(w.data[off+12:]))
			leaves[i] = w.data[off:min(int64(len(w.data)), int64(w.hwm)*w.pageSize, off+(1+over)*w.pageSize)]
		}
	}
	return leaves, release
}

// aheadSample is how many pages of a level readAheadPages checks first: when all of them
// are resident, the level is taken to be (a check is a system call, 1.5-3.5 µs on the
// machines measured, as much as the rest of a lookup; BENCHMARKS §0zz2).
const aheadSample = 16

// readAheadPages asks the kernel to read ahead pages (ids, increasing) of data, a mapping
// of pageSize pages, those not resident, without waiting. A level of more than
// aheadSample pages is first sampled (aheadSample pages spread over it): when all are
// resident the others are not checked, since in a page cache that holds the tree's pages
// a check per page costs more than the rare page it would find missing; a single page
// found missing has all of them checked. Only the first pageSize bytes of a page are
// asked for (a leaf's overflow pages are read as they are reached).
func readAheadPages(data []byte, pageSize int64, pages []uint64) {
	at := func(id uint64) []byte { return data[int64(id)*pageSize : int64(id+1)*pageSize] }
	sampleAhead(pages, func(id uint64) bool { return resident(at(id)) }, func(id uint64) { readAhead(at(id)) })
}

// sampleAhead is readAheadPages' choice: ask(id) for each of pages unless more than
// aheadSample of them are given and the sample of them is all resident.
func sampleAhead(pages []uint64, resident func(id uint64) bool, ask func(id uint64)) {
	if n := len(pages); n > aheadSample {
		warm := true
		for i := 0; i < aheadSample && warm; i++ {
			warm = resident(pages[i*n/aheadSample])
		}
		if warm {
			return
		}
	}
	for _, id := range pages {
		ask(id)
	}
}

// leafValue is the value of key in leaf page p (its bytes: header, elements, keys and
// values), found as bbolt finds it; ok is false when p holds no such element, or one that
// is a bucket, or when its elements or their data do not lie in p.
func leafValue(p, key []byte) (val []byte, ok bool) {
	if len(p) < pageHeaderSize || binary.LittleEndian.Uint16(p[8:]) != leafFlag {
		return nil, false
	}
	i, n, ok := searchElems(p, true, key, false)
	if !ok || i == n {
		return nil, false
	}
	e := pageHeaderSize + i*elemSize
	k, _ := elemKey(p, i, true)
	lo := int64(e) + int64(binary.LittleEndian.Uint32(p[e+4:])) + int64(len(k))
	hi := lo + int64(binary.LittleEndian.Uint32(p[e+12:]))
	if binary.LittleEndian.Uint32(p[e:]) != 0 || !bytes.Equal(k, key) || hi > int64(len(p)) {
		return nil, false
	}
	return p[lo:hi], true
}

// descendAhead walks keys down the tree of pages from root in data (the file, pages of
// pageSize, hwm of them in use), a level at a time: ahead(depth, pages) is called with
// the distinct pages of each level (their ids, in increasing order; the root's level is
// depth 0) before any of them is read, and the leaf each key reached is
// returned (0 where it stopped: a page out of bounds, whose header names another page,
// not a branch or a leaf, a branch whose elements do not lie in it).
func descendAhead(data []byte, pageSize int64, hwm, root uint64, keys [][]byte, ahead func(depth int, pages []uint64)) []uint64 {
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
		pages = slices.Compact(pages)
		ahead(depth, pages)
		next := live[:0]
		for _, k := range live {
			id := ids[k]
			if id < 2 || id >= hwm || int64(id+1)*pageSize > int64(len(data)) {
				continue
			}
			off := int64(id) * pageSize
			if binary.LittleEndian.Uint64(data[off:]) != id {
				continue // its header names another page (bbolt's lookup refuses it too)
			}
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
	i, n, ok := searchElems(p, false, key, true)
	if !ok || n == 0 {
		return 0, false
	}
	e := pageHeaderSize + max(0, i-1)*elemSize
	return binary.LittleEndian.Uint64(p[e+8:]), true
}

// searchElems is the first of the n elements of page p (leaf elements when leaf, else
// branch elements) whose key is greater than key (after) or at least key (!after), n when
// none is; ok is false when p is shorter than its header and elements, or a key the
// search reads does not lie in p.
func searchElems(p []byte, leaf bool, key []byte, after bool) (i, n int, ok bool) {
	if len(p) < pageHeaderSize {
		return 0, 0, false
	}
	n = int(binary.LittleEndian.Uint16(p[10:]))
	if pageHeaderSize+n*elemSize > len(p) {
		return 0, 0, false
	}
	ok = true
	i = sort.Search(n, func(i int) bool {
		k, sound := elemKey(p, i, leaf)
		if !sound {
			ok = false
			return true
		}
		c := bytes.Compare(k, key)
		return c > 0 || !after && c == 0
	})
	return i, n, ok
}

// elemKey is the key of element i of page p (a leaf's or a branch's element layout); ok
// is false when it does not lie in p.
func elemKey(p []byte, i int, leaf bool) (k []byte, ok bool) {
	e := pageHeaderSize + i*elemSize
	at := e // a branch element: pos, ksize, child; a leaf's: flags, pos, ksize, vsize
	if leaf {
		at += 4
	}
	lo := int64(e) + int64(binary.LittleEndian.Uint32(p[at:]))
	hi := lo + int64(binary.LittleEndian.Uint32(p[at+4:]))
	if hi > int64(len(p)) {
		return nil, false
	}
	return p[lo:hi], true
}
