package searchr1

import (
	"context"
	"errors"
	"math"
	"testing"
)

func TestTokenF1(t *testing.T) {
	cases := []struct {
		pred  string
		golds []string
		want  float64
	}{
		{"Barack Obama", []string{"Barack Obama"}, 1},
		{"the Barack  Obama!", []string{"barack obama"}, 1}, // SQuAD normalisation
		{"Obama", []string{"Barack Obama"}, 2.0 / 3},        // P 1, R 1/2
		{"Barack Hussein Obama", []string{"Barack Obama"}, 0.8},
		{"Paris", []string{"London", "Paris, France"}, 2.0 / 3}, // best gold
		{"no no no", []string{"no"}, 0.5},                       // multiset: 1 shared of 3
		{"cat", []string{"dog"}, 0},
		{"", []string{""}, 1}, // both empty
		{"the", []string{"a"}, 1},
		{"", []string{"x"}, 0},
		{"x", nil, 0},
	}
	for _, c := range cases {
		if got := TokenF1(c.pred, c.golds...); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("TokenF1(%q, %q) = %v, want %v", c.pred, c.golds, got, c.want)
		}
	}
}

func TestReward(t *testing.T) {
	invalid := Loop{}.InvalidAction()
	budget := Loop{}.budgetMessage()
	prompt := Loop{}.Prompt("Who wrote Hamlet?") // holds "<answer> Beijing </answer>" and "<search> query </search>"
	golds := []string{"William Shakespeare"}
	cases := []struct {
		name     string
		response string
		o        RewardOptions
		want     float64
	}{
		{"em right", "<think>x</think><answer>William Shakespeare</answer>", RewardOptions{}, 1},
		{"em wrong", "<answer>Marlowe</answer>", RewardOptions{}, 0},
		{"em wrong with format score", "<answer>Marlowe</answer>", RewardOptions{FormatScore: 0.1}, 0.1},
		{"no answer", "<think>hmm</think>", RewardOptions{FormatScore: 0.1}, 0},
		{"subem", "<answer>it was William Shakespeare</answer>", RewardOptions{Metric: MetricSubEM}, 1},
		{"f1 partial", "<answer>Shakespeare</answer>", RewardOptions{Metric: MetricF1}, 2.0 / 3},
		{"f1 zero gets format score", "<answer>Marlowe</answer>", RewardOptions{Metric: MetricF1, FormatScore: 0.2}, 0.2},
		{"invalid action message is not an answer", "I think\n" + invalid + "\n", RewardOptions{FormatScore: 0.1}, 0},
		{"budget message is not an answer", "<search>q</search>\n" + budget + "\n", RewardOptions{FormatScore: 0.1}, 0},
		{"answer after invalid message", "oops\n" + invalid + "\n<answer>William Shakespeare</answer>", RewardOptions{}, 1},
		{"Search-R1 rule: the invalid message is not the second match",
			"For example, <answer> Beijing </answer>.\noops\n" + invalid + "\n", RewardOptions{Extract: OriginalExtract(), FormatScore: 0.1}, 0},
		{"full transcript, Search-R1 rule, real answer",
			prompt + "oops\n" + invalid + "\n<answer>William Shakespeare</answer>", RewardOptions{Extract: OriginalExtract()}, 1},
		{"answer inside retrieved block does not count",
			"<search>q</search>\n\n<context>Doc 1 <answer>William Shakespeare</answer></context>\n\n", RewardOptions{}, 0},
		{"search bonus", "<search>hamlet author</search>\n\n<context>x</context>\n\n<answer>William Shakespeare</answer>",
			RewardOptions{SearchBonus: 0.1}, 1.1},
		{"search bonus on wrong answer", "<search>hamlet author</search><context>x</context><answer>Marlowe</answer>",
			RewardOptions{SearchBonus: 0.1}, 0.1},
		{"no bonus without answer", "<search>hamlet author</search><context>x</context>", RewardOptions{SearchBonus: 0.1}, 0},
		{"no bonus for empty search", "<search> </search><answer>William Shakespeare</answer>", RewardOptions{SearchBonus: 0.1}, 1},
		{"no bonus for the prompt's example search", prompt + "<answer>William Shakespeare</answer>",
			RewardOptions{SearchBonus: 0.1, Start: "Question: Who wrote Hamlet?\n"}, 1},
		{"information tags", "<search>q</search><information>x</information><answer>William Shakespeare</answer>",
			RewardOptions{SearchBonus: 0.5, Tags: OriginalTags()}, 1.5},
		{"start marker missing", "<answer>William Shakespeare</answer>", RewardOptions{Start: "<|im_start|>assistant"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.o.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := Reward(c.response, golds, c.o); math.Abs(got-c.want) > 1e-9 {
				t.Fatalf("Reward = %v, want %v", got, c.want)
			}
		})
	}
	if err := (RewardOptions{Metric: "bleu"}).Validate(); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("bad metric: %v", err)
	}
	if err := (RewardOptions{SearchBonus: -1}).Validate(); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("negative bonus: %v", err)
	}
}

func TestLoopReward(t *testing.T) {
	s := multiHopSearcher()
	cases := []struct {
		name    string
		outputs []string
		o       RewardOptions
		want    float64
	}{
		{"searched and right", []string{"<search>director of Inception</search>", "<answer>Christopher Nolan</answer>"},
			RewardOptions{SearchBonus: 0.25}, 1.25},
		{"right without search", []string{"<answer>Christopher Nolan</answer>"}, RewardOptions{SearchBonus: 0.25}, 1},
		{"f1", []string{"<answer>Nolan</answer>"}, RewardOptions{Metric: MetricF1}, 2.0 / 3},
		// Invalid turns get the loop's message (with "<answer> and </answer>"); the final
		// generation gives no answer: nothing may count.
		{"invalid turns only", []string{"hmm", "hmm", "hmm", "hmm", "still nothing"}, RewardOptions{FormatScore: 0.1, SearchBonus: 1}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := Loop{}
			ep, err := l.Run(context.Background(), &Scripted{Outputs: c.outputs}, s, "Who directed Inception?")
			if err != nil {
				t.Fatal(err)
			}
			if got := l.Reward(ep, []string{"Christopher Nolan"}, c.o); math.Abs(got-c.want) > 1e-9 {
				t.Fatalf("Loop.Reward = %v, want %v (answer %q answered %v)", got, c.want, ep.Answer, ep.Answered)
			}
			// The transcript-based reward agrees once the prompt is cut off.
			if got := Reward(ep.Transcript, []string{"Christopher Nolan"}, RewardOptions{
				Metric: c.o.Metric, FormatScore: c.o.FormatScore, SearchBonus: c.o.SearchBonus,
				Start: "Question: Who directed Inception?\n",
			}); math.Abs(got-c.want) > 1e-9 {
				t.Fatalf("Reward(transcript) = %v, want %v:\n%s", got, c.want, ep.Transcript)
			}
		})
	}
	if (Loop{}).Reward(nil, nil, RewardOptions{}) != 0 {
		t.Fatal("nil episode")
	}
}
