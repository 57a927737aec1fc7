package store

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// zText is the text of document i of a compression test: sentences from a small pool, as a
// corpus has, with a number that differs.
func zText(i int) string {
	pool := []string{
		"Cells grown in high glucose showed a marked rise in oxidative stress markers.",
		"The cohort of 1,204 adults was followed for a median of 6.3 years.",
		"Knockdown of the receptor abolished the response to the ligand in vitro.",
		"These findings suggest a protective role of dietary fibre against colon cancer.",
		"Mortality did not differ between the groups (hazard ratio 0.97; 95% CI 0.81-1.16).",
		"Über 30 % der Patienten berichteten Nebenwirkungen — naïve café <b>&</b> \"quotes\".",
	}
	var b strings.Builder
	for j := range 3 + i%5 {
		b.WriteString(pool[(i*7+j*3)%len(pool)])
		fmt.Fprintf(&b, " (%d) ", i*13+j)
	}
	return b.String()
}

// zRecord is document i's record: every 5th has metadata, every 7th chunks.
func zRecord(i int) *Record {
	r := &Record{Title: fmt.Sprintf("Title of passage %d", i), Text: zText(i)}
	if i%5 == 0 {
		r.Metadata = map[string]any{"n": float64(i), "src": fmt.Sprintf("file%d.md", i%3), "ok": i%2 == 0}
	}
	if i%7 == 0 {
		r.Chunks = []Chunk{{S: 0, E: 10}, {S: 10, E: len(r.Text), H: []string{"A", "B"}}}
	}
	if i%11 == 0 {
		r.Title = ""
	}
	return r
}

func zPuts(lo, hi int) []Put {
	var puts []Put
	for i := lo; i < hi; i++ {
		id := fmt.Sprintf("d%05d", i)
		r := zRecord(i)
		puts = append(puts, Put{ID: id, Record: r, Units: r.UnitIDs(id)})
	}
	return puts
}

// withCompressMin lowers the compression threshold for a test.
func withCompressMin(t testing.TB, n int) {
	old := SetCompressMin(n)
	t.Cleanup(func() { SetCompressMin(old) })
}

