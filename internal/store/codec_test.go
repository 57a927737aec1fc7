package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"math"
	"math/bits"
	"math/rand/v2"
	"reflect"
	"slices"
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
	i8 := must(EncodeVectorInt8("id", v))
	want8, _ := vecmath.RoundInt8(v)
	if got, err := DecodeVector("id", i8); err != nil || !slices.Equal(got, want8) {
		t.Fatalf("int8 vector round trip: %v, %v; want %v", got, err, want8)
	}
	for i := range i8 {
		for bit := range 8 {
			bad := append([]byte(nil), i8...)
			bad[i] ^= 1 << bit
			if got, err := DecodeVector("id", bad); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("int8 vector byte %d bit %d flipped: %v, %v; want ErrCorrupt", i, bit, got, err)
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
	}{{"float32", EncodeVector(id, v)}, {"float16", must(EncodeVectorHalf(id, v))}, {"int8", must(EncodeVectorInt8(id, v))}} {
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

// FuzzDecodeVector: any bytes decoded as a stored vector are ErrCorrupt or a vector that
// encodes back to the same bytes in their layout (key-bound float32 or float16, the layout
// of the values' checksum alone, the values alone); never a panic. With fix, a value that
// carries a key-bound tag gets the checksum of uid and its bytes, so the decoder reads it.
func FuzzDecodeVector(f *testing.F) {
	v := []float32{0.25, -1, 3.5, 0}
	f.Add("id", EncodeVector("id", v), false)
	f.Add("id", must(EncodeVectorHalf("id", v)), false)
	f.Add("id", must(EncodeVectorInt8("id", v)), false)
	f.Add("id", append(binary.LittleEndian.AppendUint32(nil, vecMagicInt8), 0, 0, 0, 0, 0, 0, 0x80, 0x3f, 0x7f, 0x81, 3), true)
	f.Add("id", EncodeVector("other", v), false)
	f.Add("id", EncodeVector("id", nil), false)
	f.Add("id", []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0x40}, false)
	f.Add("doc\x001", append(binary.LittleEndian.AppendUint32(nil, vecMagicHalf), 0, 0, 1, 0, 0, 0x3c), true)
	f.Add("id", append(binary.LittleEndian.AppendUint32(nil, vecMagicKey), 9, 9, 9, 9, 1, 2, 3), true)
	f.Add("id", []byte{0xfe, 0xca, 0xc0, 0x7f, 1, 2, 3, 4, 5}, false)
	f.Add("", []byte{}, false)
	f.Fuzz(func(t *testing.T, uid string, b []byte, fix bool) {
		b = bytes.Clone(b)
		tag := uint32(0)
		if len(b) >= 8 {
			tag = binary.LittleEndian.Uint32(b)
			if fix && (tag == vecMagicKey || tag == vecMagicHalf || tag == vecMagicInt8) {
				binary.BigEndian.PutUint32(b[4:], crc32.Update(keyCRC(uid), castagnoli, b[8:]))
			}
		}
		got, err := DecodeVector(uid, b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		var again []byte
		switch tag {
		case vecMagicKey:
			again = EncodeVector(uid, got)
		case vecMagicInt8:
			// Any scale decodes (not only those the encoder writes): each value is its
			// int8 times the scale, and nothing else is read.
			scale := math.Float32frombits(binary.LittleEndian.Uint32(b[8:]))
			if len(got) != len(b)-12 {
				t.Fatalf("%x decoded to %d values", b, len(got))
			}
			for i, f := range got {
				if want := float32(int8(b[12+i])) * scale; math.Float32bits(f) != math.Float32bits(want) {
					t.Fatalf("%x: value %d decoded to %v, want %v", b, i, f, want)
				}
			}
			return
		case vecMagicHalf:
			for _, f := range got {
				if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
					return // float16 NaNs and infinities decode, and are refused when written
				}
			}
			if again, err = EncodeVectorHalf(uid, got); err != nil {
				t.Fatalf("a decoded float16 vector does not encode: %v", err)
			}
		default:
			for _, f := range got {
				again = binary.LittleEndian.AppendUint32(again, math.Float32bits(f))
			}
			if tag == vecMagic {
				again = append(binary.BigEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, vecMagic), crc32.Checksum(again, castagnoli)), again...)
			}
		}
		if !bytes.Equal(again, b) && !(len(b) == 0 && len(again) == 0) {
			t.Fatalf("%x decoded to %v, which encodes to %x", b, got, again)
		}
	})
}

