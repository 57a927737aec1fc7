package bm25

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"

	"github.com/blevesearch/bleve/v2/document"
	index "github.com/blevesearch/bleve_index_api"
)

// This file holds the metadata of indexed documents and the filters over it. Every
// document's metadata is indexed as terms of one keyword field (metaField), one term per
// key: the key (its length as a uvarint, then its bytes, so no key's terms are a prefix of
// another key's), a type byte and the value, encoded so that byte order is value order:
//
//	string  's' + the string's bytes
//	bool    'b' + "false" or "true"
//	number  'n' + 8 bytes: the float64's bits, big endian, sign bit flipped for values
//	        >= 0 and every bit flipped for negative ones (so -Inf < ... < -0 = 0 < ... < +Inf)
//
// Equality is one term's postings; a range is a walk of the term dictionary between two
// keys; $ne and $nin are every document less the operands' postings. A compiled filter is
// evaluated per segment into a roaring bitmap (see bm25_filter.go).
//
// Each document whose BM25Doc.Chunk is 0 (a whole document, or a document's first chunk)
// also gets leadTerm, so a filter can count documents as well as units.

// metaField is the keyword field holding every document's metadata terms.
const metaField = "memory_meta"

// leadTerm marks the units that stand for their document (BM25Doc.Chunk == 0). Its key is
// empty, which no metadata key may be.
var leadTerm = []byte{0, 'L'}

// Type bytes of metadata terms.
const (
	metaString = 's'
	metaBool   = 'b'
	metaNumber = 'n'
)

// ErrMetaFilter: an invalid metadata filter or metadata value.
var ErrMetaFilter = errors.New("hybrid: invalid metadata filter")

// metaValue normalises a metadata value or filter operand: strings and bools as they are,
// every number to float64 (-0 to 0). NaN and other types are not values.
func metaValue(v any) (any, bool) {
	switch x := v.(type) {
	case string, bool:
		return x, true
	case float64:
		if math.IsNaN(x) {
			return nil, false
		}
		return x + 0, true // -0 + 0 == +0
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return float64(rv.Uint()), true
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		if math.IsNaN(f) {
			return nil, false
		}
		return f + 0, true
	}
	return nil, false
}

// MetaList is a list metadata value's (or list operand's) elements: a []any, or the
// elements of any other slice but a []byte.
func MetaList(v any) ([]any, bool) {
	if l, ok := v.([]any); ok {
		return l, true
	}
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || rv.Kind() != reflect.Slice || rv.Type().Elem().Kind() == reflect.Uint8 {
		return nil, false
	}
	l := make([]any, rv.Len())
	for i := range l {
		l[i] = rv.Index(i).Interface()
	}
	return l, true
}

// metaKeyPrefix appends the key part of key's terms to dst.
func metaKeyPrefix(dst []byte, key string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	return append(dst, key...)
}

// sortableFloat is f's bits in an order-preserving unsigned form.
func sortableFloat(f float64) uint64 {
	u := math.Float64bits(f + 0)
	if u>>63 == 1 {
		return ^u
	}
	return u | 1<<63
}

// appendMetaTerm appends the term of key = v (v normalised by metaValue) to dst.
func appendMetaTerm(dst []byte, key string, v any) []byte {
	dst = metaKeyPrefix(dst, key)
	switch x := v.(type) {
	case string:
		dst = append(dst, metaString)
		dst = append(dst, x...)
	case bool:
		dst = append(dst, metaBool)
		dst = strconv.AppendBool(dst, x)
	case float64:
		dst = append(dst, metaNumber)
		dst = binary.BigEndian.AppendUint64(dst, sortableFloat(x))
	}
	return dst
}

// metaTerms returns the indexed terms of d's metadata (and leadTerm for a chunk 0), sorted.
func metaTerms(d Doc) ([][]byte, error) {
	if len(d.Meta) == 0 && d.Chunk != 0 {
		return nil, nil
	}
	terms := make([][]byte, 0, len(d.Meta)+1)
	if d.Chunk == 0 {
		terms = append(terms, leadTerm)
	}
	for k, v := range d.Meta {
		if k == "" {
			return nil, fmt.Errorf("%w: document %q has an empty metadata key", ErrMetaFilter, d.ID)
		}
		if list, isList := MetaList(v); isList { // one term an element: conditions match any
			for _, e := range list {
				nv, ok := metaValue(e)
				if !ok {
					return nil, fmt.Errorf("%w: document %q key %q: list element %v (%T) is not a string, number or bool", ErrMetaFilter, d.ID, k, e, e)
				}
				terms = append(terms, appendMetaTerm(nil, k, nv))
			}
			continue
		}
		nv, ok := metaValue(v)
		if !ok {
			return nil, fmt.Errorf("%w: document %q key %q: %v (%T) is not a string, number, bool or a list of them", ErrMetaFilter, d.ID, k, v, v)
		}
		terms = append(terms, appendMetaTerm(nil, k, nv))
	}
	slices.SortFunc(terms, bytes.Compare)
	return slices.CompactFunc(terms, bytes.Equal), nil
}

// metaDocField implements Bleve's document.Field for metaField: the given terms, each
// once, indexed only (no norms read, nothing stored).
type metaDocField struct {
	terms [][]byte
	tf    index.TokenFrequencies
}

var _ document.Field = (*metaDocField)(nil)

func (f *metaDocField) Name() string                        { return metaField }
func (f *metaDocField) ArrayPositions() []uint64            { return nil }
func (f *metaDocField) Options() index.FieldIndexingOptions { return index.IndexField }
func (f *metaDocField) Value() []byte                       { return nil }
func (f *metaDocField) NumPlainTextBytes() uint64           { return 0 }
func (f *metaDocField) EncodedFieldType() byte              { return 't' }
func (f *metaDocField) AnalyzedLength() int                 { return len(f.terms) }

func (f *metaDocField) Size() int {
	n := 64
	for _, t := range f.terms {
		n += len(t) + 48
	}
	return n
}

// AnalyzedTokenFrequencies returns the terms as Bleve's map, built on the first call (the
// segment builder of bm25_segment.go reads the terms without it).
func (f *metaDocField) AnalyzedTokenFrequencies() index.TokenFrequencies {
	if f.tf == nil {
		f.tf = make(index.TokenFrequencies, len(f.terms))
		for _, t := range f.terms {
			tf := &index.TokenFreq{Term: t}
			tf.SetFrequency(1)
			f.tf[string(t)] = tf
		}
	}
	return f.tf
}

// Analyze does nothing: the terms are given (the map is built when asked for).
func (f *metaDocField) Analyze() {}
