package searchr1

import "strings"

// MetricSearchReward selects Search-R1's format-aware outcome reward (v0.3, qa_em_format)
// in [Reward] and [Loop.Reward]: the exact match of the answer combined with whether the
// model's turns follow the protocol (think, then search and read, then think and answer;
// see [validSequence]) and whether a gold answer was retrieved, weighted by
// [FormatScores] (the zero value means [OriginalFormatScores]: 1 for a correct answer in
// a well-formed episode, 0.8 for one in a malformed episode, 0.2 for a well-formed
// episode with a wrong answer, 0.1 for a malformed one with an answer, 0 without).
//
// The project seed's own search_reward formula is not available to this package; this
// metric is the search-aware reward of the Search-R1 training scripts, the one a
// Search-R1 user expects under that name.
const MetricSearchReward RewardMetric = "search_reward"

// orOriginal is s, or [OriginalFormatScores] when s is the zero value.
func (s FormatScores) orOriginal() FormatScores {
	if s == (FormatScores{}) {
		return OriginalFormatScores()
	}
	return s
}

// negative reports whether any weight is below zero.
func (s FormatScores) negative() bool {
	return s.Score < 0 || s.Structure < 0 || s.Final < 0 || s.Retrieval < 0
}

// formatOptions are the [FormatOptions] of this loop's tags: its search and answer tags,
// and its context tag in the place of Search-R1's information block.
func (l Loop) formatOptions() FormatOptions {
	t := l.Tags.withDefaults()
	return FormatOptions{Search: t.Search, Information: t.Context, Answer: t.Answer}
}

// ResponseText is the model's part of an episode as the model saw it: every turn's text
// followed by what the loop injected after it (retrieved passages, or the loop's own
// messages), without the prompt. Search-R1's reward functions read this text.
func (l Loop) ResponseText(ep *Episode) string {
	if ep == nil {
		return ""
	}
	var b strings.Builder
	for _, t := range ep.Trace.Turns {
		b.WriteString(t.Text)
		b.WriteString(t.Observation)
	}
	return b.String()
}

// SearchReward is [MetricSearchReward] for an episode of this loop, with weights s (the
// zero value: [OriginalFormatScores]), scored on [Loop.ResponseText]: the loop's own
// messages (an invalid action, the search budget) make the episode malformed, as in
// Search-R1, where they are part of the response the reward reads. An episode without
// an answer scores 0 unless it is well formed, which needs an answer, so it scores 0.
func (l Loop) SearchReward(ep *Episode, golds []string, s FormatScores) float64 {
	if ep == nil || !ep.Answered {
		return 0
	}
	return formatReward(l.ResponseText(ep), golds, l.formatOptions(), s.orOriginal())
}
