package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/agentmem/memory/internal/vecmath"
	segjson "github.com/segmentio/encoding/json"
)

// Stored values carry a CRC-32C (Castagnoli): bbolt checks only its meta pages, so a flipped
// byte in a data page would otherwise change a document or a vector silently. The checksum
// covers the key too (its length, 4 bytes big endian, then its bytes), so a flipped bit in a
// document id or an index id is a value that fails its checksum under the damaged key, not
// a document under another id:
//
//	record: 0x02, CRC-32C of key and JSON (4 bytes, big endian), the JSON
//	vector: vecMagicKey (4 bytes), CRC-32C of key and values (4 bytes, big endian), the
//	        values as little-endian float32s
//	        or, in a store that keeps float16 vectors (Options.HalfVectors), vecMagicHalf,
//	        the CRC-32C of key and values, the values as little-endian IEEE binary16
//	        or, in a store that keeps int8 vectors (PrecisionInt8), vecMagicInt8, the
//	        CRC-32C of key, scale and values, the scale as a little-endian float32, then
//	        an int8 a value (value i is q[i] x scale: vecmath.QuantizeInt8)
//
// A compressed record (zrecord.go) starts with 0x03. Older layouts are still read: a record of 0x01 and a CRC-32C of the JSON alone, or the
// JSON alone (written before checksums); a vector of vecMagic and a CRC-32C of the values
// alone, or the values alone. A record's JSON starts with '{', and a vector never starts
// with vecMagic or vecMagicKey, NaNs, which no stored vector holds.
const (
	recordMagicV1 = 0x01       // CRC of the JSON alone
	recordMagic   = 0x02       // CRC of the key and the JSON
	vecMagic      = 0x7fc0cafe // a quiet NaN as a float32: CRC of the values alone
	vecMagicKey   = 0x7fc0caff // another quiet NaN: CRC of the key and the values
	vecMagicHalf  = 0x7fc0cb00 // a third: CRC of the key and the values, float16 values
	// vecMagicInt8 is a fourth quiet NaN, at least 4 bits from each other tag (no flip of
	// one or two bits turns one layout's tag into another's): CRC of the key, the scale
	// and the values, int8 values.
	vecMagicInt8 = 0x7fc0cb1e
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// keyCRC is the CRC-32C of key's length and bytes, which a value's own bytes continue.
func keyCRC(key string) uint32 {
	var crc uint32
	for shift := 24; shift >= 0; shift -= 8 { // the length, big-endian
		crc = crcByte(crc, byte(len(key)>>shift))
	}
	// crc32 only reads the key's bytes: they are passed without a copy (a copy, and a
	// length prefix in an array the call lets escape, were two allocations a record
	// checked, and a page check verifies a page of records for each lookup that misses).
	return crc32.Update(crc, castagnoli, unsafe.Slice(unsafe.StringData(key), len(key)))
}

// crcByte is crc32.Update(crc, castagnoli, []byte{b}), without a slice.
func crcByte(crc uint32, b byte) uint32 {
	crc = ^crc
	return ^(castagnoli[byte(crc)^b] ^ crc>>8)
}

// EncodeRecord is the stored form of r, the record of document id (its key in the store).
func EncodeRecord(id string, r *Record) ([]byte, error) {
	js, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return boundRecord(id, js), nil
}

// boundRecord is the stored form of a record of document id whose JSON is js.
func boundRecord(id string, js []byte) []byte {
	out := make([]byte, 5+len(js))
	out[0] = recordMagic
	binary.BigEndian.PutUint32(out[1:], crc32.Update(keyCRC(id), castagnoli, js))
	copy(out[5:], js)
	return out
}

// recordJSON returns the JSON of stored record v (of document id) after checking its
// checksum; ErrCorrupt when it does not match or v is of no known layout.
func recordJSON(id string, v []byte) ([]byte, error) {
	if len(v) > 0 && v[0] == '{' {
		return v, nil // written before checksums
	}
	if len(v) < 5 || (v[0] != recordMagic && v[0] != recordMagicV1) {
		return nil, fmt.Errorf("%w: document %s: a stored record of unknown layout", ErrCorrupt, ShowKey(id))
	}
	want := binary.BigEndian.Uint32(v[1:])
	if v[0] == recordMagic {
		if crc32.Update(keyCRC(id), castagnoli, v[5:]) != want {
			return nil, fmt.Errorf("%w: document %s: stored record fails its checksum (its id or its value is damaged)", ErrCorrupt, ShowKey(id))
		}
		return v[5:], nil
	}
	if got := crc32.Checksum(v[5:], castagnoli); got != want {
		return nil, fmt.Errorf("%w: document %s: stored record fails its checksum (%08x, want %08x)", ErrCorrupt, ShowKey(id), got, want)
	}
	return v[5:], nil
}

// EncodeVector is the stored form of v, the vector of index id uid (its key in the store).
func EncodeVector(uid string, v []float32) []byte {
	b := make([]byte, 8+4*len(v))
	binary.LittleEndian.PutUint32(b, vecMagicKey)
	if vecmath.LittleEndian && len(v) > 0 {
		// The stored form is the values' little-endian bits: this machine's own.
		copy(b[8:], unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v)))
	} else {
		for i, f := range v {
			binary.LittleEndian.PutUint32(b[8+4*i:], math.Float32bits(f))
		}
	}
	binary.BigEndian.PutUint32(b[4:], crc32.Update(keyCRC(uid), castagnoli, b[8:]))
	return b
}

