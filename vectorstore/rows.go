package vectorstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentmem/memory/internal/errkind"
)

// RowSource gives an index the float32 vectors of its ids from elsewhere (IndexConfig.Rows):
// a [DiskIndex] opened with one keeps no float32 rows of its own on disk, only codes, lists
// and ids, and reads the vectors it rescores through it, so that each vector is stored
// once (the store of record's copy).
type RowSource interface {
	// Rows writes the vector of ids[i] into dst[i] (len(dst) == len(ids), each dst[i] of
	// the index's dimension), as it was added to the index (before the index normalises
	// it for Cosine). An id without a vector is an error matching ErrNoRow. Rows is called
	// concurrently by searches, under the index's read lock.
	Rows(ctx context.Context, ids []string, dst [][]float32) error
}

// RowPrecision is an optional ability of a RowSource: the precision its vectors are kept
// in ("float32", "float16", "int8"), which a disk index's SearchPlan names.
type RowPrecision interface {
	Precision() string
}

// ErrNoRow reports an id a RowSource has no vector for.
var ErrNoRow = errors.New("vectorstore: the row source has no vector for an id")

// ErrRowSource reports a disk index whose files and configuration disagree on where its
// rows live: files written without rows of their own (IndexConfig.Rows set) opened
// without a RowSource, or the other way round. It matches ErrBadConfig.
var ErrRowSource = errkind.New("vectorstore: the disk index's rows are not where its configuration says", ErrBadConfig)

// RowMap is a RowSource over a map of ids to vectors (tests, tools).
type RowMap map[string][]float32

// Rows copies the vectors of ids into dst.
func (m RowMap) Rows(ctx context.Context, ids []string, dst [][]float32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for i, id := range ids {
		v, ok := m[id]
		if !ok {
			return fmt.Errorf("%w: %q", ErrNoRow, id)
		}
		if len(v) != len(dst[i]) {
			return fmt.Errorf("%w: the vector of %q has %d values, want %d", ErrDimMismatch, id, len(v), len(dst[i]))
		}
		copy(dst[i], v)
	}
	return nil
}
