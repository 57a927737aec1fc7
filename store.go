package memory

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	bolt "go.etcd.io/bbolt"
)

// The store of record is one bbolt file. Layout:
//
//	meta                      seq -> uint64 (last sequence number handed out)
//	col/<name>/docs           id  -> JSON record
//	col/<name>/vecs           unit id -> little-endian float32s (unit: the id, or id NUL i for chunk i)
//	col/<name>/changes        seq -> op byte + unit id   (replayed into indexes that lag behind)
//	col/<name>/info           trimmed -> uint64 (changes up to it were dropped)
//
// Every write is one bbolt transaction (fsynced unless NoSync): a write that returned nil
// survives a crash, and a crash mid-write leaves the previous state. The BM25 and vector
// indexes are derived from it and caught up on open.
var (
	bkMeta    = []byte("meta")
	bkCols    = []byte("col")
	bkDocs    = []byte("docs")
	bkVecs    = []byte("vecs")
	bkChanges = []byte("changes")
	bkInfo    = []byte("info")
	keySeq    = []byte("seq")
	keyTrim   = []byte("trimmed")
)

const (
	opPut byte = 'p'
	opDel byte = 'd'
)

// record is the stored form of a document (its id is the key).
type record struct {
	Title    string         `json:"t,omitempty"`
	Text     string         `json:"x"`
	Metadata map[string]any `json:"m,omitempty"`
	// Chunks are the document's chunks when it has several (see chunking.go); none: the
	// document is its own single chunk (as every document stored before chunking).
	Chunks []chunkRec `json:"c,omitempty"`
}

// source is the document's Source (its metadata "source" string).
func (r *record) source() string {
	s, _ := r.Metadata[sourceKey].(string)
	return s
}

func u64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

func u64b(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

func encodeVec(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func decodeVec(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%w: vector of %d bytes", ErrCorrupt, len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// colBucket returns the bucket of collection name, creating it when create is set.
func colBucket(tx *bolt.Tx, name string, create bool) (*bolt.Bucket, error) {
	cols := tx.Bucket(bkCols)
	if cols == nil {
		if !create {
			return nil, nil
		}
		var err error
		if cols, err = tx.CreateBucketIfNotExists(bkCols); err != nil {
			return nil, err
		}
	}
	b := cols.Bucket([]byte(name))
	if b != nil || !create {
		return b, nil
	}
	b, err := cols.CreateBucket([]byte(name))
	if err != nil {
		return nil, err
	}
	for _, sub := range [][]byte{bkDocs, bkVecs, bkChanges, bkInfo} {
		if _, err := b.CreateBucket(sub); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func decodeRecord(id string, v []byte) (*record, error) {
	var r record
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, fmt.Errorf("%w: document %q: %v", ErrCorrupt, id, err)
	}
	return &r, nil
}

// nextSeq increments and returns the store sequence number inside tx.
func nextSeq(tx *bolt.Tx) (uint64, error) {
	meta, err := tx.CreateBucketIfNotExists(bkMeta)
	if err != nil {
		return 0, err
	}
	s := u64(meta.Get(keySeq)) + 1
	return s, meta.Put(keySeq, u64b(s))
}
