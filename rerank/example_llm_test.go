package rerank_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/rerank"
)

// fakeChatModel stands in for a chat model behind an OpenAI-compatible server (Ollama,
// vLLM, llama.cpp, OpenAI): asked for a 0-10 grade, it answers how many of the query's
// words the passage holds, times 3, as a model might ("Score: 6").
func fakeChatModel() *httptest.Server {
	re := regexp.MustCompile(`(?s)Query: (.*)\n\nPassage: (.*)\n\nRelevance`)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 2 {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		m := re.FindStringSubmatch(req.Messages[1].Content)
		grade := 0
		for _, w := range strings.Fields(strings.ToLower(m[1])) {
			if strings.Contains(strings.ToLower(m[2]), w) {
				grade += 3
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{
			"message": map[string]any{"role": "assistant", "content": fmt.Sprintf("Score: %d", min(grade, 10))}}}})
	}))
}

// An LLM reranker grades each candidate of a search with a chat model (pointwise; Listwise
// asks for the order of all of them in one request). Result.Score is then the grade as a
// probability, (grade+0.5)/11.
func ExampleLLMReranker() {
	srv := fakeChatModel()
	defer srv.Close()
	llm, err := rerank.NewLLMReranker(rerank.LLMOptions{
		BaseURL: srv.URL + "/v1", // e.g. http://localhost:11434/v1 for Ollama
		Model:   "qwen2.5:7b-instruct",
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	m, err := memory.Open("", memory.WithReranker(llm))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	err = m.Add(ctx,
		memory.Document{ID: "a", Text: "Rotate the API keys every 90 days."},
		memory.Document{ID: "b", Text: "The keys of the office are at the front desk."},
		memory.Document{ID: "c", Text: "To rotate API keys, create a new key, deploy it, then revoke the old one."},
	)
	if err != nil {
		log.Fatal(err)
	}
	res, err := m.Search(ctx, "rotate api keys", memory.WithRerank(10))
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range res {
		fmt.Printf("%s rerank rank %d, score %.3f\n", r.ID, r.Explain.Rerank.Rank, r.Score)
	}
	// Output:
	// a rerank rank 1, score 0.864
	// c rerank rank 2, score 0.864
	// b rerank rank 3, score 0.318
}
