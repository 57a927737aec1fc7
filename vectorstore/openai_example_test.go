package vectorstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/agentmem/memory/vectorstore"
)

// An embedder backed by an OpenAI-compatible /v1/embeddings endpoint. Here the endpoint is
// a stand-in test server; point BaseURL at OpenAI (the default, with APIKey), Ollama
// ("http://localhost:11434/v1"), vLLM, llama.cpp's server or TEI instead.
func ExampleNewOpenAIEmbedder() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		data := make([]item, len(req.Input))
		for i, s := range req.Input {
			data[i] = item{i, []float32{float32(len(s)), 1, 0}}
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
	}))
	defer srv.Close()

	ctx := context.Background()
	emb, err := vectorstore.NewOpenAIEmbedder(ctx, vectorstore.OpenAIOptions{
		BaseURL: srv.URL + "/v1",
		Model:   "nomic-embed-text",
		// Dim: 0 learns the dimension from one probe request.
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(emb.ID(), emb.Dim())
	vecs, err := emb.Embed(ctx, []string{"hello", "hi"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(vecs)
	// Output:
	// openai:nomic-embed-text/3 3
	// [[5 1 0] [2 1 0]]
}
