package searchr1

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/agentmem/memory"
)

// Generator produces the model's continuation of prompt, stopping at the first of stop.
// Implementations may include or omit the stop string, or even run on past it: the loop
// cuts at the first closing tag itself.
type Generator interface {
	Generate(ctx context.Context, prompt string, stop []string) (string, error)
}

// Continuer is an optional upgrade of [Generator] for chat models, which need the user's
// prompt and the assistant's text so far as separate messages. The loop calls Continue
// instead of Generate when the generator implements it.
type Continuer interface {
	Continue(ctx context.Context, prompt, assistant string, stop []string) (string, error)
}

// GeneratorFunc adapts a function to [Generator].
type GeneratorFunc func(ctx context.Context, prompt string, stop []string) (string, error)

// Generate calls f.
func (f GeneratorFunc) Generate(ctx context.Context, prompt string, stop []string) (string, error) {
	return f(ctx, prompt, stop)
}

// Searcher is what the loop retrieves from; *memory.Memory and *memory.Collection
// implement it.
type Searcher interface {
	Search(ctx context.Context, query string, opts ...memory.SearchOption) ([]memory.Result, error)
}

var (
	_ Searcher  = (*memory.Memory)(nil)
	_ Searcher  = (*memory.Collection)(nil)
	_ Generator = GeneratorFunc(nil)
)

// Defaults of [Loop].
const (
	DefaultTopK        = 3
	defaultMaxSearches = 3
	defaultMaxTurns    = 4
)

// defaultTruncationMarker ends an injected context block that was cut to its cap.
const defaultTruncationMarker = " …[truncated]"

// defaultNoResults is injected when a search returns nothing.
const defaultNoResults = "No results found."

// Loop runs Search-R1 episodes. The zero value is ready to use: default tags
// (search/context/answer), top 3 passages per search, at most 3 searches and 4 turns,
// Search-R1 passage formatting, no context cap.
type Loop struct {
	// Tags names the protocol tags ([DefaultTags]; [OriginalTags] for original checkpoints).
	Tags Tags
	// TopK is the number of passages per search (default 3).
	TopK int
	// MaxSearches caps the searches of an episode (default 3; negative: no search at all).
	// A search asked beyond it is refused with BudgetMessage and the final generation runs.
	MaxSearches int
	// MaxTurns caps the model turns before the final generation, which runs without
	// search (default 4, Search-R1's max_turns of the paper scripts).
	MaxTurns int
	// Format selects the passage format (default [FormatOriginal]).
	Format PassageFormat
	// MaxContextTokens caps each injected block, counted by Tokenizer (0: no cap).
	MaxContextTokens int
	// Tokenizer counts tokens for MaxContextTokens (default [Words]).
	Tokenizer Truncator
	// MaxContextChars caps each injected block in code points (0: no cap).
	MaxContextChars int
	// TruncationMarker ends a truncated block (default " …[truncated]").
	TruncationMarker string
	// InvalidActionMessage is the observation after a turn with no valid action (default
	// Search-R1's text, with the configured tags).
	InvalidActionMessage string
	// BudgetMessage is the observation after a search beyond MaxSearches (default: asks
	// for the final answer).
	BudgetMessage string
	// NoResultsMessage fills the context block of a search that found nothing (default
	// "No results found.").
	NoResultsMessage string
	// PromptTemplate builds the first prompt from a question: "{question}" is replaced
	// (default: Search-R1's nq_search prompt, with the configured tags).
	PromptTemplate string
	// KeepQuestion puts each question into the prompt as it is given. By default it is
	// prepared as the original's data preparation does it ([PrepareQuestion]: stripped,
	// "?" appended when missing), and a question that is blank is refused with
	// [ErrEmptyQuestion].
	KeepQuestion bool
	// SearchOptions are added to every search (filters, mode, collections…); TopK is
	// always set from the TopK field.
	SearchOptions []memory.SearchOption
	// NoRepair disables closing an unclosed final tag when the generator omitted the stop
	// string (the cut keeps the text up to the first closing tag).
	NoRepair bool
	// Logger receives per-turn debug logs (default slog.Default()).
	Logger *slog.Logger
}

