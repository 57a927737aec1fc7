package bm25

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// This file compiles metadata filters into bitmaps over the index's segments (see
// bm25_meta.go for the terms they read) and offers them to the query path.

// MetaOp is the comparison of one metadata condition.
type MetaOp int

// Comparisons of [MetaCompare]. A condition matches a document that has the key with a
// value the comparison accepts; a document without the key matches none but MetaNe and
// MetaNin, which it matches (Chroma's semantics since 0.5.12). Orderings compare strings with strings (bytewise) and numbers with
// numbers; a value of the other type matches no ordering. Equality is by type and value
// (the number 1 is not the string "1"; 1 and 1.0 are one number).
const (
	MetaEq  MetaOp = iota // the value equals the operand
	MetaNe                // the key is absent, or present with another value
	MetaGt                // greater than the operand
	MetaGte               // greater than or equal
	MetaLt                // less than
	MetaLte               // less than or equal
	MetaIn                // the value is one of the operands
	MetaNin               // the key is absent, or present with none of the operands
)

var metaOpNames = [...]string{"eq", "ne", "gt", "gte", "lt", "lte", "in", "nin"}

// String names the operation.
func (op MetaOp) String() string {
	if op < 0 || int(op) >= len(metaOpNames) {
		return "MetaOp(" + strconv.Itoa(int(op)) + ")"
	}
	return metaOpNames[op]
}

// MetaFilter is a compiled metadata filter: conditions on keys combined with AND and OR.
// Build it with [MetaCompare], [MetaAnd] and [MetaOr]; it is immutable and safe for
// concurrent use. A nil *MetaFilter matches every document.
type MetaFilter struct {
	op    MetaOp // for leaves
	and   bool   // for combinations
	leaf  bool
	key   string
	terms [][]byte // leaves: encoded operands (one for orderings; sorted, distinct for $in)
	vals  []any    // leaves: normalised operands (orderings: one)
	subs  []*MetaFilter
	id    string // canonical form: the cache key
}

// MetaCompare builds the condition "key op operand". MetaIn and MetaNin take any number of
// operands (none: MetaIn matches nothing, MetaNin every document); the other
// operations take exactly one. Operands are strings, bools or numbers; orderings take a
// string or a number.
func MetaCompare(key string, op MetaOp, operands ...any) (*MetaFilter, error) {
	if key == "" {
		return nil, fmt.Errorf("%w: empty key", ErrMetaFilter)
	}
	if op < MetaEq || op > MetaNin {
		return nil, fmt.Errorf("%w: %q: unknown operation %v", ErrMetaFilter, key, op)
	}
	if op < MetaIn && len(operands) != 1 {
		return nil, fmt.Errorf("%w: %q %v takes one operand, got %d", ErrMetaFilter, key, op, len(operands))
	}
	f := &MetaFilter{op: op, leaf: true, key: key}
	for _, o := range operands {
		v, ok := metaValue(o)
		if !ok {
			return nil, fmt.Errorf("%w: %q %v: operand %v (%T) is not a string, number or bool", ErrMetaFilter, key, op, o, o)
		}
		if _, isBool := v.(bool); isBool && op >= MetaGt && op <= MetaLte {
			return nil, fmt.Errorf("%w: %q %v: cannot order booleans", ErrMetaFilter, key, op)
		}
		f.vals = append(f.vals, v)
		f.terms = append(f.terms, appendMetaTerm(nil, key, v))
	}
	slices.SortFunc(f.terms, bytes.Compare)
	f.terms = slices.CompactFunc(f.terms, bytes.Equal)
	var sb strings.Builder
	sb.WriteString(op.String())
	sb.WriteString(" ")
	sb.WriteString(strconv.Quote(key))
	for _, t := range f.terms {
		sb.WriteString(" ")
		sb.WriteString(strconv.Quote(string(t)))
	}
	f.id = sb.String()
	return f, nil
}

// MetaAnd matches the documents every one of fs matches (nil entries are skipped; none
// left: nil, every document).
func MetaAnd(fs ...*MetaFilter) *MetaFilter { return metaCombine(true, fs) }

// MetaOr matches the documents any one of fs matches (nil entries match every document,
// so they make the whole OR match every document: nil).
func MetaOr(fs ...*MetaFilter) *MetaFilter { return metaCombine(false, fs) }

func metaCombine(and bool, fs []*MetaFilter) *MetaFilter {
	var subs []*MetaFilter
	for _, f := range fs {
		if f == nil {
			if !and {
				return nil
			}
			continue
		}
		subs = append(subs, f)
	}
	switch len(subs) {
	case 0:
		return nil
	case 1:
		return subs[0]
	}
	var sb strings.Builder
	if and {
		sb.WriteString("and(")
	} else {
		sb.WriteString("or(")
	}
	for i, s := range subs {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(s.id)
	}
	sb.WriteString(")")
	return &MetaFilter{and: and, subs: subs, id: sb.String()}
}

// String is the filter's canonical form (two filters with one form select the same documents).
func (f *MetaFilter) String() string {
	if f == nil {
		return "all"
	}
	return f.id
}

