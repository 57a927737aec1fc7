package searchr1

import (
	"context"
	"strings"
	"testing"
)

func TestNormalizeAnswer(t *testing.T) {
	cases := []struct{ in, want string }{
		{"The  Eiffel Tower!", "eiffel tower"},
		{"an apple, a pear", "apple pear"},
		{"Theater", "theater"},
		{"U.S.A.", "usa"},
		{"  Beijing\n", "beijing"},
		{"a", ""},
	}
	for _, c := range cases {
		if got := NormalizeAnswer(c.in); got != c.want {
			t.Errorf("NormalizeAnswer(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestMatches(t *testing.T) {
	cases := []struct {
		pred  string
		golds []string
		em    bool
		subem bool
	}{
		{"The Beatles", []string{"Beatles"}, true, true},
		{"the beatles band", []string{"Beatles", "Fab Four"}, false, true},
		{"Fab four.", []string{"Beatles", "Fab Four"}, true, true},
		{"Stones", []string{"Beatles"}, false, false},
		{"x", nil, false, false},
	}
	for _, c := range cases {
		if got := ExactMatch(c.pred, c.golds...); got != c.em {
			t.Errorf("ExactMatch(%q, %q) = %v", c.pred, c.golds, got)
		}
		if got := SubstringMatch(c.pred, c.golds...); got != c.subem {
			t.Errorf("SubstringMatch(%q, %q) = %v", c.pred, c.golds, got)
		}
	}
}

func TestExtractSolution(t *testing.T) {
	prompt := "For example, <answer> Beijing </answer>. Question: q\n"
	cases := []struct {
		text   string
		opts   ExtractOptions
		want   string
		wantOK bool
	}{
		{prompt + "<answer> Paris </answer>", OriginalExtract(), "Paris", true},
		{prompt + "no answer", OriginalExtract(), "", false},
		{"<answer>only</answer>", OriginalExtract(), "", false},
		{"<answer>only</answer>", ExtractOptions{}, "only", true},
		{"<answer>a</answer> <answer>b\n</answer>", ExtractOptions{}, "b", true},
		{"<ans>x</ans>", ExtractOptions{Tag: "ans"}, "x", true},
		// The loop's placeholder "<answer> and </answer>" is never an answer.
		{"put the answer between <answer> and </answer>.", ExtractOptions{}, "", false},
		{prompt + "put the answer between <answer> and </answer>.", OriginalExtract(), "", false},
		{"<answer>x</answer> between <answer> and </answer>.", ExtractOptions{}, "x", true},
		{"between <ans> and </ans>.", ExtractOptions{Tag: "ans"}, "", false},
		{"<answer>and</answer>", ExtractOptions{}, "and", true},
	}
	for _, c := range cases {
		got, ok := ExtractSolution(c.text, c.opts)
		if got != c.want || ok != c.wantOK {
			t.Errorf("ExtractSolution(%q) = %q, %v; want %q, %v", c.text, got, ok, c.want, c.wantOK)
		}
	}
	if r := emReward(prompt+"<answer>the Paris</answer>", []string{"Paris"}, OriginalExtract(), 0, 1); r != 1 {
		t.Errorf("EMReward correct = %v", r)
	}
	if r := emReward(prompt+"<answer>Lyon</answer>", []string{"Paris"}, OriginalExtract(), 0.1, 1); r != 0.1 {
		t.Errorf("EMReward wrong = %v", r)
	}
	if r := emReward(prompt, []string{"Paris"}, OriginalExtract(), 0.1, 1); r != 0 {
		t.Errorf("EMReward none = %v", r)
	}
}

// TestExtractSolutionNeverAnswered runs the loop with a model that never answers: the
// transcript spells out "<answer> and </answer>" in the prompt and in the invalid-action
// and search-budget messages, and none of them is an answer.
func TestExtractSolutionNeverAnswered(t *testing.T) {
	for _, tags := range []Tags{{}, OriginalTags(), {Answer: "final"}} {
		l := Loop{Tags: tags, MaxSearches: 1}
		gen := &Scripted{Outputs: []string{"hmm", "<search>q</search>", "<search>q2</search>", "no idea", "still nothing"}}
		ep, err := l.Run(context.Background(), gen, &fakeSearcher{}, "q")
		if err != nil {
			t.Fatal(err)
		}
		if ep.Answered {
			t.Fatalf("tags %+v: episode answered %q", tags, ep.Answer)
		}
		tag := tags.withDefaults().Answer
		for _, msg := range []string{l.InvalidAction(), l.budgetMessage()} {
			if !strings.Contains(ep.Transcript, msg) {
				t.Fatalf("tags %+v: transcript lacks %q:\n%s", tags, msg, ep.Transcript)
			}
		}
		// The full transcript with Search-R1's two-block rule, and the model's part alone
		// (after the prompt, whose "Beijing" example is a block) with the default rule.
		response := strings.TrimPrefix(ep.Transcript, l.Prompt("q"))
		for _, c := range []struct {
			text string
			opts ExtractOptions
		}{
			{ep.Transcript, ExtractOptions{Tag: tag, MinMatches: 2}},
			{response, ExtractOptions{Tag: tag}},
		} {
			if a, ok := ExtractSolution(c.text, c.opts); ok || a != "" {
				t.Errorf("tags %+v, %+v: ExtractSolution = %q, %v; want \"\", false", tags, c.opts, a, ok)
			}
		}
		ro := RewardOptions{Tags: tags, Extract: ExtractOptions{MinMatches: 2}, FormatScore: 0.1}
		if r := Reward(ep.Transcript, []string{"Beijing"}, ro); r != 0 {
			t.Errorf("tags %+v: Reward = %v, want 0", tags, r)
		}
	}
}
