package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/klauspost/compress/s2"
	segjson "github.com/segmentio/encoding/json"
	bolt "go.etcd.io/bbolt"
)

// Compressed records. A store that holds many documents keeps the title and text of each
// record compressed with S2 (github.com/klauspost/compress/s2, an LZ77 codec that unpacks
// at memory speed) against a dictionary of the store's own records, and its metadata and
// chunks in the clear (filters and chunk bookkeeping read them without unpacking anything):
//
//	0x03, CRC-32C of key, 0x03 and the rest (4 bytes, big endian),
//	dictionary id (uvarint), metadata length (uvarint),
//	metadata: {"m":...,"c":...} as encoding/json writes it (empty: none),
//	CRC-32C of the plain bytes (4 bytes, big endian),
//	an S2 block of the plain bytes: the title's length (uvarint), the title, the text
//
// The first checksum covers the stored bytes, so damage is found before the decoder sees
// them, and a miss's neighbours (checkMiss) cost no unpacking. The second covers what the
// block unpacks to: a record unpacked with another dictionary than its own (one replaced
// whole, its own checksum made valid) is ErrCorrupt too, never another text.
//
// Why S2 and not zstd: at a 760-byte passage zstd with a dictionary packs the text to 0.44
// and S2 with one to 0.47 (0.40 and 0.44 on SciFact's abstracts), but zstd rebuilds its
// entropy tables for each record and takes twice as long to unpack one (4.7 against 2.3 µs
// in one run on a loaded 2-core machine); a search unpacks each result's record. Unpacking
// adds about 1.8 µs of CPU to reading a 760-byte passage (BenchmarkRecordCodec).
//
// Dictionaries live in the top-level bucket zdict, key: the id (4 bytes, big endian),
// value: 0x01, the CRC-32C of the key and the dictionary, the dictionary (S2's
// serialized form: the first 64 KiB of the sampled records).
// A store trains its first dictionary when a write brings a collection to compressMin
// documents: from up to trainSamples records of the write (and, when it has fewer, the
// collection's stored ones), stored in that write's transaction, so no record names a
// dictionary that is not stored. Records stored before stay as they are (every layout is
// read); a dictionary is never changed or removed once written, and a record names its own,
// so a later dictionary (another id) would leave earlier records readable. A damaged or
// missing dictionary makes the records that name it ErrCorrupt, never another text.
const (
	recordMagicZ = 0x03
	dictMagic    = 0x01
)

var bkDicts = []byte("zdict")

// compressMin is the number of documents in a collection from which its writes train the
// store's dictionary and compress records. Below it records stay plain JSON: a small store
// costs little disk, and unpacking costs each result about a microsecond.
var compressMin atomic.Int64

func init() { compressMin.Store(20_000) }

// SetCompressMin sets the number of documents in a collection from which a store compresses
// its records (default 20,000; tests lower it). It returns the previous value.
func SetCompressMin(n int) int { return int(compressMin.Swap(int64(n))) }

const (
	// trainSamples is how many records a dictionary is made from (evenly spread over a
	// large write); its content is their first dictHistory bytes.
	trainSamples = 2_000
	dictHistory  = s2.MaxDictSize - 64
	// maxZRatio bounds how much a compressed record may expand: a record that packs
	// tighter (a run of one byte) is stored plain, so that a block that claims more is
	// damage and no small value can ask for a large allocation.
	maxZRatio = 256
)

// recDict is a loaded dictionary, safe for concurrent use.
type recDict struct {
	id uint32
	d  *s2.Dict
}

// dictSet holds a store's loaded dictionaries. Two locks: readers load a dictionary under
// loadMu, inside their read transaction, and wait for nothing else under it; a writer that
// trains one holds mu across its write transaction. A reader never takes mu: a write whose
// commit grows bbolt's mapping waits for every read transaction to end, so a reader
// waiting for mu would wait for it forever.
type dictSet struct {
	byID   atomic.Pointer[map[uint32]*recDict] // copied on change: read without a lock
	loadMu sync.Mutex                          // serializes changes to byID
	mu     sync.Mutex                          // serializes training; guards cur and curLoaded
	cur    *recDict                            // the dictionary new records are packed with
	// curLoaded: cur was looked up in the store.
	curLoaded bool
}

func (s *dictSet) get(id uint32) *recDict {
	if m := s.byID.Load(); m != nil {
		return (*m)[id]
	}
	return nil
}

