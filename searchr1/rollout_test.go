package searchr1

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentmem/memory"
)

// batchCounter is a BatchSearcher that counts its SearchBatch calls and their sizes and
// answers each query with TopK passages whose ids name the query. Search (one at a time)
// is counted apart: the runner must never use it when SearchBatch exists.
type batchCounter struct {
	mu      sync.Mutex
	batches []int
	singles atomic.Int64
	failAt  int // SearchBatch call (1-based) that fails; 0: none
}

func (b *batchCounter) Search(ctx context.Context, q string, opts ...memory.SearchOption) ([]memory.Result, error) {
	b.singles.Add(1)
	res, err := b.SearchBatch(ctx, []string{q}, opts...)
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

var errBatchFailed = errors.New("test: batch search failed")

func (b *batchCounter) SearchBatch(ctx context.Context, qs []string, opts ...memory.SearchOption) ([][]memory.Result, error) {
	b.mu.Lock()
	b.batches = append(b.batches, len(qs))
	n := len(b.batches)
	b.mu.Unlock()
	if n == b.failAt {
		return nil, errBatchFailed
	}
	var so memory.SearchOptions
	for _, o := range opts {
		o(&so)
	}
	out := make([][]memory.Result, len(qs))
	for i, q := range qs {
		for k := 0; k < so.TopK; k++ {
			out[i] = append(out[i], memory.Result{
				ID: fmt.Sprintf("%s#%d", q, k), Collection: "default",
				Title: "T" + q, Text: "passage about " + q, Score: float64(10 - k),
			})
		}
	}
	return out, nil
}

func (b *batchCounter) sizes() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int(nil), b.batches...)
}

var questionRE = regexp.MustCompile(`Question: ([^\s?]+)`)

