package store

import (
	"bytes"

	bolt "go.etcd.io/bbolt"
)

// rebindBatch is how many values Rebind rewrites in one transaction.
const rebindBatch = 4096

// Rebind rewrites, in the key-bound layouts (codec.go), the records and vectors of
// collection col that an older version stored in a layout whose checksum does not cover
// their key, so that a flipped bit in their ids is found from then on. A value that fails
// its own checksum is damage, not an old layout: it is left as it is (Tally reports it).
// The contents do not change, so neither do the change log nor the derived indexes. It
// writes rebindBatch values a transaction and returns how many it rewrote.
func (db *DB) Rebind(col string) (int, error) {
	n := 0
	for _, bucket := range [][]byte{bkDocs, bkVecs} {
		var after []byte
		for {
			type kv struct{ k, v []byte }
			var batch []kv
			done := true
			err := db.update(func(tx *bolt.Tx) error {
				b, err := colBucket(tx, col, false)
				if err != nil || b == nil {
					return err
				}
				bk := b.Bucket(bucket)
				cur := bk.Cursor()
				k, v := cur.First()
				if after != nil {
					if k, v = cur.Seek(after); k != nil && bytes.Equal(k, after) {
						k, v = cur.Next()
					}
				}
				scanned := 0
				for ; k != nil; k, v = cur.Next() {
					if nv := rebound(bucket, k, v); nv != nil {
						batch = append(batch, kv{bytes.Clone(k), nv})
					}
					if scanned++; scanned >= 16*rebindBatch || len(batch) >= rebindBatch {
						after, done = bytes.Clone(k), false
						break
					}
				}
				// Put after the scan: a cursor is not to be used across changes to its bucket.
				for _, e := range batch {
					if err := bk.Put(e.k, e.v); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return n, err
			}
			n += len(batch)
			if done {
				break
			}
		}
	}
	return n, nil
}

// rebound is the key-bound form of value v of key k in bucket (bkDocs or bkVecs), or nil
// when v is in it already or fails its own checksum.
func rebound(bucket, k, v []byte) []byte {
	if bytes.Equal(bucket, bkDocs) {
		if len(v) > 0 && (v[0] == recordMagic || v[0] == recordMagicZ) {
			return nil
		}
		js, err := recordJSON(string(k), v)
		if err != nil {
			return nil
		}
		return boundRecord(string(k), js)
	}
	if v == nil || keyBoundVector(v) {
		return nil // a nested bucket (damage) or already bound
	}
	vec, err := DecodeVector(string(k), v)
	if err != nil {
		return nil
	}
	return EncodeVector(string(k), vec)
}
