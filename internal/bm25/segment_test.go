package bm25

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2/document"
	index "github.com/blevesearch/bleve_index_api"
	zap "github.com/blevesearch/zapx/v16"
)

// segmentDocs builds docs as scorch hands them to its segment plugin: the _id field added
// and every field analysed.
func segmentDocs(t testing.TB, src []Doc) []index.Document {
	t.Helper()
	ba, err := analyzerFor(DefaultAnalyzer)
	if err != nil {
		t.Fatal(err)
	}
	docs := make([]index.Document, len(src))
	for i, d := range src {
		doc, err := newBM25Document(d, ba.ana, ba.body, nil)
		if err != nil {
			t.Fatal(err)
		}
		doc.AddIDField()
		for _, f := range doc.Fields {
			f.Analyze()
		}
		docs[i] = doc
	}
	return docs
}

// segmentBytes is the segment file of a zap SegmentBase.
func segmentBytes(t testing.TB, seg any) []byte {
	t.Helper()
	sb, ok := seg.(*zap.SegmentBase)
	if !ok {
		t.Fatalf("segment is %T, not *zap.SegmentBase", seg)
	}
	var buf bytes.Buffer
	if _, err := sb.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// zapBytes is zap's own segment of docs, built until zap's map order of a field's
// sections is ours (it writes them in map iteration order).
func zapBytes(t testing.TB, docs []index.Document, want []byte) []byte {
	t.Helper()
	var got []byte
	for range 64 {
		seg, _, err := (&zap.ZapPlugin{}).New(docs)
		if err != nil {
			t.Fatal(err)
		}
		if got = segmentBytes(t, seg); bytes.Equal(got, want) {
			break
		}
	}
	return got
}

// randomBM25Docs is n documents of words drawn from a small vocabulary (so that terms
// repeat across documents and within one), with non-ASCII and invalid UTF-8 bodies, empty
// ones and metadata now and then.
func randomBM25Docs(r *rand.Rand, n, maxWords int) []Doc {
	vocab := []string{"the", "cell", "cells", "protein", "Folding", "DNA", "nucleus's", "a", "of", "is",
		"café", "naïve", "über", "东京", "x", "running", "ran", "runs", "3.14", "e-mail", "O'Neil",
		"\xff\xfe", "alpha", "beta", "gamma", "don't", "U.S.A.", "42", "_under", "ŁÓDŹ"}
	docs := make([]Doc, n)
	for i := range docs {
		var sb strings.Builder
		for range r.IntN(maxWords + 1) {
			sb.WriteString(vocab[r.IntN(len(vocab))])
			sb.WriteByte(" ,.;\n"[r.IntN(5)])
		}
		d := Doc{ID: fmt.Sprintf("doc-%d-%d", i, r.IntN(1000)), Text: sb.String()}
		if r.IntN(3) == 0 {
			d.Title = vocab[r.IntN(len(vocab))]
		}
		switch r.IntN(4) {
		case 0:
			d.Meta = map[string]any{"lang": []string{"en", "fr"}[r.IntN(2)], "n": r.IntN(5)}
		case 1:
			d.Meta = map[string]any{"ok": r.IntN(2) == 0}
		}
		docs[i] = d
	}
	return docs
}

// TestSegmentBuilderMatchesZap: the segment builder writes the bytes zap's New writes for
// the same documents, footer and checksum included, for batches of every size class (one
// document; postings in several chunks; roaring containers past 4,096 entries; terms in
// several 65,536-document containers).
func TestSegmentBuilderMatchesZap(t *testing.T) {
	if !fastSegments() {
		t.Fatal("the self-check failed: the builder does not match zap")
	}
	r := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name     string
		n, words int
	}{
		{"one", 1, 20},
		{"small", 50, 30},
		{"chunks", 3000, 40},
		{"bitmaps", 9000, 8},
		{"containers", 70000, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			docs, _, err := withoutBody(segmentDocs(t, randomBM25Docs(r, c.n, c.words)))
			if err != nil {
				t.Fatal(err)
			}
			seg, _, ok, err := buildSegment(docs)
			if err != nil || !ok {
				t.Fatalf("buildSegment: ok %v, err %v", ok, err)
			}
			mine := segmentBytes(t, seg)
			theirs := zapBytes(t, docs, mine)
			if !bytes.Equal(mine, theirs) {
				i := 0
				for i < min(len(mine), len(theirs)) && mine[i] == theirs[i] {
					i++
				}
				t.Fatalf("segment differs from zap's: %d vs %d bytes, first difference at %d", len(mine), len(theirs), i)
			}
		})
	}
}

