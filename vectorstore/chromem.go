package vectorstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"

	chromem "github.com/philippgille/chromem-go"

	"github.com/agentmem/memory/internal/vecmath"
)

func init() {
	RegisterIndex("chromem", func(cfg IndexConfig) (Index, error) { return newChromemIndex(cfg) })
}

// errChromemNoEmbedder is what chromem-go gets instead of an embedding model: this package
// always hands it vectors, and a nil function would make chromem-go call a remote API.
var errChromemNoEmbedder = errors.New("vectorstore: chromem index embeds nothing itself; pass vectors")

func chromemNoEmbed(context.Context, string) ([]float32, error) { return nil, errChromemNoEmbedder }

// chromemIndex is an exact cosine Index on an in-memory github.com/philippgille/chromem-go
// collection, the default backend. It holds no state of its own on disk: the memory store
// rebuilds it from its store of record (chromem-go's own persistence writes files in place,
// without fsync or rename, so it is not used).
//
// chromem-go cannot hold a zero vector (it would normalise it to NaN); such ids are kept
// beside the collection and score 0, like the flat index. A search with a Filter asks
// chromem-go for a growing number of candidates until the best k accepted ids are known,
// which is exact.
type chromemIndex struct {
	mu   sync.RWMutex
	dim  int
	db   *chromem.DB
	coll *chromem.Collection
	ids  map[string]bool // every id held; true for zero vectors (not in the collection)
}

var _ Index = (*chromemIndex)(nil)

// newChromemIndex builds an empty chromem-go index. chromem-go ranks by cosine only, so
// cfg.Metric must be "" or Cosine.
func newChromemIndex(cfg IndexConfig) (*chromemIndex, error) {
	if cfg.Dim <= 0 {
		return nil, fmt.Errorf("%w: dim %d", ErrBadConfig, cfg.Dim)
	}
	if cfg.Metric != "" && cfg.Metric != Cosine {
		return nil, fmt.Errorf("%w: chromem supports the cosine metric only, not %q", ErrBadConfig, cfg.Metric)
	}
	x := &chromemIndex{dim: cfg.Dim}
	if err := x.reset(); err != nil {
		return nil, err
	}
	return x, nil
}

func (x *chromemIndex) reset() error {
	db := chromem.NewDB()
	coll, err := db.CreateCollection("vectors", nil, chromemNoEmbed)
	if err != nil {
		return fmt.Errorf("vectorstore: chromem: create collection: %w", err)
	}
	x.db, x.coll, x.ids = db, coll, map[string]bool{}
	return nil
}

// Add inserts or replaces the vectors of ids. A bad batch changes nothing.
func (x *chromemIndex) Add(ctx context.Context, ids []string, vecs [][]float32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkBatch(ids, vecs, x.dim); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	// Normalise into our own copies: chromem-go keeps the slice it is given when it is
	// already normalised, and the caller may reuse theirs.
	last := make(map[string]int, len(ids))
	for i, id := range ids {
		last[id] = i
	}
	docs := make([]chromem.Document, 0, len(last))
	zero := map[string]bool{}
	for i, id := range ids {
		if last[id] != i {
			continue
		}
		v := make([]float32, x.dim)
		vecmath.NormalizeInto(v, vecs[i])
		if isZeroVector(v) {
			zero[id] = true
			continue
		}
		docs = append(docs, chromem.Document{ID: id, Embedding: v})
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for id := range zero {
		if !x.ids[id] && x.has(id) {
			if err := x.coll.Delete(ctx, nil, nil, id); err != nil {
				return fmt.Errorf("vectorstore: chromem: replace %q: %w", id, err)
			}
		}
		x.ids[id] = true
	}
	for _, d := range docs {
		// AddDocument replaces an existing id in the collection's map.
		if err := x.coll.AddDocument(ctx, d); err != nil {
			return fmt.Errorf("vectorstore: chromem: add %q: %w", d.ID, err)
		}
		x.ids[d.ID] = false
	}
	return nil
}

// has reports whether id is held (in the collection or as a zero vector).
func (x *chromemIndex) has(id string) bool {
	_, ok := x.ids[id]
	return ok
}

func isZeroVector(v []float32) bool {
	for _, f := range v {
		if f != 0 {
			return false
		}
	}
	return true
}

// Delete removes ids; unknown ids are ignored.
func (x *chromemIndex) Delete(ctx context.Context, ids ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	var inColl []string
	for _, id := range ids {
		zero, ok := x.ids[id]
		if !ok {
			continue
		}
		if !zero {
			inColl = append(inColl, id)
		}
		delete(x.ids, id)
	}
	if len(inColl) == 0 {
		return nil
	}
	if err := x.coll.Delete(ctx, nil, nil, inColl...); err != nil {
		return fmt.Errorf("vectorstore: chromem: delete: %w", err)
	}
	return nil
}

// Len is the number of vectors held.
func (x *chromemIndex) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.ids)
}