// FuzzDecodeStoredRecord: any JSON stored in any record layout (key-bound, the JSON's own
// checksum, the JSON alone) decodes to ErrCorrupt or to a record that encodes and decodes
// back to the same bytes, under its own id only, whose metadata read (DecodeMeta) agrees;
// never a panic.
func FuzzDecodeStoredRecord(f *testing.F) {
	for _, rc := range recordCases {
		js, _ := json.Marshal(&rc)
		f.Add("id", js, uint8(0))
		f.Add("doc\x001", js, uint8(1))
	}
	f.Add("id", []byte(`{"x":"a","m":{"n":-0.5E+3,"b":true,"s":"\u00e9"},"c":[{"s":0,"e":1,"h":["a"]}]}`), uint8(2))
	f.Add("id", []byte(`{"x":"a","m":{"n":1e999}}`), uint8(0))
	f.Add("id", []byte(`{"x":"\ud800"}`), uint8(1))
	f.Add("id", []byte(`{"t":"a","x":`), uint8(0))
	f.Add("", []byte{}, uint8(2))
	f.Fuzz(func(t *testing.T, id string, js []byte, layout uint8) {
		var v []byte
		switch layout % 3 {
		case 0:
			v = boundRecord(id, js)
		case 1:
			v = append([]byte{recordMagicV1, 0, 0, 0, 0}, js...)
			binary.BigEndian.PutUint32(v[1:], crc32.Checksum(js, castagnoli))
		default:
			v = js
		}
		r, err := DecodeRecord(id, v)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("untyped error: %v", err)
			}
			if _, err := DecodeMeta(id, v); err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("DecodeMeta: untyped error: %v", err)
			}
			return
		}
		m, err := DecodeMeta(id, v)
		if err != nil || !reflect.DeepEqual(m.Metadata, r.Metadata) || !reflect.DeepEqual(m.Chunks, r.Chunks) {
			t.Fatalf("DecodeMeta %+v, %v; DecodeRecord %+v", m, err, r)
		}
		enc, err := EncodeRecord(id, r)
		if err != nil {
			t.Fatalf("a decoded record does not encode: %v", err)
		}
		// Encoded, decoded and encoded again: the same bytes (a decoded empty "m":{} is an
		// empty map, which the encoding leaves out, as it does nil).
		again, err := DecodeRecord(id, enc)
		if err != nil {
			t.Fatalf("%+v re-encodes to %q, which does not decode: %v", r, enc, err)
		}
		if enc2, err := EncodeRecord(id, again); err != nil || !bytes.Equal(enc2, enc) {
			t.Fatalf("%+v re-encodes to %q, then to %q (%v)", r, enc, enc2, err)
		}
		if _, err := DecodeRecord(id+"x", enc); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decoded under another id: %v", err)
		}
	})
}

// TestTruncatedValues: every shorter prefix of a stored record (each layout) and of a
// stored vector (each checksummed layout) is ErrCorrupt, never a shorter value; the empty
// record too.
func TestTruncatedValues(t *testing.T) {
	r := &Record{Title: "T", Text: "some text é", Metadata: map[string]any{"k": "v"}, Chunks: []Chunk{{S: 0, E: 4}, {S: 4, E: 13}}}
	js, _ := json.Marshal(r)
	v1 := append([]byte{recordMagicV1, 0, 0, 0, 0}, js...)
	binary.BigEndian.PutUint32(v1[1:], crc32.Checksum(js, castagnoli))
	for name, full := range map[string][]byte{"bound": must(EncodeRecord("id", r)), "v1": v1, "JSON alone": js} {
		for n := range len(full) {
			if got, err := DecodeRecord("id", full[:n]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("record %s cut to %d bytes: %+v, %v", name, n, got, err)
			}
			if got, err := DecodeMeta("id", full[:n]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("record %s cut to %d bytes, metadata: %+v, %v", name, n, got, err)
			}
		}
	}
	vec := []float32{1, -2, 0.5, 8}
	for name, full := range map[string][]byte{"float32": EncodeVector("id", vec), "float16": must(EncodeVectorHalf("id", vec)), "int8": must(EncodeVectorInt8("id", vec))} {
		for n := 1; n < len(full); n++ {
			if got, err := DecodeVector("id", full[:n]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("vector %s cut to %d bytes: %v, %v", name, n, got, err)
			}
		}
	}
}

