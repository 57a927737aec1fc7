package searchr1

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/agentmem/memory/internal/parallel"
)

// Defaults of [Runner].
const (
	defaultRollouts      = 1
	defaultConcurrency   = 64
	defaultWave          = 2560 // 512 prompts x 5 rollouts, one GRPO step of Search-R1
	defaultMaxQueryChars = 1024
)

// Question is one question of a rollout or evaluation run, in the shape of Search-R1's and
// FlashRAG's data files.
type Question struct {
	ID            string   `json:"id"`
	Question      string   `json:"question"`
	GoldenAnswers []string `json:"golden_answers"`
	// DataSource names the dataset the question comes from (nq, hotpotqa…), for
	// per-dataset scores.
	DataSource string `json:"data_source,omitempty"`
}

// Runner runs Search-R1 rollouts at training scale: every question of a run Rollouts
// times, against one [Generator] and one [Searcher].
//
// The episodes of a wave (Wave episodes, default 2,560) advance in lockstep, as
// Search-R1's run_llm_loop does: each round generates the next turn of every live episode
// (at most Concurrency generations at once), then sends the searches all of them asked
// for as ONE batch ([SearchQueries]: one SearchBatch call when the searcher is a
// [BatchSearcher]), then injects the results. A round therefore costs one retrieval call
// however many episodes search in it. Stop sequences, the turn budget and the final
// generation without search follow [Loop] (so Search-R1's max_turns and topk are
// Loop.MaxTurns and Loop.TopK).
//
// Every finished episode is written at once as one JSON line ([Trajectory]) to Out, so
// memory holds one wave of episodes and never the run's trajectories. A cancelled context
// stops the run between rounds and at each generation: the file then holds complete lines
// only, one per finished episode.
//
// A generation error (a bad response: [ErrBadResponse], [ErrHTTPStatus] after retries)
// fails its episode only; the failure is written in its trajectory. A search error, a
// write error or the context stop the run.
type Runner struct {
	// Loop configures each episode: tags, TopK, MaxSearches, MaxTurns, passage format,
	// context caps, prompt template, search options.
	Loop Loop
	// Generator produces the model's turns, usually [OpenAI] pointed at a vLLM server.
	Generator Generator
	// Searcher answers the searches; a [BatchSearcher] gets one call per round.
	Searcher Searcher
	// Rollouts is the number of episodes per question (GRPO's group size; default 1).
	Rollouts int
	// Concurrency caps the generations in flight (default 64).
	Concurrency int
	// SearchWorkers caps the searches at once for a searcher without SearchBatch (default
	// GOMAXPROCS).
	SearchWorkers int
	// Wave is the number of episodes run in lockstep at a time (default 2,560); it bounds
	// the memory of a run.
	Wave int
	// MaxQueryChars cuts each search query to this many code points (default 1,024;
	// negative: no cap). The trajectory records the query as searched.
	MaxQueryChars int
	// MaxTurnTokens cuts each generated turn to this many tokens, counted by
	// Loop.Tokenizer (default [Words]), before it is parsed, for generators that do not
	// honour max_tokens (0: no cap). A turn cut before its closing tag is invalid, as in
	// Search-R1 when a response reaches max_response_length.
	MaxTurnTokens int
	// Reward configures the trajectory's "reward" (default exact match); em, subem, f1 and
	// search_reward are always written beside it.
	Reward RewardOptions
	// Out receives the trajectories as JSON lines (nil: none are written).
	Out io.Writer
	// OnEpisode, when set, is called with each finished trajectory, one call at a time,
	// after it is written.
	OnEpisode func(*Trajectory)
	// Logger receives progress logs (default slog.Default()).
	Logger *slog.Logger
}

