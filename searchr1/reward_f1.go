package searchr1

import (
	"fmt"
	"regexp"
	"strings"
)

// TokenF1 is SQuAD's token-level F1 of prediction against the best of golds: both are
// normalised by [NormalizeAnswer] and split on whitespace, and F1 = 2PR/(P+R) over the
// multiset of shared tokens. When a normalised side is empty the score is 1 if both are,
// else 0 (SQuAD v2's rule). Without golds it is 0.
func TokenF1(prediction string, golds ...string) float64 {
	pred := pyFields(NormalizeAnswer(prediction))
	best := 0.0
	for _, g := range golds {
		if f := tokenF1(pred, pyFields(NormalizeAnswer(g))); f > best {
			best = f
		}
	}
	return best
}

func tokenF1(pred, gold []string) float64 {
	if len(pred) == 0 || len(gold) == 0 {
		if len(pred) == len(gold) {
			return 1
		}
		return 0
	}
	counts := make(map[string]int, len(gold))
	for _, t := range gold {
		counts[t]++
	}
	same := 0
	for _, t := range pred {
		if counts[t] > 0 {
			counts[t]--
			same++
		}
	}
	if same == 0 {
		return 0
	}
	p := float64(same) / float64(len(pred))
	r := float64(same) / float64(len(gold))
	return 2 * p * r / (p + r)
}

// RewardMetric names how [Reward] compares the extracted answer with the gold answers.
type RewardMetric string

// Reward metrics.
const (
	// MetricEM is exact match after normalisation (Search-R1's em_check); the default.
	MetricEM RewardMetric = "em"
	// MetricSubEM is substring match after normalisation (subem_check).
	MetricSubEM RewardMetric = "subem"
	// MetricF1 is [TokenF1].
	MetricF1 RewardMetric = "f1"
)

// RewardOptions configure [Reward] and [Loop.Reward]; the JSON names are the ones seed
// trainers use in their reward configuration. The zero value scores exact match, 0 for a
// wrong answer, no bonus.
type RewardOptions struct {
	// Metric is em (default), subem, f1 or search_reward.
	Metric RewardMetric `json:"reward_metric,omitempty"`
	// FormatScore is given for an answer that was extracted but scores 0 (Search-R1's
	// format_score; default 0).
	FormatScore float64 `json:"format_score,omitempty"`
	// SearchBonus is added once when the response made at least one non-empty search and
	// gave an answer (searching without answering earns nothing). Not used by
	// [MetricSearchReward], which has its own scores.
	SearchBonus float64 `json:"reward_search_bonus,omitempty"`
	// SearchReward are the scores of [MetricSearchReward] (zero: [OriginalFormatScores],
	// Search-R1's script values 1, 0.2, 0.1, 0).
	SearchReward FormatScores `json:"search_reward,omitempty"`
	// Tags names the protocol tags (default [DefaultTags]).
	Tags Tags `json:"-"`
	// Extract configures the answer extraction (default: the last answer block of the
	// response, one match; the tag defaults to Tags.Answer).
	Extract ExtractOptions `json:"-"`
	// Start marks where the model's response begins (as in [FormatOptions]); the text
	// after its last occurrence is scored. Empty: the whole text, so pass only the model's
	// part, or a full transcript with Extract.MinMatches 2 as Search-R1 does.
	Start string `json:"-"`
	// Ignore are texts removed before scoring; nil means the loop's own messages for
	// Tags: the invalid-action and the search-budget observations, which spell out
	// "<answer> and </answer>" and must never count as an answer.
	Ignore []string `json:"-"`
}

// Validate reports an unknown metric or a negative score as [ErrInvalidOption].
func (o RewardOptions) Validate() error {
	switch o.Metric {
	case "", MetricEM, MetricSubEM, MetricF1, MetricSearchReward:
	default:
		return fmt.Errorf("%w: reward_metric %q: want em, subem, f1 or search_reward", ErrInvalidOption, o.Metric)
	}
	if sr := o.SearchReward; sr.negative() {
		return fmt.Errorf("%w: search_reward scores %+v must not be negative", ErrInvalidOption, sr)
	}
	if o.FormatScore < 0 || o.SearchBonus < 0 {
		return fmt.Errorf("%w: format_score %v and reward_search_bonus %v must not be negative", ErrInvalidOption, o.FormatScore, o.SearchBonus)
	}
	return nil
}

