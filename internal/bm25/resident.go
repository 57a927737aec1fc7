package bm25

import (
	"reflect"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/blevesearch/bleve/v2/index/scorch"
	zap "github.com/blevesearch/zapx/v16"
)

// residentCheckEvery is the least time between two reads of the process's resident pages
// by one index (a search of a small index takes a millisecond; the read costs tens of µs).
const residentCheckEvery = 20 * time.Millisecond

// residentTrim keeps the index's mapped segment pages under BM25Options.MappedResidentBytes.
type residentTrim struct {
	limit int64
	also  func()        // BM25Options.AlsoTrim
	last  atomic.Int64  // when the resident pages were last read (UnixNano)
	mu    sync.Mutex    // one trim at a time
	trims atomic.Uint64 // trims done (tests)
}

// after runs once a search of snap is done, while snap's segments are still held: when the
// process's resident file-backed bytes exceed the limit, the segments' mappings drop their
// resident pages.
func (t *residentTrim) after(snap *scorch.IndexSnapshot) {
	if t.limit <= 0 {
		return
	}
	now := time.Now().UnixNano()
	if last := t.last.Load(); now-last < int64(residentCheckEvery) || !t.last.CompareAndSwap(last, now) {
		return
	}
	if n, ok := fileResidentBytes(); !ok || n <= t.limit {
		return
	}
	if !t.mu.TryLock() {
		return // another search is trimming
	}
	defer t.mu.Unlock()
	dropSegmentsResident(snap)
	if t.also != nil {
		// On its own goroutine: the owner's trim may open a read transaction of its own,
		// which must not nest in one the searching goroutine might hold.
		go t.also()
	}
	t.trims.Add(1)
}

// dropSegmentsResident drops the resident pages of the mappings of snap's persisted
// segments (held mapped by the caller's reader).
func dropSegmentsResident(snap *scorch.IndexSnapshot) {
	for _, ss := range snap.Segments() {
		if mem := segmentMapping(ss); len(mem) > 0 {
			dropResident(mem)
		}
		if ds, ok := ss.Segment().(*diskSegment); ok {
			ds.mu.Lock()
			if len(ds.mem) > 0 {
				dropResident(ds.mem)
			}
			ds.mu.Unlock()
		}
	}
}

// zapMem is the offset of zap's SegmentBase.mem (its mapping, unexported), found by
// reflection (ok false: this zap has no such field; nothing is trimmed then).
var zapMem = func() (f struct {
	ok  bool
	off uintptr
}) {
	sf, ok := reflect.TypeOf(zap.SegmentBase{}).FieldByName("mem")
	f.off, f.ok = sf.Offset, ok && len(sf.Index) == 1 && sf.Type == reflect.TypeOf([]byte(nil))
	return f
}()

// segmentMapping returns the memory-mapped bytes of a persisted zap segment (nil for an
// in-memory one, or when zap's layout is not the one this package reads).
func segmentMapping(ss *scorch.SegmentSnapshot) []byte {
	var seg *zap.Segment
	switch x := ss.Segment().(type) {
	case *zap.Segment:
		seg = x
	case *diskSegment:
		seg = x.Segment
	}
	if seg == nil || !zapMem.ok {
		return nil
	}
	return *(*[]byte)(unsafe.Add(unsafe.Pointer(&seg.SegmentBase), zapMem.off))
}