// Trajectory is one episode of a [Runner] as written to its JSONL output.
type Trajectory struct {
	// Index is the episode's number in the run: question index x Rollouts + Rollout.
	Index         int              `json:"index"`
	ID            string           `json:"id"`
	Rollout       int              `json:"rollout"`
	DataSource    string           `json:"data_source,omitempty"`
	Question      string           `json:"question"`
	GoldenAnswers []string         `json:"golden_answers"`
	Prompt        string           `json:"prompt"`
	Turns         []TrajectoryTurn `json:"turns"`
	Answer        string           `json:"answer"`
	Answered      bool             `json:"answered"`
	// Stop is answer, max_searches or max_turns ([StopReason]), or error.
	Stop     string `json:"stop"`
	Searches int    `json:"searches"`
	// Reward is the score chosen by Runner.Reward; EM, SubEM, F1 and SearchReward are
	// those of the answer whatever the choice.
	Reward       float64 `json:"reward"`
	EM           float64 `json:"em"`
	SubEM        float64 `json:"subem"`
	F1           float64 `json:"f1"`
	SearchReward float64 `json:"search_reward"`
	// TotalMS is the episode's wall time from its first generation to its last turn;
	// GenerateMS and SearchMS sum its turns'.
	TotalMS    float64 `json:"total_ms"`
	GenerateMS float64 `json:"generate_ms"`
	SearchMS   float64 `json:"search_ms"`
	// Error is the failure of a failed episode.
	Error string `json:"error,omitempty"`
}

// TrajectoryTurn is one turn of a [Trajectory].
type TrajectoryTurn struct {
	Index int    `json:"index"`
	Final bool   `json:"final,omitempty"`
	Text  string `json:"text"`
	// Raw is what the generator returned, only when it differs from Text (cut or
	// repaired).
	Raw    string `json:"raw,omitempty"`
	Action string `json:"action"`
	Query  string `json:"query,omitempty"`
	// Results are the passages of the search, with their scores as the searcher gave
	// them.
	Results     []PassageRef `json:"results,omitempty"`
	Observation string       `json:"observation,omitempty"`
	Truncated   bool         `json:"truncated,omitempty"`
	GenerateMS  float64      `json:"generate_ms"`
	// SearchMS is the wall time of the round's batch search this turn's query was part
	// of, and BatchSize the number of queries of that batch.
	SearchMS  float64 `json:"search_ms,omitempty"`
	BatchSize int     `json:"batch_size,omitempty"`
}

// RunStats summarise a [Runner.Run].
type RunStats struct {
	Episodes int // episodes started
	Written  int // trajectories finished (and written)
	Failed   int // episodes whose generation failed
	Answered int // episodes with an answer
	// Rounds is the number of lockstep generation rounds, SearchBatches the number of
	// retrieval calls (one per round in which any episode searched) and Searches the
	// number of queries in them.
	Rounds, SearchBatches, Searches int
	// Elapsed is the run's wall time; GenerateTime and SearchTime the wall time spent in
	// the generation rounds and in the batch searches.
	Elapsed, GenerateTime, SearchTime time.Duration
	// RewardSum is the sum of the written trajectories' rewards.
	RewardSum float64
}

// EpisodesPerSecond is the number of finished episodes per second of the run.
func (s RunStats) EpisodesPerSecond() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Written) / s.Elapsed.Seconds()
}

// SearchShare is the fraction of the run's wall time spent in retrieval.
func (s RunStats) SearchShare() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return s.SearchTime.Seconds() / s.Elapsed.Seconds()
}

func (rn *Runner) validate() error {
	switch {
	case rn.Generator == nil:
		return errNoGenerator
	case rn.Rollouts < 0:
		return fmt.Errorf("%w: Rollouts %d", ErrInvalidOption, rn.Rollouts)
	case rn.Concurrency < 0:
		return fmt.Errorf("%w: Concurrency %d", ErrInvalidOption, rn.Concurrency)
	case rn.Wave < 0:
		return fmt.Errorf("%w: Wave %d", ErrInvalidOption, rn.Wave)
	case rn.MaxTurnTokens < 0:
		return fmt.Errorf("%w: MaxTurnTokens %d", ErrInvalidOption, rn.MaxTurnTokens)
	}
	if err := rn.Reward.Validate(); err != nil {
		return err
	}
	return rn.Loop.validate()
}

