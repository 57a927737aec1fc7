package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// A collection's sources index, col/<name>/srcs, counts its documents by their source
// (RecordSource): key 's' + source, 'n' for the documents without one, 'x' for those whose
// source is longer than maxIndexedSource; value: the count (8 bytes, big-endian) then a
// CRC-32C of key and count (4 bytes). It is derived from the records: kept by the
// transactions that write them (putTx, deleteTx) while the info key "srcs" is present, which
// says that it is complete. A store made before it was kept, or one whose index was found
// wrong, has no such key: its writes leave the index alone, a listing reads the records, and
// BuildSources builds it again from them.
//
// A listing (Sources) trusts it only when every entry passes its checksum and the counts add
// up to the collection's document count: a lost, damaged or stale entry makes it read the
// records instead, never answer wrong.

var (
	bkSources  = []byte("srcs")
	keySources = []byte("srcs") // in info: the sources index is complete and kept
)

// SourceKey is the metadata key of a document's source (the file or URL it came from).
const SourceKey = "source"

// maxIndexedSource is the longest source the sources index keys by name (bbolt's keys are at
// most 32 KiB); longer ones are counted under one key, and a listing of a collection that
// holds any reads the records.
const maxIndexedSource = 4096

// Source-index key kinds.
const (
	srcNamed byte = 's'
	srcNone  byte = 'n'
	srcLong  byte = 'x'
)

// RecordSource is record r's source: its metadata's SourceKey when that is a string, else "".
func RecordSource(r *Record) string {
	if r == nil {
		return ""
	}
	s, _ := r.Metadata[SourceKey].(string)
	return s
}

// sourceIndexKey is the sources-index key that counts documents of source src.
func sourceIndexKey(src string) []byte {
	switch {
	case src == "":
		return []byte{srcNone}
	case len(src) > maxIndexedSource:
		return []byte{srcLong}
	}
	return append([]byte{srcNamed}, src...)
}

// sourceEntry is the stored value of sources-index key k with count n.
func sourceEntry(k []byte, n uint64) []byte {
	v := make([]byte, 12)
	binary.BigEndian.PutUint64(v, n)
	binary.BigEndian.PutUint32(v[8:], crc32.Update(crc32.Checksum(k, castagnoli), castagnoli, v[:8]))
	return v
}

// errSourcesWrong: the sources index disagrees with itself or with the records.
var errSourcesWrong = errors.New("the sources index is damaged or stale")

// parseSourceEntry is the count of sources-index entry (k, v).
func parseSourceEntry(k, v []byte) (uint64, error) {
	if len(k) == 0 || (k[0] != srcNamed && k[0] != srcNone && k[0] != srcLong) || (k[0] != srcNamed && len(k) != 1) ||
		len(v) != 12 || binary.BigEndian.Uint32(v[8:]) != crc32.Update(crc32.Checksum(k, castagnoli), castagnoli, v[:8]) {
		return 0, fmt.Errorf("%w: entry %s fails its checksum", errSourcesWrong, ShowKey(k))
	}
	n := binary.BigEndian.Uint64(v)
	if n == 0 || n > 1<<48 {
		return 0, fmt.Errorf("%w: entry %s counts %d documents", errSourcesWrong, ShowKey(k), n)
	}
	return n, nil
}

// sourceDelta is what a write changes in a sources index: documents added (positive) or
// removed (negative) per source.
type sourceDelta map[string]int

// apply adds d to the sources index of collection bucket b, inside the write that changes
// its records, when the index is kept. An entry that fails its checksum, or a count that
// would fall below zero, means the index is wrong: it stops being kept (the info key is
// removed, in this same transaction), and the records are read until BuildSources builds it.
func (d sourceDelta) apply(b *bolt.Bucket) error {
	info := b.Bucket(bkInfo)
	if len(d) == 0 || info.Get(keySources) == nil {
		return nil
	}
	sb := b.Bucket(bkSources)
	if sb == nil {
		return info.Delete(keySources)
	}
	keys := make([]string, 0, len(d))
	for src, n := range d {
		if n != 0 {
			keys = append(keys, src)
		}
	}
	slices.Sort(keys) // puts in key order: the pages are written once
	for _, src := range keys {
		k := sourceIndexKey(src)
		var cur uint64
		if v := sb.Get(k); v != nil {
			var err error
			if cur, err = parseSourceEntry(k, v); err != nil {
				return info.Delete(keySources)
			}
		}
		n := int64(cur) + int64(d[src])
		switch {
		case n < 0:
			return info.Delete(keySources)
		case n == 0:
			if err := sb.Delete(k); err != nil {
				return err
			}
		default:
			if err := sb.Put(k, sourceEntry(k, uint64(n))); err != nil {
				return err
			}
		}
	}
	return nil
}

// startSources makes the sources index of a new collection's bucket b: empty, and kept.
func startSources(b *bolt.Bucket) error {
	if _, err := b.CreateBucket(bkSources); err != nil {
		return err
	}
	return b.Bucket(bkInfo).Put(keySources, []byte{1})
}

// SourcesAnswer says how a collection's sources index answered a listing (Sources).
type SourcesAnswer int