// segFilter evaluates filters over one segment's metadata dictionary.
type segFilter struct {
	count uint64 // the segment's documents, deleted included
	dict  segment.TermDictionary
	pl    segment.PostingsList
	buf   []byte
}

// orInto is what zap's postings lists offer: their bitmap, added to receiver.
type orInto interface {
	OrInto(receiver *roaring.Bitmap)
}

// term adds the postings of t to bm.
func (s *segFilter) term(t []byte, bm *roaring.Bitmap) error {
	pl, err := s.dict.PostingsList(t, nil, s.pl)
	if err != nil {
		return err
	}
	s.pl = pl
	if pl.Count() == 0 {
		return nil
	}
	if o, ok := pl.(orInto); ok {
		o.OrInto(bm)
		return nil
	}
	it := pl.Iterator(false, false, false, nil)
	for {
		p, err := it.Next()
		if err != nil || p == nil {
			return err
		}
		bm.Add(uint32(p.Number()))
	}
}

// span adds the postings of every term in [from, to) to bm.
func (s *segFilter) span(from, to []byte, bm *roaring.Bitmap) error {
	it := s.dict.AutomatonIterator(nil, from, to)
	for {
		de, err := it.Next()
		if err != nil || de == nil {
			return err
		}
		s.buf = append(s.buf[:0], de.Term...)
		if err := s.term(s.buf, bm); err != nil {
			return err
		}
	}
}

// eval returns the segment-local numbers of the documents f matches (deleted ones
// included: the caller removes them).
func (s *segFilter) eval(f *MetaFilter) (*roaring.Bitmap, error) {
	if !f.leaf {
		var acc *roaring.Bitmap
		for _, sub := range f.subs {
			bm, err := s.eval(sub)
			if err != nil {
				return nil, err
			}
			switch {
			case acc == nil:
				acc = bm
			case f.and:
				acc.And(bm)
			default:
				acc.Or(bm)
			}
			if f.and && acc.IsEmpty() {
				break
			}
		}
		return acc, nil
	}
	prefix := metaKeyPrefix(nil, f.key)
	bm := roaring.New()
	switch f.op {
	case metaAll:
		bm.AddRange(0, s.count)
	case MetaEq, MetaIn:
		for _, t := range f.terms {
			if err := s.term(t, bm); err != nil {
				return nil, err
			}
		}
	case MetaNe, MetaNin: // every document but those holding an operand (without the key too)
		bm.AddRange(0, s.count)
		not := roaring.New()
		for _, t := range f.terms {
			if err := s.term(t, not); err != nil {
				return nil, err
			}
		}
		bm.AndNot(not)
	default: // orderings: within the operand's type
		t := f.terms[0]
		typ := t[len(prefix)]
		lo := append(slices.Clip(prefix), typ)   // the type's first term
		hi := append(slices.Clip(prefix), typ+1) // past its last
		var from, to []byte
		switch f.op {
		case MetaGt:
			from, to = append(slices.Clip(t), 0), hi
		case MetaGte:
			from, to = t, hi
		case MetaLt:
			from, to = lo, t
		case MetaLte:
			from, to = lo, append(slices.Clip(t), 0)
		}
		if err := s.span(from, to, bm); err != nil {
			return nil, err
		}
	}
	return bm, nil
}

// filterResult is a filter evaluated over one snapshot.
type filterResult struct {
	segs  []*roaring.Bitmap // per segment: live matching documents (nil: none)
	bits  []uint64          // global bitset over st.maxDoc; nil when nothing matches
	units uint64            // matching live units
	docs  uint64            // of which units with Chunk 0

	idsOnce sync.Once // FilterIDs' answer, resolved once per snapshot and filter
	ids     []string
	idsErr  error
}

// filterCache keeps the evaluations of the latest snapshot's most recent filters: an agent
// tends to send one filter with many queries, and one search asks for a filter's counts
// and its bits.
type filterCache struct {
	mu   sync.Mutex
	snap *scorch.IndexSnapshot // held so its address cannot be reused while cached
	m    map[string]*filterResult
}

// filterCacheSize bounds the cached evaluations (each holds a bitset of maxDoc bits).
const filterCacheSize = 8

func (c *filterCache) get(snap *scorch.IndexSnapshot, id string) *filterResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap != snap {
		return nil
	}
	return c.m[id]
}

func (c *filterCache) put(snap *scorch.IndexSnapshot, id string, r *filterResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap != snap || len(c.m) >= filterCacheSize {
		c.snap, c.m = snap, map[string]*filterResult{}
	}
	c.m[id] = r
}

