package bm25

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2/document"
	index "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
	zap "github.com/blevesearch/zapx/v16"

	"github.com/agentmem/memory/internal/atomicfile"
	"github.com/agentmem/memory/internal/postfile"
)

// The body field's postings are not in the zap segment: each segment of this package's
// documents has a file of its own beside it, "<segment>.zap" + bodyExt (package postfile:
// frame-of-reference blocks of 128 postings, about 1.8 bytes a posting with its dictionary
// where zap's roaring bitmaps and uvarint frequency/length chunks took about 4.9; each document's
// length once, not in every posting; the block-max metadata the evaluator reads written
// with the lists). The zap segment holds the _id, length and metadata fields as before.
// The plugin's New builds both from a batch, Merge merges zap's fields with zap and the
// body files with postfile.Merge (zap's document renumbering drives both), Open opens
// both; a segment's Dictionary(bodyField) reads the body file through Bleve's segment
// interfaces, so Bleve's own search still works, and the evaluator reads its blocks
// directly (bodyread.go).
//
// Order on disk: a segment's zap file is written first, then its body file (whole, synced,
// renamed into place), and scorch names the segment in a snapshot only after both: a zap
// file a snapshot names always has its body file, and a body file never exists without
// its zap file but once that is removed (merged away: scorch removes the zap file, the
// next merge or writable open the body file, see removeBodyLeftovers). A zap file left
// without a body file by a kill is named by no snapshot: scorch removes it.

// bodyExt ends the name of a segment's body postings file.
const bodyExt = ".post"

// bodySegment is a segment whose body postings are a postfile.
type bodySegment interface {
	segment.Segment
	bodyPostings() *postfile.Reader
}

// errNoBodyFile: a segment of this layout has no body postings file beside it.
var errNoBodyFile = errors.New("segment has no body postings file")

// memSegment is an in-memory segment built by New: zap's fields, and the body's file in
// memory until Persist writes it.
type memSegment struct {
	*zap.SegmentBase
	body *postfile.Reader
	data []byte
}

var (
	_ segment.UnpersistedSegment = (*memSegment)(nil)
	_ bodySegment                = (*memSegment)(nil)
)

func (s *memSegment) bodyPostings() *postfile.Reader { return s.body }

// Dictionary returns the body's dictionary from its postings file, others' from zap.
func (s *memSegment) Dictionary(field string) (segment.TermDictionary, error) {
	if field == bodyField {
		return s.body.Dictionary(), nil
	}
	return s.SegmentBase.Dictionary(field)
}

// Fields lists zap's fields and the body.
func (s *memSegment) Fields() []string { return withBody(s.SegmentBase.Fields()) }

// Size is the segment's memory: zap's and the body file's.
func (s *memSegment) Size() int { return s.SegmentBase.Size() + len(s.data) }

// Persist writes zap's file, then the body file (see above).
func (s *memSegment) Persist(path string) error {
	if err := s.SegmentBase.Persist(path); err != nil {
		return err
	}
	return atomicfile.WriteFile(path+bodyExt, s.data, atomicfile.Options{Perm: 0o600})
}

// diskSegment is a persisted segment: zap's file and the body file, both mapped.
type diskSegment struct {
	*zap.Segment
	body *postfile.Reader
	mem  []byte // the body file's mapping
	mu   sync.Mutex
	refs int
}

var (
	_ segment.PersistedSegment = (*diskSegment)(nil)
	_ bodySegment              = (*diskSegment)(nil)
)

func (s *diskSegment) bodyPostings() *postfile.Reader { return s.body }

// Dictionary returns the body's dictionary from its postings file, others' from zap.
func (s *diskSegment) Dictionary(field string) (segment.TermDictionary, error) {
	if field == bodyField {
		return s.body.Dictionary(), nil
	}
	return s.Segment.Dictionary(field)
}

// Fields lists zap's fields and the body.
func (s *diskSegment) Fields() []string { return withBody(s.Segment.Fields()) }

// Size is the segment's memory as zap counts it (the body file is mapped, as zap's is).
func (s *diskSegment) Size() int { return s.Segment.Size() + 64 }

