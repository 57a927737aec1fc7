package bm25

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/index/scorch"
	index "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
	"github.com/blevesearch/vellum"
	zap "github.com/blevesearch/zapx/v16"

	"github.com/agentmem/memory/internal/postfile"
)

// Bleve's scorch turns every batch into an in-memory segment through its segment plugin's
// New (zap v16): an interim structure of maps filled from each field's term map, then the
// segment's bytes. That was 44 % of the CPU of a BM25-only bulk load. The documents this
// package indexes have a known, simple shape (the _id field, stored; the body, the length
// and the metadata fields, indexed only: no term vectors, no doc values, no other stored
// field), for which segmentPlugin.New writes the same bytes directly: one pass over each
// field's terms into a flat list of postings, grouped by term with a counting sort. Any
// other document (another field type or option, a composite field, a field twice in a
// document) goes to zap's New, and so does every batch when the self-check (fastSegments)
// finds that the bytes differ from zap's, as a later zap version could make them. Open and
// Merge are zap's own: the files on disk are zap v16 segments, whichever wrote them.

// segmentPlugin is zap v16 with New writing the segments of this package's documents itself.
type segmentPlugin struct{ zap *zap.ZapPlugin }

var _ scorch.SegmentPlugin = (*segmentPlugin)(nil)

func init() {
	// Replaces zap v16 (same type and version) as scorch's default plugin for the process:
	// documents of any other shape still get zap's own New.
	scorch.RegisterSegmentPlugin(&segmentPlugin{zap: &zap.ZapPlugin{}}, true)
}

func (p *segmentPlugin) Type() string    { return p.zap.Type() }
func (p *segmentPlugin) Version() uint32 { return p.zap.Version() }

// Open opens the segment file at path and its body postings file (bodyseg.go).
func (p *segmentPlugin) Open(path string) (segment.Segment, error) { return p.openSegment(path) }

// Merge merges segments with zap and their body files with postfile (bodyseg.go).
func (p *segmentPlugin) Merge(segments []segment.Segment, drops []*roaring.Bitmap, path string,
	closeCh chan struct{}, s segment.StatsReporter) ([][]uint64, uint64, error) {
	return p.mergeSegments(segments, drops, path, closeCh, s)
}

// New builds the in-memory segment of results: the body's postings file (buildBody), and
// the zap segment of the other fields, by buildSegment when every document has the shape
// it knows and the self-check passed, else by zap's New.
func (p *segmentPlugin) New(results []index.Document) (segment.Segment, uint64, error) {
	docs, bodies, err := withoutBody(results)
	if err != nil {
		return nil, 0, err
	}
	var (
		seg  segment.Segment
		size uint64
		ok   bool
	)
	if fastSegments() {
		seg, size, ok, err = buildSegment(docs)
	}
	if !ok {
		seg, size, err = p.zap.New(docs)
	}
	if err != nil {
		return nil, 0, err
	}
	sb, isBase := seg.(*zap.SegmentBase)
	if !isBase {
		return nil, 0, fmt.Errorf("%w: zap built a %T", ErrBM25, seg)
	}
	data, err := buildBody(bodies)
	if err != nil {
		return nil, 0, err
	}
	body, err := postfile.Open(data)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: body postings: %v", ErrBM25, err)
	}
	return &memSegment{SegmentBase: sb, body: body, data: data}, size + uint64(len(data)), nil
}

var (
	fastOnce sync.Once
	fastOK   atomic.Bool
)

// fastSegments reports whether buildSegment may be used: once per process it builds a
// sample batch both ways and compares the bytes.
func fastSegments() bool {
	if zap.DefaultChunkMode != 1026 {
		return false // (tests change the chunk mode: zap's New writes those)
	}
	fastOnce.Do(func() {
		ok, err := segmentSelfCheck()
		if !ok {
			slog.Warn("hybrid: the BM25 segment builder does not match zap's; using zap's", "err", err)
		}
		fastOK.Store(ok)
	})
	return fastOK.Load()
}

