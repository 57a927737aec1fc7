package memory

import (
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	segjson "github.com/segmentio/encoding/json"
	bolt "go.etcd.io/bbolt"
)

// persistedCounts reads a collection's info/ndocs and info/nunits straight from store.db of
// a closed store; ok is false when they are missing.
func persistedCounts(t *testing.T, dir, col string) (docs, units int, ok bool) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, dbName), 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, col, false)
		if err != nil || b == nil {
			t.Fatalf("collection %q: %v", col, err)
		}
		docs, units, ok = counts(b)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return docs, units, ok
}

// TestCountsPersisted: every write keeps the persisted document and chunk counts exact, and
// a reopened store reads them back instead of scanning.
func TestCountsPersisted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	m := openT(t, dir)
	long := prose(3, 6000)
	if err := m.Add(bg,
		Document{ID: "a", Text: "alpha text", Source: "x.md"},
		Document{ID: "b", Text: "beta text", Source: "y.md"},
		Document{ID: "long", Text: long, Source: "x.md"},
		Document{ID: "c", Text: "gamma text"},
	); err != nil {
		t.Fatal(err)
	}
	docs, units, _, _ := colIndexCounts(t, m.Collection(""))
	if docs != 4 || units < 6 {
		t.Fatalf("after add: docs %d units %d", docs, units)
	}
	// A chunked document shrinks to one chunk, a plain one grows to several.
	if err := m.Upsert(bg, Document{ID: "long", Text: "short now", Source: "x.md"}, Document{ID: "c", Text: long}); err != nil {
		t.Fatal(err)
	}
	colIndexCounts(t, m.Collection(""))
	// Unknown and repeated ids change nothing twice.
	if err := m.Delete(bg, "b", "b", "nope"); err != nil {
		t.Fatal(err)
	}
	if n, err := m.DeleteWhere(bg, Where{"source": "x.md"}); err != nil || n != 2 {
		t.Fatalf("DeleteWhere = %d, %v", n, err)
	}
	docs, units, bm25, _ := colIndexCounts(t, m.Collection(""))
	if docs != 1 || m.Count() != 1 || units != bm25 || units < 2 {
		t.Fatalf("after deletes: docs %d Count %d units %d bm25 %d", docs, m.Count(), units, bm25)
	}
	if ids := m.Collection("").IDs(); !reflect.DeepEqual(ids, []string{"c"}) {
		t.Fatalf("IDs = %v", ids)
	}
	m.Close()
	pd, pu, ok := persistedCounts(t, dir, DefaultCollection)
	if !ok || pd != 1 || pu != units {
		t.Fatalf("persisted %d docs %d units (ok %v), want 1, %d", pd, pu, ok, units)
	}
	m2 := openT(t, dir)
	if d, u, _, _ := colIndexCounts(t, m2.Collection("")); d != 1 || u != units {
		t.Fatalf("reopened: docs %d units %d", d, u)
	}
}