// Reward scores a model response against golds as seed trainers do: the loop's own
// messages (Ignore) and the retrieved blocks are removed, the answer is extracted (see
// [ExtractSolution]) and compared by Metric; FormatScore is given for a wrong extracted
// answer and SearchBonus is added when the response searched and answered
// ([MetricSearchReward] uses its own weights instead). No answer scores 0. An invalid Metric scores as em (see [RewardOptions.Validate]).
func Reward(response string, golds []string, o RewardOptions) float64 {
	tags := o.Tags.withDefaults()
	if o.Start != "" {
		i := strings.LastIndex(response, o.Start)
		if i < 0 {
			return 0
		}
		response = response[i+len(o.Start):]
	}
	if o.Metric == MetricSearchReward {
		// Search-R1 reads the response as the model saw it, the loop's messages and the
		// retrieved blocks included (a malformed turn is part of what it scores).
		fo := Loop{Tags: tags}.formatOptions()
		fo.Extract = o.Extract
		return formatReward(response, golds, fo, o.SearchReward.orOriginal())
	}
	ignore := o.Ignore
	if ignore == nil {
		l := Loop{Tags: tags}
		ignore = []string{l.InvalidAction(), l.budgetMessage()}
	}
	for _, m := range ignore {
		if m != "" {
			response = strings.ReplaceAll(response, m, "")
		}
	}
	// Retrieved text is evidence, never the model's answer or search.
	for _, ctx := range []string{tags.Context, OriginalTags().Context} {
		response = blockRE(ctx).ReplaceAllString(response, "")
	}
	ex := o.Extract
	if ex.Tag == "" {
		ex.Tag = tags.Answer
	}
	a, ok := ExtractSolution(response, ex)
	if !ok {
		return 0
	}
	var score float64
	switch o.Metric {
	case MetricSubEM:
		if SubstringMatch(a, golds...) {
			score = 1
		}
	case MetricF1:
		score = TokenF1(a, golds...)
	default:
		if ExactMatch(a, golds...) {
			score = 1
		}
	}
	if score == 0 {
		score = o.FormatScore
	}
	if o.SearchBonus != 0 && searched(response, tags.Search) {
		score += o.SearchBonus
	}
	return score
}

// Reward scores an episode of this loop: the answer the loop itself read from the model
// (never its own messages) compared by o.Metric, FormatScore for a wrong answer, and
// SearchBonus when the episode ran at least one search and answered.
func (l Loop) Reward(ep *Episode, golds []string, o RewardOptions) float64 {
	if ep == nil || !ep.Answered {
		return 0
	}
	if o.Metric == MetricSearchReward {
		return l.SearchReward(ep, golds, o.SearchReward)
	}
	var score float64
	switch o.Metric {
	case MetricSubEM:
		if SubstringMatch(ep.Answer, golds...) {
			score = 1
		}
	case MetricF1:
		score = TokenF1(ep.Answer, golds...)
	default:
		if ExactMatch(ep.Answer, golds...) {
			score = 1
		}
	}
	if score == 0 {
		score = o.FormatScore
	}
	if ep.Trace.Searches > 0 {
		score += o.SearchBonus
	}
	return score
}

// searched reports whether text holds a non-empty search block.
func searched(text, tag string) bool {
	for _, m := range blockRE(tag).FindAllStringSubmatch(text, -1) {
		if strings.TrimSpace(m[1]) != "" {
			return true
		}
	}
	return false
}

// blockRE matches <tag>…</tag> (shortest, across lines) and captures the content.
func blockRE(tag string) *regexp.Regexp { return tagRE(tag) }
