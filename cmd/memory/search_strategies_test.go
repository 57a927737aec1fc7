package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// fakeChat is an OpenAI-compatible chat endpoint that grades passages about krakens 10
// (pointwise) or ranks them first (listwise), and records what it was sent.
type fakeChat struct {
	mu       sync.Mutex
	auth     []string
	models   []string
	requests int
}

func (f *fakeChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role, Content string
		} `json:"messages"`
	}
	if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || len(req.Messages) == 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.models = append(f.models, req.Model)
	f.requests++
	f.mu.Unlock()
	user := req.Messages[len(req.Messages)-1].Content
	reply := "1"
	if strings.Contains(user, "Passage: ") { // pointwise
		if strings.Contains(user[strings.Index(user, "Passage: "):], "kraken") {
			reply = "10"
		}
	} else { // listwise: [n] passage lines, krakens first
		var first, rest []string
		for _, m := range regexp.MustCompile(`(?m)^\[(\d+)\] (.*)$`).FindAllStringSubmatch(user, -1) {
			if strings.Contains(m[2], "kraken") {
				first = append(first, "["+m[1]+"]")
			} else {
				rest = append(rest, "["+m[1]+"]")
			}
		}
		reply = strings.Join(append(first, rest...), " > ")
	}
	json.NewEncoder(w).Encode(map[string]any{"choices": []map[string]any{{"index": 0, "message": map[string]any{"role": "assistant", "content": reply}}}})
}