// add publishes d.
func (s *dictSet) add(d *recDict) {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	old := s.byID.Load()
	m := make(map[uint32]*recDict, 1)
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	m[d.id] = d
	s.byID.Store(&m)
}

// errDict is the part of an ErrCorrupt that says a compressed record's dictionary is
// missing or damaged.
var errDict = errors.New("its compression dictionary is missing or damaged")

func dictKey(id uint32) []byte {
	var k [4]byte
	binary.BigEndian.PutUint32(k[:], id)
	return k[:]
}

// encodeDictValue is the stored form of dictionary dict of id.
func encodeDictValue(id uint32, dict []byte) []byte {
	out := make([]byte, 5+len(dict))
	out[0] = dictMagic
	binary.BigEndian.PutUint32(out[1:], crc32.Update(keyCRC(string(dictKey(id))), castagnoli, dict))
	copy(out[5:], dict)
	return out
}

// dictBytes checks stored dictionary value v of id and returns the dictionary.
func dictBytes(id uint32, v []byte) ([]byte, error) {
	if len(v) < 5 || v[0] != dictMagic {
		return nil, fmt.Errorf("%w: compression dictionary %d: a stored value of unknown layout", ErrCorrupt, id)
	}
	if crc32.Update(keyCRC(string(dictKey(id))), castagnoli, v[5:]) != binary.BigEndian.Uint32(v[1:]) {
		return nil, fmt.Errorf("%w: compression dictionary %d fails its checksum", ErrCorrupt, id)
	}
	return v[5:], nil
}

// newRecDict loads serialized dictionary dict of id.
func newRecDict(id uint32, dict []byte) (*recDict, error) {
	d := s2.NewDict(dict)
	if d == nil {
		return nil, fmt.Errorf("%w: compression dictionary %d does not load", ErrCorrupt, id)
	}
	return &recDict{id: id, d: d}, nil
}

// dict returns loaded dictionary id, loading it from tx when it is not yet. It takes no
// lock that a writer holds (see dictSet).
func (db *DB) dict(tx *bolt.Tx, id uint32) (*recDict, error) {
	if d := db.dicts.get(id); d != nil {
		return d, nil
	}
	// Not loaded yet: load it (two readers may both load it; dictionaries never change,
	// so either copy serves).
	var v []byte
	if tx != nil {
		if b := tx.Bucket(bkDicts); b != nil {
			v = b.Get(dictKey(id))
		}
	}
	if v == nil {
		return nil, fmt.Errorf("%w: compression dictionary %d is not stored", ErrCorrupt, id)
	}
	raw, err := dictBytes(id, v)
	if err != nil {
		return nil, err
	}
	d, err := newRecDict(id, bytes.Clone(raw))
	if err != nil {
		return nil, err
	}
	db.dicts.add(d)
	return d, nil
}

// plainPayload is the bytes a compressed record packs: the title's length, title, text.
func plainPayload(r *Record) []byte {
	p := make([]byte, 0, binary.MaxVarintLen64+len(r.Title)+len(r.Text))
	p = binary.AppendUvarint(p, uint64(len(r.Title)))
	p = append(p, r.Title...)
	return append(p, r.Text...)
}

// metaPart is what a compressed record keeps in the clear.
type metaPart struct {
	Metadata map[string]any `json:"m,omitempty"`
	Chunks   []Chunk        `json:"c,omitempty"`
}

// encodeRecordZ is the stored form of r, the record of document id, packed with d; the
// plain layout (EncodeRecord) when its title or text is not valid UTF-8 (JSON replaces
// such bytes, and a compressed record must read back as the plain one would) or when it
// packs beyond maxZRatio.
func encodeRecordZ(id string, r *Record, d *recDict) ([]byte, error) {
	if !utf8.ValidString(r.Title) || !utf8.ValidString(r.Text) {
		return EncodeRecord(id, r)
	}
	var meta []byte
	if len(r.Metadata) > 0 || len(r.Chunks) > 0 {
		var err error
		if meta, err = json.Marshal(&metaPart{Metadata: r.Metadata, Chunks: r.Chunks}); err != nil {
			return nil, err
		}
	}
	plain := plainPayload(r)
	block := d.d.EncodeBetter(nil, plain)
	if len(plain) > maxZRatio*len(block) {
		return EncodeRecord(id, r)
	}
	out := make([]byte, 5, 5+2*binary.MaxVarintLen64+len(meta)+4+len(block))
	out[0] = recordMagicZ
	out = binary.AppendUvarint(out, uint64(d.id))
	out = binary.AppendUvarint(out, uint64(len(meta)))
	out = append(out, meta...)
	out = binary.BigEndian.AppendUint32(out, crc32.Checksum(plain, castagnoli))
	out = append(out, block...)
	binary.BigEndian.PutUint32(out[1:], zCRC(id, out[5:]))
	return out, nil
}