// episode is one live episode of a wave.
type episode struct {
	q       *Question
	index   int
	rollout int
	r       *run
	turn    int  // index of the next turn
	final   bool // the next generation is the final one
	pending *Turn
	raw     string
	dt      time.Duration
	err     error
	// batchSizes maps a turn's position in the trace to the size of its search batch.
	batchSizes map[int]int
}

// Run runs every question Rollouts times and writes each trajectory as it finishes. It
// returns the run's figures with the first error that stopped it: the context's, a
// search's, a write's, or [ErrAllEpisodesFailed].
func (rn *Runner) Run(ctx context.Context, questions []Question) (RunStats, error) {
	var st RunStats
	if err := rn.validate(); err != nil {
		return st, err
	}
	start := time.Now()
	rollouts := defaultInt(rn.Rollouts, defaultRollouts)
	wave := defaultInt(rn.Wave, defaultWave)
	w := newTrajectoryWriter(rn.Out)
	total := len(questions) * rollouts
	var firstFail error
	for lo := 0; lo < total; lo += wave {
		hi := min(lo+wave, total)
		err := rn.runWave(ctx, questions, rollouts, lo, hi, w, &st, &firstFail)
		if ferr := w.flush(); err == nil && ferr != nil {
			err = ferr
		}
		if err != nil {
			st.Elapsed = time.Since(start)
			return st, err
		}
	}
	st.Elapsed = time.Since(start)
	if st.Failed > 0 && st.Failed == st.Episodes {
		return st, fmt.Errorf("%w (%d episodes): %w", ErrAllEpisodesFailed, st.Failed, firstFail)
	}
	return st, nil
}