// nearTag reports whether w is within two flipped bits of a vector layout tag.
func nearTag(w uint32) bool {
	for _, tag := range []uint32{vecMagic, vecMagicKey, vecMagicHalf, vecMagicInt8} {
		if bits.OnesCount32(w^tag) <= 2 {
			return true
		}
	}
	return false
}

// keyBoundVector reports whether stored vector v is in a layout whose checksum covers its
// key (float32, float16 or int8).
func keyBoundVector(v []byte) bool {
	if len(v) < 4 {
		return false
	}
	m := binary.LittleEndian.Uint32(v)
	return m == vecMagicKey || m == vecMagicHalf || m == vecMagicInt8
}

// EncodeVectorInt8 is the stored form of v, the vector of index id uid, in int8: one
// float32 scale and an int8 a value (vecmath.QuantizeInt8), 1 byte a value plus 12 bytes
// instead of 4 a value. A NaN or Inf is an error matching vecmath.ErrNonFinite. Decoded,
// it is vecmath.RoundInt8(v) bit for bit.
func EncodeVectorInt8(uid string, v []float32) ([]byte, error) {
	b := make([]byte, 12+len(v))
	binary.LittleEndian.PutUint32(b, vecMagicInt8)
	q := unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(b[12:]))), len(v))
	scale, err := vecmath.QuantizeInt8(v, q)
	if err != nil {
		return nil, fmt.Errorf("index id %s: %w", ShowKey(uid), err)
	}
	binary.LittleEndian.PutUint32(b[8:], math.Float32bits(scale))
	binary.BigEndian.PutUint32(b[4:], crc32.Update(keyCRC(uid), castagnoli, b[8:]))
	return b, nil
}

// EncodeVectorHalf is the stored form of v, the vector of index id uid, in float16: each
// value rounded to the nearest float16 (ties to even). A value float16 cannot hold is
// vecmath.ErrHalfRange. A vector stored so costs 2 bytes a value instead of 4.
func EncodeVectorHalf(uid string, v []float32) ([]byte, error) {
	b := make([]byte, 8+2*len(v))
	binary.LittleEndian.PutUint32(b, vecMagicHalf)
	for i, f := range v {
		h, ok := vecmath.HalfBits(f)
		if !ok {
			return nil, fmt.Errorf("%w: index id %s: value %d is %v", vecmath.ErrHalfRange, ShowKey(uid), i, f)
		}
		binary.LittleEndian.PutUint16(b[8+2*i:], h)
	}
	binary.BigEndian.PutUint32(b[4:], crc32.Update(keyCRC(uid), castagnoli, b[8:]))
	return b, nil
}

