package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// Collection is the state of one collection: its counters, the reach of its change log and
// its open derived indexes. What is kept is O(1) per collection: documents stay in the
// store of record. The caller serialises access (the root package locks it per collection).
type Collection struct {
	Name    string
	LastSeq uint64 // sequence number of the collection's last change
	Trimmed uint64 // the change log was trimmed up to this sequence number
	Changes int    // entries in its change log
	Docs    int    // documents stored (persisted as info/ndocs)
	Units   int    // index ids (chunks) of all documents (info/nunits)

	// Indexes are its derived indexes, one per kind of Kinds (nil where a kind does not
	// apply); nil while closed (OpenIndexes opens them).
	Indexes []Index
	Kinds   []Kind
	closed  []bool // kinds OpenIndexesOf left closed (nil: none)
}

// MaxChanges bounds the change log kept for index catch-up; past it the oldest half is
// dropped and an index that lags further is rebuilt from the documents on open.
const MaxChanges = 200_000

// LoadCollection reads a collection's counters and the reach of its change log (its indexes
// stay closed). Counters that cannot be trusted are counted again from the records (and the
// count persisted unless db is read-only): absent ones (a store made before they were kept),
// ones without a checksum on a writable store (an older version's, checked once), damaged
// ones (Recounted says so).
func (db *DB) LoadCollection(name string) (*Collection, error) {
	c := &Collection{Name: name}
	var st countState
	var was string
	err := db.view(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, name, false)
		if err != nil || b == nil {
			return err
		}
		// The pages lookups descend through, before any, and the references to them
		// (rawtree.go).
		if err := db.censusErr(tx, name); err != nil {
			return err
		}
		if err := checkCollection(tx, name, false, db.census.covers(tx, name)); err != nil {
			return err
		}
		if c.Trimmed, err = u64Stored(b.Bucket(bkInfo).Get(keyTrim), fmt.Sprintf("the trim point of collection %s", ShowKey(name))); err != nil {
			return err
		}
		c.LastSeq = c.Trimmed
		c.Docs, c.Units, st = counts(b)
		if st == countsDamaged {
			info := b.Bucket(bkInfo)
			was = fmt.Sprintf("ndocs %x, nunits %x, checksum %x", info.Get(keyDocN), info.Get(keyUnitN), info.Get(keyCountSum))
		}
		cur := b.Bucket(bkChanges).Cursor()
		for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
			if len(k) != 8 { // (the message is made only then: a log holds up to 200,000 keys)
				_, err := u64Stored(k, "a change-log key of collection "+ShowKey(name))
				return err
			}
			seq := binary.BigEndian.Uint64(k)
			c.Changes++
			c.LastSeq = max(c.LastSeq, seq)
		}
		// Every change takes its sequence number from the store's, in the same
		// transaction: a store's number behind a change is damaged (or its meta bucket
		// lost), and the next write would reuse numbers the change log holds.
		var storeSeq uint64
		if meta := tx.Bucket(bkMeta); meta != nil {
			if storeSeq, err = u64Stored(meta.Get(keySeq), "the store's sequence number"); err != nil {
				return err
			}
		}
		if c.LastSeq > storeSeq {
			return fmt.Errorf("%w: collection %s holds change %d, after the store's sequence number %d (damaged or lost)",
				ErrCorrupt, ShowKey(name), c.LastSeq, storeSeq)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch {
	case st == countsMissing:
		db.log.Info("memory: counting the documents of a collection stored by an older version (once)", "collection", c.Name)
	case st == countsUnchecked && !db.ro:
		db.log.Info("memory: checking the counters of a collection stored by an older version (once)", "collection", c.Name)
	case st == countsDamaged:
		db.log.Warn("memory: a collection's counters are damaged: counting its documents again", "collection", c.Name, "persisted", was)
	}
	if st == countsMissing || st == countsDamaged || (st == countsUnchecked && !db.ro) {
		if err := db.countCollection(c); err != nil {
			return nil, fmt.Errorf("memory: collection %s: %w", ShowKey(name), err)
		}
		if st == countsDamaged {
			db.noteRecount(name, Recount{Reason: "its persisted counters are damaged (" + was + ")", Docs: c.Docs, Units: c.Units, Persisted: !db.ro})
		}
	}
	if db.ro {
		c.Changes = 0 // nothing to trim: a read-only store writes nothing
	}
	return c, nil
}

