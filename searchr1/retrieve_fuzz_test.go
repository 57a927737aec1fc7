package searchr1

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRetrieveRequest feeds arbitrary bodies to /retrieve and /rerank: the answer is
// always one JSON document with a status of the protocol, never a panic or a 500.
func FuzzRetrieveRequest(f *testing.F) {
	for _, s := range []string{
		pythonBody, `{"queries": [], "topk": 2}`, `{"queries": ["", " "], "topk": null, "return_scores": false}`,
		`{"queries": ["a"], "documents": [["x", {"id": 7, "contents": "y"}, {"document": {"id": "d", "contents": "\"T\"\nz"}, "score": 1}]], "rerank_topk": 1}`,
		`{"queries": "x"}`, `[1]`, `null`, `{"queries": ["a"], "topk": 1e3}`, `{"queries": ["a"], "documents": [[{"contents": null}]]}`,
	} {
		f.Add(s)
	}
	h := NewRetrieveHandler(multiHopSearcher(), RetrieveOptions{Reranker: constReranker{}, MaxQueries: 50, MaxBodyBytes: 4096, MaxRerankBodyBytes: 4096, Logger: discardLogger()})
	allowed := map[int]bool{200: true, 400: true, 413: true, 422: true}
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{"/retrieve", "/rerank"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
			if !allowed[rec.Code] {
				t.Fatalf("%s %q: status %d %s", path, body, rec.Code, rec.Body)
			}
			var v map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
				t.Fatalf("%s %q: answer is not JSON: %v: %s", path, body, err, rec.Body)
			}
			if rec.Code == 200 {
				if _, ok := v["result"].([]any); !ok {
					t.Fatalf("%s %q: 200 without a result list: %s", path, body, rec.Body)
				}
			} else if d, _ := v["detail"].(string); d == "" {
				t.Fatalf("%s %q: error without detail: %s", path, body, rec.Body)
			}
		}
	})
}