// segmentSelfCheck builds a sample batch with buildSegment and with zap's New and reports
// whether the segment files are the same. Zap writes the sections of each field in the
// order of a map's iteration, so its build is retried until that order is ours.
func segmentSelfCheck() (bool, error) {
	docs, err := sampleSegmentDocs()
	if err != nil {
		return false, err
	}
	if docs, _, err = withoutBody(docs); err != nil {
		return false, err
	}
	var mine bytes.Buffer
	sb, _, ok, err := buildSegment(docs)
	if !ok || err != nil {
		return false, err
	}
	if _, err := sb.(*zap.SegmentBase).WriteTo(&mine); err != nil {
		return false, err
	}
	for range 32 {
		seg, _, err := (&zap.ZapPlugin{}).New(docs)
		if err != nil {
			return false, err
		}
		var theirs bytes.Buffer
		if _, err := seg.(*zap.SegmentBase).WriteTo(&theirs); err != nil {
			return false, err
		}
		if bytes.Equal(mine.Bytes(), theirs.Bytes()) {
			return true, nil
		}
		if mine.Len() != theirs.Len() {
			break
		}
	}
	return false, nil
}

// sampleSegmentDocs is a small batch of this package's documents, analysed as scorch
// analyses them: bodies ASCII and not, metadata or none.
func sampleSegmentDocs() ([]index.Document, error) {
	ba, err := analyzerFor(DefaultAnalyzer)
	if err != nil {
		return nil, err
	}
	src := []Doc{
		{ID: "a", Title: "Cells", Text: "The cell's nucleus holds DNA; cells divide.", Meta: map[string]any{"lang": "en", "n": 3}},
		{ID: "b", Text: "Über naïve café — protein folding, folding again and again."},
		{ID: "c", Title: "x", Text: "", Meta: map[string]any{"ok": true}},
		{ID: "d", Text: strings.Repeat("alpha beta gamma delta ", 400)},
	}
	docs := make([]index.Document, len(src))
	for i, d := range src {
		doc, err := newBM25Document(d, ba.ana, ba.body, nil)
		if err != nil {
			return nil, err
		}
		doc.AddIDField()
		for _, f := range doc.Fields {
			f.Analyze()
		}
		docs[i] = doc
	}
	return docs, nil
}

// segPosting is one posting while a segment is built: term id (per field), document
// number and term frequency.
type segPosting struct{ term, doc, freq uint32 }

// segField is one field of a segment being built.
type segField struct {
	name  string
	dict  map[string]uint32 // term → id
	terms []string          // by id
	posts []segPosting      // in document order
	norms []uint32          // by document: the field's analysed length (zap's norm)
	last  int               // the last document that had the field (-1: none)
	seen  []termSlot        // body terms by the address of their bytes (addShared)
}

// termSlot remembers the term id of the bytes at p (n bytes long). The body's terms are
// never modified once analysed, and most are slices of a few shared arrays (one per word
// of the analysis tables): within one build the same address and length mean the same
// term, found with one probe instead of hashing the term.
type termSlot struct {
	p  *byte
	n  int32
	id uint32
}

// termSlotBits sizes a field's termSlot table (1<<termSlotBits slots, 16 bytes each).
const termSlotBits = 15

// segBuilder holds the buffers of one segment build (pooled).
type segBuilder struct {
	fields  []*segField
	ids     [][]byte
	out     []byte
	counts  []uint32
	docs    []uint32
	freqs   []uint32
	chunk   []byte
	ends    []uint64
	order   []uint32
	groups  []roaringGroup
	fst     bytes.Buffer
	builder *vellum.Builder // large or small: the one this build uses
	large   *vellum.Builder // vellum's default registry (10,000 x 2 cells)
	small   *vellum.Builder // a registry of smallRegistryCells, for small segments
}