// StopReason says why an episode ended.
type StopReason string

const (
	// StopAnswer: the model answered within its turns.
	StopAnswer StopReason = "answer"
	// StopMaxSearches: the model asked for more searches than allowed; the final
	// generation ran.
	StopMaxSearches StopReason = "max_searches"
	// StopMaxTurns: the turns ran out; the final generation ran.
	StopMaxTurns StopReason = "max_turns"
)

// Episode is the outcome of one run.
type Episode struct {
	// Answer is the content of the model's <answer> (trimmed); Answered is false when the
	// model never gave one.
	Answer   string
	Answered bool
	Stop     StopReason
	// Transcript is the prompt followed by every model turn and observation, as the model
	// saw it. [ExtractSolution] and [Reward] apply to it.
	Transcript string
	Trace      Trace
}

// Trace records every turn of an episode.
type Trace struct {
	Question string
	Turns    []Turn
	Searches int           // searches run
	Elapsed  time.Duration // whole episode
}

// ActionRefused: the turn asked for a search beyond MaxSearches.
const ActionRefused ActionKind = "refused"

// Turn is one model generation and what followed it.
type Turn struct {
	Index int
	// Final marks the last generation, run without search after the budget ran out.
	Final bool
	// Raw is what the generator returned; Text is Raw cut at the first closing tag (and
	// repaired when Repaired).
	Raw, Text string
	Repaired  bool
	Action    ActionKind // what the loop did with the turn; ActionRefused for a search past MaxSearches
	Query     string     // search query (search or refused turns)
	Answer    string     // answer (answer turns)
	Passages  []PassageRef
	// Observation is the text injected after the turn ("" after an answer).
	Observation  string
	Truncated    bool // the observation was cut to the context cap
	GenerateTime time.Duration
	SearchTime   time.Duration
}

// PassageRef identifies one retrieved passage of a turn.
type PassageRef struct {
	ID         string  `json:"id"`
	Collection string  `json:"collection,omitempty"`
	Score      float64 `json:"score"`
}

// PrepareQuestion is the original Search-R1's preparation of a question before it enters
// the prompt (scripts/data_process/nq_search.py and infer.py): surrounding whitespace
// stripped (Python's str.strip) and "?" appended unless the question ends in one. A blank
// question gives "" (the original fails on it with an IndexError).
func PrepareQuestion(question string) string {
	q := pyStrip(question)
	if q != "" && !strings.HasSuffix(q, "?") {
		q += "?"
	}
	return q
}

// Prompt builds the first prompt for question from PromptTemplate, the question prepared
// by [PrepareQuestion] unless KeepQuestion is set.
func (l Loop) Prompt(question string) string {
	if !l.KeepQuestion {
		question = PrepareQuestion(question)
	}
	t := l.Tags.withDefaults()
	tmpl := l.PromptTemplate
	if tmpl == "" {
		tmpl = "Answer the given question. You must conduct reasoning inside <think> and </think> first every time you get new information. After reasoning, if you find you lack some knowledge, you can call a search engine by " +
			openTag(t.Search) + " query " + closeTag(t.Search) + " and it will return the top searched results between " +
			tagPair(t.Context) + ". You can search as many times as your want. If you find no further external knowledge needed, you can directly provide the answer inside " +
			tagPair(t.Answer) + ", without detailed illustrations. For example, " +
			openTag(t.Answer) + " Beijing " + closeTag(t.Answer) + ". Question: {question}\n"
	}
	return strings.ReplaceAll(tmpl, "{question}", question)
}

// InvalidAction returns the observation after an invalid turn.
func (l Loop) InvalidAction() string {
	if l.InvalidActionMessage != "" {
		return l.InvalidActionMessage
	}
	t := l.Tags.withDefaults()
	return "My previous action is invalid. If I want to search, I should put the query between " +
		tagPair(t.Search) + ". If I want to give the final answer, I should put the answer between " +
		tagPair(t.Answer) + ". Let me try again."
}

func (l Loop) budgetMessage() string {
	if l.BudgetMessage != "" {
		return l.BudgetMessage
	}
	t := l.Tags.withDefaults()
	return "I have used all my searches. I must now give the final answer between " +
		tagPair(t.Answer) + "."
}