// DecodeVector decodes b, the stored vector of index id uid, after checking its checksum;
// ErrCorrupt when it does not match.
func DecodeVector(uid string, b []byte) ([]float32, error) {
	return decodeVectorInto(uid, b, nil)
}

// vecOut is dst[:n] when it has room for n values, else a new slice.
func vecOut(dst []float32, n int) []float32 {
	if cap(dst) >= n {
		return dst[:n]
	}
	return make([]float32, n)
}

// vectorTagged reports whether b, a stored vector, carries a layout tag and so a checksum
// (decodeVectorInto checks it): every vector written since checksums were.
func vectorTagged(b []byte) bool {
	if len(b) < 8 {
		return false
	}
	switch binary.LittleEndian.Uint32(b) {
	case vecMagicInt8, vecMagicHalf, vecMagicKey, vecMagic:
		return true
	}
	return false
}

// decodeVectorInto is DecodeVector writing into dst when it has room.
func decodeVectorInto(uid string, b []byte, dst []float32) ([]float32, error) {
	tagged := false
	if len(b) >= 8 {
		tagged = true
		switch binary.LittleEndian.Uint32(b) {
		case vecMagicInt8:
			if crc32.Update(keyCRC(uid), castagnoli, b[8:]) != binary.BigEndian.Uint32(b[4:]) {
				return nil, fmt.Errorf("%w: index id %s: stored vector fails its checksum (its id or its values are damaged)", ErrCorrupt, ShowKey(uid))
			}
			if len(b) < 12 {
				return nil, fmt.Errorf("%w: index id %s: int8 vector of %d bytes", ErrCorrupt, ShowKey(uid), len(b)-8)
			}
			scale := math.Float32frombits(binary.LittleEndian.Uint32(b[8:]))
			if math.IsNaN(float64(scale)) || math.IsInf(float64(scale), 0) || scale < 0 {
				return nil, fmt.Errorf("%w: index id %s: int8 vector of scale %v", ErrCorrupt, ShowKey(uid), scale)
			}
			v := vecOut(dst, len(b)-12)
			vecmath.DequantizeInt8(unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(b[12:]))), len(v)), scale, v)
			return v, nil
		case vecMagicHalf:
			if crc32.Update(keyCRC(uid), castagnoli, b[8:]) != binary.BigEndian.Uint32(b[4:]) {
				return nil, fmt.Errorf("%w: index id %s: stored vector fails its checksum (its id or its values are damaged)", ErrCorrupt, ShowKey(uid))
			}
			if len(b)%2 != 0 {
				return nil, fmt.Errorf("%w: index id %s: float16 vector of %d bytes", ErrCorrupt, ShowKey(uid), len(b)-8)
			}
			v := vecOut(dst, (len(b)-8)/2)
			for i := range v {
				v[i] = vecmath.HalfFloat(binary.LittleEndian.Uint16(b[8+2*i:]))
			}
			return v, nil
		case vecMagicKey:
			if crc32.Update(keyCRC(uid), castagnoli, b[8:]) != binary.BigEndian.Uint32(b[4:]) {
				return nil, fmt.Errorf("%w: index id %s: stored vector fails its checksum (its id or its values are damaged)", ErrCorrupt, ShowKey(uid))
			}
			b = b[8:]
		case vecMagic:
			if got, want := crc32.Checksum(b[8:], castagnoli), binary.BigEndian.Uint32(b[4:]); got != want {
				return nil, fmt.Errorf("%w: index id %s: stored vector fails its checksum (%08x, want %08x)", ErrCorrupt, ShowKey(uid), got, want)
			}
			b = b[8:]
		default:
			tagged = false
		}
	}
	if !tagged && len(b) >= 4 && nearTag(binary.LittleEndian.Uint32(b)) {
		// Not a vector written before checksums (its first value would be a NaN, or
		// nearly one): a layout tag with a flipped bit.
		return nil, fmt.Errorf("%w: index id %s: stored vector has a damaged layout tag (%08x)", ErrCorrupt, ShowKey(uid), binary.LittleEndian.Uint32(b))
	}
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%w: index id %s: vector of %d bytes", ErrCorrupt, ShowKey(uid), len(b))
	}
	v := vecOut(dst, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// DecodeRecord decodes a stored record. v may be bbolt's memory: nothing of it is kept.
// Results read their records at query time, so this is on the search path: a record as
// encoding/json writes it (keys t, x, m, c in that order, no spaces) is read by a direct
// scan that copies strings without escapes as they are (8 bytes a step); anything else, and
// the metadata and chunk values, go through segmentio's decoder, which reads JSON as
// encoding/json does. TestDecodeRecord* and FuzzDecodeRecord hold both to encoding/json.
func DecodeRecord(id string, v []byte) (*Record, error) {
	if len(v) > 0 && v[0] == recordMagicZ {
		// Its dictionary is in its store: DB reads it (decodeRecord).
		return (*DB)(nil).decodeZRecord(nil, id, v, false)
	}
	v, err := recordJSON(id, v)
	if err != nil {
		return nil, err
	}
	var r Record
	if fastDecodeRecord(v, &r, false) {
		return &r, nil
	}
	r = Record{}
	if err := segjson.Unmarshal(v, &r); err != nil {
		return nil, fmt.Errorf("%w: document %s: %v", ErrCorrupt, ShowKey(id), err)
	}
	return &r, nil
}

// DecodeMeta decodes what a metadata filter needs of a stored record: its metadata and
// chunks; Title and Text are skipped (left empty) when the record is in encoding/json's
// layout. Filters and Sources scan every record with it.
func DecodeMeta(id string, v []byte) (*Record, error) {
	if len(v) > 0 && v[0] == recordMagicZ {
		return (*DB)(nil).decodeZRecord(nil, id, v, true)
	}
	js, err := recordJSON(id, v)
	if err != nil {
		return nil, err
	}
	var r Record
	if fastDecodeRecord(js, &r, true) {
		return &r, nil
	}
	return DecodeRecord(id, v)
}

// fastDecodeRecord decodes v into r when it is a record in encoding/json's own layout; false
// (r partly filled) when it is not, or when it is not valid. With skipText, Title and Text
// are only skipped over (not checked).
func fastDecodeRecord(v []byte, r *Record, skipText bool) bool {
	if len(v) < 2 || v[0] != '{' || v[len(v)-1] != '}' {
		return false
	}
	i, prev := 1, byte(0)
	for i < len(v)-1 {
		// "k":
		if i+4 > len(v) || v[i] != '"' || v[i+2] != '"' || v[i+3] != ':' {
			return false
		}
		k := v[i+1]
		if keyRank(k) <= keyRank(prev) { // each key at most once, in the struct's order
			return false
		}
		i += 4
		var end int
		switch k {
		case 't', 'x':
			if skipText {
				n, ok := skipString(v, i)
				if !ok {
					return false
				}
				end = n
				break
			}
			s, n, ok := jsonString(v, i)
			if !ok {
				return false
			}
			if k == 't' {
				r.Title = s
			} else {
				r.Text = s
			}
			end = n
		case 'm', 'c':
			n, ok := jsonValueEnd(v, i)
			if !ok {
				return false
			}
			var err error
			if k == 'm' {
				if r.Metadata, ok = flatMeta(v[i:n]); !ok {
					err = segjson.Unmarshal(v[i:n], &r.Metadata)
				}
			} else {
				err = segjson.Unmarshal(v[i:n], &r.Chunks)
			}
			if err != nil {
				return false
			}
			end = n
		}
		prev, i = k, end
		if i < len(v)-1 {
			if v[i] != ',' || i+1 == len(v)-1 {
				return false
			}
			i++
		}
	}
	return i == len(v)-1 && prev != 0
}

// flatMeta decodes metadata of plain strings, numbers and booleans, in encoding/json's
// layout; false for anything else (nested values, escapes, null, spaces).
func flatMeta(v []byte) (map[string]any, bool) {
	if len(v) < 2 || v[0] != '{' || v[len(v)-1] != '}' {
		return nil, false
	}
	md := map[string]any{}
	i := 1
	for i < len(v)-1 {
		key, n, ok := plainString(v, i)
		if !ok || n >= len(v) || v[n] != ':' {
			return nil, false
		}
		i = n + 1
		if i >= len(v) {
			return nil, false
		}
		switch c := v[i]; {
		case c == '"':
			s, n, ok := plainString(v, i)
			if !ok {
				return nil, false
			}
			md[key], i = s, n
		case c == 't' && bytes.HasPrefix(v[i:], []byte("true")):
			md[key], i = true, i+4
		case c == 'f' && bytes.HasPrefix(v[i:], []byte("false")):
			md[key], i = false, i+5
		default:
			n := numberEnd(v, i)
			if n < 0 {
				return nil, false
			}
			f, err := strconv.ParseFloat(string(v[i:n]), 64)
			if err != nil {
				return nil, false
			}
			md[key], i = f, n
		}
		if i < len(v)-1 {
			if v[i] != ',' || i+1 == len(v)-1 {
				return nil, false
			}
			i++
		}
	}
	return md, i == len(v)-1
}

// numberEnd returns the index after the JSON number at v[i], -1 when there is none.
func numberEnd(v []byte, i int) int {
	digits := func(j int) int {
		for j < len(v) && v[j] >= '0' && v[j] <= '9' {
			j++
		}
		return j
	}
	j := i
	if j < len(v) && v[j] == '-' {
		j++
	}
	switch {
	case j < len(v) && v[j] == '0':
		j++
	case j < len(v) && v[j] >= '1' && v[j] <= '9':
		j = digits(j)
	default:
		return -1
	}
	if j < len(v) && v[j] == '.' {
		if k := digits(j + 1); k > j+1 {
			j = k
		} else {
			return -1
		}
	}
	if j < len(v) && (v[j] == 'e' || v[j] == 'E') {
		j++
		if j < len(v) && (v[j] == '+' || v[j] == '-') {
			j++
		}
		if k := digits(j); k > j {
			j = k
		} else {
			return -1
		}
	}
	if j >= len(v) || (v[j] != ',' && v[j] != '}') {
		return -1
	}
	return j
}

// keyRank is the place of a record key in encoding/json's output (0: none, or not a key).
func keyRank(k byte) int {
	switch k {
	case 't':
		return 1
	case 'x':
		return 2
	case 'm':
		return 3
	case 'c':
		return 4
	}
	return 0
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special reports whether one of the 8 bytes of w is '"', '\\' or below 0x20.
func special(w uint64) bool {
	zero := func(x uint64) uint64 { return (x - ones) & ^x & highs }
	return zero(w^('"'*ones))|zero(w^('\\'*ones))|((w-0x20*ones)&^w&highs) != 0
}

// plainString reads the JSON string at v[i] when it holds no escape (and is valid UTF-8)
// and returns it and the index after it.
func plainString(v []byte, i int) (string, int, bool) {
	j, ok := plainEnd(v, i)
	if !ok {
		return "", 0, false
	}
	return string(v[i+1 : j]), j + 1, true
}

// plainEnd returns the index of the closing quote of the JSON string at v[i]; false when it
// has an escape, a control byte or invalid UTF-8, or does not end.
func plainEnd(v []byte, i int) (int, bool) {
	if i >= len(v) || v[i] != '"' {
		return 0, false
	}
	j := i + 1
	for j+8 <= len(v) && !special(binary.LittleEndian.Uint64(v[j:])) {
		j += 8
	}
	for ; j < len(v); j++ {
		c := v[j]
		if c == '"' {
			return j, utf8.Valid(v[i+1 : j])
		}
		if c == '\\' || c < 0x20 {
			return 0, false
		}
	}
	return 0, false
}

// jsonString reads the JSON string at v[i] and returns it and the index after it. It
// decodes the escapes encoding/json writes (\\", \\\\, \\/, \\b, \\f, \\n, \\r, \\t, \\uXXXX) itself;
// a surrogate escape, invalid UTF-8 or a control byte goes to the general decoder, which
// replaces or rejects them as encoding/json does.
func jsonString(v []byte, i int) (string, int, bool) {
	if i >= len(v) || v[i] != '"' {
		return "", 0, false
	}
	var b strings.Builder
	j := i + 1
	start := j
	q := -1 // the next '"' at or after j
	for {
		if q < j {
			if q = bytes.IndexByte(v[j:], '"'); q < 0 {
				return "", 0, false
			}
			q += j
		}
		seg := v[j:q]
		bs := bytes.IndexByte(seg, '\\')
		if bs >= 0 {
			seg = seg[:bs]
		}
		if control(seg) {
			return slowString(v, i)
		}
		if bs < 0 { // the closing quote
			if b.Cap() == 0 {
				if !utf8.Valid(v[start:q]) {
					return slowString(v, i)
				}
				return string(v[start:q]), q + 1, true
			}
			b.Write(v[start:q])
			s := b.String()
			if !utf8.ValidString(s) {
				return slowString(v, i)
			}
			return s, q + 1, true
		}
		j += bs
		if b.Cap() == 0 {
			b.Grow(len(v) - i)
		}
		b.Write(v[start:j])
		if j+1 >= len(v) {
			return "", 0, false
		}
		switch e := v[j+1]; e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			if j+6 > len(v) {
				return "", 0, false
			}
			r, err := strconv.ParseUint(string(v[j+2:j+6]), 16, 32)
			if err != nil || r >= 0xD800 && r < 0xE000 {
				return slowString(v, i)
			}
			b.WriteRune(rune(r))
			j += 4
		default:
			return "", 0, false
		}
		j += 2
		start = j
	}
}

// control reports whether p holds a byte below 0x20 (8 bytes a step).
func control(p []byte) bool {
	j := 0
	for ; j+8 <= len(p); j += 8 {
		w := binary.LittleEndian.Uint64(p[j:])
		if (w-0x20*ones)&^w&highs != 0 {
			return true
		}
	}
	for ; j < len(p); j++ {
		if p[j] < 0x20 {
			return true
		}
	}
	return false
}

// skipString returns the index after the JSON string at v[i], without checking it.
func skipString(v []byte, i int) (int, bool) {
	if i >= len(v) || v[i] != '"' {
		return 0, false
	}
	j := i + 1
	for j < len(v) {
		for j+8 <= len(v) && !special(binary.LittleEndian.Uint64(v[j:])) {
			j += 8
		}
		if j >= len(v) {
			break
		}
		switch v[j] {
		case '"':
			return j + 1, true
		case '\\':
			j += 2
		default:
			j++
		}
	}
	return 0, false
}

// slowString reads the JSON string at v[i] with the general decoder.
func slowString(v []byte, i int) (string, int, bool) {
	n, ok := jsonValueEnd(v, i)
	if !ok {
		return "", 0, false
	}
	var s string
	if err := segjson.Unmarshal(v[i:n], &s); err != nil {
		return "", 0, false
	}
	return s, n, true
}

// jsonValueEnd returns the index after the JSON string, object or array at v[i] (another
// value: the index of the next ',', '}' or ']' at depth 0), without validating it.
func jsonValueEnd(v []byte, i int) (int, bool) {
	depth := 0
	for j := i; j < len(v); j++ {
		switch v[j] {
		case '"':
			for j++; j < len(v) && v[j] != '"'; j++ {
				if v[j] == '\\' {
					j++
				}
			}
			if j >= len(v) {
				return 0, false
			}
			if depth == 0 {
				return j + 1, true
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return j, j > i
			}
			depth--
			if depth == 0 {
				return j + 1, true
			}
		case ',':
			if depth == 0 {
				return j, j > i
			}
		}
	}
	return 0, false
}
