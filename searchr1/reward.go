package searchr1

import (
	"regexp"
	"strings"
)

// NormalizeAnswer is Search-R1's normalize_answer (qa_em.py, SQuAD's): lower case
// (Python's str.lower, full case mapping: "İ" becomes "i̇", a word-final "Σ" "ς"), every
// character of Python's string.punctuation (ASCII) removed, the articles a, an and the
// replaced by a space where they stand as words (re's \b(a|an|the)\b, whose word
// characters are Unicode letters, numbers and "_": "aé" keeps its "a"), and whitespace
// runs collapsed to one space with the ends trimmed (" ".join(s.split()), whose whitespace
// includes U+001C to U+001F). It equals the original on every input; see
// testdata/qa_em_cases.py, which computes the expected values with CPython.
func NormalizeAnswer(s string) string {
	s = pyLower(s)
	s = strings.Map(func(r rune) rune {
		if r < 128 && strings.ContainsRune(asciiPunct, r) {
			return -1
		}
		return r
	}, s)
	s = removeArticles(s)
	return strings.Join(pyFields(s), " ")
}

// asciiPunct is Python's string.punctuation.
const asciiPunct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// ExactMatch reports whether the normalised prediction equals any normalised gold answer
// (Search-R1's em_check).
func ExactMatch(prediction string, golds ...string) bool {
	p := NormalizeAnswer(prediction)
	for _, g := range golds {
		if NormalizeAnswer(g) == p {
			return true
		}
	}
	return false
}

// SubstringMatch reports whether any normalised gold answer occurs in the normalised
// prediction (Search-R1's subem_check).
func SubstringMatch(prediction string, golds ...string) bool {
	p := NormalizeAnswer(prediction)
	for _, g := range golds {
		if strings.Contains(p, NormalizeAnswer(g)) {
			return true
		}
	}
	return false
}

// ExtractOptions configure [ExtractSolution].
type ExtractOptions struct {
	// Tag is the answer tag name (default "answer").
	Tag string
	// MinMatches is how many answer blocks the text must hold for the last one to count
	// (default 1). Search-R1's extract_solution uses 2 on a full transcript, because its
	// prompt's own "<answer> Beijing </answer>" example is one of them: use
	// [OriginalExtract].
	MinMatches int
}

// OriginalExtract returns extract_solution's rule for a full transcript (prompt and
// response): at least two answer blocks, the last one counts.
func OriginalExtract() ExtractOptions { return ExtractOptions{MinMatches: 2} }

// ExtractSolution returns the content (trimmed) of the LAST answer block of text and true,
// or "" and false when text holds fewer than opts.MinMatches answer blocks: a model that
// never answered has no answer.
//
// The placeholder "<answer> and </answer>" (with the configured tag) is never an answer
// block: it is how the loop's prompt, invalid-action and search-budget messages spell out
// the tags (see [Loop.Prompt]), so a transcript whose model never answered does not
// yield "and". (Search-R1's extract_solution counts it, so for such a transcript it
// answers "and", or "Beijing", the prompt's example.)
func ExtractSolution(text string, opts ExtractOptions) (string, bool) {
	tag := opts.Tag
	if tag == "" {
		tag = "answer"
	}
	min := opts.MinMatches
	if min < 1 {
		min = 1
	}
	placeholder := tagPair(tag)
	var last string
	n := 0
	for _, m := range tagRE(tag).FindAllStringSubmatch(text, -1) {
		if m[0] == placeholder {
			continue
		}
		last = m[1]
		n++
	}
	if n < min {
		return "", false
	}
	return pyStrip(last), true
}

func tagRE(tag string) *regexp.Regexp {
	q := regexp.QuoteMeta(tag)
	return regexp.MustCompile(`(?s)<` + q + `>(.*?)</` + q + `>`)
}

// emReward is Search-R1's compute_score_em: the extracted solution (see [ExtractSolution])
// scores score when it exactly matches a gold answer, formatScore when it does not, and 0
// when there is none.
func emReward(text string, golds []string, opts ExtractOptions, formatScore, score float64) float64 {
	a, ok := ExtractSolution(text, opts)
	if !ok {
		return 0
	}
	if ExactMatch(a, golds...) {
		return score
	}
	return formatScore
}

// FormatScores are the scores of [formatReward] (Search-R1 v0.3's qa_em_format).
type FormatScores struct {
	// Score is given for a correct answer in a well-formed response (default 1).
	Score float64
	// Structure is given for a well-formed response whose answer is wrong or missing
	// (script value 0.2); a correct answer in a malformed response gets Score - Structure.
	Structure float64
	// Final is given for a malformed response with a wrong answer (script value 0.1).
	Final float64
	// Retrieval is added to Structure when a gold answer appears in a retrieved block and
	// the answer is wrong (script value 0).
	Retrieval float64
}