func (l Loop) validate() error {
	switch {
	case l.TopK < 0:
		return fmt.Errorf("%w: TopK %d", ErrInvalidOption, l.TopK)
	case l.MaxTurns < 0:
		return fmt.Errorf("%w: MaxTurns %d", ErrInvalidOption, l.MaxTurns)
	case l.MaxContextTokens < 0:
		return fmt.Errorf("%w: MaxContextTokens %d", ErrInvalidOption, l.MaxContextTokens)
	case l.MaxContextChars < 0:
		return fmt.Errorf("%w: MaxContextChars %d", ErrInvalidOption, l.MaxContextChars)
	}
	for _, n := range []string{l.Tags.Search, l.Tags.Context, l.Tags.Answer} {
		if strings.ContainsAny(n, "<>/ \t\n") {
			return fmt.Errorf("%w: tag name %q", ErrInvalidOption, n)
		}
	}
	return nil
}

// Run answers question: it builds the prompt with [Loop.Prompt] and runs [Loop.RunPrompt].
// A blank question is [ErrEmptyQuestion] (unless KeepQuestion is set).
func (l Loop) Run(ctx context.Context, gen Generator, s Searcher, question string) (*Episode, error) {
	if err := l.checkQuestion(question); err != nil {
		return nil, err
	}
	ep, err := l.RunPrompt(ctx, gen, s, l.Prompt(question))
	if ep != nil {
		ep.Trace.Question = question
	}
	return ep, err
}

// checkQuestion refuses a blank question, which the original's preparation cannot
// handle, unless KeepQuestion is set.
func (l Loop) checkQuestion(question string) error {
	if !l.KeepQuestion && pyStrip(question) == "" {
		return fmt.Errorf("%w: %q", ErrEmptyQuestion, question)
	}
	return nil
}

// RunPrompt runs an episode from a ready prompt. On error the episode so far is returned
// with it.
func (l Loop) RunPrompt(ctx context.Context, gen Generator, s Searcher, prompt string) (*Episode, error) {
	if gen == nil {
		return nil, errNoGenerator
	}
	if err := l.validate(); err != nil {
		return nil, err
	}
	r := l.newRun(gen, s, prompt)
	maxSearches := defaultInt(l.MaxSearches, defaultMaxSearches)
	maxTurns := defaultInt(l.MaxTurns, defaultMaxTurns)
	for turn := 0; turn < maxTurns; turn++ {
		if err := ctx.Err(); err != nil {
			return r.finish(), err
		}
		raw, dt, err := r.generate(ctx, r.stops())
		if err != nil {
			return r.finish(), fmt.Errorf("searchr1: generate turn %d: %w", turn, err)
		}
		tr, nx := r.turn(turn, raw, dt, maxSearches)
		switch nx {
		case nextDone:
			return r.finish(), nil
		case nextFinal:
			return r.final(ctx, turn+1)
		case nextSearch:
			if err := r.search(ctx, &tr); err != nil {
				r.ep.Trace.Turns = append(r.ep.Trace.Turns, tr)
				return r.finish(), err
			}
			r.observe(tr)
		}
	}
	r.ep.Stop = StopMaxTurns
	return r.final(ctx, maxTurns)
}

// next is what an episode needs after a turn.
type next int

const (
	nextTurn   next = iota // the observation was injected: generate the next turn
	nextSearch             // the turn's query must be searched, then observed
	nextFinal              // the search budget ran out: the final generation follows
	nextDone               // the model answered
)

// stops are the stop sequences of a turn with search.
func (r *run) stops() []string { return []string{closeTag(r.tags.Search), closeTag(r.tags.Answer)} }