// countCollection counts the documents and index ids of collection c from its records, and
// persists the counts (a read-only store counts for this process only).
func (db *DB) countCollection(c *Collection) error {
	txn := db.update
	if db.ro {
		txn = db.view
	}
	return txn(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, c.Name, false)
		if err != nil || b == nil {
			return err
		}
		docs, units, err := recount(b)
		if err != nil {
			return err
		}
		c.Docs, c.Units = docs, units
		if !tx.Writable() {
			return nil
		}
		return putCounts(b, docs, units)
	})
}

// Put is one document of a Write.
type Put struct {
	ID     string
	Record *Record
	Units  []string    // its index ids (Record.UnitIDs)
	Stale  []string    // index ids of its stored version that it drops
	Vecs   [][]float32 // one vector per unit (nil without an embedder)
	// Replaces says that a version of the document is stored (read by the caller under the
	// writer lock), and OldSource is that version's source (RecordSource): the sources
	// index moves the document from it to the new record's.
	Replaces  bool
	OldSource string
}

// Commit is what a durable write changed: the collection's counters after it, its last
// sequence number and the change log entries it added.
type Commit struct {
	Seq         uint64
	Changes     int
	Docs, Units int
	Puts        []Unit   // for the derived indexes
	Dels        []string // index ids deleted
}

// Committed applies a write's counters to c (the caller holds c's lock).
func (c *Collection) Committed(w Commit) {
	c.Docs, c.Units = w.Docs, w.Units
	if w.Changes > 0 {
		c.LastSeq = w.Seq
		c.Changes += w.Changes
	}
}

// Write stores puts in collection col (created when absent) in one transaction: the
// records, their vectors and a change per unit put or dropped. added is how many of them are
// new documents, unitDelta the change in the collection's index ids.
func (db *DB) Write(col string, puts []Put, added, unitDelta int) (Commit, error) {
	var w Commit
	zd, fresh, unlock, err := db.recordCodec(col, puts)
	if err != nil {
		return Commit{}, err
	}
	defer unlock()
	encs, vencs, err := encodePuts(puts, zd, db.encodeVector)
	if err != nil {
		return Commit{}, err
	}
	err = db.update(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, col, true)
		if err != nil {
			return err
		}
		if fresh != nil {
			if err := storeDict(tx, zd, fresh); err != nil {
				return err
			}
		}
		if err := w.putTx(tx, b, puts, encs, vencs); err != nil {
			return err
		}
		w.Docs, w.Units, err = addCounts(b, added, unitDelta)
		return err
	})
	if err != nil {
		return Commit{}, err
	}
	if fresh != nil {
		db.commitDict(zd)
	}
	w.addPuts(puts)
	return w, nil
}

// appendFill is how full bbolt fills the pages it splits in a bucket that a transaction
// only appends to: the change log (its keys are increasing sequence numbers) and the docs
// and vecs buckets of a write whose keys all sort after those stored (an ingest of ids in
// order). bbolt's default (0.5) leaves every page it splits half empty, which suits inserts
// at random places (each page keeps room for the keys that will land in it) but doubles the
// file where keys only come after the last one: no key will land in a page once it is left.
const appendFill = 1.0

// fillWhenAppending sets b to fill its pages (appendFill) when the smallest key that this
// transaction writes in it, first, sorts after every key it holds; otherwise, inserts among
// the stored keys, it keeps bbolt's default.
func fillWhenAppending(b *bolt.Bucket, first string) {
	if last, _ := b.Cursor().Last(); last == nil || first > string(last) {
		b.FillPercent = appendFill
	}
}