// zStore writes documents [0, n) to collection "c" in writes of batch, with compression
// from min documents on.
func zStore(t *testing.T, path string, n, batch, min int) *DB {
	t.Helper()
	withCompressMin(t, min)
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for lo := 0; lo < n; lo += batch {
		puts := zPuts(lo, lo+batch)
		if _, err := db.Write("c", puts, len(puts), len(puts)); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// rawRecord is the stored value of document id of collection c.
func rawRecord(t *testing.T, db *DB, id string) []byte {
	var v []byte
	if err := db.view(func(tx *bolt.Tx) error {
		docs, err := docsBucket(tx, "c")
		if err != nil {
			return err
		}
		v = bytes.Clone(docs.Get([]byte(id)))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestCompressedRecords: from compressMin documents on, a write trains the store's
// dictionary and packs records (smaller than plain); every record, packed or not, reads
// back as written, whole and metadata only, through a reopen, read-only too; Tally finds
// nothing wrong; deletes and replacements work on packed records.
func TestCompressedRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	const n = 3000
	db := zStore(t, path, n, 500, 1000)
	var plain, packed, plainBytes, packedBytes int
	for i := range n {
		v := rawRecord(t, db, fmt.Sprintf("d%05d", i))
		js, _ := EncodeRecord("x", zRecord(i))
		if v[0] == recordMagicZ {
			packed++
			packedBytes += len(v)
			plainBytes += len(js)
		} else {
			plain++
		}
	}
	// 0..499 are written before the collection reaches 1,000; the write of 500..999
	// brings it there and trains the dictionary.
	if plain != 500 || packed != n-500 {
		t.Fatalf("%d plain, %d packed records; want 500 and %d", plain, packed, n-500)
	}
	if float64(packedBytes) > 0.6*float64(plainBytes) {
		t.Errorf("packed records take %d bytes, plain ones would take %d", packedBytes, plainBytes)
	}
	check := func(db *DB) {
		t.Helper()
		for i := range n {
			id := fmt.Sprintf("d%05d", i)
			var r, m *Record
			if err := db.View(func(tx *Tx) error {
				var err error
				if r, err = tx.Record("c", id); err != nil {
					return err
				}
				m, err = tx.RecordMeta("c", id)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			want := zRecord(i)
			if !reflect.DeepEqual(r, want) {
				t.Fatalf("%s reads %+v, want %+v", id, r, want)
			}
			if !reflect.DeepEqual(m.Metadata, want.Metadata) || !reflect.DeepEqual(m.Chunks, want.Chunks) {
				t.Fatalf("%s: metadata %+v, want %+v", id, m, want)
			}
		}
		tl, err := db.Tally("c", 0)
		if err != nil || tl.Damaged != 0 || tl.Docs != n || tl.Unbound != 0 {
			t.Fatalf("Tally: %+v, %v", tl, err)
		}
	}
	check(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{false, true} {
		db, err := Open(path, Options{ReadOnly: ro, NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		check(db)
		db.Close()
	}
	// A reopened store packs new records with the dictionary it has (no second one).
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	puts := zPuts(n, n+10)
	if _, err := db.Write("c", puts, len(puts), len(puts)); err != nil {
		t.Fatal(err)
	}
	if v := rawRecord(t, db, fmt.Sprintf("d%05d", n+5)); v[0] != recordMagicZ {
		t.Errorf("a record written after a reopen is not packed")
	}
	ndicts := 0
	db.view(func(tx *bolt.Tx) error { ndicts = tx.Bucket(bkDicts).Stats().KeyN; return nil })
	if ndicts != 1 {
		t.Errorf("%d dictionaries stored, want 1", ndicts)
	}
	// Replace and delete packed records.
	rep := zPuts(2000, 2001)
	rep[0].Record.Text = "replaced"
	if _, _, err := db.Replace("c", rep, []string{"d02001", "d02002"}, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := db.View(func(tx *Tx) error {
		r, err := tx.Record("c", "d02000")
		if err != nil || r == nil || r.Text != "replaced" {
			return fmt.Errorf("replaced record reads %+v, %v", r, err)
		}
		if r, err := tx.Record("c", "d02001"); err != nil || r != nil {
			return fmt.Errorf("deleted record reads %+v, %v", r, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestCompressedRecordsBelowThreshold: a collection under compressMin keeps plain records
// and stores no dictionary.
func TestCompressedRecordsBelowThreshold(t *testing.T) {
	db := zStore(t, filepath.Join(t.TempDir(), "store.db"), 900, 300, 1000)
	defer db.Close()
	if v := rawRecord(t, db, "d00899"); v[0] != recordMagic {
		t.Fatalf("record of layout %#x under the threshold", v[0])
	}
	db.view(func(tx *bolt.Tx) error {
		if tx.Bucket(bkDicts) != nil {
			t.Errorf("a dictionary is stored under the threshold")
		}
		return nil
	})
}

// setValue overwrites key in bucket path (nil value: deletes it).
func setValue(t *testing.T, db *DB, path [][]byte, key, v []byte) {
	t.Helper()
	if err := db.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(path[0])
		for _, p := range path[1:] {
			b = b.Bucket(p)
		}
		if v == nil {
			return b.Delete(key)
		}
		return b.Put(key, v)
	}); err != nil {
		t.Fatal(err)
	}
}

// TestCompressedRecordDamage: a packed record with any byte flipped, truncated, or whose
// dictionary is damaged, missing or another one, reads as ErrCorrupt (never a panic, never
// another text); checkRecord (a miss's neighbours) finds the same damage without unpacking.
func TestCompressedRecordDamage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	db := zStore(t, path, 1500, 500, 1000)
	const id = "d01234"
	good := rawRecord(t, db, id)
	if good[0] != recordMagicZ {
		t.Fatal("not packed")
	}
	docs := [][]byte{bkCols, []byte("c"), bkDocs}
	read := func() (*Record, error) {
		var r *Record
		err := db.View(func(tx *Tx) error {
			var err error
			r, err = tx.Record("c", id)
			return err
		})
		return r, err
	}
	want := zRecord(1234)
	expectCorrupt := func(what string) {
		t.Helper()
		r, err := read()
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: read %+v, %v; want ErrCorrupt", what, r, err)
		}
	}
	for i := range good {
		for _, mask := range []byte{0x01, 0x80} {
			bad := bytes.Clone(good)
			bad[i] ^= mask
			setValue(t, db, docs, []byte(id), bad)
			expectCorrupt(fmt.Sprintf("byte %d ^ %#x", i, mask))
			if err := checkRecord(id, bad); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("byte %d ^ %#x: checkRecord %v", i, mask, err)
			}
		}
	}
	for _, n := range []int{0, 1, 4, 5, 6, 9, len(good) / 2, len(good) - 1} {
		setValue(t, db, docs, []byte(id), good[:n])
		if n == 0 {
			// bbolt stores an empty value: a layout that is not one.
			if r, err := read(); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("empty value: read %+v, %v", r, err)
			}
			continue
		}
		expectCorrupt(fmt.Sprintf("truncated to %d bytes", n))
	}
	setValue(t, db, docs, []byte(id), good)
	if r, err := read(); err != nil || !reflect.DeepEqual(r, want) {
		t.Fatalf("restored record: %+v, %v", r, err)
	}
	// The dictionary: damaged, missing, replaced by another one (of the same id), on a
	// fresh open each time (a loaded dictionary is kept in memory).
	dictVal := func() []byte {
		var v []byte
		db.view(func(tx *bolt.Tx) error { v = bytes.Clone(tx.Bucket(bkDicts).Get(dictKey(1))); return nil })
		return v
	}
	orig := dictVal()
	reopen := func() {
		t.Helper()
		db.Close()
		var err error
		if db, err = Open(path, Options{NoSync: true}); err != nil {
			t.Fatal(err)
		}
	}
	samples := [][]byte{[]byte(strings.Repeat("another corpus entirely, of other words; ", 40))}
	for i := range 50 {
		samples = append(samples, []byte(fmt.Sprintf("sample %d of another corpus with other words %d", i, i*i)))
	}
	other, err := trainDict(samples)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		v    []byte
	}{
		{"flipped", func() []byte { b := bytes.Clone(orig); b[len(b)/2] ^= 0x04; return b }()},
		{"truncated", orig[:len(orig)-100]},
		{"tag", func() []byte { b := bytes.Clone(orig); b[0] = 0x7f; return b }()},
		{"missing", nil},
		{"another dictionary, checksum recomputed", encodeDictValue(1, other)},
	} {
		setValue(t, db, [][]byte{bkDicts}, dictKey(1), c.v)
		reopen()
		r, err := read()
		// Another dictionary, valid in its own checksum, is not the one the record was
		// packed with: the frame's checksum of its plain bytes fails.
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("dictionary %s: read %+v, %v; want ErrCorrupt", c.name, r, err)
		}
		// Metadata is read without the dictionary.
		if err := db.View(func(tx *Tx) error { _, err := tx.RecordMeta("c", id); return err }); err != nil {
			t.Errorf("dictionary %s: RecordMeta %v", c.name, err)
		}
		// New writes go on: packed with a new dictionary when the current one is damaged.
		puts := zPuts(5000, 5001)
		if _, err := db.Write("c", puts, 1, 1); err != nil {
			t.Fatalf("dictionary %s: write %v", c.name, err)
		}
		if err := db.View(func(tx *Tx) error {
			r, err := tx.Record("c", "d05000")
			if err == nil && !reflect.DeepEqual(r, zRecord(5000)) {
				err = fmt.Errorf("reads %+v", r)
			}
			return err
		}); err != nil {
			t.Errorf("dictionary %s: a record written after: %v", c.name, err)
		}
	}
	db.Close()
}

// dictDB returns a store value (no file) holding dictionary 1, trained on the plain payloads
// of recs, and that dictionary: what the codec tests encode and decode against.
func dictDB(tb testing.TB, recs []*Record) (*DB, *recDict) {
	tb.Helper()
	samples := make([][]byte, 0, len(recs))
	for _, r := range recs {
		samples = append(samples, plainPayload(r))
	}
	raw, err := trainDict(samples)
	if err != nil {
		tb.Fatal(err)
	}
	d, err := newRecDict(1, raw)
	if err != nil {
		tb.Fatal(err)
	}
	db := &DB{}
	db.dicts.add(d)
	return db, d
}

// FuzzDecodeZRecord: any value in the compressed layout, its checksum made valid (so the
// decoder sees it), decodes or fails with ErrCorrupt; never a panic, never a huge
// allocation, and what decodes is valid UTF-8.
func FuzzDecodeZRecord(f *testing.F) {
	withCompressMin(f, 1)
	recs := make([]*Record, 300)
	for i := range recs {
		recs[i] = zRecord(i)
	}
	db, d := dictDB(f, recs)
	for i := range 20 {
		v, err := encodeRecordZ("k", zRecord(i), d)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(v[5:])
	}
	rng := rand.New(rand.NewSource(1))
	for range 20 {
		v, _ := encodeRecordZ("k", zRecord(rng.Intn(1000)), d)
		v[5+rng.Intn(len(v)-5)] ^= byte(1 << rng.Intn(8))
		f.Add(v[5:])
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		v := make([]byte, 5+len(body))
		v[0] = recordMagicZ
		copy(v[5:], body)
		binary.BigEndian.PutUint32(v[1:], zCRC("k", body))
		tm := time.AfterFunc(3*time.Second, func() { panic(fmt.Sprintf("HANG %x", body)) })
		defer tm.Stop()
		for _, meta := range []bool{false, true} {
			r, err := db.decodeZRecord(nil, "k", v, meta)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("untyped error: %v", err)
				}
				continue
			}
			if len(r.Title)+len(r.Text) > maxZRatio*len(v) {
				t.Fatalf("%d bytes unpacked from %d", len(r.Title)+len(r.Text), len(v))
			}
		}
	})
}

// benchRecords are up to n records of the passages of $MEMORY_ZBENCH_CORPUS (a BEIR
// corpus.jsonl, such as bench/corpusgen writes), or made up ones without it.
func benchRecords(b *testing.B, n int) []*Record {
	var recs []*Record
	if path := os.Getenv("MEMORY_ZBENCH_CORPUS"); path != "" {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<26)
		for sc.Scan() && len(recs) < n {
			var d struct {
				Title string         `json:"title"`
				Text  string         `json:"text"`
				Meta  map[string]any `json:"metadata"`
			}
			if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
				b.Fatal(err)
			}
			recs = append(recs, &Record{Title: d.Title, Text: d.Text, Metadata: d.Meta})
		}
		return recs
	}
	for i := range n {
		recs = append(recs, zRecord(i))
	}
	return recs
}

// BenchmarkRecordCodec measures encoding and decoding one record, plain (JSON) and packed
// with a dictionary trained on the first trainSamples records; decoding reads records
// after those. Reported besides ns/op: the process's CPU time per op (steadier than wall
// time on a shared machine) and stored bytes per record.
func BenchmarkRecordCodec(b *testing.B) {
	recs := benchRecords(b, 3*trainSamples)
	if len(recs) < 2*trainSamples {
		b.Skip("too few records")
	}
	db, d := dictDB(b, recs[:trainSamples])
	test := recs[trainSamples:]
	ids := make([]string, len(test))
	for i := range ids {
		ids[i] = fmt.Sprintf("p%08d", i)
	}
	for _, packed := range []bool{false, true} {
		name := "plain"
		enc := func(i int) ([]byte, error) { return EncodeRecord(ids[i], test[i]) }
		if packed {
			name = "packed"
			enc = func(i int) ([]byte, error) { return encodeRecordZ(ids[i], test[i], d) }
		}
		vals := make([][]byte, len(test))
		size := 0
		for i := range test {
			var err error
			if vals[i], err = enc(i); err != nil {
				b.Fatal(err)
			}
			size += len(vals[i])
		}
		b.Run(name+"/encode", func(b *testing.B) {
			b.ReportAllocs()
			c := cpuNanos()
			for i := 0; i < b.N; i++ {
				if _, err := enc(i % len(test)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuNanos()-c)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(size)/float64(len(test)), "B/record")
		})
		for _, meta := range []bool{false, true} {
			sub := "/decode"
			if meta {
				sub = "/decode-meta"
			}
			b.Run(name+sub, func(b *testing.B) {
				b.ReportAllocs()
				c := cpuNanos()
				for i := 0; i < b.N; i++ {
					j := i % len(test)
					if _, err := db.decodeRecord(nil, ids[j], vals[j], meta); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cpuNanos()-c)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// TestCompressedRecordsConcurrentWrites: writers of several collections crossing the
// threshold at once train one dictionary between them, and readers meanwhile read every
// record as written.
func TestCompressedRecordsConcurrentWrites(t *testing.T) {
	withCompressMin(t, 500)
	db, err := Open(filepath.Join(t.TempDir(), "store.db"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const cols, per = 4, 1200
	errs := make(chan error, 2*cols)
	for c := range cols {
		col := fmt.Sprintf("c%d", c)
		go func() {
			for lo := 0; lo < per; lo += 400 {
				puts := zPuts(lo, lo+400)
				if _, err := db.Write(col, puts, len(puts), len(puts)); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
		go func() {
			for i := 0; i < per; i += 7 {
				id := fmt.Sprintf("d%05d", i)
				if err := db.View(func(tx *Tx) error {
					r, err := tx.Record(col, id)
					if err == nil && r != nil && !reflect.DeepEqual(r, zRecord(i)) {
						err = fmt.Errorf("%s/%s reads %+v", col, id, r)
					}
					return err
				}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 2 * cols {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	db.view(func(tx *bolt.Tx) error { n = tx.Bucket(bkDicts).Stats().KeyN; return nil })
	if n != 1 {
		t.Errorf("%d dictionaries, want 1", n)
	}
	for c := range cols {
		tl, err := db.Tally(fmt.Sprintf("c%d", c), 0)
		if err != nil || tl.Damaged != 0 || tl.Docs != per {
			t.Fatalf("collection c%d: %+v, %v", c, tl, err)
		}
	}
}

// testDict is dictionary 1 trained on the first 300 test records.
func testDict(tb testing.TB) (*DB, *recDict) {
	tb.Helper()
	recs := make([]*Record, 300)
	for i := range recs {
		recs[i] = zRecord(i)
	}
	return dictDB(tb, recs)
}

// TestEncodeRecordZFallsBack: a record whose title or text is not valid UTF-8, or that
// packs beyond maxZRatio, is stored in the plain layout (and reads back as the plain one
// would); others are packed.
func TestEncodeRecordZFallsBack(t *testing.T) {
	db, d := testDict(t)
	for _, tc := range []struct {
		name   string
		r      *Record
		packed bool
	}{
		{"ordinary", zRecord(5), true},
		{"empty", &Record{}, true},
		{"metadata only", &Record{Metadata: map[string]any{"k": "v"}}, true},
		{"invalid UTF-8 title", &Record{Title: "a\xffb", Text: "text"}, false},
		{"invalid UTF-8 text", &Record{Text: "cut \xe2\x82"}, false},
		{"a run of one byte", &Record{Text: strings.Repeat("a", 1<<20)}, false},
	} {
		v, err := encodeRecordZ("id", tc.r, d)
		if err != nil {
			t.Fatal(err)
		}
		if packed := v[0] == recordMagicZ; packed != tc.packed {
			t.Errorf("%s: packed %v, want %v", tc.name, packed, tc.packed)
		}
		plain, _ := DecodeRecord("id", must(EncodeRecord("id", tc.r)))
		got, err := db.decodeRecord(nil, "id", v, false)
		if err != nil || !reflect.DeepEqual(got, plain) {
			t.Errorf("%s: reads %+v, %v; the plain layout reads %+v", tc.name, got, err, plain)
		}
	}
	if _, err := encodeRecordZ("id", &Record{Metadata: map[string]any{"x": make(chan int)}}, d); err == nil {
		t.Error("metadata JSON cannot hold was encoded")
	}
}

// TestParseZRecordHeader: each damage of a compressed record's header (its checksum made
// valid, so the parser sees it) is ErrCorrupt saying what; a whole one splits into its
// parts.
func TestParseZRecordHeader(t *testing.T) {
	_, d := testDict(t)
	r := zRecord(10) // metadata and chunks
	good := must(encodeRecordZ("id", r, d))
	z, err := parseZRecord("id", good)
	if err != nil || z.dict != 1 || z.plain != len(plainPayload(r)) || z.plainCRC != crc32.Checksum(plainPayload(r), castagnoli) {
		t.Fatalf("a whole record: %+v, %v", z, err)
	}
	var m metaPart
	if err := json.Unmarshal(z.meta, &m); err != nil || !reflect.DeepEqual(m.Chunks, r.Chunks) {
		t.Fatalf("metadata part %q: %v", z.meta, err)
	}
	// frame builds a record of body after the tag and checksum.
	frame := func(body []byte) []byte {
		v := append([]byte{recordMagicZ, 0, 0, 0, 0}, body...)
		binary.BigEndian.PutUint32(v[1:], zCRC("id", body))
		return v
	}
	block := z.block
	uv := binary.AppendUvarint
	for _, tc := range []struct {
		name string
		v    []byte
		want string
	}{
		{"too short", good[:4], "too short"},
		{"checksum", append(bytes.Clone(good[:5]), good[6:]...), "fails its checksum"},
		{"no header", frame(nil), "damaged header"},
		{"dictionary 0", frame(append(uv(uv(nil, 0), 0), 0, 0, 0, 0)), "damaged header"},
		{"dictionary past 32 bits", frame(append(uv(uv(nil, 1<<32), 0), 0, 0, 0, 0)), "damaged header"},
		{"unterminated varint", frame([]byte{0x80, 0x80}), "damaged header"},
		{"metadata past the end", frame(append(uv(uv(nil, 1), 100), 1, 2, 3)), "damaged header"},
		{"no room for the plain checksum", frame(append(uv(uv(nil, 1), 0), 1, 2, 3)), "damaged header"},
		{"no block", frame(append(uv(uv(nil, 1), 0), 0, 0, 0, 0)), "claims more"},
		{"a block claiming too much", frame(append(append(uv(uv(nil, 1), 0), 0, 0, 0, 0), uv(nil, 1<<30)...)), "claims more"},
	} {
		if _, err := parseZRecord("id", tc.v); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
		if err := checkRecord("id", tc.v); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: checkRecord %v", tc.name, err)
		}
	}
	// A whole frame around a block unpacked with the dictionary gives the record.
	body := append(uv(uv(nil, 1), uint64(len(z.meta))), z.meta...)
	body = binary.BigEndian.AppendUint32(body, z.plainCRC)
	if !bytes.Equal(frame(append(body, block...)), good) {
		t.Fatal("the layout written out field by field is not encodeRecordZ's")
	}
}

// TestDecodeZRecordWithoutStore: a compressed record's metadata reads without its store
// (DecodeMeta, unitsRecord, recordMetaJSON); its text does not: ErrCorrupt.
func TestDecodeZRecordWithoutStore(t *testing.T) {
	_, d := testDict(t)
	for _, i := range []int{1, 5, 7} { // none, metadata, chunks
		r := zRecord(i)
		v := must(encodeRecordZ("id", r, d))
		if _, err := DecodeRecord("id", v); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "without its store") {
			t.Errorf("record %d: DecodeRecord %v", i, err)
		}
		if _, err := (*DB)(nil).decodeZRecord(nil, "id", v, false); !errors.Is(err, ErrCorrupt) {
			t.Errorf("record %d: a nil store: %v", i, err)
		}
		m, err := DecodeMeta("id", v)
		if err != nil || !reflect.DeepEqual(m.Metadata, r.Metadata) || !reflect.DeepEqual(m.Chunks, r.Chunks) || m.Text != "" {
			t.Errorf("record %d: DecodeMeta %+v, %v", i, m, err)
		}
		js, err := recordMetaJSON("id", v)
		if err != nil {
			t.Fatal(err)
		}
		var back Record
		if err := json.Unmarshal(js, &back); err != nil || !reflect.DeepEqual(back.Metadata, r.Metadata) || !reflect.DeepEqual(back.Chunks, r.Chunks) {
			t.Errorf("record %d: recordMetaJSON %q: %v", i, js, err)
		}
		if r.Metadata == nil && r.Chunks == nil && string(js) != "{}" {
			t.Errorf("record %d: recordMetaJSON of no metadata = %q", i, js)
		}
		u, err := unitsRecord(nil, "id")
		if err != nil || u != nil {
			t.Errorf("unitsRecord of no bucket: %+v, %v", u, err)
		}
	}
	// recordMetaJSON of a plain record is its JSON; of a damaged one, ErrCorrupt.
	plain := must(EncodeRecord("id", zRecord(5)))
	if js, err := recordMetaJSON("id", plain); err != nil || !bytes.Equal(js, plain[5:]) {
		t.Errorf("recordMetaJSON of a plain record: %q, %v", js, err)
	}
	if _, err := recordMetaJSON("other", plain); !errors.Is(err, ErrCorrupt) {
		t.Errorf("recordMetaJSON under another id: %v", err)
	}
	if _, err := recordMetaJSON("id", []byte{recordMagicZ, 1}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("recordMetaJSON of a damaged compressed record: %v", err)
	}
}

// TestZRecordMetaDamage: a compressed record whose metadata part (checksum made valid) is
// not JSON of the metadata's shape is ErrCorrupt, whole or metadata only.
func TestZRecordMetaDamage(t *testing.T) {
	db, d := testDict(t)
	good := must(encodeRecordZ("id", zRecord(10), d))
	z, _ := parseZRecord("id", good)
	for _, meta := range []string{`{"m":[1]}`, `{"c":"x"}`, `{"m":`, `not json`} {
		body := binary.AppendUvarint(binary.AppendUvarint(nil, 1), uint64(len(meta)))
		body = append(body, meta...)
		body = binary.BigEndian.AppendUint32(body, z.plainCRC)
		body = append(body, z.block...)
		v := append([]byte{recordMagicZ, 0, 0, 0, 0}, body...)
		binary.BigEndian.PutUint32(v[1:], zCRC("id", body))
		for _, metaOnly := range []bool{false, true} {
			if r, err := db.decodeRecord(nil, "id", v, metaOnly); !errors.Is(err, ErrCorrupt) {
				t.Errorf("metadata %s (meta only %v): %+v, %v", meta, metaOnly, r, err)
			}
		}
	}
	// Metadata in another key order or with spaces is read by the general decoder.
	meta := `{ "c":[{"s":0,"e":10}], "m":{"k":"v"} }`
	body := binary.AppendUvarint(binary.AppendUvarint(nil, 1), uint64(len(meta)))
	body = append(body, meta...)
	body = binary.BigEndian.AppendUint32(body, z.plainCRC)
	body = append(body, z.block...)
	v := append([]byte{recordMagicZ, 0, 0, 0, 0}, body...)
	binary.BigEndian.PutUint32(v[1:], zCRC("id", body))
	r, err := db.decodeRecord(nil, "id", v, false)
	if err != nil || r.Metadata["k"] != "v" || len(r.Chunks) != 1 || r.Text != zRecord(10).Text {
		t.Fatalf("metadata in another layout: %+v, %v", r, err)
	}
}

// TestZCRCCoversTag: a compressed record's checksum covers its layout tag, so the same
// bytes under another tag do not pass as a plain record of layout 0x02.
func TestZCRCCoversTag(t *testing.T) {
	_, d := testDict(t)
	v := must(encodeRecordZ("id", zRecord(3), d))
	if zCRC("id", v[5:]) == crc32.Update(keyCRC("id"), castagnoli, v[5:]) {
		t.Fatal("the tag is not covered")
	}
	other := bytes.Clone(v)
	other[0] = recordMagic
	if _, err := DecodeRecord("id", other); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a compressed record read as layout 0x02: %v", err)
	}
}

// FuzzDictBytes: any stored dictionary value is ErrCorrupt or a dictionary that encodes
// back to the same value; with fix, the value gets the tag and checksum of id, so the
// checks pass and the bytes are what is tried.
func FuzzDictBytes(f *testing.F) {
	raw, err := trainDict([][]byte{[]byte(strings.Repeat("some sample text of a corpus ", 100))})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint32(1), encodeDictValue(1, raw), false)
	f.Add(uint32(2), encodeDictValue(1, raw), false)
	f.Add(uint32(7), []byte{dictMagic, 0, 0, 0, 0, 1, 2, 3}, true)
	f.Add(uint32(1), []byte{dictMagic}, false)
	f.Add(uint32(0), []byte{}, true)
	f.Fuzz(func(t *testing.T, id uint32, v []byte, fix bool) {
		v = bytes.Clone(v)
		if fix && len(v) >= 5 {
			v[0] = dictMagic
			binary.BigEndian.PutUint32(v[1:], crc32.Update(keyCRC(string(dictKey(id))), castagnoli, v[5:]))
		}
		raw, err := dictBytes(id, v)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		if again := encodeDictValue(id, raw); !bytes.Equal(again, v) {
			t.Fatalf("%x re-encodes to %x", v, again)
		}
		// Loading it: a dictionary, or ErrCorrupt.
		if d, err := newRecDict(id, raw); err != nil && !errors.Is(err, ErrCorrupt) || err == nil && d.id != id {
			t.Fatalf("newRecDict: %+v, %v", d, err)
		}
	})
}

// FuzzZRecordRoundTrip: a record of any strings, packed with a dictionary, reads back as
// the plain layout reads it, whole, and its metadata alone.
func FuzzZRecordRoundTrip(f *testing.F) {
	db, d := testDict(f)
	f.Add("title", zText(3), "src", "a.md", 2)
	f.Add("", "", "", "", 0)
	f.Add("t\xff", "bad \xe2 utf8", "k", "v", 1)
	f.Add("ü", strings.Repeat("x", 5000), "n", "\x00", 3)
	f.Fuzz(func(t *testing.T, title, text, key, val string, chunks int) {
		r := &Record{Title: title, Text: text}
		if key != "" {
			r.Metadata = map[string]any{key: val}
		}
		for i := range chunks % 4 {
			r.Chunks = append(r.Chunks, Chunk{S: i, E: i + 1, H: []string{key}})
		}
		v, err := encodeRecordZ("id", r, d)
		if err != nil {
			t.Fatal(err)
		}
		want, err := DecodeRecord("id", must(EncodeRecord("id", r)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := db.decodeRecord(nil, "id", v, false)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("reads %+v, %v; want %+v", got, err, want)
		}
		m, err := db.decodeRecord(nil, "id", v, true)
		if err != nil || !reflect.DeepEqual(m.Metadata, want.Metadata) || !reflect.DeepEqual(m.Chunks, want.Chunks) {
			t.Fatalf("metadata reads %+v, %v; want %+v", m, err, want)
		}
		if _, err := db.decodeRecord(nil, "other", v, false); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("read under another id: %v", err)
		}
	})
}

// TestDictLoading: a dictionary is loaded from its store once and then served from memory
// (safe from many goroutines); one that is not stored, fails its checksum or does not load
// is ErrCorrupt; a second store of one id is refused; too few sample bytes make none.
func TestDictLoading(t *testing.T) {
	db := openTestDB(t)
	raw, err := trainDict([][]byte{[]byte(strings.Repeat("the words of the corpus ", 200))})
	if err != nil {
		t.Fatal(err)
	}
	d1, err := newRecDict(1, raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.update(func(tx *bolt.Tx) error { return storeDict(tx, d1, raw) }); err != nil {
		t.Fatal(err)
	}
	if err := db.update(func(tx *bolt.Tx) error { return storeDict(tx, d1, raw) }); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "stored already") {
		t.Fatalf("a second store of dictionary 1: %v", err)
	}
	var wg sync.WaitGroup
	got := make([]*recDict, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db.view(func(tx *bolt.Tx) error {
				got[i], _ = db.dict(tx, 1)
				return nil
			})
		}()
	}
	wg.Wait()
	for i, d := range got {
		if d == nil || d.id != 1 {
			t.Fatalf("reader %d: %+v", i, d)
		}
	}
	// Loaded: served without a transaction.
	if d, err := db.dict(nil, 1); err != nil || d.id != 1 {
		t.Fatalf("a loaded dictionary: %+v, %v", d, err)
	}
	if _, err := db.dict(nil, 2); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "not stored") {
		t.Fatalf("dictionary 2 without a transaction: %v", err)
	}
	for name, v := range map[string][]byte{
		"missing":        nil,
		"checksum":       append(bytes.Clone(encodeDictValue(2, raw)[:5]), raw[1:]...),
		"another id's":   encodeDictValue(3, raw),
		"does not load":  encodeDictValue(2, []byte{0x80}),
		"unknown layout": append([]byte{9}, encodeDictValue(2, raw)[1:]...),
	} {
		setValue(t, db, [][]byte{bkDicts}, dictKey(2), v)
		err := db.view(func(tx *bolt.Tx) error { _, err := db.dict(tx, 2); return err })
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("dictionary 2 %s: %v", name, err)
		}
	}
	if _, err := newRecDict(5, nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("an empty dictionary loads: %v", err)
	}
	if _, err := trainDict([][]byte{[]byte("tiny"), []byte("samples")}); err == nil {
		t.Error("a dictionary from 11 bytes")
	}
	// Samples past the history are left out: the dictionary is at most its size.
	big := make([][]byte, 0, 100)
	for i := range 100 {
		big = append(big, []byte(strings.Repeat(fmt.Sprint("sample ", i, " "), 200)))
	}
	if raw, err := trainDict(big); err != nil || len(raw) > dictHistory+binary.MaxVarintLen64 {
		t.Errorf("a dictionary from many samples: %d bytes, %v", len(raw), err)
	}
}

// TestDamagedDictionaryReplaced: a store whose newest dictionary is damaged packs the
// records written after with a new one (the next id), logging why; the records the damaged
// one packed stay ErrCorrupt, those of the new one read.
func TestDamagedDictionaryReplaced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	db := zStore(t, path, 1200, 600, 1000)
	v := rawRecord(t, db, "d01100")
	if v[0] != recordMagicZ {
		t.Fatal("not packed")
	}
	dv := func() []byte {
		var b []byte
		db.view(func(tx *bolt.Tx) error { b = bytes.Clone(tx.Bucket(bkDicts).Get(dictKey(1))); return nil })
		return b
	}()
	dv[len(dv)-1] ^= 1
	setValue(t, db, [][]byte{bkDicts}, dictKey(1), dv)
	db.Close()
	db, lb := openLogged(t, path, false)
	puts := zPuts(2000, 2600)
	if _, err := db.Write("c", puts, len(puts), len(puts)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(lb.String(), "compression dictionary is damaged") {
		t.Errorf("log %q", lb.String())
	}
	nv := rawRecord(t, db, "d02300")
	z, err := parseZRecord("d02300", nv)
	if err != nil || z.dict != 2 {
		t.Fatalf("a record written after: dictionary %d, %v", z.dict, err)
	}
	err = db.View(func(tx *Tx) error {
		if r, err := tx.Record("c", "d02300"); err != nil || !reflect.DeepEqual(r, zRecord(2300)) {
			return fmt.Errorf("new record: %+v, %v", r, err)
		}
		if _, err := tx.Record("c", "d01100"); !errors.Is(err, ErrCorrupt) || !errors.Is(err, errDict) {
			return fmt.Errorf("old record: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRecordCodecPlain: a read-only store, or a write of nothing, trains nothing and packs
// nothing; a collection under the threshold neither.
func TestRecordCodecPlain(t *testing.T) {
	withCompressMin(t, 10)
	db := openTestDB(t)
	for name, puts := range map[string][]Put{"no puts": nil, "under the threshold": zPuts(0, 9)} {
		d, fresh, unlock, err := db.recordCodec("c", puts)
		unlock()
		if d != nil || fresh != nil || err != nil {
			t.Errorf("%s: %v, %d bytes, %v", name, d, len(fresh), err)
		}
	}
	// Tiny records: too few bytes to learn from, so they stay plain at the threshold.
	var tiny []Put
	for i := range 20 {
		id := fmt.Sprint("t", i)
		tiny = append(tiny, Put{ID: id, Record: &Record{Text: "x"}, Units: []string{id}})
	}
	if _, err := db.Write("c", tiny, 20, 20); err != nil {
		t.Fatal(err)
	}
	if v := rawRecord(t, db, "t5"); v[0] != recordMagic {
		t.Fatalf("a tiny record packed: %#x", v[0])
	}
	path := filepath.Join(t.TempDir(), "store.db")
	w := zStore(t, path, 20, 20, 10)
	w.Close()
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if d, fresh, unlock, err := ro.recordCodec("c", zPuts(0, 50)); d != nil || fresh != nil || err != nil {
		t.Fatalf("read-only: %v, %v", d, err)
	} else {
		unlock()
	}
}