// TestCountsOfOldStore: a store written before the counts were persisted counts its
// documents once on open and keeps the counts from then on.
func TestCountsOfOldStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	m := openT(t, dir)
	if err := m.Add(bg, Document{ID: "a", Text: "alpha"}, Document{ID: "long", Text: prose(5, 5000)}); err != nil {
		t.Fatal(err)
	}
	_, units, _, _ := colIndexCounts(t, m.Collection(""))
	side, _ := m.CreateCollection("side")
	if err := side.Add(bg, Document{ID: "s", Text: "side"}); err != nil {
		t.Fatal(err)
	}
	m.Close()
	// Make it an old store: no count keys.
	db, err := bolt.Open(filepath.Join(dir, dbName), 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bkCols).ForEachBucket(func(k []byte) error {
			info := tx.Bucket(bkCols).Bucket(k).Bucket(bkInfo)
			return errors.Join(info.Delete(keyDocN), info.Delete(keyUnitN))
		})
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, _, ok := persistedCounts(t, dir, DefaultCollection); ok {
		t.Fatal("count keys not removed")
	}
	// A read-only open counts for itself and writes nothing.
	ro, err := Open(dir, ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	if ro.Count() != 2 || ro.Collection("side").Count() != 1 {
		t.Fatalf("read-only: Count %d, side %d", ro.Count(), ro.Collection("side").Count())
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := persistedCounts(t, dir, DefaultCollection); ok {
		t.Fatal("a read-only open persisted counts")
	}
	m2 := openT(t, dir)
	if m2.Count() != 2 || m2.Collection("side").Count() != 1 {
		t.Fatalf("Count %d, side %d", m2.Count(), m2.Collection("side").Count())
	}
	if d, u, _, _ := colIndexCounts(t, m2.Collection("")); d != 2 || u != units {
		t.Fatalf("docs %d units %d, want 2, %d", d, u, units)
	}
	m2.Close()
	if d, u, ok := persistedCounts(t, dir, DefaultCollection); !ok || d != 2 || u != units {
		t.Fatalf("persisted %d %d %v", d, u, ok)
	}
	if d, u, ok := persistedCounts(t, dir, "side"); !ok || d != 1 || u != 1 {
		t.Fatalf("side persisted %d %d %v", d, u, ok)
	}
}

// recordCases are stored records that the decoder must read as encoding/json does.
var recordCases = []record{
	{Text: "plain"},
	{Title: "T", Text: "with <html> & \u2028 line sep, \"quotes\", \\ backslash, tab\t, nl\n, ctl \x01"},
	{Text: "unicode: é 漢字 🙂", Metadata: map[string]any{"source": "a/b.md", "n": 3.0, "f": -1.5e-300, "big": 1e21, "ok": true, "s": "x\ty"}},
	{Text: strings.Repeat("long text ", 500), Chunks: []chunkRec{{S: 0, E: 10}, {S: 10, E: 5000, H: []string{"A", "B > c"}}}},
	{Text: "", Title: "only title", Metadata: map[string]any{"zero": 0.0, "max": math.MaxFloat64, "neg": math.Copysign(0, -1)}},
}

// TestDecodeRecordMatchesEncodingJSON: the faster decoder reads what encoding/json wrote
// exactly as encoding/json reads it.
func TestDecodeRecordMatchesEncodingJSON(t *testing.T) {
	for _, rc := range recordCases {
		enc, err := jsonMarshal(&rc)
		if err != nil {
			t.Fatal(err)
		}
		checkDecode(t, enc)
	}
}

func checkDecode(t *testing.T, enc []byte) {
	t.Helper()
	var want record
	wantErr := json.Unmarshal(enc, &want)
	got, err := decodeRecord("id", enc)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%q: error %v, encoding/json %v", enc, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(*got, want) {
		t.Fatalf("%q: decoded %+v, encoding/json %+v", enc, *got, want)
	}
	if err != nil {
		return
	}
	// What a metadata filter reads: the same metadata and chunks.
	meta, err := decodeMeta("id", enc)
	if err != nil || !reflect.DeepEqual(meta.Metadata, want.Metadata) || !reflect.DeepEqual(meta.Chunks, want.Chunks) {
		t.Fatalf("%q: decodeMeta %+v, %v; encoding/json %+v", enc, meta, err, want)
	}
}

// FuzzDecodeRecord: records made of arbitrary strings round-trip as with encoding/json.
func FuzzDecodeRecord(f *testing.F) {
	f.Add("title", "text <&> \u2028", "key", "value", 1.5, 0, 3)
	f.Add("", "é漢🙂\\\"", "source", "a\x00b", -2.0, 5, 1)
	f.Fuzz(func(t *testing.T, title, text, key, val string, num float64, s, e int) {
		if math.IsNaN(num) || math.IsInf(num, 0) {
			return
		}
		r := record{Title: title, Text: text}
		if key != "" {
			r.Metadata = map[string]any{key: val, key + "#n": num}
		}
		if s != e {
			r.Chunks = []chunkRec{{S: s, E: e, H: []string{key, val}}}
		}
		enc, err := jsonMarshal(&r)
		if err != nil {
			return
		}
		checkDecode(t, enc)
	})
}