// TestSegmentBuilderDeclines: documents of another shape are left to zap's New (ok false),
// and the plugin's New still builds their segment.
func TestSegmentBuilderDeclines(t *testing.T) {
	base := func() *document.Document {
		return segmentDocs(t, []Doc{{ID: "a", Text: "some text"}})[0].(*document.Document)
	}
	cases := []struct {
		name string
		doc  func() *document.Document
	}{
		{"stored field", func() *document.Document {
			d := base()
			f := document.NewTextFieldWithIndexingOptions("title", nil, []byte("x"), index.IndexField|index.StoreField)
			f.Analyze()
			d.AddField(f)
			return d
		}},
		{"term vectors", func() *document.Document {
			d := base()
			f := document.NewTextFieldWithIndexingOptions("other", nil, []byte("x y"), index.IndexField|index.IncludeTermVectors)
			f.Analyze()
			d.AddField(f)
			return d
		}},
		{"numeric field", func() *document.Document {
			d := base()
			f := document.NewNumericField("num", nil, 3)
			f.Analyze()
			d.AddField(f)
			return d
		}},
		{"field twice", func() *document.Document {
			d := base()
			d.AddField(d.Fields[1]) // (the length field: Fields[0] is the body)
			return d
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			docs := []index.Document{c.doc()}
			if _, _, ok, _ := buildSegment(docs); ok {
				t.Fatal("built a segment for a document it does not know")
			}
			seg, _, err := (&segmentPlugin{zap: &zap.ZapPlugin{}}).New(docs)
			if err != nil || seg.Count() != 1 {
				t.Fatalf("plugin New: %v", err)
			}
		})
	}
	t.Run("no id", func(t *testing.T) {
		ba, err := analyzerFor(DefaultAnalyzer)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := newBM25Document(Doc{ID: "a", Text: "x"}, ba.ana, ba.body, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range doc.Fields {
			f.Analyze()
		}
		docs, _, err := withoutBody([]index.Document{doc})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, ok, _ := buildSegment(docs); ok {
			t.Fatal("built a segment without an _id field")
		}
	})
}

// TestAppendRoaring: the hand-written serialization is roaring's own for sets of every
// container shape (empty high parts, arrays, full bitmaps).
func TestAppendRoaring(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 4096, 4097, 10000, 70000, 200000} {
		for _, spread := range []uint32{1, 3, 17, 1 << 12} {
			seen := map[uint32]bool{}
			var docs []uint32
			for len(docs) < n {
				d := r.Uint32N(uint32(n) * spread)
				if !seen[d] {
					seen[d] = true
					docs = append(docs, d)
				}
			}
			slices.Sort(docs)
			bm := roaring.New()
			for _, d := range docs {
				bm.Add(d)
			}
			want, err := bm.ToBytes()
			if err != nil {
				t.Fatal(err)
			}
			want = append(binary.AppendUvarint(nil, uint64(len(want))), want...)
			got, _ := appendRoaring(nil, docs, nil)
			if !bytes.Equal(got, want) {
				t.Fatalf("n %d spread %d: %d bytes, roaring writes %d", n, spread, len(got), len(want))
			}
		}
	}
}

// TestSegmentBuilderConcurrent: builds on several goroutines at once (as the parts of one
// Apply run) write what one build alone writes, the zap segment and the body file.
func TestSegmentBuilderConcurrent(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	plugin := &segmentPlugin{zap: &zap.ZapPlugin{}}
	build := func(docs []index.Document) ([]byte, error) {
		seg, _, err := plugin.New(docs)
		if err != nil {
			return nil, err
		}
		ms := seg.(*memSegment)
		var buf bytes.Buffer
		if _, err := ms.SegmentBase.WriteTo(&buf); err != nil {
			return nil, err
		}
		return append(buf.Bytes(), ms.data...), nil
	}
	batches := make([][]index.Document, 8)
	want := make([][]byte, len(batches))
	for i := range batches {
		batches[i] = segmentDocs(t, randomBM25Docs(r, 300, 30))
		var err error
		if want[i], err = build(batches[i]); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, len(batches))
	for i := range batches {
		go func() {
			for range 3 {
				got, err := build(batches[i])
				if err != nil {
					errs <- fmt.Errorf("batch %d: %v", i, err)
					return
				}
				if !bytes.Equal(got, want[i]) {
					errs <- fmt.Errorf("batch %d: a concurrent build differs", i)
					return
				}
			}
			errs <- nil
		}()
	}
	for range batches {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