// AddRef counts a reference, as zap does for its segment.
func (s *diskSegment) AddRef() {
	s.mu.Lock()
	s.refs++
	s.mu.Unlock()
	s.Segment.AddRef()
}

// DecRef drops a reference; the last unmaps both files.
func (s *diskSegment) DecRef() error {
	err := s.Segment.DecRef()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refs--
	if s.refs == 0 && s.mem != nil {
		if uerr := unmapFile(s.mem); uerr != nil && err == nil {
			err = uerr
		}
		s.mem, s.body = nil, nil
	}
	return err
}

// Close is DecRef, as for zap's segments.
func (s *diskSegment) Close() error { return s.DecRef() }

// withBody returns fields with bodyField added (once).
func withBody(fields []string) []string {
	if slices.Contains(fields, bodyField) {
		return fields
	}
	return append(slices.Clone(fields), bodyField)
}

// openSegment opens the zap segment at path and its body file: a diskSegment, or zap's
// segment alone when it holds the body itself (an index of the earlier layout). A zap
// segment without the body field and without a body file is damaged (ErrCorrupt).
func (p *segmentPlugin) openSegment(path string) (segment.Segment, error) {
	seg, err := p.zap.Open(path)
	if err != nil {
		return nil, err
	}
	zs, ok := seg.(*zap.Segment)
	if !ok {
		return seg, nil
	}
	mem, err := mapFile(path + bodyExt)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && slices.Contains(zs.Fields(), bodyField) {
			return zs, nil
		}
		_ = zs.Close()
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, path, errNoBodyFile)
		}
		return nil, fmt.Errorf("%w: %s%s: %v", ErrCorrupt, path, bodyExt, err)
	}
	body, err := postfile.Open(mem)
	if err == nil && uint64(body.NumDocs()) != zs.Count() {
		err = fmt.Errorf("%d documents, the segment has %d", body.NumDocs(), zs.Count())
	}
	if err != nil {
		_ = unmapFile(mem)
		_ = zs.Close()
		return nil, fmt.Errorf("%w: %s%s: %v", ErrCorrupt, path, bodyExt, err)
	}
	return &diskSegment{Segment: zs, body: body, mem: mem, refs: 1}, nil
}

// mergeSegments merges segments into path with zap, then their body files into
// path+bodyExt, numbering the documents as zap did. Segments of the earlier layout (the
// body in zap) merge with zap alone; a mix of both layouts is refused.
func (p *segmentPlugin) mergeSegments(segments []segment.Segment, drops []*roaring.Bitmap, path string,
	closeCh chan struct{}, s segment.StatsReporter) ([][]uint64, uint64, error) {
	zs := make([]segment.Segment, len(segments))
	bodies := make([]*postfile.Reader, 0, len(segments))
	for i, sg := range segments {
		switch x := sg.(type) {
		case *memSegment:
			zs[i] = x.SegmentBase
			bodies = append(bodies, x.body)
		case *diskSegment:
			zs[i] = x.Segment
			bodies = append(bodies, x.body)
		default:
			zs[i] = sg
		}
	}
	if len(bodies) != 0 && len(bodies) != len(segments) {
		return nil, 0, fmt.Errorf("%w: merging segments of two layouts", ErrBM25)
	}
	removeBodyLeftovers(filepath.Dir(path), false)
	newDocNums, n, err := p.zap.Merge(zs, drops, path, closeCh, s)
	if err != nil || len(bodies) == 0 {
		return newDocNums, n, err
	}
	// The body file goes in place before scorch names the zap file in a snapshot.
	err = atomicfile.Write(path+bodyExt, atomicfile.Options{Perm: 0o600}, func(w io.Writer) error {
		return postfile.Merge(w, bodies, newDocNums, closeCh)
	})
	if err != nil {
		_ = os.Remove(path)
		return nil, 0, err
	}
	return newDocNums, n, nil
}