// TestDecodeVectorLayouts: what each layout decodes to, and what is refused.
func TestDecodeVectorLayouts(t *testing.T) {
	vals := legacyVector([]float32{1, 2}, true)
	for _, tc := range []struct {
		name string
		b    []byte
		want []float32 // nil: ErrCorrupt
	}{
		{"bound", EncodeVector("id", []float32{1, 2}), []float32{1, 2}},
		{"bound, no values", EncodeVector("id", nil), []float32{}},
		{"float16", must(EncodeVectorHalf("id", []float32{1, 2})), []float32{1, 2}},
		{"float16, odd bytes", func() []byte {
			b := append(must(EncodeVectorHalf("id", []float32{1})), 7)
			binary.BigEndian.PutUint32(b[4:], crc32.Update(keyCRC("id"), castagnoli, b[8:]))
			return b
		}(), nil},
		{"bound, odd bytes", func() []byte {
			b := append(EncodeVector("id", []float32{1}), 7)
			binary.BigEndian.PutUint32(b[4:], crc32.Update(keyCRC("id"), castagnoli, b[8:]))
			return b
		}(), nil},
		{"int8", must(EncodeVectorInt8("id", []float32{1.27, -2.54})), must(vecmath.RoundInt8([]float32{1.27, -2.54}))},
		{"int8, no values", must(EncodeVectorInt8("id", nil)), []float32{}},
		{"int8, no scale", func() []byte {
			b := binary.LittleEndian.AppendUint32(nil, vecMagicInt8)
			return binary.BigEndian.AppendUint32(b, crc32.Update(keyCRC("id"), castagnoli, nil))
		}(), nil},
		{"int8, NaN scale", func() []byte {
			b := must(EncodeVectorInt8("id", []float32{1, 2}))
			binary.LittleEndian.PutUint32(b[8:], 0x7fc00000)
			binary.BigEndian.PutUint32(b[4:], crc32.Update(keyCRC("id"), castagnoli, b[8:]))
			return b
		}(), nil},
		{"int8, negative scale", func() []byte {
			b := must(EncodeVectorInt8("id", []float32{1, 2}))
			binary.LittleEndian.PutUint32(b[8:], math.Float32bits(-1))
			binary.BigEndian.PutUint32(b[4:], crc32.Update(keyCRC("id"), castagnoli, b[8:]))
			return b
		}(), nil},
		{"vecMagic", legacyVector([]float32{1, 2}, false), []float32{1, 2}},
		{"values alone", vals, []float32{1, 2}},
		{"values alone, odd", vals[:7], nil},
		{"a tag two bits off", append(binary.LittleEndian.AppendUint32(nil, vecMagicKey^0x11), vals...), nil},
		{"a tag three bits off every tag", append(binary.LittleEndian.AppendUint32(nil, vecMagicKey^0x70000000), 0, 0, 0, 0), []float32{math.Float32frombits(vecMagicKey ^ 0x70000000), 0}},
	} {
		got, err := DecodeVector("id", tc.b)
		if tc.want == nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: %v, %v; want ErrCorrupt", tc.name, got, err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
			continue
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(tc.want[i]) {
				t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			}
		}
	}
}

func TestNearTagAndKeyBound(t *testing.T) {
	for _, tc := range []struct {
		w    uint32
		near bool
	}{
		{vecMagic, true}, {vecMagicKey, true}, {vecMagicHalf, true}, {vecMagicInt8, true}, {vecMagicInt8 ^ 0x21, true},
		{vecMagicKey ^ 1, true}, {vecMagicKey ^ 0x80000001, true}, {vecMagicHalf ^ 0x300, true},
		{vecMagicKey ^ 0x70000000, false}, {vecMagicHalf ^ 0x7, false}, {0, false}, {math.Float32bits(1), false}, {math.Float32bits(float32(math.NaN())), false},
	} {
		if got := nearTag(tc.w); got != tc.near {
			t.Errorf("nearTag(%08x) = %v", tc.w, got)
		}
	}
	for _, tc := range []struct {
		b     []byte
		bound bool
	}{
		{EncodeVector("k", []float32{1}), true},
		{must(EncodeVectorHalf("k", []float32{1})), true},
		{must(EncodeVectorInt8("k", []float32{1})), true},
		{legacyVector([]float32{1}, false), false},
		{legacyVector([]float32{1, 2}, true), false},
		{binary.LittleEndian.AppendUint32(nil, vecMagicKey)[:3], false},
		{nil, false},
	} {
		if got := keyBoundVector(tc.b); got != tc.bound {
			t.Errorf("keyBoundVector(%x) = %v", tc.b, got)
		}
	}
}

