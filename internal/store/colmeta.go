package store

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	bolt "go.etcd.io/bbolt"
)

// A collection's metadata (the user's, as Chroma keeps it per collection) is one value of
// its info bucket, info/cmeta: the JSON of an object, framed as a record is (codec.go):
// recordMagic, the CRC-32C of the key "cmeta" and the JSON, the JSON. The key, not the
// collection's name, is bound: a rename moves the bucket unchanged. A collection stored
// before metadata was kept has none (read as empty).

var keyColMeta = []byte("cmeta")

// encodeColMeta is the stored form of metadata JSON js.
func encodeColMeta(js []byte) []byte { return boundRecord(string(keyColMeta), js) }

// decodeColMeta checks stored metadata v and returns its JSON; ErrCorrupt when it fails its
// checksum or is of no known layout.
func decodeColMeta(col string, v []byte) ([]byte, error) {
	if len(v) < 5 || v[0] != recordMagic {
		return nil, fmt.Errorf("%w: collection %s: its stored metadata is of unknown layout", ErrCorrupt, ShowKey(col))
	}
	if crc32.Update(keyCRC(string(keyColMeta)), castagnoli, v[5:]) != binary.BigEndian.Uint32(v[1:]) {
		return nil, fmt.Errorf("%w: collection %s: its stored metadata fails its checksum", ErrCorrupt, ShowKey(col))
	}
	return v[5:], nil
}

// putColMeta stores metadata JSON meta in collection bucket b; nil or "{}" removes it.
func putColMeta(b *bolt.Bucket, meta []byte) error {
	info := b.Bucket(bkInfo)
	if info == nil {
		return fmt.Errorf("%w: a collection without its info bucket", ErrCorrupt)
	}
	if len(meta) == 0 || string(meta) == "{}" || string(meta) == "null" {
		return info.Delete(keyColMeta)
	}
	return info.Put(keyColMeta, encodeColMeta(meta))
}

// CollectionMeta reads the metadata JSON of collection name: nil when it has none (or a
// store made before collection metadata was kept), ErrCollectionNotFound when it is not
// stored, ErrCorrupt when it fails its checksum.
func (db *DB) CollectionMeta(name string) ([]byte, error) {
	var out []byte
	err := db.view(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, name, false)
		if err != nil {
			return err
		}
		if b == nil {
			return fmt.Errorf("%w: %s", ErrCollectionNotFound, ShowKey(name))
		}
		info := b.Bucket(bkInfo)
		if info == nil {
			return nil
		}
		v := info.Get(keyColMeta)
		if v == nil {
			return nil
		}
		js, err := decodeColMeta(name, v)
		if err != nil {
			return err
		}
		out = append([]byte(nil), js...) // bbolt's memory is valid only in the transaction
		return nil
	})
	return out, err
}

// SetCollectionMeta replaces the metadata of collection name with JSON meta (nil or "{}":
// none), in one transaction; ErrCollectionNotFound when it is not stored.
func (db *DB) SetCollectionMeta(name string, meta []byte) error {
	return db.update(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, name, false)
		if err != nil {
			return err
		}
		if b == nil {
			return fmt.Errorf("%w: %s", ErrCollectionNotFound, ShowKey(name))
		}
		return putColMeta(b, meta)
	})
}

// RenameCollection gives collection from the name to, in one transaction: the new
// collection's bucket takes each sub-bucket of the old one (bbolt's MoveBucket moves a
// bucket's header, not its pages: the cost does not grow with the documents), then the
// emptied old bucket is deleted. A crash leaves either name, never both or neither.
// With meta not nil, the metadata is replaced by it (JSON; "{}": none) in the same
// transaction. ErrCollectionNotFound when from is not stored, ErrCollectionExists when to is.
func (db *DB) RenameCollection(from, to string, meta []byte) error {
	return db.update(func(tx *bolt.Tx) error {
		cols := tx.Bucket(bkCols)
		var src *bolt.Bucket
		if cols != nil {
			src = cols.Bucket([]byte(from))
		}
		if src == nil {
			return fmt.Errorf("%w: %s", ErrCollectionNotFound, ShowKey(from))
		}
		if err := checkColBucket(src, from); err != nil {
			return err
		}
		if cols.Bucket([]byte(to)) != nil || cols.Get([]byte(to)) != nil {
			return fmt.Errorf("%w: %s", ErrCollectionExists, ShowKey(to))
		}
		dst, err := cols.CreateBucket([]byte(to))
		if err != nil {
			return err
		}
		var subs, plain [][]byte
		cur := src.Cursor()
		for k, v := cur.First(); k != nil; k, v = cur.Next() {
			if v == nil {
				subs = append(subs, append([]byte(nil), k...))
			} else {
				plain = append(plain, append([]byte(nil), k...))
			}
		}
		for _, k := range subs {
			if err := src.MoveBucket(k, dst); err != nil {
				return fmt.Errorf("moving %s of collection %s: %w", k, ShowKey(from), err)
			}
		}
		for _, k := range plain { // none is written today; kept if a later version adds one
			if err := dst.Put(k, append([]byte(nil), src.Get(k)...)); err != nil {
				return err
			}
		}
		if err := cols.DeleteBucket([]byte(from)); err != nil {
			return err
		}
		if meta == nil {
			return nil
		}
		return putColMeta(dst, meta)
	})
}