// zCRC is the checksum of a compressed record of document id whose bytes after the
// checksum are rest: the CRC-32C of the key, the layout tag, rest. The tag is covered so that
// a flipped bit there does not make a record of another layout whose checksum holds.
func zCRC(id string, rest []byte) uint32 {
	return crc32.Update(crcByte(keyCRC(id), recordMagicZ), castagnoli, rest)
}

// zrecord is a compressed record's fields, its checksum checked.
type zrecord struct {
	dict     uint32
	plain    int    // length of the plain bytes
	meta     []byte // metadata and chunks (JSON; empty: none)
	plainCRC uint32
	block    []byte // S2 block
}

// parseZRecord checks stored compressed record v of document id and splits it.
func parseZRecord(id string, v []byte) (zrecord, error) {
	var z zrecord
	bad := func(what string) (zrecord, error) {
		return zrecord{}, fmt.Errorf("%w: document %s: compressed record %s", ErrCorrupt, ShowKey(id), what)
	}
	if len(v) < 5 {
		return bad("too short")
	}
	if zCRC(id, v[5:]) != binary.BigEndian.Uint32(v[1:]) {
		return bad("fails its checksum (its id or its value is damaged)")
	}
	p := v[5:]
	var vals [2]uint64
	for i := range vals {
		x, n := binary.Uvarint(p)
		if n <= 0 {
			return bad("has a damaged header")
		}
		vals[i], p = x, p[n:]
	}
	if vals[0] == 0 || vals[0] > 1<<32-1 || vals[1] > uint64(len(p)) || len(p)-int(vals[1]) < 4 {
		return bad("has a damaged header")
	}
	z.dict = uint32(vals[0])
	z.meta, p = p[:vals[1]], p[vals[1]:]
	z.plainCRC, z.block = binary.BigEndian.Uint32(p), p[4:]
	n, err := s2.DecodedLen(z.block)
	if err != nil || n > maxZRatio*len(z.block) {
		return bad("claims more than it can hold")
	}
	z.plain = n
	return z, nil
}

// decodeZRecord decodes compressed record v of document id (metaOnly: its metadata and
// chunks only, nothing unpacked), reading its dictionary from tx when not loaded.
func (db *DB) decodeZRecord(tx *bolt.Tx, id string, v []byte, metaOnly bool) (*Record, error) {
	z, err := parseZRecord(id, v)
	if err != nil {
		return nil, err
	}
	r := &Record{}
	if err := z.decodeMeta(id, r); err != nil {
		return nil, err
	}
	if metaOnly {
		return r, nil
	}
	if db == nil {
		return nil, fmt.Errorf("%w: document %s: a compressed record read without its store", ErrCorrupt, ShowKey(id))
	}
	d, err := db.dict(tx, z.dict)
	if err != nil {
		return nil, fmt.Errorf("document %s: %w (%w)", ShowKey(id), err, errDict)
	}
	if err := z.unpack(id, d, r); err != nil {
		return nil, err
	}
	return r, nil
}

// decodeMeta decodes z's metadata and chunks into r.
func (z *zrecord) decodeMeta(id string, r *Record) error {
	if len(z.meta) == 0 {
		return nil
	}
	if fastDecodeRecord(z.meta, r, true) && r.Title == "" && r.Text == "" {
		return nil
	}
	var m metaPart
	if err := segjson.Unmarshal(z.meta, &m); err != nil {
		return fmt.Errorf("%w: document %s: compressed record's metadata: %v", ErrCorrupt, ShowKey(id), err)
	}
	r.Title, r.Text, r.Metadata, r.Chunks = "", "", m.Metadata, m.Chunks
	return nil
}

// unpackBufs are buffers records are unpacked into before their text is copied out;
// maxPooledUnpack is the largest kept.
var unpackBufs = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledUnpack = 64 << 10