// TestKeyCRC: the key's checksum covers its length, so keys that are prefixes of one
// another (or a key and the start of a value) differ.
func TestKeyCRC(t *testing.T) {
	seen := map[uint32]string{}
	for _, k := range []string{"", "a", "ab", "abc", "a\x00", "\x00", "doc\x000", "doc\x001", "b"} {
		c := keyCRC(k)
		if o, ok := seen[c]; ok {
			t.Fatalf("keyCRC(%q) = keyCRC(%q)", k, o)
		}
		seen[c] = k
	}
	// A record of id "ab" and JSON J differs from one of id "a" and JSON "b"+J.
	if crc32.Update(keyCRC("ab"), castagnoli, []byte("{}")) == crc32.Update(keyCRC("a"), castagnoli, []byte("b{}")) {
		t.Fatal("the key's length is not covered")
	}
}

func TestNumberEnd(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"0,", 1}, {"-0}", 2}, {"12,", 2}, {"1.5}", 3}, {"-1.25e+10,", 9}, {"1E5}", 3}, {"3e-2,", 4},
		{"01,", -1}, {"1.,", -1}, {".5,", -1}, {"-,", -1}, {"1e,", -1}, {"1e+,", -1}, {"+1,", -1},
		{"1", -1}, {"1 ,", -1}, {"1]", -1}, {"", -1}, {"1.5e3x", -1},
	} {
		if got := numberEnd([]byte(tc.in), 0); got != tc.want {
			t.Errorf("numberEnd(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestFlatMeta(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]any // nil: not flat
	}{
		{`{}`, map[string]any{}},
		{`{"a":"b"}`, map[string]any{"a": "b"}},
		{`{"n":-1.5e2,"t":true,"f":false,"s":"x"}`, map[string]any{"n": -150.0, "t": true, "f": false, "s": "x"}},
		{`{"é":"ü"}`, map[string]any{"é": "ü"}},
		{`{"a":null}`, nil},
		{`{"a":{"b":1}}`, nil},
		{`{"a":[1]}`, nil},
		{`{"a":"b\"c"}`, nil},
		{`{"a\n":"b"}`, nil},
		{`{"a":"b",}`, nil},
		{`{"a" :"b"}`, nil},
		{`{"a":tru}`, nil},
		{`{"a":1e999}`, nil},
		{`{"a":"\xff"}`, nil},
		{`{"a"}`, nil},
		{`{"a":}`, nil},
		{`{"a":`, nil},
		{`["a"]`, nil},
		{``, nil},
	} {
		got, ok := flatMeta([]byte(tc.in))
		if ok != (tc.want != nil) || ok && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("flatMeta(%q) = %v, %v; want %v", tc.in, got, ok, tc.want)
		}
	}
}

