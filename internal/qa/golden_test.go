package qa

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory/searchr1"
)

// TestScoreMatchesPython: Score's EM, SubEM and F1 are what CPython computes with
// Search-R1's qa_em.py normalisation for every case of the differential suite
// (searchr1/testdata/qa_em_cases.py and its golden file): Unicode word boundaries, every
// Python whitespace character, Python's case mappings, empty answers.
func TestScoreMatchesPython(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "searchr1", "testdata", "qa_em_cases.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Cases []struct {
			Prediction string   `json:"prediction"`
			Golds      []string `json:"golds"`
			EM         float64  `json:"em"`
			SubEM      float64  `json:"subem"`
			F1         float64  `json:"f1"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) < 100 {
		t.Fatalf("%d cases", len(g.Cases))
	}
	bad := 0
	for _, c := range g.Cases {
		want := Match{EM: c.EM, SubEM: c.SubEM, F1: c.F1}
		if got := Score(c.Prediction, c.Golds); got != want {
			if bad++; bad <= 20 {
				t.Errorf("Score(%+q, %+q) = %+v, Python: %+v", c.Prediction, c.Golds, got, want)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d cases differ from Python", bad, len(g.Cases))
	}
}

// TestEmptyGoldPerItem: a question without a non-empty golden answer does not reject its
// file; it is scored as the original scores it (no answers: 0; an empty answer: SubEM 1)
// and the report counts it.
func TestEmptyGoldPerItem(t *testing.T) {
	qs, err := Load(strings.NewReader(`{"id":"1","question":"q1","golden_answers":["Paris"]}`+"\n"+
		`{"id":"2","question":"q2","golden_answers":[""]}`+"\n"+
		`{"id":"3","question":"q3","golden_answers":[]}`+"\n"), "f.jsonl")
	if err != nil || len(qs) != 3 {
		t.Fatalf("%+v %v", qs, err)
	}
	for i, want := range []bool{false, true, true} {
		if EmptyGold(qs[i]) != want {
			t.Errorf("EmptyGold(%+v) = %v", qs[i], !want)
		}
	}
	gen := fixed(map[string]string{"q1": "Paris", "q2": "Paris", "q3": "Paris"})
	rn := &searchr1.Runner{Loop: searchr1.Loop{Tags: searchr1.OriginalTags()}, Generator: gen, Searcher: nothing{}}
	rep, err := Evaluate(context.Background(), rn, qs)
	if err != nil {
		t.Fatal(err)
	}
	o := rep.Overall
	if o.Episodes != 3 || o.EmptyGold != 2 || !near(o.EM, 1.0/3) || !near(o.SubEM, 2.0/3) {
		t.Errorf("overall %+v: want EM 1/3 (q1), SubEM 2/3 (q1, and q2 whose empty answer every prediction holds), 2 without answers", o)
	}
	var txt bytes.Buffer
	if err := rep.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "note: 2 episodes are of questions without a non-empty golden answer") {
		t.Errorf("no note in\n%s", txt.String())
	}
}
