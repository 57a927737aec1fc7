package memory

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/internal/weaviate"
)

// Export and import on a store on a Weaviate cluster (issue #41, "moving between them"):
// the same JSON Lines as the embedded store's (export.go), so that an export of either
// imports into the other with the same ids, text, metadata and vectors.
//
// What differs: a collection of a cluster is exported without an analyzer in its header
// (its BM25 runs in Weaviate, on no analyzer of this package: an embedded store importing
// it uses its own default), and an import into a cluster takes no collection analyzer
// other than the default one nor collection metadata (ErrNotSupported naming them). An
// export of a cluster is not one snapshot: each batch of documents is read as it is then.

// export is Memory.Export on a cluster.
func (cs *clusterStore) export(ctx context.Context, m *Memory, w io.Writer, collections []string) (ExportStats, error) {
	var st ExportStats
	names := slices.Clone(collections)
	if len(names) == 0 {
		var err error
		if names, err = cs.collections(ctx, m); err != nil {
			return st, err
		}
	}
	for i, n := range names {
		if n == "" {
			names[i] = DefaultCollection
		}
		if _, err := cs.existing(ctx, names[i]); err != nil {
			return st, err
		}
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var emb *ExportEmbedder
	if e := m.man.Embedder; e != nil {
		emb = &ExportEmbedder{ID: e.ID, Dim: e.Dim, Precomputed: e.Precomputed}
	}
	now := time.Now().UTC()
	for _, name := range names {
		if err := cs.exportCollection(ctx, m, bw, name, emb, now, &st); err != nil {
			return st, err
		}
	}
	return st, bw.Flush()
}

// exportCollection writes one collection of a cluster: header, documents in id order (the
// embedded store's order), end line.
func (cs *clusterStore) exportCollection(ctx context.Context, m *Memory, bw *bufio.Writer, name string, emb *ExportEmbedder, now time.Time, st *ExportStats) error {
	if err := writeJSONLine(bw, exportLine{Header: &ExportHeader{Format: exportFormat, Collection: name, Embedder: emb, Created: now}}); err != nil {
		return err
	}
	ids, err := cs.ids(ctx, m, name)
	if err != nil {
		return err
	}
	cc, err := cs.class(ctx, name)
	if err != nil {
		return err
	}
	dw := newExportDocWriter()
	n := 0
	for len(ids) > 0 && cc != nil {
		part := ids[:min(len(ids), clusterBatch)]
		ids = ids[len(part):]
		recs, vecs, err := cs.headsWithVectors(ctx, cc, part)
		if err != nil {
			return err
		}
		for _, id := range part {
			r := recs[id]
			if r == nil { // deleted since the listing
				continue
			}
			var vec []float32
			if len(r.Chunks) == 0 && emb != nil {
				vec = vecs[id]
			}
			if err := dw.write(bw, name, id, r, vec, st); err != nil {
				return err
			}
			n++
		}
	}
	st.Collections++
	st.Documents += n
	return writeJSONLine(bw, exportLine{End: &ExportEnd{Collection: name, Documents: n}})
}

// headsWithVectors reads the records of documents ids (at most clusterBatch) and the
// vectors of their first objects (a document stored whole: its vector).
func (cs *clusterStore) headsWithVectors(ctx context.Context, cc *clusterClass, ids []string) (map[string]*store.Record, map[string][]float32, error) {
	f := weaviate.AllOf(weaviate.Where(weaviate.PropID, weaviate.ContainsAny, ids), headFilter)
	hits, err := cs.wc.Fetch(ctx, weaviate.Query{Class: cc.name, Consistency: cs.level, Limit: 2 * len(ids), Where: f, Fields: []string{propRec}, WithVector: true})
	if err != nil {
		return nil, nil, cs.classErr(err)
	}
	recs := make(map[string]*store.Record, len(hits))
	vecs := make(map[string][]float32, len(hits))
	for _, h := range hits {
		r, err := decodeRec(h.ID, h.Props[propRec])
		if err != nil {
			return nil, nil, err
		}
		recs[h.ID] = r
		if len(h.Vector) > 0 {
			vecs[h.ID] = h.Vector
		}
	}
	return recs, vecs, nil
}

// changedDocs is Memory.changedDocs on a cluster: the documents of docs that collection
// col does not hold identically.
func (cs *clusterStore) changedDocs(ctx context.Context, col string, docs []Document) ([]Document, error) {
	cc, err := cs.class(ctx, col)
	if err != nil {
		return nil, err
	}
	if cc == nil {
		return docs, nil
	}
	var out []Document
	for lo := 0; lo < len(docs); lo += clusterBatch {
		part := docs[lo:min(len(docs), lo+clusterBatch)]
		ids := make([]string, len(part))
		for i, d := range part {
			ids[i] = d.ID
		}
		recs, vecs, err := cs.headsWithVectors(ctx, cc, ids)
		if err != nil {
			return nil, err
		}
		for _, d := range part {
			r := recs[d.ID]
			same := r != nil && r.Title == d.Title && r.Text == d.Text && sameMeta(r.Metadata, d.Metadata, d.Source)
			if same && d.Embedding != nil {
				var v []float32
				if len(r.Chunks) == 0 {
					v = vecs[d.ID]
				}
				same = slices32Equal(v, d.Embedding)
			}
			if !same {
				out = append(out, d)
			}
		}
	}
	return out, nil
}

// checkImportCollection refuses, before anything of it is written, a collection of an
// export that a cluster cannot hold as it was: an analyzer other than the default one, or
// collection metadata.
func (cs *clusterStore) checkImportCollection(m *Memory, h *ExportHeader) error {
	if h.Analyzer != "" && h.Analyzer != m.man.storeAnalyzer() {
		return unsupported(fmt.Sprintf("collection %s of the export has the BM25 analyzer %q (BM25 runs in Weaviate with its word tokenizer; an analyzer other than the default %q cannot be honoured: drop \"analyzer\" from its header line to import it anyway)",
			store.ShowKey(h.Collection), h.Analyzer, m.man.storeAnalyzer()))
	}
	if len(h.Metadata) > 0 {
		return unsupported(fmt.Sprintf("collection %s of the export has collection metadata (WithCollectionMetadata)", store.ShowKey(h.Collection)))
	}
	return nil
}