// unpack decodes z's block with d into r's title and text.
func (z *zrecord) unpack(id string, d *recDict, r *Record) error {
	bp := unpackBufs.Get().(*[]byte)
	defer unpackBufs.Put(bp)
	if cap(*bp) < z.plain {
		*bp = make([]byte, z.plain)
	}
	out, err := d.d.Decode((*bp)[:z.plain], z.block)
	if len(out) <= maxPooledUnpack {
		*bp = out[:0]
	} else {
		*bp = nil // a large record's buffer is not kept
	}
	if err != nil || len(out) != z.plain {
		return fmt.Errorf("%w: document %s: compressed record does not unpack: %v", ErrCorrupt, ShowKey(id), err)
	}
	if crc32.Checksum(out, castagnoli) != z.plainCRC {
		return fmt.Errorf("%w: document %s: compressed record unpacks to other bytes than it was made of (%w)", ErrCorrupt, ShowKey(id), errDict)
	}
	tl, n := binary.Uvarint(out)
	if n <= 0 || tl > uint64(len(out)-n) {
		return fmt.Errorf("%w: document %s: compressed record's title length is damaged", ErrCorrupt, ShowKey(id))
	}
	// The bytes are those packed (their checksum holds), which were valid UTF-8.
	s := string(out[n:])
	r.Title, r.Text = s[:tl], s[tl:]
	return nil
}

// decodeRecord decodes stored record v of document id in any layout (metaOnly: as
// DecodeMeta), reading a compressed record's dictionary from tx.
func (db *DB) decodeRecord(tx *bolt.Tx, id string, v []byte, metaOnly bool) (*Record, error) {
	if len(v) > 0 && v[0] == recordMagicZ {
		return db.decodeZRecord(tx, id, v, metaOnly)
	}
	if metaOnly {
		return DecodeMeta(id, v)
	}
	return DecodeRecord(id, v)
}

// checkRecord checks stored record v of document id without decoding it: its checksum
// (and, compressed, its header).
func checkRecord(id string, v []byte) error {
	if len(v) > 0 && v[0] == recordMagicZ {
		_, err := parseZRecord(id, v)
		return err
	}
	_, err := recordJSON(id, v)
	return err
}

// recordMetaJSON returns JSON holding stored record v's chunks ("c") and metadata ("m"):
// the record's JSON, or a compressed record's metadata part ("{}" when it has none).
func recordMetaJSON(id string, v []byte) ([]byte, error) {
	if len(v) > 0 && v[0] == recordMagicZ {
		z, err := parseZRecord(id, v)
		if err != nil {
			return nil, err
		}
		if len(z.meta) == 0 {
			return []byte("{}"), nil
		}
		return z.meta, nil
	}
	return recordJSON(id, v)
}

// recordCodec returns the dictionary that the records of a write of puts to collection
// col are packed with: the store's current one, or a new one trained on them when col
// reaches compressMin documents with them (then fresh is set and the caller stores it in
// the write's transaction with storeDict, and calls commitDict once it committed, holding
// the lock that unlock releases). nil: records stay plain.
func (db *DB) recordCodec(col string, puts []Put) (d *recDict, fresh []byte, unlock func(), err error) {
	unlock = func() {}
	if db.ro || len(puts) == 0 {
		return nil, nil, unlock, nil
	}
	s := &db.dicts
	s.mu.Lock()
	if !s.curLoaded {
		if err := db.loadCurrentDict(); err != nil {
			s.mu.Unlock()
			return nil, nil, unlock, err
		}
	}
	if s.cur != nil {
		d = s.cur
		s.mu.Unlock()
		return d, nil, unlock, nil
	}
	// No dictionary yet: train one when col reaches compressMin with this write. The lock
	// is held until the write commits (or fails), so no other write trains another.
	var stored int
	var samples [][]byte
	var nextID uint32 = 1
	need := trainSamples - min(trainSamples, len(puts))
	if err := db.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bkDicts); b != nil {
			if k, _ := b.Cursor().Last(); len(k) == 4 {
				nextID = binary.BigEndian.Uint32(k) + 1
			}
		}
		b, err := colBucket(tx, col, false)
		if err != nil || b == nil {
			return err
		}
		n, _, st := counts(b)
		if st == countsOK {
			stored = n
		}
		if stored+len(puts) < int(compressMin.Load()) || need == 0 {
			return nil
		}
		cur := b.Bucket(bkDocs).Cursor()
		for k, v := cur.First(); k != nil && len(samples) < need; k, v = cur.Next() {
			if r, err := DecodeRecord(string(k), v); err == nil {
				samples = append(samples, plainPayload(r))
			}
		}
		return nil
	}); err != nil {
		s.mu.Unlock()
		return nil, nil, unlock, err
	}
	if stored+len(puts) < int(compressMin.Load()) || nextID == 0 {
		s.mu.Unlock()
		return nil, nil, unlock, nil
	}
	step := max(1, len(puts)/trainSamples)
	for i := 0; i < len(puts) && len(samples) < trainSamples+need; i += step {
		samples = append(samples, plainPayload(puts[i].Record))
	}
	raw, err := trainDict(samples)
	if err != nil {
		// Not enough to learn from (a store of tiny records): stay plain.
		db.log.Debug("memory: no compression dictionary made", "collection", col, "err", err)
		s.mu.Unlock()
		return nil, nil, unlock, nil
	}
	if d, err = newRecDict(nextID, raw); err != nil {
		s.mu.Unlock()
		return nil, nil, unlock, nil
	}
	return d, raw, s.mu.Unlock, nil
}

