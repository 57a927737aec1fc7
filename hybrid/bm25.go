// Package hybrid holds the keyword half of hybrid retrieval (a Bleve BM25 index) and the
// fusion of ranked lists (Reciprocal Rank Fusion and weighted score fusion) as pure functions.
package hybrid

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
)

// bodyField is the one analysed field: title and text together, as Lucene's "flat" BEIR runs do.
const bodyField = "body"

// seqKey is the Bleve internal key holding the store sequence number the index reflects.
var seqKey = []byte("memory.seq")

// ErrBM25 wraps failures of the keyword index.
var ErrBM25 = errors.New("hybrid: bm25 index error")

// BM25Params are the BM25 constants. Bleve keeps them in package variables, so they apply to
// every BM25 index in the process.
type BM25Params struct{ K1, B float64 }

var bm25Once sync.Mutex

// SetBM25Params sets k1 and b for every BM25 index of the process (values <= 0 keep the
// current ones). Call it before searching.
func SetBM25Params(p BM25Params) {
	bm25Once.Lock()
	defer bm25Once.Unlock()
	if p.K1 > 0 {
		search.BM25_k1 = p.K1
	}
	if p.B > 0 {
		search.BM25_b = p.B
	}
}

// BM25Doc is a document as the keyword index sees it.
type BM25Doc struct {
	ID, Title, Text string
}

// BM25Index is a Bleve index scored with BM25 over an English analyzer (Unicode tokenizer,
// possessive filter, lower case, English stop words, Porter stemming). It is safe for
// concurrent searches; Apply calls must come from one writer at a time.
type BM25Index struct {
	idx bleve.Index
	mu  sync.Mutex // guards seq
	seq uint64

	bleveScoring atomic.Bool // query through Bleve's own search instead of the TAAT path
	anaOnce      sync.Once
	analyzer     analysis.Analyzer
	stats        statsCache

	stopBG context.CancelFunc // stops the background length prefetch started by OpenBM25
	bg     sync.WaitGroup
}

// SetBleveScoring selects the query path of Search. false (the default) scores with
// textbook BM25 (Lucene's formula) through a term-at-a-time evaluator over the index's
// postings; true runs Bleve's own BM25 search (which scores sqrt(tf), derives avgdl from
// the term dictionary size and applies coord). Safe to call while searches run.
func (b *BM25Index) SetBleveScoring(on bool) { b.bleveScoring.Store(on) }

func newMapping() mapping.IndexMapping {
	im := bleve.NewIndexMapping()
	im.ScoringModel = index.BM25Scoring
	im.DefaultAnalyzer = en.AnalyzerName
	body := bleve.NewTextFieldMapping()
	body.Analyzer = en.AnalyzerName
	body.Store = false
	body.IncludeInAll = false
	body.IncludeTermVectors = false
	body.DocValues = false
	dm := bleve.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt(bodyField, body)
	im.DefaultMapping = dm
	im.StoreDynamic = false
	im.IndexDynamic = false
	im.DocValuesDynamic = false
	return im
}

// OpenBM25 opens the index at path, creating it when missing. path "" keeps it in memory.
func OpenBM25(path string) (*BM25Index, error) {
	var (
		idx bleve.Index
		err error
	)
	if path == "" {
		idx, err = bleve.NewUsing("", newMapping(), scorch.Name, scorch.Name, nil)
	} else {
		idx, err = bleve.Open(path)
		if errors.Is(err, bleve.ErrorIndexPathDoesNotExist) {
			idx, err = bleve.NewUsing(path, newMapping(), scorch.Name, scorch.Name, nil)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: open %q: %v", ErrBM25, path, err)
	}
	b := &BM25Index{idx: idx}
	v, err := idx.GetInternal(seqKey)
	if err != nil {
		idx.Close()
		return nil, fmt.Errorf("%w: read sequence: %v", ErrBM25, err)
	}
	if len(v) == 8 {
		b.seq = binary.BigEndian.Uint64(v)
	}
	// Compute the document lengths of an existing index in the background, so that the
	// first search after opening it does not pay for a pass over every posting.
	ctx, cancel := context.WithCancel(context.Background())
	b.stopBG = cancel
	if n, err := idx.DocCount(); err == nil && n > 0 {
		b.bg.Add(1)
		go func() {
			defer b.bg.Done()
			start := time.Now()
			if err := b.prefetchLengths(ctx, 100); err != nil {
				if ctx.Err() == nil {
					slog.Debug("hybrid: bm25 length prefetch", "err", err)
				}
				return
			}
			slog.Debug("hybrid: bm25 lengths ready", "docs", n, "took", time.Since(start))
		}()
	}
	return b, nil
}

// Seq is the store sequence number of the last applied change.
func (b *BM25Index) Seq() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seq
}

