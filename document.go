package memory

import "github.com/agentmem/memory/internal/store"

// Document is the unit the store keeps and retrieves.
type Document struct {
	// ID is unique within a collection (required, valid UTF-8).
	ID string `json:"id"`
	// Title is searched with the text and shown in results; may be empty.
	Title string `json:"title,omitempty"`
	// Text is the body; a document needs a title or a text.
	Text string `json:"text"`
	// Metadata values are strings, numbers (stored as float64), bools, or lists of them
	// (any slice: []string, []any...; stored as []any, at most MaxMetadataListItems values,
	// "source" excepted); filters match them, a list when one of its values matches (see
	// Where).
	Metadata map[string]any `json:"metadata,omitempty"`
	// Embedding is an optional precomputed vector; when nil the configured embedder makes one.
	// A document with a precomputed embedding is never chunked. Vectors computed elsewhere
	// without their model are recorded under its name with vectorstore.NewVectorsOnly as the
	// store's embedder (package vecfile reads .npy, .fvecs and FAISS flat files of them).
	// Get fills it with the stored vector of a document stored as one unit; a chunked
	// document has one per chunk (Collection.Vectors).
	Embedding []float32 `json:"-"`
	// Source is where the document came from (a file path, a URL): the key by which a
	// source is re-indexed (ReplaceSource, atomically) or removed. It is stored as the string
	// metadata value "source", so filters see it there: DeleteWhere(ctx, Where{"source":
	// path}). Setting both Source
	// and a different Metadata["source"] is ErrInvalidMetadata. Get and search results fill
	// it back from Metadata["source"].
	Source string `json:"source,omitempty"`
}

// sourceKey is the metadata key that holds Document.Source.
const sourceKey = store.SourceKey

// Result is one search hit with the breakdown of how it was scored.
//
// Text is the matching chunk of the document (the whole text of a one-chunk document);
// Get(ID) returns the whole document.
type Result struct {
	ID         string         `json:"id"`
	Collection string         `json:"collection"`
	Title      string         `json:"title,omitempty"`
	Text       string         `json:"text"`
	Metadata   map[string]any `json:"metadata,omitempty"`
	// Source is the document's Source (its metadata "source" string).
	Source string `json:"source,omitempty"`
	// ChunkIndex is the chunk's position in its document (0 for a one-chunk document), and
	// Chunks the document's number of chunks.
	ChunkIndex int `json:"chunk_index"`
	Chunks     int `json:"chunks"`
	// Start and End are the byte offsets of Text in the document's text (End exclusive).
	Start int `json:"start"`
	End   int `json:"end"`
	// Headings is the chunk's markdown heading path, outermost first (for code, its
	// qualified name); nil when none.
	Headings []string `json:"headings,omitempty"`
	// Snippet, filled when the search asks for it (WithSnippets), is a short excerpt of Text
	// (at most 200 bytes, cut on word and UTF-8 boundaries, whitespace runs shown
	// as one space) around the densest cluster of the query terms it holds, as the English
	// analyzer of BM25 sees them (stemmed, stop words ignored); the start of Text when it
	// holds none.
	Snippet string `json:"snippet,omitempty"`
	// Score is the final ranking score: the reranker's sigmoid when reranked, else the fused score.
	Score float64 `json:"score"`
	// Relevance is a score in [0, 1] that means the same in every search, for a caller
	// that thresholds results (0.5 is a reasonable cut; see WithMinRelevance): near 1 for
	// an exact match, low for an unrelated document. Score orders the results; Relevance
	// need not decrease down a hybrid search's list, which RRF orders by rank.
	//
	// A reranked result's Relevance is the reranker's probability (RerankScore.Prob).
	// Otherwise it is the mean, weighted by the retrievers' fusion weights (Weights), of
	// each retriever's score normalised to [0, 1] (StageScore.Norm): dense recall's
	// max(0, cosine similarity) (an absolute scale), and BM25's score over the best BM25
	// score of the same search (relative, as BM25 scores have no bound: Weaviate's
	// relative score fusion). A retriever that did not return the result adds 0 with its
	// weight, except dense recall, whose share is then the cosine of the query's and the
	// result's stored vectors (Explanation.Cosine), and a retriever that returned nothing
	// at all for the query, which is left out: it says nothing about any document (a query
	// none of whose terms is in the collection still finds its paraphrases by their
	// cosine). So a BM25-only search gives its best result 1; in a hybrid search the
	// cosine anchors the scale, and a document that shares a term with the query but not
	// its meaning stays near half.
	Relevance float64     `json:"relevance"`
	Explain   Explanation `json:"explain"`

	unit string // the index id of the chunk
}

// StageScore is one retriever's view of a result.
type StageScore struct {
	Rank  int     `json:"rank"`  // 1-based rank in that retriever's list
	Score float64 `json:"score"` // its raw score (BM25 score, cosine similarity)
	// Norm is the score normalised to [0, 1], the retriever's share of Result.Relevance
	// before weighting: BM25's score over the search's best BM25 score, dense recall's
	// max(0, cosine).
	Norm float64 `json:"norm"`
	// Precision, on dense recall's score, is the precision of the vectors that gave it:
	// the store's (Options.VectorPrecision: "float32", "float16" or "int8"), which the
	// vector index ranks or rescores its candidates with. Empty on other stages.
	Precision string `json:"precision,omitempty"`
}

// RerankScore is the cross-encoder's view of a result.
type RerankScore struct {
	Logit float64 `json:"logit"` // raw logit
	Prob  float64 `json:"prob"`  // sigmoid(logit), in float64
	Rank  int     `json:"rank"`  // 1-based rank after reranking
}

// Explanation says how a result got its score.
type Explanation struct {
	Mode   Mode         `json:"mode"`             // the mode actually used
	BM25   *StageScore  `json:"bm25,omitempty"`   // nil when BM25 did not return it
	Dense  *StageScore  `json:"dense,omitempty"`  // nil when dense recall did not return it
	Fused  float64      `json:"fused"`            // fused (RRF or weighted) score
	Rerank *RerankScore `json:"rerank,omitempty"` // nil when not reranked
	// CollectionWeight is the weight of the result's collection in a multi-collection search.
	CollectionWeight float64 `json:"collection_weight,omitempty"`
	// Cosine is the cosine similarity of the query's embedding and the result's stored
	// vector when the search embedded the query (dense or hybrid with an embedder): dense
	// recall's score, or, for a result dense recall did not return (or an inner-product
	// index), computed from the stored vector; nil otherwise. 1 - Cosine is Chroma's cosine
	// distance.
	Cosine *float64 `json:"cosine,omitempty"`
	// Cascade is, in a cascade search (WithCascade), the 1-based step whose collection
	// answered with this result (Result.Collection names it); 0 otherwise.
	Cascade int `json:"cascade,omitempty"`
	// Notes report anything the caller should know (for example a hybrid search that
	// degraded to BM25 because no embedder is configured).
	Notes []string `json:"notes,omitempty"`
}
