package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/vecmath"
	segjson "github.com/segmentio/encoding/json"
)

// recordCases are stored records that the decoder must read as encoding/json does.
var recordCases = []Record{
	{Text: "plain"},
	{Title: "T", Text: "with <html> & \u2028 line sep, \"quotes\", \\ backslash, tab\t, nl\n, ctl \x01"},
	{Text: "unicode: é 漢字 🙂", Metadata: map[string]any{"source": "a/b.md", "n": 3.0, "f": -1.5e-300, "big": 1e21, "ok": true, "s": "x\ty"}},
	{Text: strings.Repeat("long text ", 500), Chunks: []Chunk{{S: 0, E: 10}, {S: 10, E: 5000, H: []string{"A", "B > c"}}}},
	{Text: "", Title: "only title", Metadata: map[string]any{"zero": 0.0, "max": math.MaxFloat64, "neg": math.Copysign(0, -1)}},
}

// TestDecodeRecordMatchesEncodingJSON: the faster decoder reads what encoding/json wrote
// exactly as encoding/json reads it.
func TestDecodeRecordMatchesEncodingJSON(t *testing.T) {
	for _, rc := range recordCases {
		enc, err := json.Marshal(&rc)
		if err != nil {
			t.Fatal(err)
		}
		checkDecode(t, enc)
	}
}

