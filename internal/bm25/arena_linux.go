package bm25

import (
	"errors"
	"log/slog"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// populateOff is set once the kernel does not know MADV_POPULATE_WRITE (before Linux
// 5.14): pages are then faulted in by their first touch. Other failures (no memory now, a
// fatal signal pending) leave it on: the pages then fault in at their first touch.
var populateOff atomic.Bool

// populate faults in the n bytes of anonymous memory at p (a page boundary) with one
// madvise.
func populate(p unsafe.Pointer, n int) {
	if populateOff.Load() || n <= 0 {
		return
	}
	if err := unix.Madvise(unsafe.Slice((*byte)(p), n), unix.MADV_POPULATE_WRITE); errors.Is(err, unix.EINVAL) {
		populateOff.Store(true)
		slog.Debug("hybrid: populating the postings cache's memory ahead is not available; pages fault in at first touch", "err", err)
	}
}
