package bm25

import (
	"encoding/binary"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/document"
	index "github.com/blevesearch/bleve_index_api"
)

// lenField is the field that records each document's analysed body length at index time:
// one term per document, the length as 4 big-endian bytes. Bleve keeps it through merges
// and excludes deleted documents from its postings like any other field, so a segment's
// total live body length is Σ over its few distinct length terms of length × live count:
// a walk of a small dictionary, never of the body postings. (Each body posting carries its
// document's length too — zap v16 stores the field length as the posting's norm — which is
// what scoring reads per document.)
const lenField = "memory_dl"

// bodyAnalyzer returns the analyzer of the body field (BM25Options.Analyzer; nil when it
// cannot be built).
func (b *Index) bodyAnalyzer() analysis.Analyzer {
	b.anaOnce.Do(func() {
		// English: Bleve's "en" analyzer with a stem cache and a one-pass body analysis
		// (bm25_stem.go, bm25_analyze.go); others: Bleve's, ASCII segmented directly.
		if ba, err := analyzerFor(b.opts.Analyzer); err == nil {
			b.analyzer, b.bodyAna = ba.ana, ba.body
		} else {
			b.analyzer = b.idx.Mapping().AnalyzerNamed(b.opts.Analyzer)
		}
	})
	return b.analyzer
}

// bodyText is the analysed text of a document, title and text in one field, as a new
// byte slice (the field's own: analysis may rewrite it).
func bodyText(d Doc) []byte {
	b := make([]byte, 0, len(d.Title)+1+len(d.Text))
	b = append(b, d.Title...)
	if d.Text != "" {
		if d.Title != "" {
			b = append(b, '\n')
		}
		b = append(b, d.Text...)
	}
	return b
}

// newBM25Document builds the Bleve document of d: the body field (prepared, when analysed
// ahead by Prepare), as the index mapping would build it, the length field that reads the body's analysed length and the metadata
// field.
func newBM25Document(d Doc, ana analysis.Analyzer, fast *bodyAnalysis, prepared *bodyDocField) (*document.Document, error) {
	doc := document.NewDocument(d.ID)
	var body lengther
	if prepared != nil {
		doc.AddField(prepared)
		body = prepared
	} else if fast != nil {
		f := &bodyDocField{value: bodyText(d), ana: fast}
		doc.AddField(f)
		body = f
	} else {
		f := document.NewTextFieldCustom(bodyField, nil, bodyText(d), index.IndexField, ana)
		doc.AddField(f)
		body = f
	}
	doc.AddField(&lengthField{body: body})
	terms, err := metaTerms(d)
	if err != nil {
		return nil, err
	}
	if len(terms) > 0 {
		doc.AddField(&metaDocField{terms: terms})
	}
	return doc, nil
}

// lengther is the body field as lengthField reads it.
type lengther interface{ AnalyzedLength() int }

// lengthField implements Bleve's document.Field for lenField. Bleve analyses a document's
// fields in order on one goroutine, so by the time Analyze runs the body has been analysed.
type lengthField struct {
	body lengther
	term [4]byte
	tf   index.TokenFrequencies
}

var _ document.Field = (*lengthField)(nil)

func (f *lengthField) Name() string                        { return lenField }
func (f *lengthField) ArrayPositions() []uint64            { return nil }
func (f *lengthField) Options() index.FieldIndexingOptions { return index.IndexField }
func (f *lengthField) Value() []byte                       { return f.term[:] }
func (f *lengthField) NumPlainTextBytes() uint64           { return 0 }
func (f *lengthField) Size() int                           { return 64 }
func (f *lengthField) EncodedFieldType() byte              { return 't' }
func (f *lengthField) AnalyzedLength() int                 { return 1 }

// AnalyzedTokenFrequencies returns the length term as Bleve's map, built on the first call
// (the segment builder of bm25_segment.go reads the term without it).
func (f *lengthField) AnalyzedTokenFrequencies() index.TokenFrequencies {
	if f.tf == nil {
		tf := &index.TokenFreq{Term: f.term[:]}
		tf.SetFrequency(1)
		f.tf = index.TokenFrequencies{string(f.term[:]): tf}
	}
	return f.tf
}

func (f *lengthField) Analyze() {
	binary.BigEndian.PutUint32(f.term[:], uint32(min(uint64(f.body.AnalyzedLength()), 1<<32-1)))
	f.tf = nil
}
