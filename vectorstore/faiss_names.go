package vectorstore

import "errors"

// The names of the FAISS backend exist in every build (Bleve's search_knn.go /
// search_no_knn.go pattern): code that names FaissIndex compiles without the "faiss" build
// tag, and there NewFaissIndex returns ErrFaissNotBuilt.

// FaissBackend is the backend name of the FAISS index (build tag "faiss").
const FaissBackend = "faiss"

// Errors of the FAISS backend. Each wraps (or is wrapped next to) ErrBadConfig where it is a
// configuration error, so errors.Is(err, ErrBadConfig) holds for them too.
var (
	// ErrFaissFactory reports an unsupported IndexConfig.Factory string.
	ErrFaissFactory = errors.New("vectorstore: unsupported FAISS factory string")
	// ErrFaissUntrained reports that an IVF index cannot be trained yet (too few vectors).
	ErrFaissUntrained = errors.New("vectorstore: not enough vectors to train the FAISS IVF index")
	// ErrFaissClosed reports a call on a closed FAISS index.
	ErrFaissClosed = errors.New("vectorstore: FAISS index is closed")
	// ErrFaissNotBuilt reports the FAISS backend asked of a build without it (built without
	// the "faiss" tag, which links libfaiss_c): NewFaissIndex returns it, and NewIndex wraps
	// it beside ErrUnknownBackend.
	ErrFaissNotBuilt = errors.New("vectorstore: this build has no FAISS backend (build with -tags faiss)")
)

// Parameter names read from IndexConfig.Params by the FAISS backend.
const (
	FaissParamNprobe         = "nprobe"         // IVF: lists probed per query (default max(16, nlist/32))
	FaissParamEfSearch       = "efSearch"       // HNSW: search beam width (default 128)
	FaissParamEfConstruction = "efConstruction" // HNSW: build beam width (default 40, faiss's own)
	FaissParamTrainSize      = "trainSize"      // IVF: vectors buffered before training (default 39*nlist)
	FaissParamCompactPercent = "compactPercent" // HNSW: tombstone share (%) that triggers a rebuild (default 20)
)
