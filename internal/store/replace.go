package store

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// replaceFault, when set, runs inside Replace's transaction between its deletes and its
// puts; an error from it aborts the transaction (tests inject failures with it).
var replaceFault func() error

// SetReplaceFault sets a function that Replace calls inside its transaction after removing
// its documents and before writing its puts; an error it returns aborts the transaction, as a
// crash or a full disk there would. nil removes it. Tests use it to prove the atomicity of a
// replacement; it is not safe to call while writes run.
func SetReplaceFault(fn func() error) { replaceFault = fn }

// Replace removes documents dels (distinct, none among puts; one not stored is skipped) of
// collection col and stores puts, in one transaction: readers and a crash see the
// collection before or after, never in between. The collection is created when absent and
// puts are given (without puts, one that does not exist is ErrCollectionNotFound). added is
// how many puts are new documents and unitDelta the change in index ids that puts make (as
// for Write); the documents removed are counted here. Removed is how many of dels were
// stored.
func (db *DB) Replace(col string, puts []Put, dels []string, added, unitDelta int) (w Commit, removed int, err error) {
	zd, fresh, unlock, err := db.recordCodec(col, puts)
	if err != nil {
		return Commit{}, 0, err
	}
	defer unlock()
	encs, vencs, err := encodePuts(puts, zd, db.encodeVector)
	if err != nil {
		return Commit{}, 0, err
	}
	err = db.update(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, col, len(puts) > 0)
		if err != nil {
			return err
		}
		if b == nil {
			return fmt.Errorf("%w: %s", ErrCollectionNotFound, ShowKey(col))
		}
		if fresh != nil {
			if err := storeDict(tx, zd, fresh); err != nil {
				return err
			}
		}
		gone, units, err := w.deleteTx(tx, b, dels)
		if err != nil {
			return err
		}
		if replaceFault != nil {
			if err := replaceFault(); err != nil {
				return err
			}
		}
		if err := w.putTx(tx, b, puts, encs, vencs); err != nil {
			return err
		}
		removed = gone
		w.Docs, w.Units, err = addCounts(b, added-gone, unitDelta-units)
		return err
	})
	if err != nil {
		return Commit{}, 0, err
	}
	if fresh != nil {
		db.commitDict(zd)
	}
	w.addPuts(puts)
	return w, removed, nil
}
