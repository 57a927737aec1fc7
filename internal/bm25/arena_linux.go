package bm25

import (
	"errors"
	"log/slog"
	"unsafe"

	"golang.org/x/sys/unix"
)

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
