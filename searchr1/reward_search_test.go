package searchr1

import (
	"errors"
	"testing"
)

// TestSearchReward holds MetricSearchReward to Search-R1's format-aware reward over the
// episode's turns: well formed and correct 1, malformed and correct 0.8, well formed and
// wrong 0.2 (+ Retrieval when a gold answer was retrieved), malformed and wrong 0.1, no
// answer 0.
func TestSearchReward(t *testing.T) {
	l := Loop{Tags: OriginalTags()}
	info := func(body string) string { return "\n\n<information>" + body + "</information>\n\n" }
	search := Turn{Text: "<think>look it up</think>\n<search> capital of france </search>", Observation: info("Doc 1(Title: France) Paris is the capital.")}
	searchMiss := Turn{Text: "<think>look it up</think><search>france</search>", Observation: info("Doc 1(Title: France) A country.")}
	answer := func(a string) Turn { return Turn{Text: "<think>found</think>\n<answer> " + a + " </answer>"} }
	invalid := Turn{Text: "I will answer now.", Observation: "\n" + l.InvalidAction() + "\n"}
	ep := func(ans string, answered bool, turns ...Turn) *Episode {
		return &Episode{Answer: ans, Answered: answered, Trace: Trace{Turns: turns}}
	}
	withRetrieval := FormatScores{Score: 1, Structure: 0.2, Final: 0.1, Retrieval: 0.1}
	cases := []struct {
		name string
		ep   *Episode
		s    FormatScores
		want float64
	}{
		{"well formed, correct", ep("Paris", true, search, answer("Paris")), FormatScores{}, 1},
		{"well formed, no search, correct", ep("Paris", true, answer("Paris")), FormatScores{}, 1},
		{"malformed (invalid action), correct", ep("Paris", true, invalid, search, answer("Paris")), FormatScores{}, 0.8},
		{"well formed, wrong", ep("Lyon", true, searchMiss, answer("Lyon")), FormatScores{}, 0.2},
		{"well formed, wrong, gold retrieved", ep("Lyon", true, search, answer("Lyon")), withRetrieval, 0.3},
		{"well formed, wrong, gold not retrieved", ep("Lyon", true, searchMiss, answer("Lyon")), withRetrieval, 0.2},
		{"malformed, wrong", ep("Lyon", true, invalid, answer("Lyon")), FormatScores{}, 0.1},
		{"no answer", ep("", false, search), FormatScores{}, 0},
		{"nil episode", nil, FormatScores{}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := l.SearchReward(c.ep, []string{"Paris"}, c.s)
			if d := got - c.want; d > 1e-9 || d < -1e-9 {
				t.Fatalf("SearchReward = %v, want %v (response %q)", got, c.want, l.ResponseText(c.ep))
			}
			if c.ep == nil {
				return
			}
			// Loop.Reward and Reward over the same text agree with it.
			o := RewardOptions{Metric: MetricSearchReward, SearchReward: c.s, Tags: OriginalTags()}
			if r := l.Reward(c.ep, []string{"Paris"}, o); r != got {
				t.Errorf("Loop.Reward = %v, SearchReward %v", r, got)
			}
			if r := Reward(l.ResponseText(c.ep), []string{"Paris"}, o); r != got {
				t.Errorf("Reward(text) = %v, SearchReward %v", r, got)
			}
		})
	}
	bad := RewardOptions{Metric: MetricSearchReward, SearchReward: FormatScores{Structure: -1}}
	if err := bad.Validate(); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("negative scores: %v, want ErrInvalidOption", err)
	}
}