// TestSearchStrategies: --cascade, --cascade-threshold, --dedupe-source and --llm-reranker
// reach the library's strategies, with flags anywhere; --json keeps its shape and names the
// answering collection; the API key comes from the environment and is never printed.
func TestSearchStrategies(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "s")
	doc := func(id, text, source string) string {
		j, _ := json.Marshal(map[string]any{"id": id, "text": text, "metadata": map[string]any{"source": source}})
		return string(j) + "\n"
	}
	gold := filepath.Join(dir, "gold.jsonl")
	writeFile(t, gold, doc("g1", "to deploy the service run make deploy", "faq.md"))
	kb := filepath.Join(dir, "kb.jsonl")
	writeFile(t, kb, doc("k1", "deploy deploy deploy with kubectl", "a.md")+doc("k2", "deploy deploy notes", "a.md")+
		doc("k3", "deploy on a friday, the kraken wakes", "b.md")+doc("k4", "nothing about it", "c.md"))
	mustCLI(t, 0, "index", "--store", store, "--collection", "gold", gold)
	mustCLI(t, 0, "index", "--store", store, "--collection", "kb", kb)
	mustCLI(t, 0, "collections", "--store", store, "--create", "empty")

	const key = "sk-test-secret-123"
	t.Setenv("OPENAI_API_KEY", key)
	t.Setenv("OTHER_KEY", "")
	chat := &fakeChat{}
	srv := httptest.NewServer(chat)
	defer srv.Close()

	type hit struct {
		ID         string
		Collection string
		Cascade    int // Explain.Cascade
	}
	for _, c := range []struct {
		name    string
		args    []string
		code    int
		want    []hit  // --json results (exit 0), in order
		errWant string // in stderr otherwise
		auth    string // the Authorization the chat server saw ("-": no request)
	}{
		{"plain search is unchanged", []string{"--collection", "kb", "deploy"}, 0,
			[]hit{{"k1", "kb", 0}, {"k2", "kb", 0}, {"k3", "kb", 0}}, "", "-"},
		{"cascade stops at gold", []string{"deploy", "--cascade", "gold,kb", "--cascade-threshold", "0.1"}, 0,
			[]hit{{"g1", "gold", 1}}, "", "-"},
		{"cascade falls back below the threshold", []string{"--cascade", "gold, kb", "deploy", "--cascade-threshold", "100"}, 0,
			[]hit{{"k1", "kb", 2}, {"k2", "kb", 2}, {"g1", "gold", 1}, {"k3", "kb", 2}}, "", "-"},
		{"cascade past an empty collection", []string{"--cascade", "empty,kb", "kraken"}, 0,
			[]hit{{"k3", "kb", 2}}, "", "-"},
		{"cascade with dedupe", []string{"--cascade", "gold,kb", "--cascade-threshold", "100", "--dedupe-source", "deploy"}, 0,
			[]hit{{"k1", "kb", 2}, {"g1", "gold", 1}, {"k3", "kb", 2}}, "", "-"},
		{"dedupe one collection", []string{"--collection", "kb", "--dedupe-source", "deploy"}, 0,
			[]hit{{"k1", "kb", 0}, {"k3", "kb", 0}}, "", "-"},
		{"cascade of a missing collection", []string{"--cascade", "gold,nope", "--cascade-threshold", "100", "deploy"}, 1, nil, "collection not found", "-"},
		{"cascade of nothing", []string{"--cascade", ",", "deploy"}, 1, nil, "a cascade without collections", "-"},
		{"cascade with --collection", []string{"--cascade", "gold", "--collection", "kb", "deploy"}, 2, nil, "--cascade names the collections to search: not with --collection", "-"},
		{"threshold without cascade", []string{"--cascade-threshold", "1", "deploy"}, 2, nil, "--cascade-threshold goes with --cascade", "-"},
		{"llm pointwise puts the kraken first", []string{"--collection", "kb", "deploy", "--llm-reranker", srv.URL + "/v1", "--llm-model", "m1"}, 0,
			[]hit{{"k3", "kb", 0}, {"k1", "kb", 0}, {"k2", "kb", 0}}, "", "Bearer " + key},
		{"llm listwise, key from another variable (empty: none)", []string{"--collection", "kb", "--llm-mode", "listwise", "--llm-api-key-env", "OTHER_KEY", "--llm-reranker", srv.URL + "/v1", "--llm-model", "m1", "deploy"}, 0,
			[]hit{{"k3", "kb", 0}, {"k1", "kb", 0}, {"k2", "kb", 0}}, "", ""},
		{"llm reranker over a cascade", []string{"--cascade", "gold,kb", "--cascade-threshold", "0.9", "--llm-reranker", srv.URL + "/v1", "--llm-model", "m1", "deploy"}, 0,
			[]hit{{"k3", "kb", 2}, {"g1", "gold", 1}, {"k1", "kb", 2}, {"k2", "kb", 2}}, "", "Bearer " + key},
		{"llm without a model", []string{"--llm-reranker", srv.URL + "/v1", "deploy"}, 1, nil, "no model", "-"},
		{"llm with a bad mode", []string{"--llm-reranker", srv.URL + "/v1", "--llm-model", "m", "--llm-mode", "both", "deploy"}, 1, nil, `mode "both"`, "-"},
		{"llm model without a URL", []string{"--llm-model", "m", "deploy"}, 2, nil, "--llm-model and --llm-mode go with --llm-reranker URL", "-"},
		{"llm with --reranker", []string{"--llm-reranker", srv.URL + "/v1", "--llm-model", "m", "--reranker", "x", "deploy"}, 2, nil, "--llm-reranker and --reranker: one reranker at a time", "-"},
		{"llm server down", []string{"--collection", "kb", "--llm-reranker", "http://127.0.0.1:1/v1", "--llm-model", "m", "deploy"}, 1, nil, "127.0.0.1:1", "-"},
	} {
		t.Run(c.name, func(t *testing.T) {
			chat.mu.Lock()
			chat.auth, chat.requests = nil, 0
			chat.mu.Unlock()
			args := append([]string{"search", "--store", store, "--mode", "bm25", "--json"}, c.args...)
			code, out, errs := cli(t, args...)
			if strings.Contains(out+errs, key) {
				t.Fatalf("the API key was printed:\n%s%s", out, errs)
			}
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, c.code, out, errs)
			}
			if c.code != 0 {
				if !strings.Contains(errs, c.errWant) {
					t.Fatalf("want %q in stderr:\n%s", c.errWant, errs)
				}
				return
			}
			var got []hit
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var r struct {
					ID         string `json:"id"`
					Collection string `json:"collection"`
					Explain    struct {
						Cascade int `json:"cascade"`
					} `json:"explain"`
				}
				var shape map[string]any
				if err := json.Unmarshal([]byte(line), &r); err != nil || json.Unmarshal([]byte(line), &shape) != nil {
					t.Fatalf("not JSON: %q", line)
				}
				h := hit{r.ID, r.Collection, r.Explain.Cascade}
				for _, k := range []string{"id", "collection", "text", "score", "explain"} {
					if _, ok := shape[k]; !ok {
						t.Fatalf("result lacks %q: %s", k, line)
					}
				}
				got = append(got, h)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("results %+v, want %+v", got, c.want)
			}
			chat.mu.Lock()
			defer chat.mu.Unlock()
			if c.auth == "-" {
				if chat.requests != 0 {
					t.Fatalf("%d requests to the chat server", chat.requests)
				}
				return
			}
			if chat.requests == 0 {
				t.Fatal("the chat server was not asked")
			}
			for _, a := range chat.auth {
				if a != c.auth {
					t.Fatalf("Authorization %q, want %q", a, c.auth)
				}
			}
		})
	}

	// Beside a writer, a search with --llm-reranker reads the candidates through it and
	// reranks them here with the LLM (not with the writer's reranker, which it has none of).
	w := openTest(t, store)
	out0, errs0 := mustCLI(t, 0, "search", "--store", store, "--mode", "bm25", "--collection", "kb", "--json",
		"--llm-reranker", srv.URL+"/v1", "--llm-model", "m1", "deploy")
	if !strings.Contains(out0, `"rerank"`) || strings.Contains(errs0, key) || strings.Contains(out0, key) {
		t.Fatalf("--llm-reranker beside a writer: %s %s", out0, errs0)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	// The table of a cascade has a COLLECTION column.
	out, _ := mustCLI(t, 0, "search", "--store", store, "--mode", "bm25", "--cascade", "gold,kb", "--cascade-threshold", "100", "deploy")
	if !regexp.MustCompile(`(?m)^#\s+SCORE\s+BM25\s+DENSE\s+RERANK\s+COLLECTION\s+ID\s+TITLE$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^1\s+\S+\s+#1 \S+\s+-\s+-\s+kb\s+k1\s`).MatchString(out) {
		t.Fatalf("cascade table:\n%s", out)
	}
}
