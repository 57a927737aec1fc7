package memory

// Document is the unit the store keeps and retrieves.
type Document struct {
	// ID is unique within a collection (required, valid UTF-8).
	ID string `json:"id"`
	// Title is searched with the text and shown in results; may be empty.
	Title string `json:"title,omitempty"`
	// Text is the body; a document needs a title or a text.
	Text string `json:"text"`
	// Metadata values are strings, numbers (stored as float64) or bools; filters match them.
	Metadata map[string]any `json:"metadata,omitempty"`
	// Embedding is an optional precomputed vector; when nil the configured embedder makes one.
	Embedding []float32 `json:"-"`
}

// Result is one search hit with the breakdown of how it was scored.
type Result struct {
	ID         string         `json:"id"`
	Collection string         `json:"collection"`
	Title      string         `json:"title,omitempty"`
	Text       string         `json:"text"`
	Metadata   map[string]any `json:"metadata,omitempty"`
	// Score is the final ranking score: the reranker's sigmoid when reranked, else the fused score.
	Score   float64     `json:"score"`
	Explain Explanation `json:"explain"`
}

// StageScore is one retriever's view of a result.
type StageScore struct {
	Rank  int     `json:"rank"`  // 1-based rank in that retriever's list
	Score float64 `json:"score"` // its raw score (BM25 score, cosine similarity)
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
	// Notes report anything the caller should know (for example a hybrid search that
	// degraded to BM25 because no embedder is configured).
	Notes []string `json:"notes,omitempty"`
}