// OriginalFormatScores returns the values of Search-R1's v0.3 training scripts.
func OriginalFormatScores() FormatScores {
	return FormatScores{Score: 1, Structure: 0.2, Final: 0.1, Retrieval: 0}
}

// FormatOptions configure [validSequence] and [formatReward].
type FormatOptions struct {
	// Think, Search, Information and Answer name the tags (defaults think, search,
	// information, answer).
	Think, Search, Information, Answer string
	// Start marks where the model's response begins in the text (for example
	// "<|im_start|>assistant"); the text after its last occurrence is checked. Empty: the
	// whole text is checked, so pass only the model's part of a transcript.
	Start string
	// Extract configures the answer extraction (default: last answer block, 1 match).
	Extract ExtractOptions
}

func (o FormatOptions) withDefaults() FormatOptions {
	if o.Think == "" {
		o.Think = "think"
	}
	if o.Search == "" {
		o.Search = "search"
	}
	if o.Information == "" {
		o.Information = "information"
	}
	if o.Answer == "" {
		o.Answer = "answer"
	}
	if o.Extract.Tag == "" {
		o.Extract.Tag = o.Answer
	}
	return o
}

// validSequence checks the structure of a response: one or more rounds of
// <think>…</think> followed by <search>…</search> and <information>…</information>, then
// <think>…</think> <answer>…</answer> and nothing after. Only whitespace may appear
// between blocks, tags may not nest, and each block must be closed. It returns false with
// a reason otherwise.
func validSequence(text string, opts FormatOptions) (bool, string) {
	o := opts.withDefaults()
	if o.Start != "" {
		i := strings.LastIndex(text, o.Start)
		if i < 0 {
			return false, "response start marker not found"
		}
		text = text[i+len(o.Start):]
	}
	names := []string{o.Think, o.Search, o.Information, o.Answer}
	var alt []string
	for _, n := range names {
		alt = append(alt, regexp.QuoteMeta(n))
	}
	tagTok := regexp.MustCompile(`</?(?:` + strings.Join(alt, "|") + `)>`)
	// Allowed successor of each state; states are the names of closed blocks.
	next := map[string][]string{
		"start":       {o.Think},
		o.Think:       {o.Search, o.Answer},
		o.Search:      {o.Information},
		o.Information: {o.Think, o.Search, o.Answer},
		o.Answer:      {},
	}
	state := "start"
	pos := 0
	locs := tagTok.FindAllStringIndex(text, -1)
	for i := 0; i < len(locs); i++ {
		between := text[pos:locs[i][0]]
		tok := text[locs[i][0]:locs[i][1]]
		if strings.HasPrefix(tok, "</") {
			return false, "unexpected closing tag " + tok
		}
		if strings.TrimSpace(between) != "" {
			return false, "text outside tags before " + tok
		}
		name := tok[1 : len(tok)-1]
		if !contains(next[state], name) {
			return false, "tag " + tok + " not allowed after " + state
		}
		if i+1 >= len(locs) || text[locs[i+1][0]:locs[i+1][1]] != "</"+name+">" {
			return false, "tag " + tok + " is not closed before the next tag"
		}
		state, pos = name, locs[i+1][1]
		i++
	}
	if strings.TrimSpace(text[pos:]) != "" {
		return false, "text after the last tag"
	}
	if state != o.Answer {
		return false, "no final answer"
	}
	return true, ""
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// formatReward is Search-R1 v0.3's format-aware outcome reward (qa_em_format): it combines
// the exact match of the extracted answer with [validSequence] and whether a gold answer
// was retrieved (appears in an information block).
func formatReward(text string, golds []string, opts FormatOptions, s FormatScores) float64 {
	o := opts.withDefaults()
	if s.Score == 0 {
		s.Score = 1
	}
	valid, _ := validSequence(text, o)
	retrieved := false
	if valid {
		for _, m := range tagRE(o.Information).FindAllStringSubmatch(text, -1) {
			if SubstringMatch(m[1], golds...) {
				retrieved = true
				break
			}
		}
	}
	a, ok := ExtractSolution(text, o.Extract)
	switch {
	case ok && ExactMatch(a, golds...) && valid:
		return s.Score
	case ok && ExactMatch(a, golds...):
		return s.Score - s.Structure
	case valid && retrieved:
		return s.Structure + s.Retrieval
	case valid:
		return s.Structure
	case ok:
		return s.Final
	}
	return 0
}
