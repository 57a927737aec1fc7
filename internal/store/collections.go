package store

import (
	"errors"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// CollectionExists reports whether collection name is stored.
func (db *DB) CollectionExists(name string) (bool, error) {
	var ok bool
	err := db.view(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, name, false)
		ok = b != nil
		return err
	})
	return ok, err
}

// CollectionNames lists the stored collections, sorted.
func (db *DB) CollectionNames() ([]string, error) {
	var names []string
	err := db.view(func(tx *bolt.Tx) error {
		cols := tx.Bucket(bkCols)
		if cols == nil {
			return nil
		}
		if err := checkTree(cols, "col"); err != nil {
			return err
		}
		// Every element is a collection's bucket: a value is one whose flags are damaged,
		// which skipped would make a stored collection vanish (and its indexes orphans).
		cur := cols.Cursor()
		for k, v := cur.First(); k != nil; k, v = cur.Next() {
			if v != nil {
				return fmt.Errorf("%w: collection %s is stored as a value, not a bucket", ErrCorrupt, ShowKey(k))
			}
			names = append(names, string(k))
		}
		return nil
	})
	return names, err
}

// CreateCollection makes collection name with metadata meta (JSON of an object; nil:
// none), in one transaction; nothing when it exists (its metadata is left as it is).
// ErrTooManyCollections when the store already holds max (> 0) collections.
func (db *DB) CreateCollection(name string, max int, meta []byte) error {
	return db.update(func(tx *bolt.Tx) error {
		if cols := tx.Bucket(bkCols); cols != nil {
			if cols.Bucket([]byte(name)) != nil {
				return nil
			}
			n := 0
			c := cols.Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				n++
			}
			if max > 0 && n >= max {
				return fmt.Errorf("%w: the store has %d (Options.MaxCollections); delete some or raise the cap", ErrTooManyCollections, n)
			}
		}
		b, err := colBucket(tx, name, true)
		if err != nil || meta == nil {
			return err
		}
		return putColMeta(b, meta)
	})
}

// DeleteCollection removes collection name with its documents, vectors and change log.
func (db *DB) DeleteCollection(name string) error {
	return db.update(func(tx *bolt.Tx) error {
		cols := tx.Bucket(bkCols)
		if cols == nil || cols.Bucket([]byte(name)) == nil {
			return nil
		}
		return cols.DeleteBucket([]byte(name))
	})
}

// CountDocs is the number of documents of every collection.
func (db *DB) CountDocs() (int, error) {
	n := 0
	err := db.view(func(tx *bolt.Tx) error {
		cols := tx.Bucket(bkCols)
		if cols == nil {
			return nil
		}
		return cols.ForEachBucket(func(k []byte) error {
			b := cols.Bucket(k)
			if err := checkColBucket(b, string(k)); err != nil {
				return err
			}
			if err := checkTree(b.Bucket(bkDocs), "docs"); err != nil {
				return err
			}
			n += b.Bucket(bkDocs).Stats().KeyN
			return nil
		})
	})
	return n, err
}

// IDs lists the document ids of collection col, sorted.
func (db *DB) IDs(col string) ([]string, error) {
	ids := []string{}
	err := db.view(func(tx *bolt.Tx) error {
		docs, err := docsBucket(tx, col)
		if err != nil || docs == nil {
			return err
		}
		if err := checkTree(docs, "docs"); err != nil {
			return err
		}
		cur := docs.Cursor()
		for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
			ids = append(ids, string(k))
		}
		return nil
	})
	return ids, err
}

// Document reads document id of collection col with its stored vector when it is one
// unit (a chunked document has one per chunk: vec is nil). r is nil when it is not stored.
func (db *DB) Document(col, id string) (r *Record, vec []float32, err error) {
	err = db.view(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, col, false)
		if err != nil || b == nil {
			return err
		}
		if r, err = db.getRecord(tx, b.Bucket(bkDocs), id); err != nil || r == nil || len(r.Chunks) > 0 {
			return err
		}
		raw, err := lookupVector(b.Bucket(bkVecs), id)
		if raw != nil {
			vec, err = DecodeVector(id, raw)
		}
		return err
	})
	return r, vec, inCollection(col, err)
}

// Vector reads the stored vector of index id uid in collection col (nil when none).
func (db *DB) Vector(col, uid string) ([]float32, error) {
	var v []float32
	err := db.View(func(t *Tx) error {
		var err error
		v, err = t.Vector(col, uid)
		return err
	})
	return v, err
}

// StoredVectors reads the stored vectors of index ids ids in collection col; ids without one
// are left out. A vector of another length than dim (> 0) is ErrCorrupt.
func (db *DB) StoredVectors(col string, ids []string, dim int) (vids []string, vecs [][]float32, err error) {
	err = db.view(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, col, false)
		if err != nil || b == nil {
			return err
		}
		vb := b.Bucket(bkVecs)
		for _, id := range ids {
			raw, err := lookupVector(vb, id)
			if err != nil {
				return inCollection(col, err)
			}
			if raw == nil {
				continue
			}
			v, err := DecodeVector(id, raw)
			if err != nil {
				return err
			}
			if dim > 0 && len(v) != dim {
				return fmt.Errorf("%w: the stored vector of %s has %d values, want %d", ErrCorrupt, ShowKey(id), len(v), dim)
			}
			vids = append(vids, id)
			vecs = append(vecs, v)
		}
		return nil
	})
	return vids, vecs, err
}