// runWave runs episodes lo to hi-1 in lockstep.
func (rn *Runner) runWave(ctx context.Context, questions []Question, rollouts, lo, hi int, w *trajectoryWriter, st *RunStats, firstFail *error) error {
	log := rn.Loop.Logger
	if log == nil {
		log = rn.Logger
	}
	if log == nil {
		log = slog.Default()
	}
	l := rn.Loop
	l.Logger = log
	maxSearches := defaultInt(l.MaxSearches, defaultMaxSearches)
	maxTurns := defaultInt(l.MaxTurns, defaultMaxTurns)
	live := make([]*episode, 0, hi-lo)
	var refused []*episode // blank questions: failed at once (ErrEmptyQuestion)
	for i := lo; i < hi; i++ {
		q := &questions[i/rollouts]
		ep := &episode{q: q, index: i, rollout: i % rollouts, r: l.newRun(rn.Generator, rn.Searcher, l.Prompt(q.Question))}
		ep.r.ep.Trace.Question = q.Question
		if err := l.checkQuestion(q.Question); err != nil {
			ep.err = fmt.Errorf("searchr1: episode %d: %w", i, err)
			ep.r.finish()
			refused = append(refused, ep)
			continue
		}
		live = append(live, ep)
	}
	st.Episodes += len(live) + len(refused)
	finish := func(ep *episode) error {
		t := rn.trajectory(ep)
		if ep.err != nil {
			st.Failed++
			if *firstFail == nil {
				*firstFail = ep.err
			}
		}
		if t.Answered {
			st.Answered++
		}
		if err := w.write(t); err != nil {
			return err
		}
		st.Written++
		st.RewardSum += t.Reward
		if rn.OnEpisode != nil {
			rn.OnEpisode(t)
		}
		return nil
	}
	for _, ep := range refused {
		if err := finish(ep); err != nil {
			return err
		}
	}
	for len(live) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		st.Rounds++
		// Generate the next turn of every live episode.
		t0 := time.Now()
		_ = parallel.For(ctx, len(live), defaultInt(rn.Concurrency, defaultConcurrency), func(ctx context.Context, i int) error {
			ep := live[i]
			stops := ep.r.stops()
			if ep.final {
				stops = ep.r.finalStops()
			}
			ep.raw, ep.dt, ep.err = ep.r.generate(ctx, stops)
			if ep.err == nil && rn.MaxTurnTokens > 0 {
				ep.raw = rn.capTurn(ep.raw)
			}
			return nil
		})
		st.GenerateTime += time.Since(t0)
		if err := ctx.Err(); err != nil {
			return err
		}
		// Parse the turns; collect the searches.
		next := live[:0]
		var searching []*episode
		for _, ep := range live {
			if ep.err != nil {
				what := fmt.Sprintf("generate turn %d", ep.turn)
				if ep.final {
					what = "final generation"
				}
				ep.err = fmt.Errorf("searchr1: episode %d: %s: %w", ep.index, what, ep.err)
				ep.r.finish()
				if err := finish(ep); err != nil {
					return err
				}
				continue
			}
			if ep.final {
				ep.r.finalTurn(ep.turn, ep.raw, ep.dt)
				ep.r.finish()
				if err := finish(ep); err != nil {
					return err
				}
				continue
			}
			tr, nx := ep.r.turn(ep.turn, ep.raw, ep.dt, maxSearches)
			ep.turn++
			switch nx {
			case nextDone:
				ep.r.finish()
				if err := finish(ep); err != nil {
					return err
				}
				continue
			case nextFinal:
				ep.final = true
			case nextSearch:
				tr.Query = capChars(tr.Query, rn.maxQueryChars())
				ep.pending = &tr
				searching = append(searching, ep)
			}
			if !ep.final && ep.pending == nil && ep.turn >= maxTurns {
				ep.r.ep.Stop, ep.final = StopMaxTurns, true
			}
			next = append(next, ep)
		}
		live = next
		if err := w.flush(); err != nil {
			return err
		}
		if len(searching) == 0 {
			continue
		}
		// One retrieval call for the round.
		if rn.Searcher == nil {
			return errNoSearcher
		}
		queries := make([]string, len(searching))
		for i, ep := range searching {
			queries[i] = ep.pending.Query
		}
		t0 = time.Now()
		res, err := SearchQueries(ctx, rn.Searcher, queries, rn.SearchWorkers, searching[0].r.searchOptions()...)
		dt := time.Since(t0)
		st.SearchTime += dt
		st.SearchBatches++
		st.Searches += len(queries)
		if err != nil {
			return fmt.Errorf("searchr1: batch search of %d queries (round %d): %w", len(queries), st.Rounds, err)
		}
		log.Debug("searchr1: round", "round", st.Rounds, "live", len(live), "searches", len(queries), "search", dt)
		for i, ep := range searching {
			tr := ep.pending
			ep.pending = nil
			ep.r.results(tr, res[i], dt)
			ep.r.observe(*tr)
			if ep.turn >= maxTurns {
				ep.r.ep.Stop, ep.final = StopMaxTurns, true
			}
			ep.batch(len(queries))
		}
	}
	return nil
}

// batch records the size of the batch the episode's last search was part of.
func (ep *episode) batch(n int) {
	if ep.batchSizes == nil {
		ep.batchSizes = map[int]int{}
	}
	ep.batchSizes[len(ep.r.ep.Trace.Turns)-1] = n
}

func (rn *Runner) maxQueryChars() int {
	if rn.MaxQueryChars == 0 {
		return defaultMaxQueryChars
	}
	return rn.MaxQueryChars
}

// capTurn cuts a generated turn to MaxTurnTokens tokens.
func (rn *Runner) capTurn(raw string) string {
	tok := rn.Loop.Tokenizer
	if tok == nil {
		tok = Words{}
	}
	out, _ := tok.Truncate(raw, rn.MaxTurnTokens)
	return out
}

