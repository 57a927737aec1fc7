package searchr1_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/searchr1"
)

// ExampleRunner runs 2 questions x 3 rollouts in lockstep: every round's searches go to
// the store as one batch, and each episode is written as one JSON line. A training run
// points Generator at a vLLM server: &searchr1.OpenAI{BaseURL: "http://127.0.0.1:8000/v1",
// Model: "...", Temperature: 1}.
func ExampleRunner() {
	ctx := context.Background()
	m, err := memory.Open("") // a temporary store, removed on Close
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	if err := m.Add(ctx,
		memory.Document{ID: "fr", Title: "France", Text: "Paris is the capital of France."},
		memory.Document{ID: "de", Title: "Germany", Text: "Berlin is the capital of Germany."},
	); err != nil {
		fmt.Println(err)
		return
	}
	model := searchr1.GeneratorFunc(func(ctx context.Context, prompt string, stop []string) (string, error) {
		switch {
		case !strings.Contains(prompt, "\n\n<information>"):
			q := prompt[strings.LastIndex(prompt, "Question: ")+len("Question: "):]
			return "<think>Search first.</think><search>" + strings.TrimSpace(q) + "</search>", nil
		case strings.Contains(prompt, "Paris is"):
			return "<think>Found.</think><answer>Paris</answer>", nil
		default:
			return "<think>Found.</think><answer>Berlin</answer>", nil
		}
	})
	var out bytes.Buffer
	runner := &searchr1.Runner{
		Loop:      searchr1.Loop{Tags: searchr1.OriginalTags(), TopK: 1, MaxTurns: 4},
		Generator: model,
		Searcher:  m,
		Rollouts:  3,
		Reward:    searchr1.RewardOptions{Metric: searchr1.MetricSearchReward},
		Out:       &out,
	}
	stats, err := runner.Run(ctx, []searchr1.Question{
		{ID: "q1", Question: "capital of France", GoldenAnswers: []string{"Paris"}},
		{ID: "q2", Question: "capital of Germany", GoldenAnswers: []string{"Berlin"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d episodes, %d rounds, %d search batches of %d queries\n", stats.Written, stats.Rounds, stats.SearchBatches, stats.Searches)
	sc := bufio.NewScanner(&out)
	sc.Scan()
	var t searchr1.Trajectory
	if err := json.Unmarshal(sc.Bytes(), &t); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s/%d: searched %q, got %s, answered %q: em %.0f, search_reward %.1f\n",
		t.ID, t.Rollout, t.Turns[0].Query, t.Turns[0].Results[0].ID, t.Answer, t.EM, t.Reward)
	// Output:
	// 6 episodes, 2 rounds, 1 search batches of 6 queries
	// q1/0: searched "capital of France?", got fr, answered "Paris": em 1, search_reward 1.0
}
