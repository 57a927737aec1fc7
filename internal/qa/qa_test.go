package qa

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/searchr1"
)

func TestLoad(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Question
		err  error
	}{
		{"flashrag", `{"id":"test_0","question":"who?","golden_answers":["A","B"],"metadata":{}}` + "\n",
			[]Question{{ID: "test_0", Question: "who?", GoldenAnswers: []string{"A", "B"}}}, nil},
		{"search-r1 with data_source and int id", `{"id":7,"question":"q","golden_answers":["x"],"data_source":"nq"}`,
			[]Question{{ID: "7", Question: "q", GoldenAnswers: []string{"x"}, DataSource: "nq"}}, nil},
		{"one string, blank lines, no id", "\n\n" + `{"question":"q","golden_answers":"x"}` + "\n\n",
			[]Question{{ID: "3", Question: "q", GoldenAnswers: []string{"x"}}}, nil},
		{"answers and answer", `{"id":"a","question":"q","answers":["x"]}` + "\n" + `{"id":"b","question":"q","answer":1969}`,
			[]Question{{ID: "a", Question: "q", GoldenAnswers: []string{"x"}}, {ID: "b", Question: "q", GoldenAnswers: []string{"1969"}}}, nil},
		{"reward_model target", `{"id":"a","question":"q","reward_model":{"ground_truth":{"target":["x","y"]}}}`,
			[]Question{{ID: "a", Question: "q", GoldenAnswers: []string{"x", "y"}}}, nil},
		{"not JSON", "{nope", nil, ErrFormat},
		{"no question", `{"id":"a","golden_answers":["x"]}`, nil, ErrFormat},
		{"blank question", `{"id":"a","question":"  ","golden_answers":["x"]}`, nil, ErrFormat},
		{"no answers: kept, matching nothing", `{"id":"a","question":"q","golden_answers":[]}`,
			[]Question{{ID: "a", Question: "q", GoldenAnswers: []string{}}}, nil},
		{"an empty answer: kept as given", `{"id":"a","question":"q","golden_answers":[""]}` + "\n" + `{"id":"b","question":"q","golden_answers":["x", " "]}`,
			[]Question{{ID: "a", Question: "q", GoldenAnswers: []string{""}}, {ID: "b", Question: "q", GoldenAnswers: []string{"x", " "}}}, nil},
		{"empty list, then answers", `{"id":"a","question":"q","golden_answers":[],"answers":["x"]}`,
			[]Question{{ID: "a", Question: "q", GoldenAnswers: []string{"x"}}}, nil},
		{"no answers field", `{"id":"a","question":"q"}`, nil, ErrFormat},
		{"answers null", `{"id":"a","question":"q","golden_answers":null}`, nil, ErrFormat},
		{"answer not a string", `{"id":"a","question":"q","golden_answers":[{"x":1}]}`, nil, ErrFormat},
		{"id an object", `{"id":{},"question":"q","golden_answers":["x"]}`, nil, ErrFormat},
		{"empty", "\n", nil, ErrNoQuestions},
		{"line too long", `{"question":"` + strings.Repeat("x", MaxLineBytes) + `"}`, nil, ErrFormat},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Load(strings.NewReader(tc.in), "f.jsonl")
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if err != nil && !strings.Contains(err.Error(), "f.jsonl") {
				t.Errorf("error does not name the file: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestLoadFileNamesDataset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hotpotqa.jsonl")
	if err := os.WriteFile(path, []byte(`{"id":"1","question":"q","golden_answers":["x"]}`+"\n"+
		`{"id":"2","question":"q","golden_answers":["x"],"data_source":"nq"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	qs, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if qs[0].DataSource != "hotpotqa" || qs[1].DataSource != "nq" {
		t.Errorf("%+v", qs)
	}
	if _, err := LoadFile(filepath.Join(t.TempDir(), "none.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// TestScore: Search-R1's normalisation, exact and cover match, best F1 over the answers.
func TestScore(t *testing.T) {
	tests := []struct {
		pred  string
		golds []string
		want  Match
	}{
		{"The Eiffel Tower!", []string{"eiffel tower"}, Match{1, 1, 1}},
		{"It is the Eiffel Tower in Paris", []string{"Eiffel Tower"}, Match{0, 1, 2 * (2.0 / 6) * 1 / (2.0/6 + 1)}},
		{"Paris", []string{"Lyon", "paris."}, Match{1, 1, 1}},
		{"London", []string{"Paris"}, Match{}},
		{"", []string{"Paris"}, Match{}},
	}
	for _, tc := range tests {
		if got := Score(tc.pred, tc.golds); got != tc.want {
			t.Errorf("Score(%q, %q) = %+v, want %+v", tc.pred, tc.golds, got, tc.want)
		}
	}
}

// fixed answers every question with its entry of answers, searching once first.
func fixed(answers map[string]string) searchr1.GeneratorFunc {
	return func(ctx context.Context, prompt string, stop []string) (string, error) {
		if !strings.Contains(prompt, "\n\n<information>") {
			return "<think>look</think><search> something </search>", nil
		}
		for q, a := range answers {
			if strings.Contains(prompt, "Question: "+q+"?\n") { // the question as the original prepares it
				return "<answer>" + a + "</answer>", nil
			}
		}
		return "no answer", nil
	}
}

type nothing struct{}

func (nothing) Search(ctx context.Context, q string, opts ...memory.SearchOption) ([]memory.Result, error) {
	return nil, nil
}

// TestEvaluatePerDataset: scores are averaged per data_source and overall, an unanswered
// question scores 0, and the runner's own OnEpisode still runs.
func TestEvaluatePerDataset(t *testing.T) {
	qs := []Question{
		{ID: "1", Question: "q1", GoldenAnswers: []string{"Paris"}, DataSource: "nq"},
		{ID: "2", Question: "q2", GoldenAnswers: []string{"Eiffel Tower"}, DataSource: "nq"},
		{ID: "3", Question: "q3", GoldenAnswers: []string{"Berlin"}, DataSource: "hotpotqa"},
		{ID: "4", Question: "q4", GoldenAnswers: []string{"Rome"}, DataSource: "hotpotqa"},
	}
	gen := fixed(map[string]string{"q1": "paris", "q2": "the tower of Eiffel", "q3": "Berlin, Germany"})
	seen := 0
	var out bytes.Buffer
	rn := &searchr1.Runner{Loop: searchr1.Loop{Tags: searchr1.OriginalTags()}, Generator: gen, Searcher: nothing{}, Rollouts: 2,
		OnEpisode: func(*searchr1.Trajectory) { seen++ }, Out: &out}
	rep, err := Evaluate(context.Background(), rn, qs)
	if err != nil {
		t.Fatal(err)
	}
	nq, hp := rep.Datasets["nq"], rep.Datasets["hotpotqa"]
	f1q2 := 2 * (2.0 / 3) * 1 / (2.0/3 + 1)
	if nq.Episodes != 4 || nq.EM != 0.5 || nq.SubEM != 0.5 || !near(nq.F1, (1+f1q2)/2) || nq.Answered != 4 || nq.Searches != 1 {
		t.Errorf("nq %+v", nq)
	}
	if hp.Episodes != 4 || hp.EM != 0 || hp.SubEM != 0.5 || !near(hp.F1, (2.0/3)/2) || hp.Answered != 2 {
		t.Errorf("hotpotqa %+v", hp)
	}
	if rep.Overall.Episodes != 8 || rep.Overall.EM != 0.25 || rep.Overall.SubEM != 0.5 {
		t.Errorf("overall %+v", rep.Overall)
	}
	if seen != 8 || strings.Count(out.String(), "\n") != 8 || rn.OnEpisode == nil {
		t.Errorf("OnEpisode called %d times, %d lines written", seen, strings.Count(out.String(), "\n"))
	}
	var txt bytes.Buffer
	if err := rep.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dataset", "hotpotqa  4", "nq        4         0.5000", "all       8         0.2500  0.5000"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("no %q in\n%s", want, txt.String())
		}
	}
	if _, err := Evaluate(context.Background(), nil, qs); !errors.Is(err, searchr1.ErrInvalidOption) {
		t.Errorf("nil runner: %v", err)
	}
	if _, err := Evaluate(context.Background(), rn, nil); !errors.Is(err, ErrNoQuestions) {
		t.Errorf("no questions: %v", err)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