const (
	// SourcesListed: the list is the collection's sources.
	SourcesListed SourcesAnswer = iota
	// SourcesNotKept: the index is not kept (a store made before it was), or is damaged or
	// does not add up: read the records; BuildSources makes it answer.
	SourcesNotKept
	// SourcesUnlisted: the index is sound but cannot list them (a source too long to key,
	// or the collection's counters not trusted yet): read the records.
	SourcesUnlisted
)

// Sources lists the distinct sources of collection col's documents, sorted, from its sources
// index, when it can (SourcesListed): it trusts the index only when every entry passes its
// checksum and the counts add up to the collection's document count. A collection that does
// not exist lists nothing.
func (db *DB) Sources(col string) (srcs []string, ans SourcesAnswer, err error) {
	err = db.view(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, col, false)
		if err != nil || b == nil {
			return err
		}
		srcs, ans, err = readSources(b)
		return err
	})
	if err != nil {
		return nil, SourcesNotKept, err
	}
	return srcs, ans, nil
}

// readSources reads the sources index of collection bucket b (see Sources). A damaged page
// of the index is not an error: the records answer.
func readSources(b *bolt.Bucket) (srcs []string, ans SourcesAnswer, err error) {
	sb := b.Bucket(bkSources)
	if b.Bucket(bkInfo).Get(keySources) == nil || sb == nil {
		return nil, SourcesNotKept, nil
	}
	docs, _, st := counts(b)
	if st != countsOK {
		return nil, SourcesUnlisted, nil
	}
	if err := checkTree(sb, "srcs"); errors.Is(err, ErrCorrupt) {
		return nil, SourcesNotKept, nil
	} else if err != nil {
		return nil, SourcesNotKept, err
	}
	var total uint64
	long := false
	cur := sb.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		n, err := parseSourceEntry(k, v)
		if err != nil {
			return nil, SourcesNotKept, nil
		}
		total += n
		switch k[0] {
		case srcNamed:
			srcs = append(srcs, string(k[1:]))
		case srcLong:
			long = true
		}
	}
	switch {
	case total != uint64(docs):
		return nil, SourcesNotKept, nil
	case long:
		return nil, SourcesUnlisted, nil
	}
	return srcs, SourcesListed, nil // in key order: sorted
}

// countSources counts the documents of docs bucket docs by source (the sources index's
// content, from the records).
func (db *DB) countSources(tx *bolt.Tx, docs *bolt.Bucket) (sourceDelta, error) {
	if err := checkTree(docs, "docs"); err != nil {
		return nil, err
	}
	d := sourceDelta{}
	cur := docs.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		r, err := db.decodeRecord(tx, string(k), v, true)
		if err != nil {
			return nil, err
		}
		d[RecordSource(r)]++
	}
	return d, nil
}

// BuildSources builds the sources index of collection col from its records, in one write
// (it reads every record: once for a store made before the index was kept), and keeps it from
// then on. A collection that does not exist is ErrCollectionNotFound; a read-only store is
// bbolt's ErrDatabaseReadOnly.
func (db *DB) BuildSources(col string) error {
	if db.ro {
		return berrors.ErrDatabaseReadOnly
	}
	return db.update(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, col, false)
		if err != nil {
			return err
		}
		if b == nil {
			return fmt.Errorf("%w: %s", ErrCollectionNotFound, ShowKey(col))
		}
		d, err := db.countSources(tx, b.Bucket(bkDocs))
		if err != nil {
			return fmt.Errorf("indexing the sources of collection %s: %w", ShowKey(col), err)
		}
		if b.Bucket(bkSources) != nil {
			if err := b.DeleteBucket(bkSources); err != nil {
				return err
			}
		}
		if err := startSources(b); err != nil {
			return err
		}
		return d.apply(b)
	})
}

// DropSources stops keeping the sources index of collection col (a check found it wrong):
// listings read the records until BuildSources builds it again.
func (db *DB) DropSources(col string) error {
	if db.ro {
		return berrors.ErrDatabaseReadOnly
	}
	return db.update(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, col, false)
		if err != nil || b == nil {
			return err
		}
		return b.Bucket(bkInfo).Delete(keySources)
	})
}

// checkSources compares the sources index of collection bucket b, when kept, with counts
// (countSources): "" when they agree or it is not kept, else what differs.
func checkSources(b *bolt.Bucket, counts sourceDelta) string {
	sb := b.Bucket(bkSources)
	if b.Bucket(bkInfo).Get(keySources) == nil {
		return ""
	}
	if sb == nil {
		return "the sources index is kept but its bucket is missing"
	}
	if err := checkTree(sb, "srcs"); err != nil {
		return "the sources index's pages are damaged: " + firstLine(err)
	}
	want := make(map[string]uint64, len(counts))
	for src, n := range counts {
		want[string(sourceIndexKey(src))] += uint64(n)
	}
	seen := 0
	cur := sb.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		n, err := parseSourceEntry(k, v)
		if err != nil {
			return firstLine(err)
		}
		if w := want[string(k)]; w != n {
			return fmt.Sprintf("the sources index counts %d documents of %s, the records %d", n, ShowKey(k[min(len(k), 1):]), w)
		}
		seen++
	}
	if seen != len(want) {
		for k, n := range want {
			if sb.Get([]byte(k)) == nil {
				return fmt.Sprintf("the sources index has no entry for %s (%d documents)", ShowKey(k[1:]), n)
			}
		}
	}
	return ""
}
