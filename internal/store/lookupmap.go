package store

import (
	"os"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// A lookup that misses is checked against the raw pages (checkLookup), and every Add of
// a new document misses once (its id is looked up first). Mapping store.db for each such
// check (open, map, unmap, close: five system calls and a fault per page touched) was
// about a seventh of a bulk ingest's CPU and most of a one-document Add's check. So the
// checks of an open store share one read-only mapping of its file, made on the first and
// remade, larger, when a transaction sees a longer file; DB.Close drops it.

// lookupMap is the shared read-only mapping of one open store.db.
type lookupMap struct {
	mu    sync.RWMutex // readers: checks reading data; writer: a remap
	f     *os.File
	data  []byte
	unmap func()
}

// lookupMaps holds the lookupMap of each open bolt.DB.
var lookupMaps sync.Map // *bolt.DB -> *lookupMap

// lookupWalk is a pageWalk over tx's pages for lookups (find): it reads the store's
// shared mapping (or the file, where it cannot be mapped) and has no reach bitmap, so it
// serves find and rawPath, not walks that mark pages. done releases it.
func lookupWalk(tx *bolt.Tx) (w *pageWalk, done func(), err error) {
	v, _ := lookupMaps.LoadOrStore(tx.DB(), &lookupMap{})
	lm := v.(*lookupMap)
	need := tx.Size()
	lm.mu.RLock()
	for lm.f == nil || (lm.data != nil && int64(len(lm.data)) < need) {
		lm.mu.RUnlock()
		if err := lm.remap(tx.DB().Path(), need); err != nil {
			return nil, nil, err
		}
		lm.mu.RLock()
	}
	ps := int64(tx.DB().Info().PageSize)
	lv := lookupLevels.Get().(*[][]pageElem)
	w = &pageWalk{r: lm.f, data: lm.data, pageSize: ps, hwm: uint64(need) / uint64(ps), max: 1, levels: *lv}
	return w, func() {
		*lv, w.levels = w.levels, nil
		lookupLevels.Put(lv)
		lm.mu.RUnlock()
	}, nil
}

// lookupLevels recycles the element buffers (one a tree level) of lookup walks. A miss
// check parses every page it descends through; with a fresh buffer for each page, the
// checks of a bulk load's new ids (one each) made much of its garbage: at 18M documents
// the checks were 16 % of the load's CPU, beside the collector's 27 % (BENCHMARKS §0zi).
var lookupLevels = sync.Pool{New: func() any { return new([][]pageElem) }}

// remap (re)opens and maps the file when it is not mapped or mapped shorter than need.
func (lm *lookupMap) remap(path string, need int64) error {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	if lm.f != nil && (lm.data == nil || int64(len(lm.data)) >= need) {
		return nil // another check did it
	}
	if lm.f == nil {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		lm.f = f
	}
	if lm.unmap != nil {
		lm.unmap()
		lm.data, lm.unmap = nil, nil
	}
	fi, err := lm.f.Stat()
	if err != nil {
		return err
	}
	lm.data, lm.unmap = mapFile(lm.f, max(fi.Size(), need))
	adviseRandom(lm.data) // a lookup's path: a page a level
	if lm.data != nil && int64(len(lm.data)) < need {
		lm.unmap() // cannot happen: the file holds what a transaction reads
		lm.data, lm.unmap = nil, nil
	}
	return nil
}

// releaseLookupMap drops the shared mapping of bdb (before it closes).
func releaseLookupMap(bdb *bolt.DB) {
	v, ok := lookupMaps.LoadAndDelete(bdb)
	if !ok {
		return
	}
	lm := v.(*lookupMap)
	lm.mu.Lock()
	defer lm.mu.Unlock()
	if lm.unmap != nil {
		lm.unmap()
	}
	if lm.f != nil {
		lm.f.Close()
	}
	lm.f, lm.data, lm.unmap = nil, nil, nil
}

// dropLookupResident applies drop (madvise) to bdb's shared mapping, if it has one
// (DropResident: the mapping's pages count in the process's RSS like bbolt's own).
func dropLookupResident(bdb *bolt.DB, drop func([]byte)) {
	v, ok := lookupMaps.Load(bdb)
	if !ok {
		return
	}
	lm := v.(*lookupMap)
	lm.mu.RLock()
	defer lm.mu.RUnlock()
	if lm.data != nil {
		drop(lm.data)
	}
}