// chatServer speaks the OpenAI chat/completions API as vLLM does with
// continue_final_message: it scripts `searches` search turns per question, then an
// answer "gold <question>", and omits the stop string as vLLM does. A question named in
// bad gets an answer without choices.
func chatServer(t *testing.T, searches int, bad map[string]bool) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		var req struct {
			Messages []struct{ Role, Content string } `json:"messages"`
			Stop     []string                         `json:"stop"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		m := questionRE.FindStringSubmatch(req.Messages[0].Content)
		if m == nil {
			http.Error(w, "no question", http.StatusBadRequest)
			return
		}
		q := m[1]
		if bad[q] {
			io.WriteString(w, `{"choices":[]}`)
			return
		}
		done := 0
		if len(req.Messages) > 1 {
			done = strings.Count(req.Messages[len(req.Messages)-1].Content, "</search>")
		}
		var text string
		if done < searches {
			text = fmt.Sprintf("<think>I need fact %d about %s.</think>\n<search> %s-%d </search>", done, q, q, done)
		} else {
			text = fmt.Sprintf("<think>Found it.</think>\n<answer> gold %s </answer>", q)
		}
		for _, st := range req.Stop { // the server stops before the stop string
			if i := strings.Index(text, st); i >= 0 {
				text = text[:i]
			}
		}
		json.NewEncoder(w).Encode(map[string]any{
			"choices": []any{map[string]any{"index": 0, "message": map[string]string{"role": "assistant", "content": text}, "finish_reason": "stop"}},
		})
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func makeQuestions(n int) []Question {
	qs := make([]Question, n)
	for i := range qs {
		id := fmt.Sprintf("q%d", i)
		qs[i] = Question{ID: id, Question: id, GoldenAnswers: []string{"gold " + id}, DataSource: []string{"nq", "hotpotqa"}[i%2]}
	}
	return qs
}

// readTrajectories parses every line of out and fails on any that is not a whole JSON
// trajectory.
func readTrajectories(t *testing.T, out []byte) []Trajectory {
	t.Helper()
	var ts []Trajectory
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		var tr Trajectory
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&tr); err != nil {
			t.Fatalf("line %d is not a trajectory: %v\n%.300s", n, err, sc.Text())
		}
		ts = append(ts, tr)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) > 0 && out[len(out)-1] != '\n' {
		t.Fatalf("output does not end with a whole line: %q", out[max(0, len(out)-80):])
	}
	return ts
}

// TestRunnerBatchPerTurn: 512 questions x 5 rollouts against an OpenAI chat server that
// scripts three searches then an answer: every round's 2,560 searches go out as one
// SearchBatch call (batches == search turns), every episode is written as one valid
// JSON line with its searches, results, rewards and timings.
func TestRunnerBatchPerTurn(t *testing.T) {
	questions, rollouts := 512, 5
	if testing.Short() {
		questions = 64
	}
	const searches = 3
	srv, calls := chatServer(t, searches, nil)
	bs := &batchCounter{}
	var out bytes.Buffer
	rn := &Runner{
		Loop:        Loop{Tags: OriginalTags(), TopK: 3, MaxTurns: 4, MaxSearches: 3},
		Generator:   &OpenAI{BaseURL: srv.URL + "/v1", Chat: true, Model: "m"},
		Searcher:    bs,
		Rollouts:    rollouts,
		Concurrency: 32,
		Reward:      RewardOptions{Metric: MetricSearchReward},
		Out:         &out,
	}
	st, err := rn.Run(context.Background(), makeQuestions(questions))
	if err != nil {
		t.Fatal(err)
	}
	n := questions * rollouts
	sizes := bs.sizes()
	if len(sizes) != searches || st.SearchBatches != searches {
		t.Fatalf("%d SearchBatch calls (stats %d) for %d search turns: %v", len(sizes), st.SearchBatches, searches, sizes)
	}
	for i, s := range sizes {
		if s != n {
			t.Errorf("batch %d has %d queries, want %d (every live episode)", i, s, n)
		}
	}
	if bs.singles.Load() != 0 {
		t.Errorf("%d single searches beside the batches", bs.singles.Load())
	}
	if st.Rounds != searches+1 || st.Episodes != n || st.Written != n || st.Failed != 0 || st.Answered != n || st.Searches != n*searches {
		t.Errorf("stats %+v", st)
	}
	if got := calls.Load(); got != int64(n*(searches+1)) {
		t.Errorf("%d generator calls, want %d", got, n*(searches+1))
	}
	ts := readTrajectories(t, out.Bytes())
	if len(ts) != n {
		t.Fatalf("%d trajectories, want %d", len(ts), n)
	}
	seen := map[[2]any]bool{}
	for _, tr := range ts {
		key := [2]any{tr.ID, tr.Rollout}
		if seen[key] || tr.Index != (atoi(t, tr.ID[1:])*rollouts+tr.Rollout) {
			t.Fatalf("episode %v repeated or misnumbered (index %d)", key, tr.Index)
		}
		seen[key] = true
		if tr.Stop != "answer" || !tr.Answered || tr.Answer != "gold "+tr.ID || tr.EM != 1 || tr.SubEM != 1 || tr.F1 != 1 ||
			tr.SearchReward != 1 || tr.Reward != 1 || tr.Searches != searches || len(tr.Turns) != searches+1 {
			t.Fatalf("trajectory %+v", tr)
		}
		if !strings.Contains(tr.Prompt, "Question: "+tr.ID) || tr.DataSource == "" || len(tr.GoldenAnswers) != 1 {
			t.Fatalf("trajectory header %+v", tr)
		}
		for k, turn := range tr.Turns[:searches] {
			if turn.Action != "search" || turn.Query != fmt.Sprintf("%s-%d", tr.ID, k) || len(turn.Results) != 3 ||
				turn.Results[0].ID != turn.Query+"#0" || turn.Results[0].Score != 10 || turn.BatchSize != n ||
				!strings.HasPrefix(turn.Observation, "\n\n<information>Doc 1(Title: \"T"+turn.Query+"\") passage about "+turn.Query) ||
				!strings.HasSuffix(turn.Text, "</search>") || turn.Raw == "" {
				t.Fatalf("turn %d: %+v", k, turn)
			}
		}
		if last := tr.Turns[searches]; last.Action != "answer" || last.Observation != "" {
			t.Fatalf("last turn %+v", last)
		}
	}
	if st.EpisodesPerSecond() <= 0 || st.SearchShare() <= 0 || st.SearchShare() >= 1 {
		t.Errorf("throughput %v/s, search share %v", st.EpisodesPerSecond(), st.SearchShare())
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRunnerMatchesLoop: whatever the model does (answer at once, invalid turns, more
// searches than allowed, never answer), a lockstep episode of the runner is the episode
// Loop.Run gives: same turns, transcript, stop reason and answer.
func TestRunnerMatchesLoop(t *testing.T) {
	// Each question's script: outputs by turn, the generator omitting stop strings.
	scripts := map[string][]string{
		"direct":  {"<think>easy</think><answer> Paris </answer> trailing"},
		"invalid": {"hmm", "<search>  </search>", "<search> capital of France </search>", "<answer>Paris</answer>"},
		"budget":  {"<search> a </search>", "<search> b </search>", "<search> c </search>", "<answer> x </answer>"},
		"never":   {"<search> a </search>", "thinking", "still", "more", "<answer> late </answer>"},
		"noans":   {"x", "y", "z", "w", "no answer at all"},
	}
	gen := func(ctx context.Context, prompt string, stop []string) (string, error) {
		q := questionRE.FindStringSubmatch(prompt)[1]
		// Every turn so far left one observation; the prompt's own "<information> and"
		// is not one.
		turn := strings.Count(prompt, "\n\n<information>") + strings.Count(prompt, "My previous action is invalid") +
			strings.Count(prompt, "I have used all my searches")
		s := scripts[q]
		if turn >= len(s) {
			turn = len(s) - 1
		}
		return s[turn], nil
	}
	loop := Loop{Tags: OriginalTags(), MaxSearches: 2, MaxTurns: 4}
	var qs []Question
	for q := range scripts {
		qs = append(qs, Question{ID: q, Question: q, GoldenAnswers: []string{"Paris"}})
	}
	bs := &batchCounter{}
	var out bytes.Buffer
	rn := &Runner{Loop: loop, Generator: GeneratorFunc(gen), Searcher: bs, Out: &out}
	if _, err := rn.Run(context.Background(), qs); err != nil {
		t.Fatal(err)
	}
	got := map[string]Trajectory{}
	for _, tr := range readTrajectories(t, out.Bytes()) {
		got[tr.ID] = tr
	}
	for _, q := range qs {
		t.Run(q.ID, func(t *testing.T) {
			ep, err := loop.Run(context.Background(), GeneratorFunc(gen), &batchCounter{}, q.Question)
			if err != nil {
				t.Fatal(err)
			}
			tr := got[q.ID]
			if tr.Stop != string(ep.Stop) || tr.Answer != ep.Answer || tr.Answered != ep.Answered ||
				tr.Searches != ep.Trace.Searches || len(tr.Turns) != len(ep.Trace.Turns) {
				t.Fatalf("runner %+v\nloop %+v", tr, ep)
			}
			transcript := tr.Prompt
			for i, turn := range tr.Turns {
				lt := ep.Trace.Turns[i]
				if turn.Index != lt.Index || turn.Final != lt.Final || turn.Text != lt.Text || turn.Action != string(lt.Action) ||
					turn.Query != lt.Query || turn.Observation != lt.Observation || len(turn.Results) != len(lt.Passages) {
					t.Fatalf("turn %d: runner %+v\nloop %+v", i, turn, lt)
				}
				transcript += turn.Text + turn.Observation
			}
			if transcript != ep.Transcript {
				t.Fatalf("transcript:\n%s\nloop:\n%s", transcript, ep.Transcript)
			}
			if want := loop.Reward(ep, q.GoldenAnswers, RewardOptions{}); tr.Reward != want || tr.EM != want {
				t.Errorf("reward %v em %v, loop %v", tr.Reward, tr.EM, want)
			}
		})
	}
}

// TestRunnerCancelLeavesValidJSONL: cancelling mid-run stops it with the context's error,
// and the output holds only whole trajectory lines, one per finished episode.
func TestRunnerCancelLeavesValidJSONL(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n atomic.Int64
	gen := GeneratorFunc(func(ctx context.Context, prompt string, stop []string) (string, error) {
		q := questionRE.FindStringSubmatch(prompt)[1]
		if n.Add(1) == 150 {
			cancel()
		}
		if strings.Contains(prompt, "\n\n<information>") || atoi(t, q[1:])%2 == 0 {
			return "<answer> gold " + q + " </answer>", nil
		}
		return "<search> " + q + " </search>", ctx.Err()
	})
	var out bytes.Buffer
	rn := &Runner{Loop: Loop{Tags: OriginalTags()}, Generator: gen, Searcher: &batchCounter{}, Rollouts: 2, Wave: 64, Concurrency: 4, Out: &out}
	st, err := rn.Run(ctx, makeQuestions(200))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	ts := readTrajectories(t, out.Bytes())
	if len(ts) != st.Written || st.Written == 0 || st.Written >= 400 {
		t.Fatalf("%d lines, stats %+v", len(ts), st)
	}
	for _, tr := range ts {
		if tr.Stop != "answer" || tr.EM != 1 {
			t.Fatalf("a cancelled episode was written: %+v", tr)
		}
	}
}

// TestRunnerBadResponses: a generator answer without choices fails its episode only,
// written with its typed error; when every episode fails, Run says so and wraps the
// cause.
func TestRunnerBadResponses(t *testing.T) {
	tests := []struct {
		name      string
		bad       map[string]bool
		wantErr   error
		wantFails int
	}{
		{"one bad", map[string]bool{"q3": true}, nil, 2},
		{"all bad", map[string]bool{"q0": true, "q1": true, "q2": true, "q3": true}, ErrAllEpisodesFailed, 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := chatServer(t, 1, tc.bad)
			var out bytes.Buffer
			rn := &Runner{Generator: &OpenAI{BaseURL: srv.URL + "/v1", Chat: true}, Searcher: &batchCounter{}, Rollouts: 2, Out: &out}
			st, err := rn.Run(context.Background(), makeQuestions(4))
			if !errors.Is(err, tc.wantErr) || (tc.wantErr != nil && !errors.Is(err, ErrBadResponse)) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if st.Failed != tc.wantFails || st.Written != 8 {
				t.Fatalf("stats %+v", st)
			}
			fails := 0
			for _, tr := range readTrajectories(t, out.Bytes()) {
				if tr.Stop == "error" {
					fails++
					if !tc.bad[tr.ID] || !strings.Contains(tr.Error, ErrBadResponse.Error()) || tr.Reward != 0 {
						t.Errorf("failed trajectory %+v", tr)
					}
				} else if tc.bad[tr.ID] || tr.EM != 1 {
					t.Errorf("trajectory %+v", tr)
				}
			}
			if fails != tc.wantFails {
				t.Errorf("%d failed lines, want %d", fails, tc.wantFails)
			}
		})
	}
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestRunnerStops: a search error, a write error and bad options stop the run with
// typed errors; caps cut queries and turns.
func TestRunnerStops(t *testing.T) {
	srv, _ := chatServer(t, 2, nil)
	gen := &OpenAI{BaseURL: srv.URL + "/v1", Chat: true}
	t.Run("search error", func(t *testing.T) {
		_, err := (&Runner{Generator: gen, Searcher: &batchCounter{failAt: 2}}).Run(context.Background(), makeQuestions(3))
		if !errors.Is(err, errBatchFailed) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("write error", func(t *testing.T) {
		_, err := (&Runner{Generator: gen, Searcher: &batchCounter{}, Out: failWriter{}}).Run(context.Background(), makeQuestions(3))
		if !errors.Is(err, ErrWriteTrajectory) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("no searcher", func(t *testing.T) {
		_, err := (&Runner{Generator: gen}).Run(context.Background(), makeQuestions(1))
		if !errors.Is(err, errNoSearcher) {
			t.Fatalf("err %v", err)
		}
	})
	for _, rn := range []*Runner{
		{}, {Generator: gen, Rollouts: -1}, {Generator: gen, Concurrency: -1}, {Generator: gen, Wave: -2},
		{Generator: gen, MaxTurnTokens: -1}, {Generator: gen, Reward: RewardOptions{Metric: "bleu"}},
		{Generator: gen, Loop: Loop{TopK: -1}},
	} {
		if _, err := rn.Run(context.Background(), makeQuestions(1)); !errors.Is(err, ErrInvalidOption) && !errors.Is(err, errNoGenerator) {
			t.Errorf("%+v: err %v", rn, err)
		}
	}
	t.Run("caps", func(t *testing.T) {
		long := strings.Repeat("word ", 400)
		gen := GeneratorFunc(func(ctx context.Context, prompt string, stop []string) (string, error) {
			if strings.Contains(prompt, "\n\n<context>") {
				return "<answer> " + long + " </answer>", nil
			}
			return "<search>" + long + "</search>", nil
		})
		var out bytes.Buffer
		rn := &Runner{Generator: gen, Searcher: &batchCounter{}, MaxQueryChars: 50, MaxTurnTokens: 100, Out: &out}
		if _, err := rn.Run(context.Background(), makeQuestions(1)); err != nil {
			t.Fatal(err)
		}
		tr := readTrajectories(t, out.Bytes())[0]
		// 400 words are cut to 100: the closing tag is lost and the turn is repaired as
		// after a stop sequence; the query is then cut to 50 characters.
		if q := tr.Turns[0].Query; len([]rune(q)) > 50 || q == "" {
			t.Errorf("query %d chars: %q", len(q), q)
		}
		if n := len(strings.Fields(tr.Turns[0].Raw)); n > 101 {
			t.Errorf("turn of %d words", n)
		}
	})
}

// BenchmarkRunner measures the runner's own cost: 512 x 5 episodes of three searches and
// an answer, an in-process scripted model and a searcher that answers at once, so the
// time is the lockstep bookkeeping, formatting, rewards and JSONL encoding.
func BenchmarkRunner(b *testing.B) {
	qs := makeQuestions(512)
	gen := GeneratorFunc(func(ctx context.Context, prompt string, stop []string) (string, error) {
		q := questionRE.FindStringSubmatch(prompt)[1]
		if n := strings.Count(prompt, "\n\n<information>"); n < 3 {
			return fmt.Sprintf("<think>step %d</think>\n<search> %s %d </search>", n, q, n), nil
		}
		return "<think>done</think>\n<answer> gold " + q + " </answer>", nil
	})
	b.ReportAllocs()
	var st RunStats
	for i := 0; i < b.N; i++ {
		rn := &Runner{Loop: Loop{Tags: OriginalTags()}, Generator: gen, Searcher: &batchCounter{}, Rollouts: 5, Out: io.Discard}
		var err error
		if st, err = rn.Run(context.Background(), qs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(st.Written)*float64(b.N)/b.Elapsed().Seconds(), "episodes/s")
}
