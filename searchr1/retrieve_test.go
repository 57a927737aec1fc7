package searchr1

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/memory"
)

// pythonBody is byte for byte what Search-R1's client sends:
// requests.post(url, json={"queries": [...], "topk": 3, "return_scores": True})
// (json.dumps with its default ", " and ": " separators).
const pythonBody = `{"queries": ["director of Inception", "Christopher Nolan birthplace"], "topk": 3, "return_scores": true}`

// postPython posts body to url's /retrieve with python-requests' headers (see postPythonTo).
func postPython(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	return postPythonTo(t, url+"/retrieve", body)
}

// postPythonTo posts body to url with the headers python-requests sends.
func postPythonTo(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", "python-requests/2.32.3")
	req.Header.Set("Accept-Encoding", "gzip, deflate")
	req.Header.Set("Accept", "*/*")
	req.Header.Set("Connection", "keep-alive")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, data
}

func TestRetrievePythonClient(t *testing.T) {
	srv := httptest.NewServer(NewRetrieveHandler(multiHopSearcher(), RetrieveOptions{}))
	defer srv.Close()
	resp, data := postPython(t, srv.URL, pythonBody)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), data)
	}
	golden := filepath.Join("testdata", "retrieve_scores.golden.json")
	if *update {
		if err := os.WriteFile(golden, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, want) {
		t.Fatalf("response:\n%s\nwant\n%s", data, want)
	}
	// What generation.py reads: response.json()['result'][i][j]['document']['contents'].
	var generic map[string][][]map[string]any
	if err := json.Unmarshal(data, &generic); err != nil {
		t.Fatal(err)
	}
	hits := generic["result"]
	if len(hits) != 2 || len(hits[0]) != 2 || len(hits[1]) != 1 {
		t.Fatalf("shape: %v", hits)
	}
	for _, h := range hits[0] {
		if keys := sortedKeys(h); !reflect.DeepEqual(keys, []string{"document", "score"}) {
			t.Fatalf("hit keys %v", keys)
		}
		if keys := sortedKeys(h["document"].(map[string]any)); !reflect.DeepEqual(keys, []string{"contents", "id"}) {
			t.Fatalf("document keys %v", keys)
		}
	}
	if c := hits[0][0]["document"].(map[string]any)["contents"]; c != "\"Inception\"\nInception is a 2010 film directed by Christopher Nolan." {
		t.Fatalf("contents %q", c)
	}
	if hits[0][0]["score"] != 12.5 {
		t.Fatalf("score %v", hits[0][0]["score"])
	}
}

func sortedKeys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := range ks {
		for j := i + 1; j < len(ks); j++ {
			if ks[j] < ks[i] {
				ks[i], ks[j] = ks[j], ks[i]
			}
		}
	}
	return ks
}

func TestRetrieveVariants(t *testing.T) {
	s := multiHopSearcher()
	srv := httptest.NewServer(NewRetrieveHandler(s, RetrieveOptions{DefaultTopK: 1}))
	defer srv.Close()

	_, data := postPython(t, srv.URL, `{"queries": ["director of Inception"], "topk": 3, "return_scores": false}`)
	var noScores struct {
		Result [][]map[string]any `json:"result"`
	}
	if err := json.Unmarshal(data, &noScores); err != nil || len(noScores.Result[0]) != 2 {
		t.Fatalf("no scores: %s (%v)", data, err)
	}
	if keys := sortedKeys(noScores.Result[0][0]); !reflect.DeepEqual(keys, []string{"contents", "id"}) {
		t.Fatalf("doc keys %v", keys)
	}
	for _, body := range []string{
		`{"queries": ["director of Inception"], "topk": null, "return_scores": true}`,
		`{"queries": ["director of Inception"]}`,
	} {
		_, data := postPython(t, srv.URL, body)
		var r retrieveResponse
		if err := json.Unmarshal(data, &r); err != nil || len(r.Result) != 1 || len(r.Result[0]) != 1 {
			t.Fatalf("default topk for %s: %s", body, data)
		}
	}
	_, data = postPython(t, srv.URL, `{"queries": ["", "director of Inception"], "topk": 2, "return_scores": true}`)
	var r retrieveResponse
	if err := json.Unmarshal(data, &r); err != nil || len(r.Result) != 2 || len(r.Result[0]) != 0 || len(r.Result[1]) != 2 {
		t.Fatalf("blank query: %s", data)
	}
	if !bytes.Contains(data, []byte(`"result":[[],[`)) {
		t.Fatalf("blank query must give an empty list, not null: %s", data)
	}
	_, data = postPython(t, srv.URL, `{"queries": [], "topk": 2}`)
	if string(data) != `{"result":[]}` {
		t.Fatalf("no queries: %s", data)
	}
}

