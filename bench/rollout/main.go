// Command rollout measures searchr1.Runner, the batched rollout runner, against a store:
// N questions x G rollouts from a scripted fake generator that searches real queries, so
// the figures are the runner's and the retrieval's cost without a model.
//
//	go run ./bench/corpusgen -n 1000000 -out /tmp/corpus1m
//	memory index --store /tmp/store1m /tmp/corpus1m/corpus.jsonl
//	flock /tmp/bench.lock go run ./bench/rollout -store /tmp/store1m -queries /tmp/corpus1m/batch-queries.jsonl
//
// Each episode searches -searches times (each rollout of a question a different query of
// the file), then answers. With -http the generator is an OpenAI chat/completions server
// on loopback (searchr1.OpenAI with Chat), so the HTTP and JSON cost of a vLLM client is
// included; without it the generator is called in process.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/searchr1"
)

func main() {
	var (
		storeDir = flag.String("store", "", "store directory (required)")
		qfile    = flag.String("queries", "", "JSONL with a text field per line (required): the questions and the searches")
		n        = flag.Int("n", 512, "questions")
		g        = flag.Int("g", 5, "rollouts per question")
		searches = flag.Int("searches", 3, "searches per episode before the answer")
		topk     = flag.Int("topk", 3, "passages per search")
		mode     = flag.String("mode", "bm25", "bm25, dense or hybrid")
		conc     = flag.Int("concurrency", 64, "generations in flight")
		useHTTP  = flag.Bool("http", false, "generate through an OpenAI chat/completions server on loopback")
		out      = flag.String("out", "", "write the trajectories here (default: discarded)")
		rounds   = flag.Int("rounds", 2, "runs (the first on a cold cache)")
	)
	flag.Parse()
	if *storeDir == "" || *qfile == "" {
		fmt.Fprintln(os.Stderr, "usage: rollout -store S -queries Q.jsonl [-n 512] [-g 5] [-searches 3] [-http]")
		os.Exit(2)
	}
	if err := run(*storeDir, *qfile, *n, *g, *searches, *topk, *mode, *conc, *useHTTP, *out, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "rollout:", err)
		os.Exit(1)
	}
}

func run(dir, qfile string, n, g, searches, topk int, mode string, conc int, useHTTP bool, outPath string, rounds int) error {
	texts, err := readTexts(qfile)
	if err != nil {
		return err
	}
	if len(texts) == 0 {
		return fmt.Errorf("%s: no queries", qfile)
	}
	t := time.Now()
	mem, err := memory.OpenExisting(dir, memory.ReadOnly())
	if err != nil {
		return err
	}
	defer mem.Close()
	docs, err := mem.Count(context.Background())
	if err != nil {
		return err
	}
	fmt.Printf("open %v, %d docs\n", time.Since(t).Round(time.Millisecond), docs)

	questions := make([]searchr1.Question, n)
	for i := range questions {
		q := texts[i%len(texts)]
		questions[i] = searchr1.Question{ID: fmt.Sprint(i), Question: fmt.Sprintf("[%d] %s", i, q), GoldenAnswers: []string{"answer " + fmt.Sprint(i)}}
	}
	sc := &script{texts: texts, g: g, searches: searches, seen: map[[2]int]int{}}
	var gen searchr1.Generator = searchr1.GeneratorFunc(sc.generate)
	if useHTTP {
		srv := httptest.NewServer(http.HandlerFunc(sc.serveChat))
		defer srv.Close()
		gen = &searchr1.OpenAI{BaseURL: srv.URL + "/v1", Chat: true, Model: "fake"}
	}
	for r := 0; r < rounds; r++ {
		sc.reset()
		var w io.Writer = io.Discard
		var f *os.File
		if outPath != "" {
			if f, err = os.Create(outPath); err != nil {
				return err
			}
			w = f
		}
		rn := &searchr1.Runner{
			Loop:        searchr1.Loop{Tags: searchr1.OriginalTags(), TopK: topk, MaxTurns: searches + 1, MaxSearches: searches, SearchOptions: []memory.SearchOption{memory.WithMode(memory.Mode(mode))}},
			Generator:   gen,
			Searcher:    mem,
			Rollouts:    g,
			Concurrency: conc,
			Out:         w,
		}
		st, err := rn.Run(context.Background(), questions)
		if f != nil {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return err
		}
		fmt.Printf("run %d: %d x %d episodes in %v: %.0f episodes/s; %d rounds, %d search batches of %d queries, retrieval %v (%.1f%% of the time, %v a batch), generation %v; answered %d; %s\n",
			r, n, g, st.Elapsed.Round(time.Millisecond), st.EpisodesPerSecond(), st.Rounds, st.SearchBatches,
			st.Searches/max(1, st.SearchBatches), st.SearchTime.Round(time.Millisecond), 100*st.SearchShare(),
			(st.SearchTime / time.Duration(max(1, st.SearchBatches))).Round(time.Millisecond),
			st.GenerateTime.Round(time.Millisecond), st.Answered, rss())
	}
	return nil
}

// script is the fake model: turn k of an episode searches a query of the file chosen by
// the question, the turn and how many rollouts of it already made that turn (so every
// rollout searches something else), and the last turn answers.
type script struct {
	texts    []string
	g        int
	searches int
	mu       sync.Mutex
	seen     map[[2]int]int // (question, turn) -> calls so far
}

func (s *script) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = map[[2]int]int{}
}

var qnum = regexp.MustCompile(`Question: \[(\d+)\]`)

// next returns the model's next turn for the transcript so far.
func (s *script) next(prompt, assistant string) string {
	m := qnum.FindStringSubmatch(prompt)
	if m == nil {
		return "<answer> unknown </answer>"
	}
	var qi int
	fmt.Sscan(m[1], &qi)
	turn := strings.Count(assistant, "</search>")
	if turn >= s.searches {
		return fmt.Sprintf("<think>I have what I need.</think>\n<answer> answer %d </answer>", qi)
	}
	s.mu.Lock()
	c := s.seen[[2]int{qi, turn}]
	s.seen[[2]int{qi, turn}]++
	s.mu.Unlock()
	q := s.texts[(qi*s.g+c+turn*7919)%len(s.texts)]
	return fmt.Sprintf("<think>I need to look up fact %d.</think>\n<search> %s </search>", turn, q)
}

func (s *script) generate(ctx context.Context, prompt string, stop []string) (string, error) {
	// The assistant's text so far follows the prompt's question line.
	assistant := ""
	if i := strings.Index(prompt, "Question: ["); i >= 0 {
		if j := strings.IndexByte(prompt[i:], '\n'); j >= 0 {
			assistant = prompt[i+j+1:]
		}
	}
	return s.next(prompt, assistant), nil
}

// serveChat answers OpenAI chat/completions requests, stopping before the stop string as
// vLLM does.
func (s *script) serveChat(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct{ Role, Content string } `json:"messages"`
		Stop     []string                         `json:"stop"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	assistant := ""
	if last := req.Messages[len(req.Messages)-1]; last.Role == "assistant" {
		assistant = last.Content
	}
	text := s.next(req.Messages[0].Content, assistant)
	for _, st := range req.Stop {
		if i := strings.Index(text, st); i >= 0 {
			text = text[:i]
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"choices": []any{map[string]any{"index": 0, "message": map[string]string{"role": "assistant", "content": text}, "finish_reason": "stop"}},
	})
}

func readTexts(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var q struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if q.Text != "" {
			out = append(out, q.Text)
		}
	}
	return out, sc.Err()
}

// rss is the process's peak resident set size, from /proc.
func rss() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			return "peak RSS " + strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:"))
		}
	}
	return ""
}