// turn processes the generation raw of turn index: it cuts and parses it, appends it to the
// transcript and, unless a search is pending (nextSearch, the turn not yet in the trace),
// records the turn and its observation.
func (r *run) turn(index int, raw string, dt time.Duration, maxSearches int) (Turn, next) {
	text, repaired := cutResponse(raw, r.stops(), !r.l.NoRepair)
	act := parseAction(text, r.tags)
	if act.Kind == ActionSearch && act.Content == "" {
		act.Kind = ActionInvalid
	}
	tr := Turn{Index: index, Raw: raw, Text: text, Repaired: repaired, Action: act.Kind, GenerateTime: dt}
	r.assistant.WriteString(text)
	switch act.Kind {
	case ActionAnswer:
		tr.Answer = act.Content
		r.ep.Trace.Turns = append(r.ep.Trace.Turns, tr)
		r.ep.Answer, r.ep.Answered, r.ep.Stop = act.Content, true, StopAnswer
		r.log.Debug("searchr1: answer", "turn", index, "answer", act.Content)
		return tr, nextDone
	case ActionSearch:
		tr.Query = act.Content
		if maxSearches < 0 || r.ep.Trace.Searches >= maxSearches {
			tr.Action = ActionRefused
			tr.Observation = "\n" + r.l.budgetMessage() + "\n"
			r.observe(tr)
			r.ep.Stop = StopMaxSearches
			r.log.Debug("searchr1: search refused", "turn", index, "query", act.Content)
			return tr, nextFinal
		}
		return tr, nextSearch
	default:
		tr.Observation = "\n" + r.l.InvalidAction() + "\n"
		r.observe(tr)
		r.log.Debug("searchr1: invalid action", "turn", index)
		return tr, nextTurn
	}
}

// run is the state of one episode: the model's text so far and the episode being built.
type run struct {
	l         Loop
	gen       Generator
	s         Searcher
	prompt    string
	tags      Tags
	topK      int
	protected []string // the tags retrieved text may not open or close
	log       *slog.Logger
	start     time.Time
	ep        *Episode
	assistant strings.Builder // every turn and observation after the prompt
}

func (l Loop) newRun(gen Generator, s Searcher, prompt string) *run {
	tags := l.Tags.withDefaults()
	log := l.Logger
	if log == nil {
		log = slog.Default()
	}
	return &run{
		l: l, gen: gen, s: s, prompt: prompt, tags: tags,
		topK:      defaultInt(l.TopK, DefaultTopK),
		protected: []string{tags.Search, tags.Context, tags.Answer},
		log:       log, start: time.Now(), ep: &Episode{},
	}
}

// finish completes the episode's transcript and elapsed time.
func (r *run) finish() *Episode {
	r.ep.Transcript = r.prompt + r.assistant.String()
	r.ep.Trace.Elapsed = time.Since(r.start)
	return r.ep
}

// generate asks the model to continue the transcript, as chat messages when it is a
// [Continuer].
func (r *run) generate(ctx context.Context, stop []string) (string, time.Duration, error) {
	t0 := time.Now()
	var out string
	var err error
	if c, ok := r.gen.(Continuer); ok {
		out, err = c.Continue(ctx, r.prompt, r.assistant.String(), stop)
	} else {
		out, err = r.gen.Generate(ctx, r.prompt+r.assistant.String(), stop)
	}
	return out, time.Since(t0), err
}

// observe appends the turn's observation to the transcript and the turn to the trace.
func (r *run) observe(tr Turn) {
	r.assistant.WriteString(tr.Observation)
	r.ep.Trace.Turns = append(r.ep.Trace.Turns, tr)
}

// search runs tr.Query and sets tr's passages, search time and the context block to
// inject as its observation.
func (r *run) search(ctx context.Context, tr *Turn) error {
	if r.s == nil {
		return errNoSearcher
	}
	t0 := time.Now()
	results, err := r.s.Search(ctx, tr.Query, r.searchOptions()...)
	if err != nil {
		tr.SearchTime = time.Since(t0)
		r.ep.Trace.Searches++
		return fmt.Errorf("searchr1: search %q: %w", tr.Query, err)
	}
	r.results(tr, results, time.Since(t0))
	return nil
}

// searchOptions are the options of every search of the episode.
func (r *run) searchOptions() []memory.SearchOption {
	return append(append([]memory.SearchOption(nil), r.l.SearchOptions...), memory.TopK(r.topK))
}