// evalFilter evaluates f over snap (cached per snapshot).
func (b *Index) evalFilter(ctx context.Context, snap *scorch.IndexSnapshot, st *snapStats, f *MetaFilter) (*filterResult, error) {
	if r := b.filters.get(snap, f.id); r != nil {
		return r, nil
	}
	segs := snap.Segments()
	if len(segs) != len(st.offs) {
		return nil, fmt.Errorf("%w: snapshot has %d segments, statistics %d", ErrBM25, len(segs), len(st.offs))
	}
	r := &filterResult{segs: make([]*roaring.Bitmap, len(segs))}
	lead := roaring.New()
	var sf segFilter
	for i, ss := range segs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		dict, err := ss.Segment().Dictionary(metaField)
		if err != nil {
			return nil, fmt.Errorf("%w: metadata dictionary: %v", ErrBM25, err)
		}
		sf.dict, sf.pl, sf.count = dict, nil, ss.Segment().Count()
		bm, err := sf.eval(f)
		if err != nil {
			return nil, fmt.Errorf("%w: metadata filter %s: %v", ErrBM25, f.id, err)
		}
		if del := ss.Deleted(); del != nil && !bm.IsEmpty() {
			bm.AndNot(del)
		}
		if bm.IsEmpty() {
			continue
		}
		lead.Clear()
		if err := sf.term(leadTerm, lead); err != nil {
			return nil, fmt.Errorf("%w: metadata filter: %v", ErrBM25, err)
		}
		bm.RunOptimize()
		r.segs[i] = bm
		r.units += bm.GetCardinality()
		r.docs += bm.AndCardinality(lead)
	}
	if r.units > 0 {
		r.bits = make([]uint64, (st.maxDoc+63)/64)
		buf := make([]uint32, 256)
		for i, bm := range r.segs {
			if bm == nil {
				continue
			}
			off := st.offs[i]
			it := bm.ManyIterator()
			for n := it.NextMany(buf); n > 0; n = it.NextMany(buf) {
				for _, d := range buf[:n] {
					if g := off + uint64(d); g < uint64(st.maxDoc) {
						r.bits[g/64] |= 1 << (g % 64)
					}
				}
			}
		}
	}
	b.filters.put(snap, f.id, r)
	return r, nil
}

// filtered runs fn with f's evaluation over the current snapshot.
func (b *Index) filtered(ctx context.Context, f *MetaFilter, fn func(snap *scorch.IndexSnapshot, r *filterResult) error) error {
	err := b.withSnapshot(func(snap *scorch.IndexSnapshot) error {
		st, err := b.snapStats(snap)
		if err != nil {
			return fmt.Errorf("%w: bm25 statistics: %v", ErrBM25, err)
		}
		r, err := b.evalFilter(ctx, snap, st, f)
		if err != nil {
			return err
		}
		return fn(snap, r)
	})
	if errors.Is(err, errNotScorch) {
		return fmt.Errorf("%w: metadata filters need a scorch index", ErrBM25)
	}
	return err
}

// FilterCount returns how many indexed units f matches and how many of them stand for a
// document (BM25Doc.Chunk 0): with chunked documents, the number of matching documents.
// A nil f counts every unit.
func (b *Index) FilterCount(ctx context.Context, f *MetaFilter) (units, docs int, err error) {
	defer recoverCorrupt(&err, "filter")
	if f == nil {
		f = matchAll
	}
	err = b.filtered(ctx, f, func(_ *scorch.IndexSnapshot, r *filterResult) error {
		units, docs = int(r.units), int(r.docs)
		return nil
	})
	return units, docs, err
}

// FilterIDs returns the ids of the indexed units f matches, sorted. A nil f is refused
// (every unit: use the store's own list). The list is kept with the filter's cached
// evaluation: the caller must not modify it.
func (b *Index) FilterIDs(ctx context.Context, f *MetaFilter) (ids []string, err error) {
	defer recoverCorrupt(&err, "filter")
	if f == nil {
		return nil, fmt.Errorf("%w: FilterIDs needs a filter", ErrMetaFilter)
	}
	err = b.filtered(ctx, f, func(snap *scorch.IndexSnapshot, r *filterResult) error {
		r.idsOnce.Do(func() {
			defer recoverCorrupt(&r.idsErr, "filter ids")
			r.ids, r.idsErr = resolveIDs(snap, r)
		})
		ids, err = r.ids, r.idsErr
		return err
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// resolveIDs reads the external ids of r's documents, sorted.
func resolveIDs(snap *scorch.IndexSnapshot, r *filterResult) ([]string, error) {
	ids := make([]string, 0, r.units)
	segs := snap.Segments()
	for i, bm := range r.segs {
		if bm == nil {
			continue
		}
		it := bm.Iterator()
		for it.HasNext() {
			id, err := segs[i].DocID(uint64(it.Next()))
			if err != nil {
				return nil, fmt.Errorf("%w: document id: %v", ErrBM25, err)
			}
			ids = append(ids, string(id))
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// matchAll is the filter every unit matches (FilterCount's nil filter).
var matchAll = &MetaFilter{leaf: true, op: metaAll, id: "all"}

// metaAll is the operation of matchAll.
const metaAll MetaOp = -1

// SearchFiltered is Search restricted to the documents f matches (nil f: every document).
func (b *Index) SearchFiltered(ctx context.Context, q string, k int, f *MetaFilter) ([]Hit, error) {
	return b.search(ctx, q, k, restriction{filter: f})
}
