package store

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unsafe"

	bolt "go.etcd.io/bbolt"
)

// A key that is not found may be a key that a flipped bit changed: bbolt's branch pages
// keep their own copies of the separator keys, so a lookup still descends to the leaf page
// that holds the damaged element, and only the element's own key is wrong. checkMiss
// proves a miss honest by reading the elements around where the key would be: at least a
// page's worth of bytes (and 4 elements) on each side, which covers the whole leaf page the
// lookup landed in (a leaf page holds at most a page's worth of elements, or up to 4 large
// ones). Each must be in key order and pass its key-bound checksum (codec.go). It costs
// only a miss; a hit checks its own value when it is decoded.

// minWalk is the fewest elements checkMiss reads on each side (bbolt keeps up to 4
// elements of any size on one page).
const minWalk = 4

// elemOverhead is the bytes a bbolt leaf element takes besides its key and value.
const elemOverhead = 16

// checkMiss verifies the neighbourhood of key in bucket b after a lookup of key missed:
// nil when every element around it is in order and passes verify (the miss is honest),
// else an error wrapping ErrCorrupt naming what of (a document, an index id) was sought.
func checkMiss(b *bolt.Bucket, key []byte, what string, verify func(k, v []byte) error) error {
	if b == nil {
		return nil
	}
	cur := b.Cursor()
	if k, _ := cur.First(); k == nil {
		return nil // an empty bucket (the vectors of a store without an embedder)
	}
	pageSize := b.Tx().DB().Info().PageSize
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s %s is not stored, and the store of record is damaged where it would be: %s",
			ErrCorrupt, what, ShowKey(key), fmt.Sprintf(format, args...))
	}
	for _, forward := range []bool{true, false} {
		k, v := cur.Seek(key)
		if !forward {
			if k == nil {
				k, v = cur.Last()
			} else {
				k, v = cur.Prev()
			}
		}
		// Seek lands on the first key after key (key itself missed), Prev before it: a key
		// on the wrong side, or key itself, is a branch page whose keys are damaged, which
		// led the lookup to the wrong leaf.
		if c := bytes.Compare(k, key); k != nil && (forward && c <= 0 || !forward && c >= 0) {
			return bad("the lookup was led to %s (a branch page's keys are damaged)", ShowKey(k))
		}
		var prev []byte
		for n, size := 0, 0; k != nil && (n < minWalk || size < pageSize); n++ {
			if prev != nil {
				if c := bytes.Compare(prev, k); (forward && c >= 0) || (!forward && c <= 0) {
					return bad("keys %s and %s are out of order", ShowKey(prev), ShowKey(k))
				}
			}
			if err := verify(k, v); err != nil {
				return bad("%s", strings.TrimPrefix(err.Error(), ErrCorrupt.Error()+": "))
			}
			prev, size = k, size+elemOverhead+len(k)+len(v)
			if forward {
				k, v = cur.Next()
			} else {
				k, v = cur.Prev()
			}
		}
	}
	return nil
}

// errNested: a docs or vecs bucket element is a bucket (its flags are damaged).
var errNested = errors.New("an element that should be a value is a bucket")

// verifyRecordElem checks one element of a docs bucket.
func verifyRecordElem(k, v []byte) error {
	if v == nil {
		return fmt.Errorf("key %s: %w", ShowKey(k), errNested)
	}
	// The key's bytes as the id, without a copy: a miss's check verifies a page of records
	// on each side, a copy each was most of its allocations. Nothing is kept of it on
	// success; an error may keep the id, so it gets a copy of its own.
	if checkRecord(unsafe.String(unsafe.SliceData(k), len(k)), v) == nil {
		return nil
	}
	return checkRecord(string(k), v)
}

// verifyVectorElem checks one element of a vecs bucket.
func verifyVectorElem(k, v []byte) error {
	if v == nil {
		return fmt.Errorf("key %s: %w", ShowKey(k), errNested)
	}
	_, err := DecodeVector(string(k), v)
	return err
}

// lookupRecord is docs.Get(id), and on a miss checkMiss: (nil, nil) only when the record is
// honestly not stored.
func lookupRecord(docs *bolt.Bucket, id string) ([]byte, error) {
	if docs == nil {
		return nil, nil
	}
	v := docs.Get([]byte(id))
	if v == nil {
		return nil, checkDocsMiss(docs, []byte(id))
	}
	return v, nil
}

// lookupVector is vecs.Get(uid), and on a miss checkMiss: (nil, nil) only when no vector is
// honestly stored for uid.
func lookupVector(vecs *bolt.Bucket, uid string) ([]byte, error) {
	if vecs == nil {
		return nil, nil
	}
	v := vecs.Get([]byte(uid))
	if v == nil {
		return nil, honestMiss(vecs, []byte(uid), "the vector of index id", "vecs", verifyVectorElem)
	}
	return v, nil
}

// honestMiss is checkMiss and then checkLookup (the pages the lookup read, the leaf's
// layout: a lowered element count hides elements that no neighbour's checksum misses):
// nil only when key is honestly not in bucket b (named bucket in errors).
func honestMiss(b *bolt.Bucket, key []byte, what, bucket string, verify func(k, v []byte) error) error {
	if err := checkMiss(b, key, what, verify); err != nil {
		return err
	}
	if err := checkLookup(b, key, bucket); err != nil {
		return fmt.Errorf("%w: %s %s is not stored, and the store of record is damaged where it would be: %s",
			ErrCorrupt, what, ShowKey(key), strings.TrimPrefix(err.Error(), ErrCorrupt.Error()+": "))
	}
	return nil
}

// inCollection names collection col in err (nil stays nil).
func inCollection(col string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("collection %s: %w", ShowKey(col), err)
}
