package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/onnx/onnxtest"
	"github.com/agentmem/memory/rerank"
	"github.com/agentmem/memory/searchr1"
)

// TestServeCompatSearchR1: --compat search-r1 answers generation.py's request with the
// raw BM25 score and the original BM25 retriever's document fields, where the native
// dialect answers the hybrid RRF score; topk 0 is the server's default there.
func TestServeCompatSearchR1(t *testing.T) {
	dir := seedStore(t)
	m, err := memory.OpenExisting(dir, memory.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	bm25, err := m.Search(context.Background(), "What is the capital of France?", memory.WithMode(memory.BM25), memory.TopK(1))
	m.Close()
	if err != nil || len(bm25) != 1 {
		t.Fatal(bm25, err)
	}
	body := `{"queries": ["What is the capital of France?"], "topk": 0, "return_scores": true}`
	post := func(base string) (int, string) {
		resp, err := http.Post(base+"/retrieve", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}

	status, data := post(startServe(t, dir, "--compat", "search-r1", "--topk", "1"))
	want := `{"result":[[{"document":{"title":"France","text":"Paris is the capital of France.","contents":"\"France\"\nParis is the capital of France."},"score":` +
		strconv.FormatFloat(bm25[0].Score, 'f', -1, 64) + `}]]}`
	if status != 200 || data != want {
		t.Fatalf("compat: %d\n%s\nwant\n%s", status, data, want)
	}
	if bm25[0].Score < 0.1 || bm25[0].Score == math.Trunc(bm25[0].Score) {
		t.Fatalf("BM25 score %v looks like a fused one", bm25[0].Score)
	}

	status, data = post(startServe(t, dir, "--topk", "1"))
	if status != http.StatusUnprocessableEntity || !strings.Contains(data, "topk") {
		t.Fatalf("native topk 0: %d %s", status, data)
	}

	// A hybrid search's RRF score is not what the original reports: refused.
	var stderr lockedBuffer
	err = runServe(context.Background(), []string{"--store", dir, "--retrieve", "127.0.0.1:0", "--compat", "search-r1", "--mode", "hybrid"}, io.Discard, &stderr)
	if !errors.Is(err, errUsage) || !strings.Contains(stderr.String(), "hybrid") {
		t.Fatalf("--mode hybrid with --compat: %v %s", err, stderr.String())
	}
	err = runServe(context.Background(), []string{"--store", dir, "--retrieve", "127.0.0.1:0", "--compat", "lucene"}, io.Discard, &stderr)
	if !errors.Is(err, errUsage) {
		t.Fatalf("--compat lucene: %v", err)
	}
}

// TestServeCompatRerank: with --reranker, --compat search-r1 serves the original
// retrieve-and-rerank request: topk_retrieval candidates, the cross-encoder's raw logit of
// the "(Title: t) text" string as the score, the best topk_rerank as strings.
func TestServeCompatRerank(t *testing.T) {
	model := onnxtest.Model(t, "tiny-bert-cross-encoder")
	ce, err := rerank.NewCrossEncoder(context.Background(), model, rerank.CrossEncoderOptions{LibraryPath: onnxtest.Library(t), Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ce.Close()
	base := startServe(t, seedStore(t), "--compat", "search-r1", "--reranker", model)
	body := `{"queries": ["capital of France"], "topk_retrieval": 2, "topk_rerank": 2, "return_scores": true}`
	resp, err := http.Post(base+"/retrieve", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var r struct {
		Result [][]struct {
			Document string  `json:"document"`
			Score    float64 `json:"score"`
		} `json:"result"`
	}
	if err := json.Unmarshal(data, &r); err != nil || resp.StatusCode != 200 || len(r.Result) != 1 || len(r.Result[0]) != 2 {
		t.Fatalf("combined request: %d %s (%v)", resp.StatusCode, data, err)
	}
	contents := map[string]string{"France": "\"France\"\nParis is the capital of France.", "Germany": "\"Germany\"\nBerlin is the capital of Germany."}
	for _, hit := range r.Result[0] {
		var c string
		for title, cc := range contents {
			if strings.HasPrefix(hit.Document, `""`+title+`""`+"\n") {
				c = cc
			}
		}
		if c == "" {
			t.Fatalf("document %q is not convert_title_format of a passage", hit.Document)
		}
		logits, err := ce.Score(context.Background(), "capital of France", []string{searchr1.PassageString(c)})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(hit.Score-float64(logits[0])) > 1e-6 {
			t.Fatalf("score %v, want the raw logit %v of %q", hit.Score, logits[0], searchr1.PassageString(c))
		}
	}
	if r.Result[0][0].Score < r.Result[0][1].Score {
		t.Fatalf("not ranked by logit: %s", data)
	}
}