// results records a search of tr that took dt: its passages (at most topK) and the context
// block to inject as its observation.
func (r *run) results(tr *Turn, results []memory.Result, dt time.Duration) {
	tr.SearchTime = dt
	r.ep.Trace.Searches++
	if len(results) > r.topK {
		results = results[:r.topK]
	}
	for _, res := range results {
		tr.Passages = append(tr.Passages, PassageRef{ID: res.ID, Collection: res.Collection, Score: res.Score})
	}
	var body string
	body, tr.Truncated = r.l.contextBody(results, r.protected)
	tr.Observation = observation(r.tags.Context, body)
	r.log.Debug("searchr1: search", "turn", tr.Index, "query", tr.Query, "hits", len(results))
}

// observation is the text injected after a search whose passages are body, as the
// original's execute_predictions writes it: f'\n\n<information>{body.strip()}</information>\n\n'
// (Python's str.strip, so the newline that ends the last passage is not inside the
// block), with the context tag in place of information.
func observation(tag, body string) string {
	return "\n\n" + openTag(tag) + pyStrip(body) + closeTag(tag) + "\n\n"
}

// contextBody is the content of the context block for results: the passages formatted
// and cut to the caps, or the no-results message; true when something was cut.
func (l Loop) contextBody(results []memory.Result, protected []string) (string, bool) {
	if len(results) == 0 {
		body := l.NoResultsMessage
		if body == "" {
			body = defaultNoResults
		}
		return l.capContext(body)
	}
	// Cut passage by passage, so no element or header is left open.
	body, cut := FormatPassagesCapped(results, l.Format, ContextCap{
		MaxTokens: l.MaxContextTokens, Tokenizer: l.Tokenizer, MaxChars: l.MaxContextChars,
	}, protected...)
	if cut {
		body = pyStrip(body) + l.truncationMarker()
	}
	return body, cut
}

// final runs the last generation, without search: only </answer> stops it and only an
// answer is read from it.
func (r *run) final(ctx context.Context, index int) (*Episode, error) {
	if err := ctx.Err(); err != nil {
		return r.finish(), err
	}
	raw, dt, err := r.generate(ctx, r.finalStops())
	if err != nil {
		return r.finish(), fmt.Errorf("searchr1: final generation: %w", err)
	}
	r.finalTurn(index, raw, dt)
	return r.finish(), nil
}

// finalStops are the stop sequences of the final generation.
func (r *run) finalStops() []string { return []string{closeTag(r.tags.Answer)} }

// finalTurn records the final generation raw as turn index: only an answer is read from it.
func (r *run) finalTurn(index int, raw string, dt time.Duration) {
	text, repaired := cutResponse(raw, r.finalStops(), !r.l.NoRepair)
	r.assistant.WriteString(text)
	tr := Turn{Index: index, Final: true, Raw: raw, Text: text, Repaired: repaired, Action: ActionInvalid, GenerateTime: dt}
	if a, ok := firstAnswer(text, r.tags.Answer); ok {
		tr.Action, tr.Answer = ActionAnswer, a
		r.ep.Answer, r.ep.Answered = a, true
	}
	r.ep.Trace.Turns = append(r.ep.Trace.Turns, tr)
}

// firstAnswer returns the content (trimmed) of the first answer block of text.
func firstAnswer(text, tag string) (string, bool) {
	m := tagRE(tag).FindStringSubmatch(text)
	if m == nil {
		return "", false
	}
	return pyStrip(m[1]), true
}

func (l Loop) truncationMarker() string {
	if l.TruncationMarker == "" {
		return defaultTruncationMarker
	}
	return l.TruncationMarker
}

// capContext applies MaxContextTokens and MaxContextChars to an injected plain-text
// block (passages go through [FormatPassagesCapped]).
func (l Loop) capContext(body string) (string, bool) {
	marker := l.truncationMarker()
	cut := false
	if l.MaxContextTokens > 0 {
		tok := l.Tokenizer
		if tok == nil {
			tok = Words{}
		}
		var c bool
		body, c = tok.Truncate(body, l.MaxContextTokens)
		cut = cut || c
	}
	if l.MaxContextChars > 0 {
		var c bool
		body, c = Chars{}.Truncate(body, l.MaxContextChars)
		cut = cut || c
	}
	if cut {
		body += marker
	}
	return body, cut
}

func defaultInt(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}