// loadCurrentDict finds the store's newest dictionary and makes it current (s.mu held). A
// damaged one is not used for new records: they are packed with a new dictionary.
func (db *DB) loadCurrentDict() error {
	s := &db.dicts
	var id uint32
	var raw []byte
	err := db.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bkDicts)
		if b == nil {
			return nil
		}
		k, v := b.Cursor().Last()
		if len(k) != 4 {
			return nil
		}
		id = binary.BigEndian.Uint32(k)
		var err error
		if raw, err = dictBytes(id, v); err != nil {
			db.log.Warn("memory: the store's compression dictionary is damaged; new records get a new one", "err", err)
			raw = nil
			return nil
		}
		raw = bytes.Clone(raw)
		return nil
	})
	if err != nil {
		return err
	}
	s.curLoaded = true
	if raw == nil {
		return nil
	}
	d, err := newRecDict(id, raw)
	if err != nil {
		db.log.Warn("memory: the store's compression dictionary does not load; new records get a new one", "err", err)
		return nil
	}
	s.cur = d
	s.add(d)
	return nil
}

// storeDict stores new dictionary raw of d inside write transaction tx.
func storeDict(tx *bolt.Tx, d *recDict, raw []byte) error {
	b, err := tx.CreateBucketIfNotExists(bkDicts)
	if err != nil {
		return err
	}
	if b.Get(dictKey(d.id)) != nil {
		return fmt.Errorf("%w: compression dictionary %d is stored already", ErrCorrupt, d.id)
	}
	return b.Put(dictKey(d.id), encodeDictValue(d.id, raw))
}

// commitDict makes d, stored by a committed write, the store's current dictionary (the
// caller holds db.dicts.mu: recordCodec's lock).
func (db *DB) commitDict(d *recDict) {
	db.dicts.cur = d
	db.dicts.add(d)
}

// trainDict makes a dictionary of samples (plain payloads): their first dictHistory bytes,
// in S2's serialized form. Its repeat offset starts at the first sample.
func trainDict(samples [][]byte) ([]byte, error) {
	var hist []byte
	for _, s := range samples {
		if len(hist)+len(s) > dictHistory {
			break
		}
		hist = append(hist, s...)
	}
	if len(hist) < 1024 {
		return nil, fmt.Errorf("%d bytes of samples", len(hist))
	}
	d := s2.MakeDict(hist, nil)
	if d == nil {
		return nil, errors.New("s2 refused the dictionary")
	}
	return d.Bytes(), nil
}

// unitsRecord reads what a delete needs of document id in a docs bucket (its chunks: its
// index ids): a compressed record is not unpacked (its checksum is checked). nil when it is
// not stored.
func unitsRecord(docs *bolt.Bucket, id string) (*Record, error) {
	v, err := lookupRecord(docs, id)
	if err != nil || v == nil {
		return nil, err
	}
	if len(v) > 0 && v[0] == recordMagicZ {
		return (*DB)(nil).decodeZRecord(nil, id, v, true)
	}
	return DecodeRecord(id, v)
}