// Apply indexes puts, removes deletes and records seq, all in one Bleve batch.
func (b *BM25Index) Apply(puts []BM25Doc, deletes []string, seq uint64) error {
	batch := b.idx.NewBatch()
	for _, d := range puts {
		body := d.Title
		if d.Text != "" {
			if body != "" {
				body += "\n"
			}
			body += d.Text
		}
		if err := batch.Index(d.ID, map[string]any{bodyField: body}); err != nil {
			return fmt.Errorf("%w: index %q: %v", ErrBM25, d.ID, err)
		}
	}
	for _, id := range deletes {
		batch.Delete(id)
	}
	var sb [8]byte
	binary.BigEndian.PutUint64(sb[:], seq)
	batch.SetInternal(seqKey, sb[:])
	if err := b.idx.Batch(batch); err != nil {
		return fmt.Errorf("%w: batch: %v", ErrBM25, err)
	}
	b.mu.Lock()
	b.seq = seq
	b.mu.Unlock()
	if len(puts) > 0 && !b.bleveScoring.Load() {
		// Cache the new segment's document lengths now, on the writer, rather than on the
		// next query (best effort: a search computes whatever is still missing).
		if _, err := b.prefetchPass(context.Background()); err != nil {
			slog.Debug("hybrid: bm25 lengths", "err", err)
		}
	}
	return nil
}

// Hit is one entry of a ranked list: an id and its retriever's raw score.
// (Declared in fusion.go.)

// Search returns up to k documents matching any term of q, best BM25 score first.
// allow, when non-nil, restricts the candidates before ranking: only those ids can be
// returned (an empty non-nil allow returns nothing).
func (b *BM25Index) Search(ctx context.Context, q string, k int, allow []string) ([]Hit, error) {
	if k <= 0 || (allow != nil && len(allow) == 0) {
		return nil, nil
	}
	if !b.bleveScoring.Load() {
		hits, ok, err := b.searchTAAT(ctx, q, k, allow)
		if ok {
			return hits, err
		}
	}
	return b.searchBleve(ctx, q, k, allow)
}

// searchBleve is Search through Bleve's own query execution and scoring.
func (b *BM25Index) searchBleve(ctx context.Context, q string, k int, allow []string) ([]Hit, error) {
	mq := bleve.NewMatchQuery(q)
	mq.SetField(bodyField)
	mq.Analyzer = en.AnalyzerName
	mq.SetOperator(query.MatchQueryOperatorOr)
	var qq query.Query = mq
	if allow != nil {
		qq = bleve.NewConjunctionQuery(mq, bleve.NewDocIDQuery(allow))
	}
	req := bleve.NewSearchRequestOptions(qq, k, 0, false)
	res, err := b.idx.SearchInContext(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: search: %v", ErrBM25, err)
	}
	hits := make([]Hit, len(res.Hits))
	for i, h := range res.Hits {
		hits[i] = Hit{ID: h.ID, Score: h.Score}
	}
	return hits, nil
}

// Count is the number of indexed documents.
func (b *BM25Index) Count() (uint64, error) { return b.idx.DocCount() }

// Close persists and closes the index.
func (b *BM25Index) Close() error {
	b.stopBG()
	b.bg.Wait()
	return b.idx.Close()
}

// Stats reports Bleve's index statistics (segment counts and so on), for diagnostics.
func (b *BM25Index) Stats() map[string]any {
	st := b.idx.StatsMap()
	out := map[string]any{}
	if idx, ok := st["index"].(map[string]interface{}); ok {
		for _, k := range []string{"num_root_segments", "num_persisted_segments", "TotFileMergeSegments", "num_files_on_disk"} {
			out[k] = idx[k]
		}
	}
	return out
}
