package memory

import (
	"errors"
	"reflect"
	"testing"
)

// TestStoredValuesChecked flips every bit of a stored record and of a stored vector, one at a
// time, and requires ErrCorrupt from decoding (never a different value), and that values
// written before the checksums still decode.
func TestStoredValuesChecked(t *testing.T) {
	r := &record{Title: "t", Text: "some text", Metadata: map[string]any{"k": "v", "n": 2.0}}
	enc, err := encodeRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeRecord("id", enc)
	if err != nil || !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for i := range enc {
		for bit := range 8 {
			bad := append([]byte(nil), enc...)
			bad[i] ^= 1 << bit
			if _, err := decodeRecord("id", bad); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("record byte %d bit %d flipped: %v, want ErrCorrupt", i, bit, err)
			}
			if _, err := decodeMeta("id", bad); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("record byte %d bit %d flipped, metadata read: %v, want ErrCorrupt", i, bit, err)
			}
		}
	}
	legacy, err := jsonMarshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := decodeRecord("id", legacy); err != nil || !reflect.DeepEqual(got, r) {
		t.Fatalf("a record written before checksums: %+v, %v", got, err)
	}

	v := []float32{0.5, -1, 3.25, 0}
	venc := encodeVec(v)
	if got, err := decodeVec(venc); err != nil || !reflect.DeepEqual(got, v) {
		t.Fatalf("vector round trip: %v, %v", got, err)
	}
	for i := range venc {
		for bit := range 8 {
			bad := append([]byte(nil), venc...)
			bad[i] ^= 1 << bit
			if got, err := decodeVec(bad); err == nil && reflect.DeepEqual(got, v) || err == nil && len(got) == len(v) {
				t.Fatalf("vector byte %d bit %d flipped: %v, %v; want ErrCorrupt", i, bit, got, err)
			}
		}
	}
	old := venc[8:] // the values alone, as written before checksums
	if got, err := decodeVec(old); err != nil || !reflect.DeepEqual(got, v) {
		t.Fatalf("a vector written before checksums: %v, %v", got, err)
	}
}