// Close drops the collection; the index is empty (and still usable) afterwards.
func (x *chromemIndex) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.reset()
}

// Search returns the k ids most similar to q (cosine) among those f accepts, best first.
// Ties are ordered by id.
func (x *chromemIndex) Search(ctx context.Context, q []float32, k int, f Filter) ([]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkVector(q, x.dim, "query"); err != nil {
		return nil, err
	}
	if k <= 0 {
		return nil, nil
	}
	nq := make([]float32, len(q))
	vecmath.NormalizeInto(nq, q)
	x.mu.RLock()
	defer x.mu.RUnlock()

	// The accepted ids, split into the collection's and the zero vectors.
	count := x.coll.Count()
	accepted := count // in the collection
	var zeros []string
	if f == nil {
		for id, z := range x.ids {
			if z {
				zeros = append(zeros, id)
			}
		}
	} else {
		accepted = 0
		for id, z := range x.ids {
			switch {
			case !f(id):
			case z:
				zeros = append(zeros, id)
			default:
				accepted++
			}
		}
	}
	want := min(k, accepted)

	var hits []Hit
	if want > 0 && isZeroVector(nq) {
		// chromem-go would normalise a zero query to NaN; every vector scores 0.
		for id, z := range x.ids {
			if !z && (f == nil || f(id)) {
				hits = append(hits, Hit{ID: id})
			}
		}
	} else if want > 0 {
		var err error
		hits, err = x.query(ctx, nq, want, count, accepted, f)
		if err != nil {
			return nil, err
		}
	}
	for _, id := range zeros {
		hits = append(hits, Hit{ID: id})
	}
	sortHits(hits)
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits, nil
}

// query asks chromem-go for its best m candidates, growing m until the best want accepted
// ids are known for sure: want of them are among the candidates and the last candidate
// scores strictly below the want-th (so nothing outside can beat or tie it), or m is the
// whole collection. Ties are therefore ordered by id, like the flat index.
func (x *chromemIndex) query(ctx context.Context, q []float32, want, count, accepted int, f Filter) ([]Hit, error) {
	m := want
	if f != nil && accepted < count {
		// Expect want accepted ids in the first want*count/accepted, with some slack.
		m = int(math.Ceil(float64(want) * float64(count) / float64(accepted) * 1.25))
	}
	m = min(count, m+1) // one more to see the score below the cut
	for {
		res, err := x.coll.QueryEmbedding(ctx, q, m, nil, nil)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("vectorstore: chromem: query: %w", err)
		}
		hits := make([]Hit, 0, want+1)
		for _, r := range res {
			if f == nil || f(r.ID) {
				hits = append(hits, Hit{ID: r.ID, Score: float64(r.Similarity)})
			}
		}
		sortHits(hits)
		if m >= count || (len(hits) >= want && len(res) > 0 && float64(res[len(res)-1].Similarity) < hits[want-1].Score) {
			return hits[:min(want, len(hits))], nil
		}
		m = min(count, 2*m)
	}
}

// sortHits orders hits by score descending, then id ascending.
func sortHits(hits []Hit) {
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].ID < hits[j].ID
	})
}
