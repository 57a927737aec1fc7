package memory

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agentmem/memory/internal/vecmath"
)

// Searching by a vector the caller has: a query embedded elsewhere (on a GPU, by the model
// that made the store's imported vectors) is searched as it is, without the store's
// embedder, as Chroma's query_embeddings, chromem-go's QueryEmbedding and Weaviate's
// nearVector are. The vector is checked against the store's recorded embedder (its
// dimension and, when the caller names the model, its id) before anything is searched.

// WithQueryVector searches with v as the query's embedding instead of embedding the
// query's text: dense recall runs without the store's embedder (a store whose model is not
// loaded, or whose vectors were imported, answers it). v must have the store's dimension,
// finite values and a norm above 0, else the search fails with ErrQueryVector; the search
// does not change v. In a hybrid search BM25 still searches the query's text; with an empty
// text the search runs as a dense search and each result's Explain.Notes says so. A BM25
// search (WithMode(BM25), or dense weight 0) given a vector fails with ErrQueryVector, as
// does Search given WithQueryVectors. A store without vectors (no embedder recorded) fails
// with ErrNoEmbedder, and one whose dense index is not open (its embedder not loaded and
// its vectors not imported) with ErrEmbedderNeeded. nil: no vector (the text is embedded).
// A read-only store that reads through its writer refuses it (ErrInvalidOption).
func WithQueryVector(v []float32) SearchOption {
	return func(s *SearchOptions) { s.QueryVector = v }
}

// WithQueryVectors gives SearchBatch one query vector per query: vs[i] is the embedding
// of queries[i] (nil: that query's text is embedded), checked as WithQueryVector's; a
// query may then be empty text. len(vs) must be len(queries), and WithQueryVector may not
// be given with it (ErrQueryVector, ErrInvalidOption). The vectors of a dense or hybrid
// batch without filters are searched in the vector index together.
func WithQueryVectors(vs [][]float32) SearchOption {
	return func(s *SearchOptions) { s.QueryVectors = vs }
}

// WithQueryVectorEmbedder states the embedder that made the query vectors (its id, as
// StoredEmbedder reports the store's; the "model2vec:" kind and the "@sha256:..." digest a
// loaded model adds may be left out): a search of a store whose vectors another embedder
// made fails with ErrQueryVector and ErrEmbedderMismatch, naming both. "" (the default)
// states none: then only the dimension is checked. It is not used without a query vector.
func WithQueryVectorEmbedder(id string) SearchOption {
	return func(s *SearchOptions) { s.QueryEmbedder = id }
}

// checkQueryVector checks the caller's query vector v against the store m's vectors:
// not empty, of the recorded dimension, finite, of norm above 0, and made by the recorded
// embedder when the caller names one (stated).
func (m *Memory) checkQueryVector(v []float32, stated string) error {
	if len(v) == 0 {
		return fmt.Errorf("%w: empty (want the store's dimension)", ErrQueryVector)
	}
	rec := m.man.Embedder
	if rec == nil {
		return fmt.Errorf("%w: the store has no vectors to search by vector (no embedder configured or recorded)", ErrNoEmbedder)
	}
	if stated != "" && stated != rec.ID && modelName(stated) != modelName(rec.ID) {
		return fmt.Errorf("%w: made by embedder %q, the store's vectors by %q (dim %d) (%w)",
			ErrQueryVector, stated, rec.ID, rec.Dim, ErrEmbedderMismatch)
	}
	if len(v) != rec.Dim {
		return fmt.Errorf("%w: %d values, the store's vectors (embedder %q) have %d", ErrQueryVector, len(v), rec.ID, rec.Dim)
	}
	if err := vecmath.Check(v, rec.Dim); err != nil {
		return fmt.Errorf("%w: %w", ErrQueryVector, err)
	}
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss == 0 {
		return fmt.Errorf("%w: norm 0 (every value is 0): it has no direction to search", ErrQueryVector)
	}
	return nil
}