func TestJSONScanners(t *testing.T) {
	for _, tc := range []struct {
		in  string
		end int
		ok  bool
	}{
		{`"abc",`, 5, true},
		{`"a\"b"}`, 6, true},
		{`{"a":[1,"]"]},`, 13, true},
		{`[1,[2,3]]}`, 9, true},
		{`123,`, 3, true},
		{`true}`, 4, true},
		{`,`, 0, false},
		{`"abc`, 0, false},
		{`{"a":1`, 0, false},
		{`"a\`, 0, false},
	} {
		end, ok := jsonValueEnd([]byte(tc.in), 0)
		if end != tc.end || ok != tc.ok {
			t.Errorf("jsonValueEnd(%q) = %d, %v; want %d, %v", tc.in, end, ok, tc.end, tc.ok)
		}
	}
	for _, tc := range []struct {
		in  string
		end int
		ok  bool
	}{
		{`"abc"`, 5, true},
		{`"a very long string of more than eight bytes"x`, 45, true},
		{`"a\"b"`, 6, true},
		{`"\\"`, 4, true},
		{`"abc`, 0, false},
		{`abc"`, 0, false},
		{``, 0, false},
	} {
		end, ok := skipString([]byte(tc.in), 0)
		if end != tc.end || ok != tc.ok {
			t.Errorf("skipString(%q) = %d, %v; want %d, %v", tc.in, end, ok, tc.end, tc.ok)
		}
	}
	for _, tc := range []struct {
		in string
		s  string
		ok bool
	}{
		{`"plain"`, "plain", true},
		{`"long enough to take the eight-byte steps"`, "long enough to take the eight-byte steps", true},
		{`"ü漢"`, "ü漢", true},
		{`"a\"b"`, "", false},
		{"\"a\x01b\"", "", false},
		{"\"\xff\"", "", false},
		{`"open`, "", false},
		{`x`, "", false},
	} {
		s, _, ok := plainString([]byte(tc.in), 0)
		if s != tc.s || ok != tc.ok {
			t.Errorf("plainString(%q) = %q, %v", tc.in, s, ok)
		}
	}
	for _, tc := range []struct {
		in  string
		out string
		ok  bool
	}{
		{`"a\n\t\"\\\/\b\f\r"`, "a\n\t\"\\/\b\f\r", true},
		{`"\u00e9\u4e2d"`, "é中", true},
		{`"\ud83d\ude42"`, "🙂", true},
		{`"\ud800"`, "\ufffd", true},
		{"\"\xff\"", "\ufffd", true},
		{`"a\q"`, "", false},
		{`"\u12"`, "", false},
		{`"\uzzzz"`, "", false},
		{"\"a\x01\"", "", false},
		{`"a\`, "", false},
	} {
		s, _, ok := jsonString([]byte(tc.in), 0)
		if s != tc.out || ok != tc.ok {
			t.Errorf("jsonString(%q) = %q, %v; want %q, %v", tc.in, s, ok, tc.out, tc.ok)
		}
	}
}

// TestByteClassifiers: special and control find the bytes the fast scans must stop at, in
// every position of an 8-byte word, and nothing else.
func TestByteClassifiers(t *testing.T) {
	for pos := range 8 {
		for c := range 256 {
			w := []byte("abcdefgh")
			w[pos] = byte(c)
			want := c == '"' || c == '\\' || c < 0x20
			if got := special(binary.LittleEndian.Uint64(w)); got != want {
				t.Fatalf("special with %#x at %d = %v", c, pos, got)
			}
			if got := control(w); got != (c < 0x20) {
				t.Fatalf("control with %#x at %d = %v", c, pos, got)
			}
			if got := control(w[:pos+1]); got != (c < 0x20) {
				t.Fatalf("control of %d bytes ending in %#x = %v", pos+1, c, got)
			}
		}
	}
	for _, tc := range []struct {
		k    byte
		rank int
	}{{'t', 1}, {'x', 2}, {'m', 3}, {'c', 4}, {'h', 0}, {0, 0}} {
		if got := keyRank(tc.k); got != tc.rank {
			t.Errorf("keyRank(%q) = %d", tc.k, got)
		}
	}
}

// TestInt8Vectors: a vector stored in int8 decodes to vecmath.RoundInt8 of its values, bit
// for bit; the rounded vector encodes to the same bytes (what an index holds is what the
// store decodes); 12 + dim bytes; a NaN or Inf is refused with vecmath.ErrNonFinite; under
// another id it is ErrCorrupt; and the tag is at least 3 bits from every other layout's.
func TestInt8Vectors(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		v := make([]float32, 1+rng.IntN(800))
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		b, err := EncodeVectorInt8("doc", v)
		if err != nil || len(b) != 12+len(v) {
			t.Fatalf("trial %d: %d bytes, %v", trial, len(b), err)
		}
		got, err := DecodeVector("doc", b)
		want, _ := vecmath.RoundInt8(v)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("trial %d: decoded %v, want RoundInt8", trial, err)
		}
		if again := must(EncodeVectorInt8("doc", got)); !bytes.Equal(again, b) {
			t.Fatalf("trial %d: the decoded vector encodes to other bytes", trial)
		}
		if _, err := DecodeVector("dod", b); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("trial %d: under another id: %v", trial, err)
		}
	}
	if _, err := EncodeVectorInt8("x", []float32{1, float32(math.Inf(1))}); !errors.Is(err, vecmath.ErrNonFinite) {
		t.Fatalf("Inf: %v", err)
	}
	for _, tag := range []uint32{vecMagic, vecMagicKey, vecMagicHalf} {
		if d := bits.OnesCount32(tag ^ vecMagicInt8); d < 3 {
			t.Fatalf("int8 tag %d bits from %08x", d, tag)
		}
	}
}

// TestKeyCRCUnchanged: the key checksum computed without copies equals the one every
// stored record was written with (crc32 over the length, big-endian, then the key).
func TestKeyCRCUnchanged(t *testing.T) {
	for _, key := range []string{"", "k", "doc-000001", strings.Repeat("é", 300), "\x00\xff"} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(key)))
		want := crc32.Update(crc32.Update(0, castagnoli, n[:]), castagnoli, []byte(key))
		if got := keyCRC(key); got != want {
			t.Errorf("keyCRC(%q) = %#x, want %#x", key, got, want)
		}
	}
	for _, c := range []uint32{0, 1, 0xdeadbeef, 0xffffffff} {
		for b := range 256 {
			if got, want := crcByte(c, byte(b)), crc32.Update(c, castagnoli, []byte{byte(b)}); got != want {
				t.Fatalf("crcByte(%#x, %d) = %#x, want %#x", c, b, got, want)
			}
		}
	}
}
