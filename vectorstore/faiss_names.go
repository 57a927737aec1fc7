package vectorstore

// The names of the FAISS backend exist in every build (Bleve's search_knn.go /
// search_no_knn.go pattern): code that names faissIndex compiles without the "faiss" build
// tag, and there newFaissIndex returns ErrFaissNotBuilt.

// FaissBackend is the backend name of the FAISS index (build tag "faiss").
const FaissBackend = "faiss"

// Parameter names read from IndexConfig.Params by the FAISS backend.
const (
	FaissParamNprobe         = "nprobe"         // IVF: lists probed per query (default max(16, nlist/32))
	FaissParamEfSearch       = "efSearch"       // HNSW: search beam width (default 128)
	FaissParamEfConstruction = "efConstruction" // HNSW: build beam width (default 40, faiss's own)
	FaissParamTrainSize      = "trainSize"      // IVF: vectors buffered before training (default 39*nlist)
	FaissParamCompactPercent = "compactPercent" // HNSW: tombstone share (%) that triggers a rebuild (default 20)
)
