package memoryeino

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/agentmem/memory"
	"github.com/cloudwego/eino/components/indexer"
	"github.com/cloudwego/eino/schema"
)

// einoKeys are the metadata keys eino's schema.Document reserves for itself; the Indexer
// does not store them (a "_dense_vector" becomes the document's precomputed embedding).
var einoKeys = map[string]bool{
	"_sub_indexes": true, "_score": true, "_extra_info": true, "_dsl": true,
	"_dense_vector": true, "_sparse_vector": true,
}

// IndexerConfig configures an [Indexer].
type IndexerConfig struct {
	// Collection receives the documents when a call names no sub-index ("": the default
	// collection).
	Collection string
	// Upsert replaces documents whose id is already stored, rather than failing with
	// memory.ErrDuplicateID.
	Upsert bool
}

// Indexer is an eino indexer that stores documents in a memory store. It is safe for
// concurrent use, as the memory store is.
type Indexer struct {
	mem *memory.Memory
	cfg IndexerConfig
}

var _ indexer.Indexer = (*Indexer)(nil)

// NewIndexer returns an Indexer on m (cfg nil: the defaults). The caller keeps ownership of
// m (and closes it).
func NewIndexer(m *memory.Memory, cfg *IndexerConfig) (*Indexer, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: NewIndexer needs a store", ErrUnsupportedOption)
	}
	ix := &Indexer{mem: m}
	if cfg != nil {
		ix.cfg = *cfg
	}
	return ix, nil
}

// GetType names the component in eino's callbacks and graphs.
func (ix *Indexer) GetType() string { return "Memory" }

// Store stores docs in one transaction (on error none is stored) and returns their ids, in
// order: a document's ID, or a new random id when it has none. A string under TitleKey
// becomes the document's title; a dense vector set with schema.Document.WithDenseVector
// is stored as its precomputed embedding (its length must be the store's dimension); the
// other keys eino reserves ("_score", "_sub_indexes"...) are not stored.
// indexer.WithSubIndexes may name one collection.
func (ix *Indexer) Store(ctx context.Context, docs []*schema.Document, opts ...indexer.Option) ([]string, error) {
	co := indexer.GetCommonOptions(&indexer.Options{}, opts...)
	if co.Embedding != nil {
		return nil, fmt.Errorf("%w: WithEmbedding (the store embeds with the embedder it was opened with)", ErrUnsupportedOption)
	}
	col := ix.cfg.Collection
	switch len(co.SubIndexes) {
	case 0:
	case 1:
		col = co.SubIndexes[0]
	default:
		return nil, fmt.Errorf("%w: %d sub-indexes (one collection per call)", ErrUnsupportedOption, len(co.SubIndexes))
	}
	out := make([]memory.Document, len(docs))
	ids := make([]string, len(docs))
	for i, d := range docs {
		if d == nil {
			return nil, fmt.Errorf("%w: document %d is nil", memory.ErrEmptyText, i)
		}
		md := memory.Document{ID: d.ID, Text: d.Content}
		if md.ID == "" {
			md.ID = rand.Text()
		}
		for k, v := range d.MetaData {
			if einoKeys[k] || k == CollectionKey {
				continue
			}
			if k == TitleKey {
				if t, ok := v.(string); ok {
					md.Title = t
					continue
				}
			}
			if md.Metadata == nil {
				md.Metadata = make(map[string]any, len(d.MetaData))
			}
			md.Metadata[k] = v
		}
		if dv := d.DenseVector(); dv != nil {
			md.Embedding = toFloat32(dv)
		}
		out[i] = md
		ids[i] = md.ID
	}
	if len(out) == 0 {
		return ids, nil
	}
	c := ix.mem.Collection(col)
	var err error
	if ix.cfg.Upsert {
		err = c.Upsert(ctx, out...)
	} else {
		err = c.Add(ctx, out...)
	}
	if err != nil {
		return nil, err
	}
	return ids, nil
}

func toFloat32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func toFloat64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}
