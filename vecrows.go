package memory

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/vectorstore"
)

// A store that keeps its vectors in int8 (VectorPrecision Int8) stores each vector once:
// in store.db. Its collections' disk indexes are opened with storeRows as their
// IndexConfig.Rows, keep binary (or int8) codes, lists and ids only, and read the vectors
// they rescore from store.db, a search's candidates in one read. Rebuilding such an index
// from store.db (its files deleted or damaged) reads the vectors as any rebuild does.

// storeRows reads the vectors of collection s's index ids from store.db: the RowSource
// of a row-less disk index.
type storeRows struct {
	db   *store.DB
	s    *colState
	prec VectorPrecision
}

var (
	_ vectorstore.RowSource    = storeRows{}
	_ vectorstore.RowPrecision = storeRows{}
)

// storeTxKey is the context key of a search's read transaction (withStoreTx).
type storeTxKey struct{}

// withStoreTx returns ctx carrying the read transaction tx of the search under way, which
// storeRows then reads in. A search holds a read transaction of store.db while it asks the
// vector index; a second one begun on the same goroutine could wait forever behind a
// writer that grows the file (bbolt's remap waits for every read transaction, and blocks
// new ones meanwhile). A bbolt transaction is not safe for concurrent use: ctx must
// reach the index only on the goroutine that holds tx, as one search's retrievers run
// (hybrid.Retrieve runs them in turn; the disk index reads its rows on the caller's
// goroutine), never a batch (SearchBatch searches its queries on several goroutines).
func withStoreTx(ctx context.Context, tx *store.Tx) context.Context {
	return context.WithValue(ctx, storeTxKey{}, tx)
}

// Rows fills dst with the stored vectors of ids (in ctx's read transaction when it
// carries one: withStoreTx). An id without a vector is vectorstore.ErrNoRow (and
// store.ErrNoVector).
func (r storeRows) Rows(ctx context.Context, ids []string, dst [][]float32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var err error
	if tx, ok := ctx.Value(storeTxKey{}).(*store.Tx); ok && tx != nil {
		err = tx.FillVectors(r.s.Name, ids, dst)
	} else {
		err = r.db.FillVectors(r.s.Name, ids, dst)
	}
	if errors.Is(err, store.ErrNoVector) {
		return fmt.Errorf("%w: %w", vectorstore.ErrNoRow, err)
	}
	return err
}

// Precision is the precision store.db keeps the vectors in.
func (r storeRows) Precision() string { return string(r.prec) }

// rowlessIndex reports whether the store's dense indexes in dir read their rows from
// store.db (storeRows): a store that keeps int8 vectors, its indexes on disk, the disk
// backend.
func (m *Memory) rowlessIndex(dir string) bool {
	return dir != "" && m.em.precision() == Int8 && cmpOr(m.opts.Index.Backend, vectorstore.DefaultBackend) == "disk"
}
