package store

import (
	"io"

	bolt "go.etcd.io/bbolt"
)

// Snapshot is a read transaction whose view of the store of record can be copied whole
// (a backup) while writers go on: bbolt's copy-on-write pages keep every page it sees
// until it ends, and writes committed after it began are not in the copy.
type Snapshot struct {
	tx *bolt.Tx
}

// BeginSnapshot starts a snapshot; the caller ends it with Close. While it is open the
// file cannot shrink, and a writer that must grow the mapping waits for it: keep it no
// longer than the copy takes.
func (db *DB) BeginSnapshot() (*Snapshot, error) {
	tx, err := db.bolt.Begin(false)
	if err != nil {
		return nil, err
	}
	return &Snapshot{tx: tx}, nil
}

// Size is the size in bytes of the file the snapshot copies (what WriteTo writes).
func (s *Snapshot) Size() int64 { return s.tx.Size() }

// WriteTo writes the snapshot as a complete store.db file to w (a file bbolt opens as it
// was when the snapshot began). A damaged page read on the way is ErrCorrupt (Guard).
func (s *Snapshot) WriteTo(w io.Writer) (n int64, err error) {
	err = Guard("store.db backup", func() error {
		var werr error
		n, werr = s.tx.WriteTo(w)
		return werr
	})
	return n, err
}

// Documents is the number of documents in the snapshot, from the collections' persisted
// counters (-1 when one of them is missing or cannot be trusted: it would have to be
// counted, reading every record).
func (s *Snapshot) Documents() int {
	n := 0
	err := Guard("store.db read", func() error {
		cols := s.tx.Bucket(bkCols)
		if cols == nil {
			return nil
		}
		return cols.ForEachBucket(func(k []byte) error {
			b := cols.Bucket(k)
			if checkColBucket(b, string(k)) != nil {
				return errStop
			}
			d, _, st := counts(b)
			if st != countsOK {
				return errStop
			}
			n += d
			return nil
		})
	})
	if err != nil {
		return -1
	}
	return n
}

// Close ends the snapshot.
func (s *Snapshot) Close() error { return s.tx.Rollback() }