func TestRetrieveErrors(t *testing.T) {
	srv := httptest.NewServer(NewRetrieveHandler(multiHopSearcher(), RetrieveOptions{MaxQueries: 2, MaxBodyBytes: 256, MaxTopK: 10}))
	defer srv.Close()
	cases := []struct {
		name, method, path, body string
		status                   int
	}{
		{"get retrieve", "GET", "/retrieve", "", 405},
		{"malformed", "POST", "/retrieve", `{"queries": [`, 400},
		{"trailing data", "POST", "/retrieve", `{"queries": ["a"]} {}`, 400},
		{"not an object", "POST", "/retrieve", `["a"]`, 422},
		{"null body", "POST", "/retrieve", `null`, 422},
		{"missing queries", "POST", "/retrieve", `{"topk": 3}`, 422},
		{"queries not a list", "POST", "/retrieve", `{"queries": "a"}`, 422},
		{"query not a string", "POST", "/retrieve", `{"queries": [1]}`, 422},
		{"topk zero", "POST", "/retrieve", `{"queries": ["a"], "topk": 0}`, 422},
		{"topk too large", "POST", "/retrieve", `{"queries": ["a"], "topk": 11}`, 422},
		{"topk string", "POST", "/retrieve", `{"queries": ["a"], "topk": "3"}`, 422},
		{"return_scores string", "POST", "/retrieve", `{"queries": ["a"], "return_scores": "yes"}`, 422},
		{"too many queries", "POST", "/retrieve", `{"queries": ["a", "b", "c"]}`, 422},
		{"body too large", "POST", "/retrieve", `{"queries": ["` + strings.Repeat("x", 300) + `"]}`, 413},
		{"unknown path", "GET", "/nope", "", 404},
		{"post health", "POST", "/health", "", 405},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e map[string]string
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e["detail"] == "" {
				t.Fatalf("error body not JSON {detail}: %v %v", e, err)
			}
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d (%s)", resp.StatusCode, c.status, e["detail"])
			}
			if c.status == 405 && resp.Header.Get("Allow") == "" {
				t.Fatal("405 without Allow")
			}
		})
	}
	resp, err := http.Get(srv.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != `{"status":"ok"}` {
		t.Fatalf("health: %d %s", resp.StatusCode, body)
	}
}

type blockingSearcher struct {
	entered chan struct{}
	release chan struct{}
}

func (b *blockingSearcher) Search(ctx context.Context, q string, opts ...memory.SearchOption) ([]memory.Result, error) {
	b.entered <- struct{}{}
	<-b.release
	return nil, nil
}

func TestRetrieveConcurrencyLimitAndFailures(t *testing.T) {
	b := &blockingSearcher{entered: make(chan struct{}, 4), release: make(chan struct{})}
	srv := httptest.NewServer(NewRetrieveHandler(b, RetrieveOptions{MaxConcurrent: 1, QueueTimeout: 50 * time.Millisecond}))
	defer srv.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		resp, err := http.Post(srv.URL+"/retrieve", "application/json", strings.NewReader(`{"queries": ["a"]}`))
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-b.entered // the first request holds the only slot
	resp, err := http.Post(srv.URL+"/retrieve", "application/json", strings.NewReader(`{"queries": ["b"]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("busy: status %d", resp.StatusCode)
	}
	close(b.release)
	wg.Wait()

	failing := httptest.NewServer(NewRetrieveHandler(&fakeSearcher{err: errors.New("disk on fire")}, RetrieveOptions{}))
	defer failing.Close()
	resp, data := postPython(t, failing.URL, pythonBody)
	if resp.StatusCode != 500 || strings.Contains(string(data), "disk on fire") {
		t.Fatalf("search failure: %d %s", resp.StatusCode, data)
	}
	invalid := httptest.NewServer(NewRetrieveHandler(&fakeSearcher{err: memory.ErrInvalidFilter}, RetrieveOptions{}))
	defer invalid.Close()
	if resp, _ := postPython(t, invalid.URL, pythonBody); resp.StatusCode != 422 {
		t.Fatalf("invalid option: %d", resp.StatusCode)
	}
}

func TestRetrieveRealStore(t *testing.T) {
	m, err := memory.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Add(context.Background(),
		memory.Document{ID: "fr", Title: "France", Text: "Paris is the capital of France."},
		memory.Document{ID: "de", Title: "Germany", Text: "Berlin is the capital of Germany."},
	); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewRetrieveHandler(m, RetrieveOptions{}))
	defer srv.Close()
	_, data := postPython(t, srv.URL, `{"queries": ["What is the capital of France?"], "topk": 3, "return_scores": true}`)
	var r retrieveResponse
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Result) != 1 || len(r.Result[0]) == 0 || r.Result[0][0].Document.ID != "fr" ||
		r.Result[0][0].Document.Contents != "\"France\"\nParis is the capital of France." || r.Result[0][0].Score <= 0 {
		t.Fatalf("response %s", data)
	}
}