// smallSegmentDocs is the most documents of a segment whose term dictionaries are built
// with the small registry: a builder clears its whole registry at every dictionary, which
// for vellum's default (20,000 cells) cost a one-document Add more than the rest of its
// segment (a tenth of a single-writer run's CPU); a small segment's few thousand terms
// lose nothing to a smaller one (the registry only finds shared suffixes to reuse).
const (
	smallSegmentDocs   = 1000
	smallRegistryCells = 1024
)

var segBuilders = sync.Pool{New: func() any { return &segBuilder{} }}

// field returns the builder's field named name, adding it (reusing the buffers of a
// field of an earlier build).
func (b *segBuilder) field(name string, numDocs, bodyPosts int) *segField {
	for _, f := range b.fields {
		if f.name == name {
			return f
		}
	}
	var f *segField
	if len(b.fields) < cap(b.fields) && b.fields[:len(b.fields)+1][len(b.fields)] != nil {
		f = b.fields[:len(b.fields)+1][len(b.fields)]
		clear(f.dict)
		clear(f.seen) // addresses of the last build's terms, which may since be reused
		f.name, f.terms, f.posts, f.last = name, f.terms[:0], f.posts[:0], -1
	} else {
		f = &segField{name: name, dict: map[string]uint32{}, last: -1}
	}
	f.norms = slices.Grow(f.norms[:0], numDocs)[:numDocs]
	// Room for the postings: the body's counted ahead, one a document for the others.
	if name == bodyField {
		f.posts = slices.Grow(f.posts, bodyPosts)
	} else {
		f.posts = slices.Grow(f.posts, numDocs)
	}
	clear(f.norms)
	b.fields = append(b.fields, f)
	return f
}

// addShared is add for a term whose bytes are never modified while the segment is built.
func (f *segField) addShared(term []byte, doc, freq uint32) {
	if len(term) == 0 || len(term) > math.MaxInt32 {
		f.add(term, doc, freq)
		return
	}
	if f.seen == nil {
		f.seen = make([]termSlot, 1<<termSlotBits)
	}
	p := unsafe.SliceData(term)
	s := &f.seen[(uint64(uintptr(unsafe.Pointer(p)))*0x9E3779B97F4A7C15)>>(64-termSlotBits)]
	if s.p != p || s.n != int32(len(term)) {
		*s = termSlot{p: p, n: int32(len(term)), id: f.id(term)}
	}
	f.posts = append(f.posts, segPosting{term: s.id, doc: doc, freq: freq})
}

// termBytes is the bytes of term t of f, not copied: for writers that only read them (the
// dictionary builders keep copies of what they need), since a string never changes.
func (f *segField) termBytes(t uint32) []byte {
	return unsafe.Slice(unsafe.StringData(f.terms[t]), len(f.terms[t]))
}

// add adds term (freq occurrences in document doc) to field f.
func (f *segField) add(term []byte, doc, freq uint32) {
	f.posts = append(f.posts, segPosting{term: f.id(term), doc: doc, freq: freq})
}

// id returns the id of term in f, numbering it when new.
func (f *segField) id(term []byte) uint32 {
	id, ok := f.dict[string(term)]
	if !ok {
		id = uint32(len(f.terms))
		s := string(term)
		f.dict[s] = id
		f.terms = append(f.terms, s)
	}
	return id
}