// withoutBody returns the documents of results with their body field left out (shallow
// copies of those that have one), and each document's body field (nil: none). A document
// with two body fields is an error (this package never makes one).
func withoutBody(results []index.Document) (docs []index.Document, bodies []index.Field, err error) {
	docs = make([]index.Document, len(results))
	bodies = make([]index.Field, len(results))
	for i, r := range results {
		docs[i] = r
		d, ok := r.(*document.Document)
		if !ok {
			continue
		}
		j := slices.IndexFunc(d.Fields, isBody)
		if j < 0 {
			continue
		}
		cp := *d
		cp.Fields = slices.Delete(slices.Clone(d.Fields), j, j+1)
		if slices.ContainsFunc(cp.Fields, isBody) {
			return nil, nil, fmt.Errorf("%w: document %q has two body fields", ErrBM25, d.ID())
		}
		docs[i], bodies[i] = &cp, d.Fields[j]
	}
	return docs, bodies, nil
}

func isBody(f document.Field) bool { return f.Name() == bodyField }

// buildBody writes the body postings file of a batch: bodies[i] is document i's analysed
// body field (nil: none, length 0), this package's own (bodyDocField) or Bleve's.
func buildBody(bodies []index.Field) ([]byte, error) {
	b := segBuilders.Get().(*segBuilder)
	defer func() {
		b.fields = b.fields[:0]
		segBuilders.Put(b)
	}()
	n := len(bodies)
	posts := 0
	for _, fl := range bodies {
		if t, ok := fl.(*bodyDocField); ok {
			posts += len(t.terms)
		}
	}
	f := b.field(bodyField, n, posts)
	lengths := make([]uint32, n)
	for i, fl := range bodies {
		if fl == nil {
			continue
		}
		if l := fl.AnalyzedLength(); l > 0 {
			lengths[i] = uint32(min(l, math.MaxUint32))
		}
		if t, ok := fl.(*bodyDocField); ok {
			if !t.done {
				return nil, fmt.Errorf("%w: document %d's body is not analysed", ErrBM25, i)
			}
			for _, tc := range t.terms {
				f.addShared(tc.term, uint32(i), uint32(tc.n))
			}
			continue
		}
		for _, tf := range fl.AnalyzedTokenFrequencies() {
			if fr := tf.Frequency(); fr > 0 {
				f.add(tf.Term, uint32(i), uint32(min(fr, math.MaxUint32)))
			}
		}
	}
	b.group(f)
	// A bytes.Buffer over the builder's pooled bytes: the writer appends to it directly
	// (it buffers a destination that offers no buffer of its own).
	out := bytes.NewBuffer(b.out[:0])
	var o postfile.Options
	if m := zap.DefaultChunkMode; m > 0 && m <= 1024 {
		o.FixedSpan = uint16(m) // (tests: zap's chunks of m documents, see withChunkMode)
	}
	w := postfile.NewWriterOptions(out, lengths, o)
	for _, t := range b.order {
		lo, hi := b.counts[t], b.counts[t+1]
		if err := w.Add(f.termBytes(t), b.docs[lo:hi], b.freqs[lo:hi]); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	data := slices.Clone(out.Bytes())
	b.out = out.Bytes()[:0]
	return data, nil
}

// removeBodyLeftovers removes the body files in the segment directory dir whose zap file
// is gone, and, when temps is set (a writable open, before any segment is written), the
// temporary files of body files a killed process left.
func removeBodyLeftovers(dir string, temps bool) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	have := make(map[string]bool, len(ents))
	for _, e := range ents {
		have[e.Name()] = true
	}
	for _, e := range ents {
		name := e.Name()
		seg, isBody := strings.CutSuffix(name, bodyExt)
		orphan := isBody && strings.HasSuffix(seg, ".zap") && !have[seg]
		temp := temps && atomicfile.IsTemp(name) && strings.HasPrefix(name, ".") && strings.Contains(name, ".zap"+bodyExt+".tmp")
		if orphan || temp {
			if err := os.Remove(filepath.Join(dir, name)); err == nil {
				slog.Debug("bm25: removed a leftover body postings file", "file", name)
			}
		}
	}
}
