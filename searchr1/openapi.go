package searchr1

import (
	_ "embed"
	"net/http"
)

var (
	//go:embed openapi/native.json
	openAPINative []byte
	//go:embed openapi/search-r1.json
	openAPISearchR1 []byte
)

// openAPI returns the openAPI 3.1 description (JSON) of the endpoints of
// [NewRetrieveHandler] in dialect c: /retrieve, /rerank, /health and /ready, their request
// and response shapes, errors and examples. The handler serves it at GET /openapi.json.
// The caller may not modify the slice.
func openAPI(c Compat) []byte {
	if c == CompatSearchR1 {
		return openAPISearchR1
	}
	return openAPINative
}

func (h *retrieveHandler) openAPI(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openAPI(h.o.Compat))
}