// encodeParallelMin is the number of records from which encodeRecords encodes on every core.
const encodeParallelMin = 256

// encodeRecords encodes the records of puts (EncodeRecord); see encodePuts.
func encodeRecords(puts []Put) ([][]byte, error) {
	encs, _, err := encodePuts(puts, nil, nil)
	return encs, err
}

// encodePuts encodes the records of puts (EncodeRecord; with zd, packed with that
// dictionary: encodeRecordZ) and, with encVec, their vectors
// (vencs[i][n] is the stored form of puts[i].Vecs[n]; nil for a put without vectors),
// before the transaction that stores them and, for a large write, on every core: encoding
// is most of a large write's time inside the store's one writer.
func encodePuts(puts []Put, zd *recDict, encVec func(string, []float32) ([]byte, error)) (encs [][]byte, vencs [][][]byte, err error) {
	encs = make([][]byte, len(puts))
	if encVec != nil {
		vencs = make([][][]byte, len(puts))
	}
	one := func(i int) error {
		p := &puts[i]
		var err error
		if zd != nil {
			encs[i], err = encodeRecordZ(p.ID, p.Record, zd)
		} else {
			encs[i], err = EncodeRecord(p.ID, p.Record)
		}
		if err != nil {
			return err
		}
		if encVec == nil || p.Vecs == nil {
			return nil
		}
		vs := make([][]byte, len(p.Units))
		for n, u := range p.Units {
			if vs[n], err = encVec(u, p.Vecs[n]); err != nil {
				return err
			}
		}
		vencs[i] = vs
		return nil
	}
	parts := min(runtime.GOMAXPROCS(0), len(puts)/encodeParallelMin)
	if parts <= 1 {
		for i := range puts {
			if err := one(i); err != nil {
				return nil, nil, err
			}
		}
		return encs, vencs, nil
	}
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for n := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[n] = Guard("encode", func() error {
				for i := n * len(puts) / parts; i < (n+1)*len(puts)/parts; i++ {
					if err := one(i); err != nil {
						return err
					}
				}
				return nil
			})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	return encs, vencs, nil
}

// putTx writes puts into collection bucket b inside tx: the records (encs: their
// encodings), their vectors (vencs: their encodings; see encodePuts) and a change per unit put or
// dropped (w counts them and keeps the last sequence number). The caller updates the counts.
func (w *Commit) putTx(tx *bolt.Tx, b *bolt.Bucket, puts []Put, encs [][]byte, vencs [][][]byte) error {
	docs, vb, cb := b.Bucket(bkDocs), b.Bucket(bkVecs), b.Bucket(bkChanges)
	cb.FillPercent = appendFill
	if len(puts) > 0 {
		first, firstUnit := puts[0].ID, ""
		for _, p := range puts {
			first = min(first, p.ID)
			if p.Vecs != nil {
				for _, u := range p.Units {
					if firstUnit == "" || u < firstUnit {
						firstUnit = u
					}
				}
			}
		}
		fillWhenAppending(docs, first)
		if firstUnit != "" {
			fillWhenAppending(vb, firstUnit)
		}
	}
	change := func(op byte, uid string) error {
		var err error
		if w.Seq, err = nextSeq(tx); err != nil {
			return err
		}
		w.Changes++
		return cb.Put(u64b(w.Seq), append([]byte{op}, uid...))
	}
	srcs := sourceDelta{}
	for i, p := range puts {
		if err := docs.Put([]byte(p.ID), encs[i]); err != nil {
			return err
		}
		if src := RecordSource(p.Record); !p.Replaces || src != p.OldSource {
			srcs[src]++
			if p.Replaces {
				srcs[p.OldSource]--
			}
		}
		for _, u := range p.Stale {
			if err := vb.Delete([]byte(u)); err != nil {
				return err
			}
			if err := change(opDel, u); err != nil {
				return err
			}
		}
		for n, u := range p.Units {
			if p.Vecs != nil {
				if err := vb.Put([]byte(u), vencs[i][n]); err != nil {
					return err
				}
			}
			if err := change(opPut, u); err != nil {
				return err
			}
		}
	}
	return srcs.apply(b)
}