// TestDecodeRecordOtherLayouts: records not in encoding/json's own layout (other key
// order, spaces, unknown keys, escapes) and broken ones decode as encoding/json does.
func TestDecodeRecordOtherLayouts(t *testing.T) {
	for _, enc := range []string{
		`{"x":"text","t":"title"}`,
		`{ "t":"a", "x":"b" }`,
		`{"t":"a","x":"b","z":1}`,
		`{"t":"a","t":"b","x":"c"}`,
		`{"x":"tab\tinside"}`,
		`{"x":"esc \u00e9 \n","m":{"k":"v\"w","n":1e3,"b":false}}`,
		`{"x":"a","m":null,"c":null}`,
		`{"x":"a","c":[{"s":1,"e":2,"h":["x,y","]}"]}]}`,
		`{"x":"a","m":{"k":[1,2]}}`,
		`{"x":"a","m":{"n":01}}`, `{"x":"a","m":{"n":1.}}`, `{"x":"a","m":{"n":-}}`, `{"x":"a","m":{"n":1e}}`,
		`{"x":"a","m":{"n":-0.5E+3,"b":true,"c":false,"d":null}}`, `{"x":"a","m":{"n":1e5,"b":true,"c":false}}`,
		`{"x":"a","m":{}}`, `{"x":"a","m":{"k":"v",}}`, `{"x":"a","m":{"k":tru}}`, `{"x":"a","m":{"k":truex}}`,
		`{"x":"a","m":{"k":"v","k":2}}`, `{"x":"a","m":{"k":1e999}}`, `{"x":"a","m":{"":"\xc3"}}`,
		`{"x":"a\u00e9\ud83d\ude42 \u003c\u0026 \"q\" \\ \/ \b\f\n\r\t end"}`, `{"x":"lone \ud800 x"}`,
		`{"x":"\uZZZZ"}`, `{"x":"\u12"}`, `{"x":"\x"}`, `{"x":"a\`, `{"t":"\u00e9\u0000","x":"\ufffd"}`,
		"{\"x\":\"a\\n\x01b\"}", `{"x":"\"\"\\\"","t":"x"}`, `{"t":"\"","x":"\\"}`,
		`{}`, `{"x":}`, `{"x":"a"`, `{"x":"a",}`, `{"x":"\xff"}`, `{"x":"a"}x`, `[]`, ``,
	} {
		checkDecode(t, []byte(enc))
	}
}

// BenchmarkDecodeRecord: decoding a passage-sized record (about 800 bytes, some non-ASCII,
// a source), as each search result does; against encoding/json and segmentio's decoder.
func BenchmarkDecodeRecord(b *testing.B) {
	r := record{Title: "Tumour growth", Text: strings.Repeat("Cells of the β-islet grow – slowly – in 10 μM glucose. ", 14),
		Metadata: map[string]any{"source": "corpus/p123.txt"}}
	enc, _ := jsonMarshal(&r)
	b.Run("decodeRecord", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeRecord("id", enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("segmentio", func(b *testing.B) {
		for b.Loop() {
			var x record
			if err := segjson.Unmarshal(enc, &x); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var x record
			if err := json.Unmarshal(enc, &x); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzDecodeRecordBytes: any bytes decode as encoding/json decodes them (same error-ness,
// same record).
func FuzzDecodeRecordBytes(f *testing.F) {
	for _, rc := range recordCases {
		enc, _ := jsonMarshal(&rc)
		f.Add(enc)
	}
	f.Add([]byte(`{"x":"a","m":{"n":-0.5E+3,"b":true}}`))
	f.Fuzz(func(t *testing.T, data []byte) { checkDecode(t, data) })
}
