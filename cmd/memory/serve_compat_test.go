package main

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmem/memory"
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