// addPuts adds what puts, durably written, change in the derived indexes to w.
func (w *Commit) addPuts(puts []Put) {
	for _, p := range puts {
		w.Dels = append(w.Dels, p.Stale...)
		for n, u := range p.Units {
			up := Unit{ID: u, Record: p.Record, Chunk: p.Record.UnitIndex(n)}
			if p.Vecs != nil {
				up.Vec = p.Vecs[n]
			}
			w.Puts = append(w.Puts, up)
		}
	}
}

// Delete removes documents ids (distinct; one not stored is skipped) of collection col with
// their vectors, in one transaction, logging a change per index id removed. A collection
// that does not exist is ErrCollectionNotFound.
func (db *DB) Delete(col string, ids []string) (Commit, error) {
	var w Commit
	err := db.update(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, col, false)
		if err != nil {
			return err
		}
		if b == nil {
			return fmt.Errorf("%w: %s", ErrCollectionNotFound, ShowKey(col))
		}
		gone, units, err := w.deleteTx(tx, b, ids)
		if err != nil {
			return err
		}
		w.Docs, w.Units, err = addCounts(b, -gone, -units)
		return err
	})
	if err != nil {
		return Commit{}, err
	}
	return w, nil
}

// deleteTx removes documents ids (distinct; one not stored is skipped) from collection
// bucket b inside tx, with their vectors, logging a change per index id removed (added to
// w.Dels). It returns how many documents and index ids it removed; the caller updates the
// counts.
func (w *Commit) deleteTx(tx *bolt.Tx, b *bolt.Bucket, ids []string) (gone, units int, err error) {
	docs, vb, cb := b.Bucket(bkDocs), b.Bucket(bkVecs), b.Bucket(bkChanges)
	cb.FillPercent = appendFill
	first := len(w.Dels)
	srcs := sourceDelta{}
	for _, id := range ids {
		r, err := unitsRecord(docs, id)
		if err != nil {
			return 0, 0, err
		}
		if r == nil {
			continue
		}
		gone++
		srcs[RecordSource(r)]--
		w.Dels = append(w.Dels, r.UnitIDs(id)...)
		if err := docs.Delete([]byte(id)); err != nil {
			return 0, 0, err
		}
	}
	for _, u := range w.Dels[first:] {
		if err := vb.Delete([]byte(u)); err != nil {
			return 0, 0, err
		}
		if w.Seq, err = nextSeq(tx); err != nil {
			return 0, 0, err
		}
		w.Changes++
		if err := cb.Put(u64b(w.Seq), append([]byte{opDel}, u...)); err != nil {
			return 0, 0, err
		}
	}
	if err := srcs.apply(b); err != nil {
		return 0, 0, err
	}
	return gone, len(w.Dels) - first, nil
}

// Trim drops the change log of collection c, whose indexes are all persisted up to its
// last change.
func (db *DB) Trim(c *Collection) error {
	if c.Changes == 0 || db.ro {
		return nil
	}
	return db.update(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, c.Name, false)
		if err != nil || b == nil {
			return err
		}
		if err := b.DeleteBucket(bkChanges); err != nil {
			return err
		}
		if _, err := b.CreateBucket(bkChanges); err != nil {
			return err
		}
		c.Changes = 0
		c.Trimmed = c.LastSeq
		return b.Bucket(bkInfo).Put(keyTrim, u64b(c.LastSeq))
	})
}