func checkDecode(t *testing.T, enc []byte) {
	t.Helper()
	var want Record
	wantErr := json.Unmarshal(enc, &want)
	got, err := DecodeRecord("id", enc)
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
	meta, err := DecodeMeta("id", enc)
	if err != nil || !reflect.DeepEqual(meta.Metadata, want.Metadata) || !reflect.DeepEqual(meta.Chunks, want.Chunks) {
		t.Fatalf("%q: DecodeMeta %+v, %v; encoding/json %+v", enc, meta, err, want)
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
		r := Record{Title: title, Text: text}
		if key != "" {
			r.Metadata = map[string]any{key: val, key + "#n": num}
		}
		if s != e {
			r.Chunks = []Chunk{{S: s, E: e, H: []string{key, val}}}
		}
		enc, err := json.Marshal(&r)
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
	r := Record{Title: "Tumour growth", Text: strings.Repeat("Cells of the β-islet grow – slowly – in 10 μM glucose. ", 14),
		Metadata: map[string]any{"source": "corpus/p123.txt"}}
	enc, _ := json.Marshal(&r)
	b.Run("DecodeRecord", func(b *testing.B) {
		for b.Loop() {
			if _, err := DecodeRecord("id", enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("segmentio", func(b *testing.B) {
		for b.Loop() {
			var x Record
			if err := segjson.Unmarshal(enc, &x); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var x Record
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
		enc, _ := json.Marshal(&rc)
		f.Add(enc)
	}
	f.Add([]byte(`{"x":"a","m":{"n":-0.5E+3,"b":true}}`))
	f.Fuzz(func(t *testing.T, data []byte) { checkDecode(t, data) })
}

// TestStoredValuesChecked flips every bit of a stored record and of a stored vector, one at a
// time, and requires ErrCorrupt from decoding (never a different value), and that values
// written before the checksums still decode.
func TestStoredValuesChecked(t *testing.T) {
	r := &Record{Title: "t", Text: "some text", Metadata: map[string]any{"k": "v", "n": 2.0}}
	enc, err := EncodeRecord("id", r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRecord("id", enc)
	if err != nil || !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for i := range enc {
		for bit := range 8 {
			bad := append([]byte(nil), enc...)
			bad[i] ^= 1 << bit
			if _, err := DecodeRecord("id", bad); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("record byte %d bit %d flipped: %v, want ErrCorrupt", i, bit, err)
			}
			if _, err := DecodeMeta("id", bad); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("record byte %d bit %d flipped, metadata read: %v, want ErrCorrupt", i, bit, err)
			}
		}
	}
	legacy, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeRecord("id", legacy); err != nil || !reflect.DeepEqual(got, r) {
		t.Fatalf("a record written before checksums: %+v, %v", got, err)
	}

	v := []float32{0.5, -1, 3.25, 0}
	venc := EncodeVector("id", v)
	if got, err := DecodeVector("id", venc); err != nil || !reflect.DeepEqual(got, v) {
		t.Fatalf("vector round trip: %v, %v", got, err)
	}
	for i := range venc {
		for bit := range 8 {
			bad := append([]byte(nil), venc...)
			bad[i] ^= 1 << bit
			if got, err := DecodeVector("id", bad); err == nil && reflect.DeepEqual(got, v) || err == nil && len(got) == len(v) {
				t.Fatalf("vector byte %d bit %d flipped: %v, %v; want ErrCorrupt", i, bit, got, err)
			}
		}
	}
	old := venc[8:] // the values alone, as written before checksums
	if got, err := DecodeVector("id", old); err != nil || !reflect.DeepEqual(got, v) {
		t.Fatalf("a vector written before checksums: %v, %v", got, err)
	}
}

// TestKeysBound: a record's and a vector's checksum covers its key: decoded under any id
// with one bit flipped (or another length) they are ErrCorrupt, never a value under another
// id. The layouts before it (a record of 0x01 and the CRC of its JSON; a vector of
// vecMagic and the CRC of its values) still decode, under any key, and a flipped bit in
// them is still caught.
func TestKeysBound(t *testing.T) {
	r := &Record{Title: "t", Text: "some text", Metadata: map[string]any{"k": "v"}}
	v := []float32{0.5, -1, 3.25}
	const id = "doc-17\x000"
	rec, err := EncodeRecord(id, r)
	if err != nil {
		t.Fatal(err)
	}
	vec := EncodeVector(id, v)
	others := []string{"", "doc-17", "doc-17\x000\x00", "doc-17\x0001"}
	for i := range len(id) {
		for bit := range 8 {
			b := []byte(id)
			b[i] ^= 1 << bit
			others = append(others, string(b))
		}
	}
	for _, o := range others {
		if _, err := DecodeRecord(o, rec); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("record of %q decoded under %q: %v", id, o, err)
		}
		if _, err := DecodeMeta(o, rec); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("record of %q decoded (metadata) under %q: %v", id, o, err)
		}
		if _, err := DecodeVector(o, vec); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("vector of %q decoded under %q: %v", id, o, err)
		}
	}
	if got, err := DecodeRecord(id, rec); err != nil || !reflect.DeepEqual(got, r) {
		t.Fatalf("record under its own id: %+v, %v", got, err)
	}
	if got, err := DecodeVector(id, vec); err != nil || !reflect.DeepEqual(got, v) {
		t.Fatalf("vector under its own id: %v, %v", got, err)
	}

	// The layouts of the previous version.
	js, _ := json.Marshal(r)
	v1 := append([]byte{recordMagicV1, 0, 0, 0, 0}, js...)
	binary.BigEndian.PutUint32(v1[1:], crc32.Checksum(js, castagnoli))
	vec1 := make([]byte, 8+4*len(v))
	binary.LittleEndian.PutUint32(vec1, vecMagic)
	for i, f := range v {
		binary.LittleEndian.PutUint32(vec1[8+4*i:], math.Float32bits(f))
	}
	binary.BigEndian.PutUint32(vec1[4:], crc32.Checksum(vec1[8:], castagnoli))
	for _, o := range []string{id, "any"} {
		if got, err := DecodeRecord(o, v1); err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("a record of layout 0x01: %+v, %v", got, err)
		}
		if got, err := DecodeVector(o, vec1); err != nil || !reflect.DeepEqual(got, v) {
			t.Fatalf("a vector of the previous layout: %v, %v", got, err)
		}
	}
	for i := range v1 {
		bad := append([]byte(nil), v1...)
		bad[i] ^= 0x10
		if _, err := DecodeRecord(id, bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("layout 0x01, byte %d flipped: %v", i, err)
		}
	}
	for i := range vec1 {
		bad := append([]byte(nil), vec1...)
		bad[i] ^= 0x10
		if got, err := DecodeVector(id, bad); err == nil && len(got) == len(v) {
			t.Fatalf("previous vector layout, byte %d flipped: %v", i, got)
		}
	}
}

// TestHalfVectors: a vector stored in float16 decodes to its values rounded to float16,
// only under its own key; a flipped bit anywhere in it is ErrCorrupt or a vector of another
// length (which the readers that know the dimension reject), never other values; a value
// float16 cannot hold is refused when writing.
func TestHalfVectors(t *testing.T) {
	for _, dim := range []int{3, 8, 384} {
		v := make([]float32, dim)
		for i := range v {
			v[i] = float32(math.Sin(float64(i)*0.7)) * 0.3
		}
		const id = "doc-9"
		b, err := EncodeVectorHalf(id, v)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != 8+2*dim {
			t.Fatalf("dim %d: %d bytes, want %d", dim, len(b), 8+2*dim)
		}
		want, err := vecmath.RoundHalf(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeVector(id, b)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("dim %d: %v, %v", dim, got, err)
		}
		if again, _ := EncodeVectorHalf(id, got); !bytes.Equal(again, b) {
			t.Fatalf("dim %d: a decoded float16 vector does not encode to the same bytes", dim)
		}
		if _, err := DecodeVector("doc-8", b); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("dim %d: decoded under another id: %v", dim, err)
		}
		if !keyBoundVector(b) || rebound(bkVecs, []byte(id), b) != nil {
			t.Fatalf("dim %d: a float16 vector is not taken for key-bound", dim)
		}
		for i := range b {
			for bit := range 8 {
				bad := bytes.Clone(b)
				bad[i] ^= 1 << bit
				got, err := DecodeVector(id, bad)
				if err == nil && len(got) == dim {
					t.Fatalf("dim %d: byte %d bit %d flipped: decoded %v", dim, i, bit, got[:min(dim, 4)])
				}
			}
		}
	}
	for _, f := range []float32{70000, float32(math.Inf(1)), float32(math.NaN())} {
		if _, err := EncodeVectorHalf("x", []float32{0, f}); !errors.Is(err, vecmath.ErrHalfRange) {
			t.Fatalf("%v: %v, want ErrHalfRange", f, err)
		}
	}
}

// TestVectorTagFlip: a flipped bit in the layout tag of a stored vector (float32 or
// float16) is ErrCorrupt. It was read as a vector written before checksums, of other
// values and two more of them, which Get returned without an error.
func TestVectorTagFlip(t *testing.T) {
	v := []float32{0.25, -0.5, 0.125, 1}
	const id = "doc"
	for _, enc := range []struct {
		name string
		b    []byte
	}{{"float32", EncodeVector(id, v)}, {"float16", must(EncodeVectorHalf(id, v))}} {
		for i := range 4 {
			for bit := range 8 {
				bad := bytes.Clone(enc.b)
				bad[i] ^= 1 << bit
				if got, err := DecodeVector(id, bad); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%s: tag byte %d bit %d flipped: %v, %v; want ErrCorrupt", enc.name, i, bit, got, err)
				}
			}
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestEncodeVectorLayout holds EncodeVector's bytes to its layout written out field by
// field (tag, checksum of key and values, each value's little-endian float32 bits), for
// vectors of 0 to 40 values: the machine's own byte order must not leak into the file.
func TestEncodeVectorLayout(t *testing.T) {
	for n := range 41 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(i)*0.37 - 5
		}
		want := binary.LittleEndian.AppendUint32(nil, vecMagicKey)
		vals := []byte{}
		for _, f := range v {
			vals = binary.LittleEndian.AppendUint32(vals, math.Float32bits(f))
		}
		want = binary.BigEndian.AppendUint32(want, crc32.Update(keyCRC("k"), castagnoli, vals))
		want = append(want, vals...)
		if got := EncodeVector("k", v); !bytes.Equal(got, want) {
			t.Fatalf("%d values: % x, want % x", n, got, want)
		}
	}
}