// useQueryVector checks the query vector of the search so (normalised) of query, and
// notes its use: a hybrid search of an empty text runs as a dense search.
func (sr searcher) useQueryVector(so *SearchOptions, query string) error {
	if so.QueryVectors != nil {
		return fmt.Errorf("%w: WithQueryVectors is SearchBatch's (one vector per query); Search takes WithQueryVector", ErrQueryVector)
	}
	v := so.QueryVector
	if v == nil {
		return nil
	}
	if !anyRetriever(so.Mode, embeds) {
		return fmt.Errorf("%w: a %s search does not search by vector (give WithMode(Dense) or hybrid with a dense weight above 0)", ErrQueryVector, so.Mode)
	}
	if err := sr.m.checkQueryVector(v, so.QueryEmbedder); err != nil {
		return err
	}
	blank := strings.TrimSpace(query) == ""
	if blank && so.Rerank {
		return fmt.Errorf("%w: a rerank scores passages against the query's text, and the query has none (only its vector)", ErrInvalidOption)
	}
	notes := so.notes[:len(so.notes):len(so.notes)]
	if blank && so.Mode == Hybrid {
		so.Mode = denseRetriever.mode
		notes = append(notes, "hybrid search ran as "+denseRetriever.name+": the query has no text, only its vector")
	}
	so.notes = append(notes, queryVectorNote(len(v), so.QueryEmbedder))
	return nil
}

// queryVectorNote is the note of a search whose dense recall used the caller's vector.
func queryVectorNote(dim int, stated string) string {
	by := "an embedder not stated"
	if stated != "" {
		by = "embedder " + strconv.Quote(stated)
	}
	return fmt.Sprintf("dense query: the caller's vector (%d values, made by %s), not an embedding of the query's text", dim, by)
}

// checkBatchVectors checks the query vectors of a SearchBatch of queries with the options
// so (not normalised): one per query, each searchable.
func (c *Collection) checkBatchVectors(queries []string, so SearchOptions) error {
	if so.QueryVectors == nil {
		return nil
	}
	if so.QueryVector != nil {
		return fmt.Errorf("%w: WithQueryVector and WithQueryVectors in one batch (give each query its vector in WithQueryVectors)", ErrQueryVector)
	}
	if len(so.QueryVectors) != len(queries) {
		return fmt.Errorf("%w: %d query vectors for %d queries (one per query; nil for a query whose text is embedded)", ErrQueryVector, len(so.QueryVectors), len(queries))
	}
	if c.m.remote != nil {
		return errRemoteVector
	}
	if err := so.normalise(); err != nil {
		return err
	}
	given := false
	for i, v := range so.QueryVectors {
		if v == nil {
			continue
		}
		given = true
		if err := c.m.checkQueryVector(v, so.QueryEmbedder); err != nil {
			return fmt.Errorf("query %d: %w", i, err)
		}
	}
	if given && !anyRetriever(so.Mode, embeds) {
		return fmt.Errorf("%w: a %s search does not search by vector (give WithMode(Dense) or hybrid with a dense weight above 0)", ErrQueryVector, so.Mode)
	}
	return nil
}

// errRemoteVector: a search by vector of a read-only store that reads through its writer.
var errRemoteVector = fmt.Errorf("%w: a search by vector cannot be sent to the writer this read-only store reads through (search in the writer's process, or once it has closed the store)", ErrInvalidOption)

// queryVectorOf is the caller's vector of query i of a batch with the options so (nil:
// none, its text is embedded).
func (so *SearchOptions) queryVectorOf(i int) []float32 {
	if so.QueryVectors != nil {
		return so.QueryVectors[i]
	}
	return so.QueryVector
}

// noDenseIndex is the error of a search by vector of a store whose dense index is not
// open: its embedder is not loaded and its vectors were not imported (a store with
// imported vectors opened writable opens its index without the model).
func (sr searcher) noDenseIndex() error {
	m := sr.m
	return &embedderNeededError{msg: fmt.Sprintf("%v: a search by vector needs the store's dense index, which is open only while its embedder %s is loaded or, for imported vectors, in a writable open: %s",
		ErrEmbedderNeeded, m.em.recordedName(), m.em.unresolvedWhy())}
}
