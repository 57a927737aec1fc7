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
	"time"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/onnx/onnxtest"
	"github.com/agentmem/memory/rerank"
	"github.com/agentmem/memory/searchr1"
)

// TestServeCompatSearchR1: --compat search-r1 answers generation.py's request with the
// raw BM25 score (Lucene's formula, as pyserini's) and the original BM25 retriever's
// document fields, where the native dialect answers the hybrid RRF score; topk 0 is the
// server's default there.
func TestServeCompatSearchR1(t *testing.T) {
	dir := seedStore(t)
	m, err := memory.OpenExisting(dir, memory.ReadOnly(), memory.WithBM25Scoring(memory.ScoringLucene))
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

// startServeLog is startServe, also returning what serve writes on stderr.
func startServeLog(t *testing.T, dir string, args ...string) (string, *lockedBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, append([]string{"--store", dir, "--retrieve", "127.0.0.1:0"}, args...), io.Discard, stderr)
	}()
	addrs := waitAddrs(t, stderr, 1, done)
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop")
		}
	})
	return addrs["retrieve"], stderr
}

// compatScores posts query to a /retrieve server and returns each hit's score by the
// BM25 document's title.
func compatScores(t *testing.T, base, query string, topk int) map[string]float64 {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"queries": []string{query}, "topk": topk, "return_scores": true})
	resp, err := http.Post(base+"/retrieve", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Result [][]struct {
			Document struct{ Title, Contents string } `json:"document"`
			Score    float64                          `json:"score"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != 200 || len(r.Result) != 1 {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
	out := map[string]float64{}
	for _, h := range r.Result[0] {
		out[h.Document.Title] = h.Score
	}
	return out
}

// TestServeCompatLuceneScores: --compat search-r1 scores BM25 with Lucene's formula (no
// (k1 + 1) factor: for these short documents, whose lengths Lucene's norms keep, each
// score is the textbook one over k1 + 1 = 1.9) unless --bm25-scoring is given, and warns
// once that the collection's analyzer is not en_lucene, naming the fixes; a store with
// en_lucene gets no such warning.
func TestServeCompatLuceneScores(t *testing.T) {
	dir := seedStore(t) // analyzer "en"
	const q = "What is the capital of France?"
	classicBase, classicLog := startServeLog(t, dir, "--compat", "search-r1", "--bm25-scoring", "classic", "--topk", "2")
	classic := compatScores(t, classicBase, q, 2)
	base, log := startServeLog(t, dir, "--compat", "search-r1", "--topk", "2")
	lucene := compatScores(t, base, q, 2)
	if len(classic) != 2 || len(lucene) != 2 {
		t.Fatalf("classic %v lucene %v", classic, lucene)
	}
	for title, c := range classic {
		if want := c / 1.9; math.Abs(lucene[title]-want) > 1e-5*want {
			t.Errorf("%s: compat score %v, want the Lucene score %v (classic %v / 1.9)", title, lucene[title], want, c)
		}
	}
	for _, l := range []*lockedBuffer{log, classicLog} {
		if n := strings.Count(l.String(), "pyserini"); n != 1 || !strings.Contains(l.String(), "memory index --analyzer en_lucene") ||
			!strings.Contains(l.String(), "memory collections --set-analyzer default en_lucene") {
			t.Errorf("want one analyzer warning naming both fixes, got:\n%s", l.String())
		}
	}

	// A store of the en_lucene analyzer: no warning, and Lucene's scores by default.
	lu := t.TempDir()
	m, err := memory.Open(lu, memory.WithAnalyzer("en_lucene"))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Add(context.Background(), memory.Document{ID: "fr", Title: "France", Text: "Paris is the capital of France."}); err != nil {
		t.Fatal(err)
	}
	m.Close()
	_, log = startServeLog(t, lu, "--compat", "search-r1")
	if strings.Contains(log.String(), "pyserini") {
		t.Errorf("warning for an en_lucene store:\n%s", log.String())
	}
	// The native dialect warns of nothing.
	_, log = startServeLog(t, dir)
	if strings.Contains(log.String(), "warning") {
		t.Errorf("native serve warns:\n%s", log.String())
	}
}

// TestServeCompatMaxTopK: --compat search-r1 takes a topk over 100 (the original takes
// any), up to --max-topk; the native dialect keeps 100 unless --max-topk says otherwise.
func TestServeCompatMaxTopK(t *testing.T) {
	dir := seedStore(t)
	post := func(base string, topk int) int {
		body, _ := json.Marshal(map[string]any{"queries": []string{"capital"}, "topk": topk})
		resp, err := http.Post(base+"/retrieve", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		args   []string
		topk   int
		status int
	}{
		{[]string{"--compat", "search-r1"}, 500, 200},
		{[]string{"--compat", "search-r1", "--max-topk", "300"}, 500, 422},
		{nil, 500, 422},
		{[]string{"--max-topk", "1000"}, 500, 200},
	} {
		if got := post(startServe(t, dir, c.args...), c.topk); got != c.status {
			t.Errorf("%v topk %d: %d, want %d", c.args, c.topk, got, c.status)
		}
	}
	var stderr lockedBuffer
	if err := runServe(context.Background(), []string{"--store", dir, "--retrieve", "127.0.0.1:0", "--max-topk", "-1"}, io.Discard, &stderr); !errors.Is(err, errUsage) {
		t.Errorf("--max-topk -1: %v", err)
	}
}