// PutVectors stores vecs[i] as the vector of index id ids[i] in collection col, in one
// transaction (re-embedding: no change is logged; the vector indexes are rebuilt).
func (db *DB) PutVectors(col string, ids []string, vecs [][]float32) error {
	return db.update(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, col, false)
		if err != nil {
			return err
		}
		if b == nil {
			return fmt.Errorf("%w: collection %s vanished while its vectors were written", ErrCorrupt, ShowKey(col))
		}
		vb := b.Bucket(bkVecs)
		for n, id := range ids {
			ev, err := db.encodeVector(id, vecs[n])
			if err != nil {
				return err
			}
			if err := vb.Put([]byte(id), ev); err != nil {
				return err
			}
		}
		return nil
	})
}

// VectorCount is how many vectors collection col stores.
func (db *DB) VectorCount(col string) (int, error) {
	n := 0
	err := db.view(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, col, false)
		if err != nil || b == nil {
			return err
		}
		n = b.Bucket(bkVecs).Stats().KeyN
		return nil
	})
	return n, err
}

// SampleUnits returns index ids of up to n documents of collection col, spread over the id
// space (the first, the last, and ids sought at evenly spaced byte prefixes),
// deterministically. Open-time verification looks them up in each derived index.
func (db *DB) SampleUnits(col string, n int) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	err := db.view(func(tx *bolt.Tx) error {
		docs, err := docsBucket(tx, col)
		if err != nil || docs == nil {
			return err
		}
		cur := docs.Cursor()
		add := func(k, v []byte) error {
			if k == nil || seen[string(k)] {
				return nil
			}
			seen[string(k)] = true
			r, err := db.decodeRecord(tx, string(k), v, true)
			if err != nil {
				return err
			}
			out = append(out, r.UnitIDs(string(k))...)
			return nil
		}
		if err := add(cur.First()); err != nil {
			return err
		}
		if err := add(cur.Last()); err != nil {
			return err
		}
		for i := 1; i < n-1; i++ {
			k, v := cur.Seek([]byte{byte(i * 256 / n)})
			if err := add(k, v); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// StepSample returns the index ids of up to n documents of collection col, taken at even
// steps over its documents in id order (deterministic for a given store), at most 4n ids.
func (db *DB) StepSample(col string, n int) ([]string, error) {
	if n <= 0 {
		return nil, nil
	}
	var out []string
	err := db.view(func(tx *bolt.Tx) error {
		docs, err := docsBucket(tx, col)
		if err != nil || docs == nil {
			return err
		}
		keys := docs.Stats().KeyN
		step := max(1, (keys+n-1)/n) // rounded up: at most n documents
		cur := docs.Cursor()
		i, taken := 0, 0
		for k, v := cur.First(); k != nil && taken < n && len(out) < 4*n; k, v = cur.Next() {
			if i%step == 0 {
				r, err := db.decodeRecord(tx, string(k), v, true)
				if err != nil {
					return err
				}
				units := r.UnitIDs(string(k))
				out = append(out, units[:min(len(units), 4*n-len(out))]...)
				taken++
			}
			i++
		}
		return nil
	})
	return out, err
}

// Tally is what a full read of a collection finds (Tally).
type Tally struct {
	Docs, Units, Vectors int
	// Damaged counts damaged records and vectors, and missing vectors; Problems describes
	// the first three, and Keys lists the keys of the first 10 damaged records and vectors.
	Damaged  int
	Problems []string
	Keys     []string
	// Unbound counts records and vectors stored in a layout whose checksum does not cover
	// the key (written by an older version; rewritten when next written).
	Unbound int
	// Sources says how the collection's sources index (sources.go), when kept, disagrees
	// with the records read ("": it agrees, or it is not kept). It is derived:
	// BuildSources makes it again.
	Sources string
}

// maxKeptKey is the most bytes of a damaged key that a Tally keeps (bbolt's keys are at
// most 32 KiB; document ids are far shorter).
const maxKeptKey = 512

func (t *Tally) damaged(key []byte, format string, args ...any) {
	if t.Damaged++; t.Damaged <= 3 {
		t.Problems = append(t.Problems, fmt.Sprintf(format, args...))
	}
	if len(t.Keys) < 10 {
		if len(key) > maxKeptKey { // a damaged key size can make a key of megabytes
			key = fmt.Appendf(key[:maxKeptKey:maxKeptKey], "… (%d bytes)", len(key))
		}
		t.Keys = append(t.Keys, string(key))
	}
}

// Tally reads every record of collection col and, with dim > 0 (an embedder recorded),
// every stored vector: each must pass its key-bound checksum and decode, each index id have
// a vector and each vector dim values.
func (db *DB) Tally(col string, dim int) (Tally, error) {
	var t Tally
	err := db.view(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, col, false)
		if err != nil || b == nil {
			return err
		}
		vb := b.Bucket(bkVecs)
		for _, sub := range [][]byte{bkDocs, bkVecs} {
			if err := checkTree(b.Bucket(sub), string(sub)); errors.Is(err, ErrCorrupt) {
				// Its pages cannot be read as they are: what they hold is not counted.
				t.Damaged++
				t.Problems = append(t.Problems, firstLine(err))
				return nil
			} else if err != nil {
				return err
			}
		}
		srcs := sourceDelta{}
		defer func() {
			if t.Damaged == 0 { // else the records read are not all of them
				t.Sources = checkSources(b, srcs)
			}
		}()
		cur := b.Bucket(bkDocs).Cursor()
		for k, v := cur.First(); k != nil; k, v = cur.Next() {
			t.Docs++
			if len(v) == 0 || (v[0] != recordMagic && v[0] != recordMagicZ) {
				t.Unbound++
			}
			r, err := db.decodeRecord(tx, string(k), v, false)
			if err != nil {
				t.damaged(k, "%s", firstLine(err))
				continue
			}
			srcs[RecordSource(r)]++
			for _, u := range r.UnitIDs(string(k)) {
				t.Units++
				if dim > 0 && vb.Get([]byte(u)) == nil {
					t.damaged([]byte(u), "index id %s has no vector", ShowKey(u))
				}
			}
		}
		vc := vb.Cursor()
		for k, raw := vc.First(); k != nil; k, raw = vc.Next() {
			t.Vectors++
			if !keyBoundVector(raw) {
				t.Unbound++
			}
			if dim == 0 {
				continue
			}
			if v, err := DecodeVector(string(k), raw); err != nil {
				t.damaged(k, "%s", firstLine(err))
			} else if len(v) != dim {
				t.damaged(k, "the vector of %s is damaged (%d values, want %d)", ShowKey(k), len(v), dim)
			}
		}
		return nil
	})
	t.Problems = trimCorrupt(t.Problems)
	return t, err
}

// trimCorrupt drops ErrCorrupt's own words from the start of each problem (a report says
// where the damage is once).
func trimCorrupt(ps []string) []string {
	for i, p := range ps {
		ps[i] = strings.TrimPrefix(p, ErrCorrupt.Error()+": ")
	}
	return ps
}

// Recount counts collection c's documents and index ids again from its records (persisted
// unless the store is read-only) after reason made its counters suspect; Recounted reports
// it from then on.
func (db *DB) Recount(c *Collection, reason string) error {
	if err := db.countCollection(c); err != nil {
		return err
	}
	db.noteRecount(c.Name, Recount{Reason: reason, Docs: c.Docs, Units: c.Units, Persisted: !db.ro})
	return nil
}

// Consistency checks every page of the file that its root bucket reaches (pageCheck: read
// with ReadAt on this goroutine, so that no damaged page can panic or fault), and the
// freelist against them: every page reachable once, or free, not both. It returns up to
// max findings, each naming the page. bbolt's own Tx.Check is not run: it walks the pages
// with unchecked pointer arithmetic on a goroutine of its own, where a damaged page's
// panic or fault cannot be recovered and ends the process. The caller keeps writers out.
func (db *DB) Consistency(max int) ([]string, error) {
	if err := checkFreelist(db.path); err != nil {
		return []string{"the freelist is damaged: " + err.Error()}, nil
	}
	found, more, err := pageCheck(db.path, max)
	if err != nil {
		return nil, err
	}
	if more > 0 {
		found = append(found, fmt.Sprintf("and %d more", more))
	}
	if len(found) > 0 {
		return found, nil
	}
	// The pages are whole: bbolt may read them. Then the store's own layout.
	return db.checkLayout(max)
}

// checkLayout checks the store's layout (db.go) as far as it is the same in every store:
// the top level holds buckets only; every collection is a bucket with its four
// sub-buckets. A bucket's flag cleared (a bucket kept inline in its parent reads as a
// value then) or a sub-bucket's name damaged leaves every page whole.
func (db *DB) checkLayout(max int) ([]string, error) {
	var found []string
	err := db.view(func(tx *bolt.Tx) error {
		cur := tx.Cursor()
		for k, v := cur.First(); k != nil && len(found) < max; k, v = cur.Next() {
			if v != nil {
				found = append(found, fmt.Sprintf("the top level holds %s as a value, not a bucket (its flags are damaged)", ShowKey(k)))
			}
		}
		cols := tx.Bucket(bkCols)
		if cols == nil {
			return nil
		}
		cc := cols.Cursor()
		for k, v := cc.First(); k != nil && len(found) < max; k, v = cc.Next() {
			if v != nil {
				found = append(found, fmt.Sprintf("collection %s is stored as a value, not a bucket (its flags are damaged)", ShowKey(k)))
				continue
			}
			if err := checkColBucket(cols.Bucket(k), string(k)); err != nil {
				found = append(found, strings.TrimPrefix(err.Error(), ErrCorrupt.Error()+": "))
			}
		}
		return nil
	})
	return found, err
}
