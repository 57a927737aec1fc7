package store

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
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
		v = bytes.Clone(docsBucket(tx, "c").Get([]byte(id)))
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
