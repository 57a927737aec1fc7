package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenAIEmbedderByRecordedID: a store indexed with the OpenAI-compatible embedder
// ("openai:MODEL/DIM", the server and key from the environment) reloads it from the
// identity it recorded: a later dense search names no embedder.
func TestOpenAIEmbedderByRecordedID(t *testing.T) {
	var requests int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		requests++
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		data := make([]item, len(req.Input))
		for i, text := range req.Input {
			v := make([]float32, 8)
			for _, w := range strings.Fields(strings.ToLower(text)) {
				v[len(w)%8]++
			}
			data[i] = item{i, v}
		}
		json.NewEncoder(w).Encode(map[string]any{"data": data})
	}))
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-test")

	tmp := t.TempDir()
	corpus := writeCorpus(t, tmp, 20)
	store := filepath.Join(tmp, "store")
	mustCLI(t, 0, "index", "--store", store, "--embedder", "openai:test-embed/8", corpus)
	indexed := requests
	out, _ := mustCLI(t, 0, "search", "--store", store, "--mode", "dense", "--json", "otters")
	if requests <= indexed {
		t.Fatalf("the dense search sent no request to the embedding server (%d before, %d after)", indexed, requests)
	}
	if !strings.Contains(out, `"id"`) {
		t.Fatalf("dense search found nothing:\n%s", out)
	}
}