// buildSegment writes the zap v16 segment of results, the bytes zap's New writes, when
// every document has a shape it knows (ok false otherwise: nothing was built).
func buildSegment(results []index.Document) (_ segment.Segment, _ uint64, ok bool, err error) {
	if len(results) == 0 || len(results) > math.MaxInt32 || zap.DefaultChunkMode != 1026 {
		return nil, 0, false, nil
	}
	b := segBuilders.Get().(*segBuilder)
	defer func() {
		b.fields, b.ids = b.fields[:0], b.ids[:0]
		segBuilders.Put(b)
	}()
	n := len(results)
	for i, r := range results {
		d, isDoc := r.(*document.Document)
		if !isDoc || len(d.CompositeFields) > 0 {
			return nil, 0, false, nil
		}
		var id []byte
		for _, fl := range d.Fields {
			o := fl.Options()
			name := fl.Name()
			if !o.IsIndexed() || o.IncludeTermVectors() || o.IncludeDocValues() || o.IsStored() != (name == "_id") {
				return nil, 0, false, nil
			}
			if err := zap.ValidateDocFields(fl); err != nil {
				return nil, 0, true, err
			}
			f := b.field(name, n, 0)
			if f.last == i {
				return nil, 0, false, nil // twice in one document: zap merges them
			}
			f.last = i
			f.norms[i] = uint32(fl.AnalyzedLength())
			switch t := fl.(type) {
			case *bodyDocField:
				return nil, 0, false, nil // (New takes the body out: it has a file of its own)
			case *document.TextField:
				if name != "_id" {
					return nil, 0, false, nil
				}
				id = t.Value()
			case *lengthField:
				f.add(t.term[:], uint32(i), 1)
				continue
			case *metaDocField:
				for j, term := range t.terms {
					if j > 0 && bytes.Equal(term, t.terms[j-1]) {
						return nil, 0, false, nil // a repeated term: zap counts it once
					}
					f.add(term, uint32(i), 1)
				}
				continue
			default:
				return nil, 0, false, nil
			}
			for _, tf := range fl.AnalyzedTokenFrequencies() {
				if len(tf.Locations) > 0 {
					return nil, 0, false, nil
				}
				f.add(tf.Term, uint32(i), uint32(tf.Frequency()))
			}
		}
		if id == nil {
			return nil, 0, false, nil
		}
		b.ids = append(b.ids, id)
	}
	// _id first, then the others by name (zap's field numbering).
	slices.SortFunc(b.fields, func(x, y *segField) int {
		if x.name == "_id" || y.name == "_id" {
			return boolCmp(y.name == "_id", x.name == "_id")
		}
		return strings.Compare(x.name, y.name)
	})
	if b.fields[0].name != "_id" {
		return nil, 0, false, nil
	}
	sb, size, err := b.write(n)
	if err != nil {
		b.builder, b.large, b.small, b.fst = nil, nil, nil, bytes.Buffer{} // in an unknown state: start afresh next time
	}
	return sb, size, true, err
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// segSections are the section types zap v16 lists for each field, in the order written:
// the inverted index (ours) and the synonyms (none).
var segSections = []uint16{zap.SectionInvertedTextIndex, zap.SectionSynonymIndex}

// write writes the segment of the collected fields (n documents).
func (b *segBuilder) write(n int) (segment.Segment, uint64, error) {
	out := b.out[:0]
	// Stored fields: each document's _id (nothing else is stored), its other stored
	// fields an empty snappy block.
	offsets := make([]uint64, n)
	for i, id := range b.ids {
		offsets[i] = uint64(len(out))
		var meta [binary.MaxVarintLen64]byte
		m := binary.PutUvarint(meta[:], uint64(len(id)))
		out = binary.AppendUvarint(out, uint64(m))
		out = binary.AppendUvarint(out, uint64(len(id)+1))
		out = append(out, meta[:m]...)
		out = append(out, id...)
		out = append(out, 0) // snappy.Encode of nothing
	}
	storedIndex := uint64(len(out))
	for _, o := range offsets {
		out = binary.BigEndian.AppendUint64(out, o)
	}

	// The inverted index, field by field.
	// Both builders are left reset onto b.fst after each dictionary: either may be taken.
	var err error
	if n <= smallSegmentDocs {
		if b.small == nil {
			if b.small, err = vellum.New(&b.fst, &vellum.BuilderOpts{Encoder: 1, RegistryTableSize: smallRegistryCells, RegistryMRUSize: 2}); err != nil {
				return nil, 0, err
			}
		}
		b.builder = b.small
	} else {
		if b.large == nil {
			if b.large, err = vellum.New(&b.fst, nil); err != nil {
				return nil, 0, err
			}
		}
		b.builder = b.large
	}
	addrs := make([]uint64, len(b.fields))
	for fi, f := range b.fields {
		var err error
		if out, err = b.writeField(out, f, n); err != nil {
			return nil, 0, err
		}
		dictAddr := uint64(len(out))
		out = binary.AppendUvarint(out, uint64(b.fst.Len()))
		out = append(out, b.fst.Bytes()...)
		b.fst.Reset()
		if err := b.builder.Reset(&b.fst); err != nil {
			return nil, 0, err
		}
		addrs[fi] = uint64(len(out))
		out = binary.AppendUvarint(out, math.MaxUint64) // no doc values
		out = binary.AppendUvarint(out, math.MaxUint64)
		out = binary.AppendUvarint(out, dictAddr)
	}

	// The fields section and its index.
	fieldOffsets := make([]uint64, len(b.fields))
	for fi, f := range b.fields {
		fieldOffsets[fi] = uint64(len(out))
		out = binary.AppendUvarint(out, uint64(len(f.name)))
		out = append(out, f.name...)
		out = binary.AppendUvarint(out, uint64(len(segSections)))
		for _, s := range segSections {
			out = binary.BigEndian.AppendUint16(out, s)
			var addr uint64
			if s == zap.SectionInvertedTextIndex {
				addr = addrs[fi]
			}
			out = binary.BigEndian.AppendUint64(out, addr)
		}
	}
	sectionsIndex := uint64(len(out))
	out = binary.AppendUvarint(out, uint64(len(b.fields)))
	for _, o := range fieldOffsets {
		out = binary.BigEndian.AppendUint64(out, o)
	}

	// The segment keeps its bytes: copy them out of the pooled buffer.
	mem := slices.Clone(out)
	b.out = out[:0]
	sb, err := zap.InitSegmentBase(mem, crc32.ChecksumIEEE(mem), zap.DefaultChunkMode, uint64(n), storedIndex, sectionsIndex)
	if err != nil {
		return nil, 0, err
	}
	return sb, uint64(len(mem)), nil
}

// writeField appends the postings of f's terms, in term order, to out and adds each term
// to the FST builder, which it closes.
func (b *segBuilder) writeField(out []byte, f *segField, n int) ([]byte, error) {
	b.group(f)
	maxDoc := uint64(n - 1)
	for _, t := range b.order {
		lo, hi := b.counts[t], b.counts[t+1]
		docs, freqs := b.docs[lo:hi], b.freqs[lo:hi]
		// Frequencies and norms in chunks (zap's chunk mode 1026: about 1,024 postings a chunk).
		chunkSize := uint64(n) / (uint64(len(docs))/1024 + 1)
		chunks := int(maxDoc/chunkSize + 1)
		b.ends = slices.Grow(b.ends[:0], chunks)[:chunks]
		clear(b.ends)
		data := b.chunk[:0]
		for k, d := range docs {
			before := len(data)
			data = binary.AppendUvarint(data, uint64(freqs[k])<<1)
			if freqs[k] > 0 {
				data = binary.AppendUvarint(data, uint64(f.norms[d]))
			}
			b.ends[uint64(d)/chunkSize] += uint64(len(data) - before)
		}
		b.chunk = data
		tfAddr := uint64(len(out))
		out = binary.AppendUvarint(out, uint64(chunks))
		var end uint64
		for _, l := range b.ends {
			end += l
			out = binary.AppendUvarint(out, end)
		}
		out = append(out, data...)
		postAddr := uint64(len(out))
		out = binary.AppendUvarint(out, tfAddr)
		out = binary.AppendUvarint(out, 0) // no locations
		out, b.groups = appendRoaring(out, docs, b.groups[:0])
		if err := b.builder.Insert(f.termBytes(t), postAddr); err != nil {
			return nil, err
		}
	}
	return out, b.builder.Close()
}

// group groups f's postings by term: b.order lists the term ids in term order, and term
// t's postings, in document order, are b.docs and b.freqs[b.counts[t]:b.counts[t+1]].
func (b *segBuilder) group(f *segField) {
	nt := len(f.terms)
	// Group the postings by term, each term's in document order (a stable counting sort).
	b.counts = slices.Grow(b.counts[:0], nt+1)[:nt+1]
	clear(b.counts)
	for _, p := range f.posts {
		b.counts[p.term+1]++
	}
	for t := 1; t <= nt; t++ {
		b.counts[t] += b.counts[t-1]
	}
	b.docs = slices.Grow(b.docs[:0], len(f.posts))[:len(f.posts)]
	b.freqs = slices.Grow(b.freqs[:0], len(f.posts))[:len(f.posts)]
	next := slices.Clone(b.counts[:nt])
	for _, p := range f.posts {
		j := next[p.term]
		next[p.term]++
		b.docs[j], b.freqs[j] = p.doc, p.freq
	}
	b.order = slices.Grow(b.order[:0], nt)[:nt]
	for t := range b.order {
		b.order[t] = uint32(t)
	}
	slices.SortFunc(b.order, func(x, y uint32) int { return strings.Compare(f.terms[x], f.terms[y]) })
}

// appendRoaring appends the length (a uvarint) and the portable serialization of the
// sorted, distinct values docs, as roaring's ToBytes writes them for a bitmap they were
// added to one by one: a container for each 65,536 values, an array of the low 16 bits
// up to 4,096 values, a bitmap of 1,024 words past that (roaring's own serialization when
// a container is full).
// groups is scratch space, returned for reuse.
func appendRoaring(out []byte, docs []uint32, groups []roaringGroup) ([]byte, []roaringGroup) {
	const cookie = 12346 // roaring's serialCookieNoRunContainer
	size := 8
	for i := 0; i < len(docs); {
		j := i + 1
		for j < len(docs) && docs[j]>>16 == docs[i]>>16 {
			j++
		}
		if j-i == 1<<16 {
			// Full: roaring makes it a run container. Rare (never in a segment of fewer
			// than 65,536 documents): roaring writes it.
			bm := roaring.New()
			bm.AddMany(docs)
			bs, err := bm.ToBytes()
			if err != nil {
				panic(err) // writing to memory does not fail
			}
			out = binary.AppendUvarint(out, uint64(len(bs)))
			return append(out, bs...), groups
		}
		groups = append(groups, roaringGroup{i, j})
		size += 8 + containerBytes(j-i)
		i = j
	}
	out = binary.AppendUvarint(out, uint64(size))
	out = binary.LittleEndian.AppendUint32(out, cookie)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(groups)))
	for _, g := range groups {
		out = binary.LittleEndian.AppendUint16(out, uint16(docs[g.lo]>>16))
		out = binary.LittleEndian.AppendUint16(out, uint16(g.hi-g.lo-1))
	}
	offset := 8 + 8*len(groups)
	for _, g := range groups {
		out = binary.LittleEndian.AppendUint32(out, uint32(offset))
		offset += containerBytes(g.hi - g.lo)
	}
	for _, g := range groups {
		if g.hi-g.lo <= 4096 {
			for _, d := range docs[g.lo:g.hi] {
				out = binary.LittleEndian.AppendUint16(out, uint16(d))
			}
			continue
		}
		var words [1024]uint64
		for _, d := range docs[g.lo:g.hi] {
			words[uint16(d)>>6] |= 1 << (d & 63)
		}
		for _, w := range words {
			out = binary.LittleEndian.AppendUint64(out, w)
		}
	}
	return out, groups
}

// roaringGroup is the values docs[lo:hi] of one roaring container.
type roaringGroup struct{ lo, hi int }

// containerBytes is the serialized size of a roaring container of n values.
func containerBytes(n int) int {
	if n > 4096 {
		return 8192
	}
	return 2 * n
}
