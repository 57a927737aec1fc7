package vectorstore

import (
	"errors"

	"github.com/agentmem/memory/internal/errkind"
)

// Errors of the index backends.
var (
	// ErrUnknownBackend reports an IndexConfig.Backend that no RegisterIndex call named.
	ErrUnknownBackend = errors.New("vectorstore: unknown index backend")
	// ErrBadConfig reports an unusable configuration: of an index (a bad dimension,
	// metric, quantization, or an unsupported FAISS factory string), of an embedder (no
	// model, a bad URL, a negative size) or an unknown model preset. The message names it.
	ErrBadConfig = errors.New("vectorstore: invalid configuration")
	// ErrConfigMismatch reports a persisted index built with another dimension, metric,
	// quantization or format version than the configuration asks for; the store rebuilds
	// it from the store of record.
	ErrConfigMismatch = errors.New("vectorstore: index was built with another configuration")
	// ErrCorrupt reports damaged or missing files of a persisted index (a checksum, a size
	// or a structure that does not hold); the store rebuilds the index.
	ErrCorrupt = errors.New("vectorstore: index files are damaged")
	// ErrClosed reports a call on a closed index, or on a disk index whose last write to
	// its files failed.
	ErrClosed = errors.New("vectorstore: index is closed")
	// ErrFaissUntrained reports that an IVF index cannot be trained yet (too few vectors).
	ErrFaissUntrained = errors.New("vectorstore: not enough vectors to train the FAISS IVF index")
	// ErrFaissNotBuilt reports the FAISS backend asked of a build without it (built without
	// the "faiss" tag, which links libfaiss_c): NewIndex wraps it beside ErrUnknownBackend.
	ErrFaissNotBuilt = errors.New("vectorstore: this build has no FAISS backend (build with -tags faiss)")
)

// Errors about the vectors and ids given to an Index.
var (
	// ErrDimMismatch reports a vector whose length is not the index's or embedder's dimension.
	ErrDimMismatch = errors.New("vectorstore: vector dimension mismatch")
	// ErrBadBatch reports an Add whose ids and vectors differ in number or that holds an
	// empty id.
	ErrBadBatch = errors.New("vectorstore: invalid add batch")
	// ErrNonFinite reports a vector (stored or query) holding NaN or ±Inf.
	ErrNonFinite = errors.New("vectorstore: vector holds NaN or Inf")
)

// Errors of the embedders. Model-file problems are package models' kinds
// (models.ErrModelNotFound, models.ErrBadModel, models.ErrNeedsCgo, models.ErrCUDAUnavailable).
var (
	// ErrNoModel: an embedder stands for vectors computed elsewhere (see [VectorsOnly]) and
	// has no model loaded to embed texts with.
	ErrNoModel = errors.New("vectorstore: no model loaded to embed texts")
	// ErrEmbeddingHTTP reports a request the embedding server answered with an error status,
	// after the retries allowed for 429 and 5xx; the error is an [*EmbeddingHTTPError]
	// carrying the status. A vector of the wrong length is ErrDimMismatch.
	ErrEmbeddingHTTP = errors.New("vectorstore: embedding server refused the request")
	// ErrEmbeddingResponse reports a 2xx answer that is not a valid embeddings response:
	// not JSON, missing or duplicated indexes, a wrong number of vectors, NaN or Inf values.
	ErrEmbeddingResponse = errors.New("vectorstore: malformed embedding response")
)

// Private kinds: their own text, and errors.Is matches the public kind they refine.
var (
	errDiskCorrupt    = errkind.New("vectorstore: disk index files are damaged", ErrCorrupt)
	errDiskConfig     = errkind.New("vectorstore: disk index was built with another configuration", ErrConfigMismatch)
	errDiskClosed     = errkind.New("vectorstore: disk index is unusable after a failed write", ErrClosed)
	errEmbedderConfig = errkind.New("vectorstore: invalid embedder options", ErrBadConfig)
	errUnknownPreset  = errkind.New("vectorstore: unknown model preset", ErrBadConfig)
)
