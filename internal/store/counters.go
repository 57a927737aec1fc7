package store

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	segjson "github.com/segmentio/encoding/json"
	bolt "go.etcd.io/bbolt"
)

// A collection's counters (info/ndocs, info/nunits) are derived facts: the documents and
// index ids its docs bucket holds. They are persisted with a checksum (info/nsum) so that
// a damaged one is recognised, and then counted again from the records: never printed,
// never carried forward by a write, and never a reason to distrust a healthy index.

// countState says how far a collection's persisted counters can be trusted.
type countState int

const (
	countsOK        countState = iota // present, and they pass their checksum
	countsUnchecked                   // present without a checksum (written by an older version)
	countsMissing                     // absent (a store made before they were kept)
	countsDamaged                     // malformed, or they fail their checksum
)

// countSum is the checksum of the persisted counters d and u (8 bytes each).
func countSum(d, u []byte) uint32 {
	return crc32.Update(crc32.Checksum(d, castagnoli), castagnoli, u)
}

// putCounts persists a collection's counters with their checksum.
func putCounts(b *bolt.Bucket, docs, units int) error {
	info := b.Bucket(bkInfo)
	d, u := u64b(uint64(docs)), u64b(uint64(units))
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], countSum(d, u))
	for _, kv := range [][2][]byte{{keyDocN, d}, {keyUnitN, u}, {keyCountSum, sum[:]}} {
		if err := info.Put(kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

// recount counts the documents and index ids of a collection's bucket b from its records.
// A record that cannot be read is ErrCorrupt: the counts cannot be known.
func recount(b *bolt.Bucket) (docs, units int, err error) {
	if err := checkTree(b.Bucket(bkDocs), "docs"); err != nil {
		return 0, 0, fmt.Errorf("counting its documents: %w", err)
	}
	cur := b.Bucket(bkDocs).Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		var ch struct {
			Chunks []struct{} `json:"c"`
		}
		js, err := recordMetaJSON(string(k), v)
		if err != nil {
			return 0, 0, fmt.Errorf("counting its documents: %w", err)
		}
		if err := segjson.Unmarshal(js, &ch); err != nil {
			return 0, 0, fmt.Errorf("%w: counting its documents: document %s: %v", ErrCorrupt, ShowKey(k), err)
		}
		docs++
		units += max(1, len(ch.Chunks))
	}
	return docs, units, nil
}

// Recount is what counting a collection again found: its persisted counters were damaged
// (or disagreed with a derived index) and have been replaced by a count of its records.
type Recount struct {
	// Reason says what was wrong with the persisted counters.
	Reason string
	// Docs and Units are the counted values.
	Docs, Units int
	// Persisted: the count was written to the store (false on a read-only store, where it
	// holds for this process only).
	Persisted bool
}

// Recounted returns what counting collection col again (on load or on open, in this
// process) found; ok is false when its counters were trusted as persisted.
func (db *DB) Recounted(col string) (r Recount, ok bool) {
	db.notesMu.Lock()
	defer db.notesMu.Unlock()
	r, ok = db.recounted[col]
	return r, ok
}

// noteRecount records that collection col was counted again.
func (db *DB) noteRecount(col string, r Recount) {
	db.notesMu.Lock()
	defer db.notesMu.Unlock()
	if db.recounted == nil {
		db.recounted = map[string]Recount{}
	}
	if old, ok := db.recounted[col]; ok && r.Reason == "" {
		r.Reason = old.Reason
	}
	db.recounted[col] = r
}

// RecountIfDisagrees counts collection c again when derived index ix holds another number
// of index ids than c's counters say (before the index is distrusted for it: the counters
// may be what is wrong). It reports whether c's counters changed; they are persisted unless
// the store is read-only.
func (db *DB) RecountIfDisagrees(c *Collection, ix Index) (changed bool, err error) {
	n, err := ix.Count()
	if err != nil || n == c.Units {
		return false, nil
	}
	docs, units := c.Docs, c.Units
	if err := db.countCollection(c); err != nil {
		return false, err
	}
	if c.Docs == docs && c.Units == units {
		return false, nil
	}
	reason := fmt.Sprintf("counters said %d documents and %d index ids, a derived index holds %d", docs, units, n)
	db.log.Warn("memory: a collection's counters disagreed with its records: counted again",
		"collection", c.Name, "docs", c.Docs, "units", c.Units, "was", reason)
	db.noteRecount(c.Name, Recount{Reason: reason, Docs: c.Docs, Units: c.Units, Persisted: !db.ro})
	return true, nil
}