// capChars cuts s to max code points (max < 0: no cap).
func capChars(s string, max int) string {
	if max < 0 {
		return s
	}
	out, _ := Chars{}.Truncate(s, max)
	return strings.TrimSpace(out)
}

// trajectory builds the JSONL record of a finished episode and scores it.
func (rn *Runner) trajectory(ep *episode) *Trajectory {
	e := ep.r.ep
	q := ep.q
	t := &Trajectory{
		Index: ep.index, ID: q.ID, Rollout: ep.rollout, DataSource: q.DataSource,
		Question: q.Question, GoldenAnswers: q.GoldenAnswers, Prompt: ep.r.prompt,
		Turns:  make([]TrajectoryTurn, 0, len(e.Trace.Turns)),
		Answer: e.Answer, Answered: e.Answered, Stop: string(e.Stop), Searches: e.Trace.Searches,
		TotalMS: ms(e.Trace.Elapsed),
	}
	if t.GoldenAnswers == nil {
		t.GoldenAnswers = []string{}
	}
	for i, tr := range e.Trace.Turns {
		tt := TrajectoryTurn{
			Index: tr.Index, Final: tr.Final, Text: tr.Text, Action: string(tr.Action), Query: tr.Query,
			Results: tr.Passages, Observation: tr.Observation, Truncated: tr.Truncated,
			GenerateMS: ms(tr.GenerateTime), SearchMS: ms(tr.SearchTime), BatchSize: ep.batchSizes[i],
		}
		if tr.Raw != tr.Text {
			tt.Raw = tr.Raw
		}
		t.GenerateMS += tt.GenerateMS
		t.SearchMS += tt.SearchMS
		t.Turns = append(t.Turns, tt)
	}
	if ep.err != nil {
		t.Stop, t.Error = "error", ep.err.Error()
		return t
	}
	if e.Answered {
		t.EM = b2f(ExactMatch(e.Answer, q.GoldenAnswers...))
		t.SubEM = b2f(SubstringMatch(e.Answer, q.GoldenAnswers...))
		t.F1 = TokenF1(e.Answer, q.GoldenAnswers...)
	}
	t.SearchReward = rn.Loop.SearchReward(e, q.GoldenAnswers, rn.Reward.SearchReward)
	t.Reward = rn.Loop.Reward(e, q.GoldenAnswers, rn.Reward)
	return t
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// trajectoryWriter writes trajectories as JSON lines, each line whole.
type trajectoryWriter struct {
	mu  sync.Mutex
	bw  *bufio.Writer
	err error
}

func newTrajectoryWriter(w io.Writer) *trajectoryWriter {
	if w == nil {
		return &trajectoryWriter{}
	}
	return &trajectoryWriter{bw: bufio.NewWriterSize(w, 1<<20)}
}

// write encodes t as one line. A line bigger than the buffer is written through in one
// piece; a write error is kept and returned by every later call.
func (tw *trajectoryWriter) write(t *Trajectory) error {
	if tw.bw == nil {
		return nil
	}
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.err != nil {
		return tw.err
	}
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(t); err != nil {
		tw.err = fmt.Errorf("%w: encode episode %d: %w", ErrWriteTrajectory, t.Index, err)
		return tw.err
	}
	line := sb.String()
	if tw.bw.Available() < len(line) {
		if err := tw.bw.Flush(); err != nil {
			tw.err = fmt.Errorf("%w: %w", ErrWriteTrajectory, err)
			return tw.err
		}
	}
	if _, err := tw.bw.WriteString(line); err != nil {
		tw.err = fmt.Errorf("%w: %w", ErrWriteTrajectory, err)
	}
	return tw.err
}

// flush writes the buffered lines out.
func (tw *trajectoryWriter) flush() error {
	if tw.bw == nil {
		return nil
	}
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.err != nil {
		return tw.err
	}
	if err := tw.bw.Flush(); err != nil {
		tw.err = fmt.Errorf("%w: %w", ErrWriteTrajectory, err)
	}
	return tw.err
}
