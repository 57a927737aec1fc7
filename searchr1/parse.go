package searchr1

import (
	"regexp"
	"strings"
	"sync"
)

// Tags names the tags of the protocol, without angle brackets. Empty fields take the
// defaults of [DefaultTags].
type Tags struct {
	Search  string // the model asks for a search: <search>query</search>
	Context string // the loop injects passages: <context>…</context>
	Answer  string // the model answers: <answer>…</answer>
}

// DefaultTags returns the seed protocol: search, context, answer.
func DefaultTags() Tags { return Tags{Search: "search", Context: "context", Answer: "answer"} }

// OriginalTags returns the protocol of the original Search-R1 checkpoints, which read
// passages between <information> and </information>.
func OriginalTags() Tags { return Tags{Search: "search", Context: "information", Answer: "answer"} }

func (t Tags) withDefaults() Tags {
	if t.Search == "" {
		t.Search = DefaultTags().Search
	}
	if t.Context == "" {
		t.Context = DefaultTags().Context
	}
	if t.Answer == "" {
		t.Answer = DefaultTags().Answer
	}
	return t
}

func openTag(tag string) string  { return "<" + tag + ">" }
func closeTag(tag string) string { return "</" + tag + ">" }

// tagPair is how the loop's own messages name a tag: "<tag> and </tag>". It is never an
// answer (see [ExtractSolution]).
func tagPair(tag string) string { return openTag(tag) + " and " + closeTag(tag) }

// ActionKind says what a model turn asked for.
type ActionKind string

const (
	// ActionSearch: the turn holds a <search> query.
	ActionSearch ActionKind = "search"
	// ActionAnswer: the turn holds an <answer>.
	ActionAnswer ActionKind = "answer"
	// ActionInvalid: the turn holds neither a well-formed search nor an answer.
	ActionInvalid ActionKind = "invalid"
)

// action is the parsed action of one model turn.
type action struct {
	Kind    ActionKind
	Content string // the query or the answer, trimmed; empty for ActionInvalid
}

var actionREs sync.Map // Tags -> *regexp.Regexp

func actionRE(t Tags) *regexp.Regexp {
	if re, ok := actionREs.Load(t); ok {
		return re.(*regexp.Regexp)
	}
	// Go's RE2 has no back-references: the alternation of the two tag pairs, leftmost
	// first, matches exactly what <(search|answer)>(.*?)</\1> with DOTALL matches.
	s, a := regexp.QuoteMeta(t.Search), regexp.QuoteMeta(t.Answer)
	re := regexp.MustCompile(`(?s)<` + s + `>(.*?)</` + s + `>|<` + a + `>(.*?)</` + a + `>`)
	actionREs.Store(t, re)
	return re
}

// parseAction returns the first <search>…</search> or <answer>…</answer> in text (Search-R1's
// postprocess_predictions: first match of <(search|answer)>(.*?)</\1>, DOTALL, content
// stripped). Tags with empty fields use [DefaultTags].
func parseAction(text string, tags Tags) action {
	tags = tags.withDefaults()
	m := actionRE(tags).FindStringSubmatchIndex(text)
	if m == nil {
		return action{Kind: ActionInvalid}
	}
	if m[2] >= 0 {
		return action{Kind: ActionSearch, Content: pyStrip(text[m[2]:m[3]])}
	}
	return action{Kind: ActionAnswer, Content: pyStrip(text[m[4]:m[5]])}
}

// cutResponse trims a generation at the first closing tag among stops (keeping the tag),
// so text a generator produced past its stop sequence is dropped. When no closing tag is
// present but an opening tag of one of them is left unclosed, the generator most likely
// stopped on the stop sequence and omitted it (as OpenAI-compatible servers do): the
// closing tag is appended unless repair is false. The second result reports a repair.
//
// Search-R1's _postprocess_responses prefers </search> even when </answer> comes first;
// cutResponse cuts at whichever comes first, which is what a stop-sequence decoder does.
func cutResponse(text string, closers []string, repair bool) (string, bool) {
	cut := -1
	var tag string
	for _, c := range closers {
		if c == "" {
			continue
		}
		if i := strings.Index(text, c); i >= 0 && (cut < 0 || i < cut) {
			cut, tag = i, c
		}
	}
	if cut >= 0 {
		return text[:cut+len(tag)], false
	}
	if !repair {
		return text, false
	}
	// Close the last opened tag when nothing follows it that could be another tag.
	best, bestCloser := -1, ""
	for _, c := range closers {
		if !strings.HasPrefix(c, "</") {
			continue
		}
		opener := "<" + c[2:]
		if i := strings.LastIndex(text, opener); i > best {
			best, bestCloser = i, c
		}
	}
	if best < 0 {
		return text, false
	}
	text = strings.TrimRight(text, " \t\r\n")
	return text + bestCloser, true
}