// MaybeTrim drops the oldest half of a change log that grew past MaxChanges.
func (db *DB) MaybeTrim(c *Collection) error {
	if c.Changes <= MaxChanges || db.ro {
		return nil
	}
	return db.update(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, c.Name, false)
		if err != nil || b == nil {
			return err
		}
		cur := b.Bucket(bkChanges).Cursor()
		var last []byte
		n := 0
		for k, _ := cur.First(); k != nil && n < c.Changes/2; k, _ = cur.Next() {
			last = bytes.Clone(k)
			if err := cur.Delete(); err != nil {
				return err
			}
			n++
		}
		c.Changes -= n
		if last == nil {
			return nil
		}
		c.Trimmed = u64(last)
		return b.Bucket(bkInfo).Put(keyTrim, last)
	})
}

// catchUpBatch is how many index ids catch-up and rebuild read (in one read transaction)
// and apply at a time: large enough that a rebuild's BM25 batches are built on all cores,
// small enough to bound the memory of one step (~10 MB of records).
const catchUpBatch = 8192

// applyFunc applies puts and deletes to a derived index (Index.Apply).
type applyFunc func(ctx context.Context, puts []Unit, dels []string, seq uint64) error

// catchUp brings an index that reflects sequence number from up to c.LastSeq by replaying
// the change log after from (the caller checked that it reaches back that far): a touched
// index id that is live now is put again, one that is not is deleted.
func (db *DB) catchUp(c *Collection, from uint64, apply applyFunc) error {
	if from >= c.LastSeq {
		return nil
	}
	touched := map[string]bool{}
	var puts []Unit
	var dels []string
	if err := db.view(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, c.Name, false)
		if err != nil || b == nil {
			return err
		}
		cur := b.Bucket(bkChanges).Cursor()
		for k, v := cur.Seek(u64b(from + 1)); k != nil; k, v = cur.Next() {
			if len(v) > 1 {
				touched[string(v[1:])] = true
			}
		}
		docs := b.Bucket(bkDocs)
		for _, uid := range slices.Sorted(maps.Keys(touched)) {
			parent, idx := SplitUnit(uid)
			r, err := db.getRecord(tx, docs, parent)
			if err != nil {
				return err
			}
			if r != nil && r.HasUnit(idx) {
				puts = append(puts, Unit{ID: uid, Record: r, Chunk: idx})
			} else {
				dels = append(dels, uid)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	for i := 0; i < len(puts) || i == 0; i += catchUpBatch {
		j := min(i+catchUpBatch, len(puts))
		var d []string
		if i == 0 {
			d = dels
		}
		if err := apply(context.Background(), puts[i:j], d, c.LastSeq); err != nil {
			return err
		}
		if j >= len(puts) {
			break
		}
	}
	return nil
}

// rebuild loads every document of a collection into a reset index: a batch of index ids
// per read transaction, so neither the collection nor a long transaction is held.
func (db *DB) rebuild(c *Collection, apply applyFunc) error {
	var after []byte
	applied := false
	for {
		var puts []Unit
		done := true
		if err := db.view(func(tx *bolt.Tx) error {
			docs, err := docsBucket(tx, c.Name)
			if err != nil || docs == nil {
				return err
			}
			if after == nil { // every page it reads, before the first batch
				if err := checkTree(docs, "docs"); err != nil {
					return err
				}
			}
			cur := docs.Cursor()
			k, v := cur.First()
			if after != nil {
				if k, v = cur.Seek(after); k != nil && bytes.Equal(k, after) {
					k, v = cur.Next()
				}
			}
			for ; k != nil; k, v = cur.Next() {
				id := string(k)
				r, err := db.decodeRecord(tx, id, v, false)
				if err != nil {
					return err
				}
				for u, uid := range r.UnitIDs(id) {
					puts = append(puts, Unit{ID: uid, Record: r, Chunk: r.UnitIndex(u)})
				}
				if len(puts) >= catchUpBatch {
					after, done = []byte(id), false
					return nil
				}
			}
			return nil
		}); err != nil {
			return err
		}
		if len(puts) > 0 || !applied {
			// The first call also records the sequence number in an empty collection.
			if err := apply(context.Background(), puts, nil, c.LastSeq); err != nil {
				return err
			}
			applied = true
		}
		if done {
			return nil
		}
	}
}
