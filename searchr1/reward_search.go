package searchr1

// MetricSearchReward selects the seed framework's search_reward in [Reward] and
// [Loop.Reward]: a weighted sum of a correct answer, a search and reasoning (see
// [SearchRewardScores]).
const MetricSearchReward RewardMetric = "search_reward"

// SearchRewardScores are the weights of the seed's search_reward ([MetricSearchReward]):
// Answer times the exact match of the answer, plus Search when the episode ran at least
// one non-empty search, plus Reasoning when the model's text holds a non-empty
// <think>…</think> block. Both bonuses need an answer: an episode that never answers
// scores 0, so searching or thinking without answering earns nothing. The zero value
// means [SeedSearchRewardScores].
type SearchRewardScores struct {
	Answer    float64 `json:"answer"`
	Search    float64 `json:"search"`
	Reasoning float64 `json:"reasoning"`
}

// SeedSearchRewardScores returns the seed's weights: answer 0.5, search 0.1, reasoning 0.2
// (a perfect episode scores 0.8).
func SeedSearchRewardScores() SearchRewardScores {
	return SearchRewardScores{Answer: 0.5, Search: 0.1, Reasoning: 0.2}
}

func (s SearchRewardScores) withDefaults() SearchRewardScores {
	if s == (SearchRewardScores{}) {
		return SeedSearchRewardScores()
	}
	return s
}

// searchReward combines the parts of the seed's search_reward.
func (s SearchRewardScores) score(correct, searched, reasoned bool) float64 {
	s = s.withDefaults()
	var v float64
	if correct {
		v += s.Answer
	}
	if searched {
		v += s.Search
	}
	if reasoned {
		v += s.Reasoning
	}
	return v
}

// thinkTag is the reasoning tag of Search-R1's prompt.
const thinkTag = "think"

// reasoned reports whether text holds a non-empty <think>…</think> block.
func reasoned(text string) bool { return searched(text, thinkTag) }

// SearchReward is the seed's search_reward of an episode of this loop, with weights s (the
// zero value: [SeedSearchRewardScores]): the answer the loop read from the model compared
// by exact match, the episode's searches, and the reasoning of the model's turns (never
// the prompt or the injected passages).
func (l Loop) SearchReward(ep *Episode, golds []string, s SearchRewardScores) float64 {
	if ep == nil || !ep.Answered {
		return 0
	}
	think := false
	for _, t := range ep.Trace.Turns {
		if reasoned(t.Text) {
			think = true
			break
		}
	}
	return s.score(ExactMatch(ep.Answer, golds...), ep.Trace.Searches > 0, think)
}
