package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

// qaGenerator is an OpenAI completions server that searches the question, then answers
// with the title of the first passage it was shown ("Otters" or "Walrus"), or "no idea"
// when it saw none.
func qaGenerator(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	title := regexp.MustCompile(`Doc 1\(Title: "?([A-Za-z]+)`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct {
			Model  string   `json:"model"`
			Prompt string   `json:"prompt"`
			Stop   []string `json:"stop"`
		}
		if r.URL.Path != "/v1/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model != "tiny-r1" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		q := req.Prompt[strings.LastIndex(req.Prompt, "Question: ")+len("Question: "):]
		q = q[:strings.IndexByte(q, '\n')]
		text := "<think>search</think><search> " + q + " </search>"
		if strings.Contains(req.Prompt, "\n\n<information>") {
			text = "<answer> no idea </answer>"
			if m := title.FindStringSubmatch(req.Prompt); m != nil {
				text = "<answer> the " + m[1] + " </answer>"
			}
		}
		for _, s := range req.Stop {
			if i := strings.Index(text, s); i >= 0 {
				text = text[:i]
			}
		}
		fmt.Fprintf(w, `{"choices":[{"index":0,"text":%q,"finish_reason":"stop"}]}`, text)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

// TestEvalQA: memory eval --qa runs the loop over a QA file against a generator and
// prints EM, SubEM and F1, overall and per data_source, and writes the trajectories.
func TestEvalQA(t *testing.T) {
	dir := t.TempDir()
	beirDir := filepath.Join(dir, "beir")
	evalFolder(t, beirDir) // two documents: Otters (sleeping, hands) and Walrus (tusks)
	qaFile := filepath.Join(dir, "questions.jsonl")
	writeFile(t, qaFile,
		`{"id":"1","question":"which animals hold hands while sleeping","golden_answers":["otters","sea otters"],"data_source":"nq"}`+"\n"+
			`{"id":2,"question":"who uses tusks to haul out","golden_answers":["walruses"],"data_source":"hotpotqa"}`+"\n"+
			`{"id":"3","question":"who hauls out with tusks","golden_answers":["walrus"]}`+"\n")
	srv, calls := qaGenerator(t)
	traj := filepath.Join(dir, "traj.jsonl")
	out, errs := mustCLI(t, 0, "eval", "--qa", qaFile, "--generator", srv.URL+"/v1", "--model", "tiny-r1",
		"--data", beirDir, "--trajectories", traj)
	// q1: "the Otters" = otters (EM 1); q2: "the Walrus" vs walruses (EM 0, F1 0);
	// q3: "the Walrus" = walrus (EM 1): EM 2/3.
	for _, want := range []string{
		"EM           0.6667", "SubEM        0.6667", "F1           0.6667",
		"nq         1         1.0000  1.0000  1.0000", "hotpotqa   1         0.0000", "questions  1         1.0000",
		"all        3         0.6667", "(3 questions x 1 rollouts",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s%s", want, out, errs)
		}
	}
	if calls.Load() != 6 {
		t.Errorf("%d generator calls, want 6 (a search and an answer per question)", calls.Load())
	}
	f, err := os.Open(traj)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); n++ {
		var tr struct {
			ID    string `json:"id"`
			Turns []struct {
				Query   string                `json:"query"`
				Results []struct{ ID string } `json:"results"`
			} `json:"turns"`
		}
		if err := json.Unmarshal(sc.Bytes(), &tr); err != nil || len(tr.Turns) != 2 || len(tr.Turns[0].Results) == 0 {
			t.Fatalf("trajectory line %d: %v: %s", n+1, err, sc.Text())
		}
	}
	if n != 3 {
		t.Errorf("%d trajectories", n)
	}
	// Bad uses: no generator, no store or data, a malformed QA file, a generator that fails.
	mustCLI(t, 2, "eval", "--qa", qaFile, "--data", beirDir)
	mustCLI(t, 2, "eval", "--qa", qaFile, "--generator", srv.URL+"/v1")
	writeFile(t, filepath.Join(dir, "bad.jsonl"), `{"id":"1","question":"q"}`+"\n")
	if _, errs := mustCLI(t, 1, "eval", "--qa", filepath.Join(dir, "bad.jsonl"), "--generator", srv.URL+"/v1", "--data", beirDir); !strings.Contains(errs, "bad.jsonl:1") {
		t.Errorf("malformed QA file: %s", errs)
	}
	if _, errs := mustCLI(t, 1, "eval", "--qa", qaFile, "--generator", srv.URL+"/v1", "--model", "other", "--data", beirDir); !strings.Contains(errs, "every episode failed") {
		t.Errorf("failing generator: %s", errs)
	}
}
