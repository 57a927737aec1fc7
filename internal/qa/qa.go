// Package qa evaluates a Search-R1 agent on question answering, the way Search-R1 and
// FlashRAG report results: it reads a JSONL file of questions with golden answers, runs
// every question through a [searchr1.Runner] (a generator and a searcher, one retrieval
// batch per round), and scores the answers by exact match, sub-string match (cover EM)
// and token F1 after Search-R1's normalisation (lower case, no punctuation, no articles,
// single spaces; see [searchr1.NormalizeAnswer]), overall and per dataset.
//
// A line of the file is a JSON object in the FlashRAG / Search-R1 shape:
//
//	{"id": "test_0", "question": "who wrote ...?", "golden_answers": ["..."], "data_source": "nq"}
//
// The id may be a string or an integer (absent: the line number). golden_answers may be a
// list or one string; "answers", "answer" and Search-R1's
// "reward_model": {"ground_truth": {"target": [...]}} are read when it is absent or an
// empty list. The answers are kept as given, empty ones included, and scored as the
// original scores them (qa_em.py: an empty answer is a substring of every prediction;
// no answer at all matches nothing); [Report] counts the questions without a non-empty
// answer. data_source groups the scores (absent: [LoadFile] uses the file's name).
package qa

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentmem/memory/searchr1"
)

// Question is one question with its golden answers ([searchr1.Question]).
type Question = searchr1.Question

// Errors of the package.
var (
	// ErrFormat: a line of a QA file is not a question; the error names the file and
	// line.
	ErrFormat = errors.New("qa: malformed question")
	// ErrNoQuestions: the file holds no question.
	ErrNoQuestions = errors.New("qa: no questions")
)

// MaxLineBytes is the longest line a QA file may hold.
const MaxLineBytes = 16 << 20

// line is the accepted shape of a line.
type line struct {
	ID            json.RawMessage `json:"id"`
	Question      *string         `json:"question"`
	GoldenAnswers json.RawMessage `json:"golden_answers"`
	Answers       json.RawMessage `json:"answers"`
	Answer        json.RawMessage `json:"answer"`
	DataSource    string          `json:"data_source"`
	RewardModel   *struct {
		GroundTruth struct {
			Target json.RawMessage `json:"target"`
		} `json:"ground_truth"`
	} `json:"reward_model"`
}

// Load reads questions from JSONL; name is the file name errors give. Blank lines are
// skipped; any other line that is not a question with a non-empty question text and a
// golden answers field (a list, possibly empty, or a string) fails with [ErrFormat]. A
// question whose answers are all empty, or none, is kept (see [EmptyGold]).
func Load(r io.Reader, name string) ([]Question, error) {
	var out []Question
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	for n := 1; sc.Scan(); n++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		q, err := parseLine(b, n)
		if err != nil {
			return nil, fmt.Errorf("%w: %s:%d: %v", ErrFormat, name, n, err)
		}
		out = append(out, q)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%w: %s: a line over %d bytes", ErrFormat, name, MaxLineBytes)
		}
		return nil, fmt.Errorf("qa: read %s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w in %s", ErrNoQuestions, name)
	}
	return out, nil
}

// LoadFile reads the QA file at path with [Load]; a question without data_source gets the
// file's name without its extension.
func LoadFile(path string) ([]Question, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("qa: %w", err)
	}
	defer f.Close()
	qs, err := Load(f, path)
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	for i := range qs {
		if qs[i].DataSource == "" {
			qs[i].DataSource = base
		}
	}
	return qs, nil
}

func parseLine(b []byte, n int) (Question, error) {
	var l line
	if err := json.Unmarshal(b, &l); err != nil {
		return Question{}, err
	}
	if l.Question == nil || strings.TrimSpace(*l.Question) == "" {
		return Question{}, errors.New("no question")
	}
	q := Question{Question: *l.Question, DataSource: l.DataSource}
	switch id := bytes.TrimSpace(l.ID); {
	case len(id) == 0 || string(id) == "null":
		q.ID = strconv.Itoa(n)
	case id[0] == '"':
		if err := json.Unmarshal(id, &q.ID); err != nil {
			return Question{}, fmt.Errorf("id: %v", err)
		}
	default:
		var num json.Number
		if err := json.Unmarshal(id, &num); err != nil {
			return Question{}, fmt.Errorf("id is neither a string nor a number: %s", id)
		}
		q.ID = num.String()
	}
	raws := []json.RawMessage{l.GoldenAnswers, l.Answers, l.Answer}
	if l.RewardModel != nil {
		raws = append(raws, l.RewardModel.GroundTruth.Target)
	}
	present := false
	for _, raw := range raws {
		golds, ok, err := answers(raw)
		if err != nil {
			return Question{}, err
		}
		if !ok {
			continue
		}
		if len(golds) > 0 {
			q.GoldenAnswers = golds
			return q, nil
		}
		present = true
	}
	if present { // an empty list: kept, matching nothing (as em_check over no answers)
		q.GoldenAnswers = []string{}
		return q, nil
	}
	return Question{}, errors.New("no golden answers")
}

// answers decodes a list of strings or one string, kept as given (empty ones included);
// numbers are kept as their text. ok is false when the field is missing or null.
func answers(raw json.RawMessage) (out []string, ok bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false, nil
	}
	var one any
	if err := json.Unmarshal(raw, &one); err != nil {
		return nil, false, err
	}
	var list []any
	switch v := one.(type) {
	case []any:
		list = v
	default:
		list = []any{v}
	}
	for _, a := range list {
		switch v := a.(type) {
		case string:
			out = append(out, v)
		case float64:
			out = append(out, strconv.FormatFloat(v, 'f', -1, 64))
		default:
			return nil, false, fmt.Errorf("golden answer %v is not a string", a)
		}
	}
	return out, true, nil
}

// EmptyGold reports whether q has no golden answer that normalises to a non-empty string
// ([searchr1.NormalizeAnswer]): none at all, which no prediction matches, or only empty
// ones, which every prediction contains (SubEM 1) and an empty answer equals (EM 1), as
// in the original's qa_em.py.
func EmptyGold(q Question) bool {
	for _, g := range q.GoldenAnswers {
		if searchr1.NormalizeAnswer(g) != "" {
			return false
		}
	}
	return true
}

// Match is the score of one prediction: 1 or 0 for EM and SubEM, F1 in [0, 1].
type Match struct {
	EM, SubEM, F1 float64
}

// Score compares prediction with the golden answers by exact match, sub-string match
// (a normalised golden answer within the normalised prediction) and the best token F1,
// all after Search-R1's normalisation.
func Score(prediction string, golds []string) Match {
	var m Match
	if searchr1.ExactMatch(prediction, golds...) {
		m.EM = 1
	}
	if searchr1.SubstringMatch(prediction, golds...) {
		m.SubEM = 1
	}
	m.F1 = searchr1.TokenF1(prediction, golds...)
	return m
}

// Scores are the mean scores of a set of episodes.
type Scores struct {
	// Episodes is the number of scored episodes (questions x rollouts); Answered how many
	// gave an answer, Failed how many failed (scored 0); EmptyGold how many are of a
	// question without a non-empty golden answer ([EmptyGold]), scored as the original
	// scores them.
	Episodes, Answered, Failed, EmptyGold int
	// EM, SubEM and F1 are the means over the episodes (an unanswered or failed one
	// scores 0).
	EM, SubEM, F1 float64
	// Searches is the mean number of searches of an episode.
	Searches float64
}

// Report is the outcome of [Evaluate].
type Report struct {
	// Overall are the scores of every episode; Datasets those of each data_source.
	Overall  Scores
	Datasets map[string]Scores
	// Run are the runner's figures (throughput, retrieval share).
	Run searchr1.RunStats
}

// DatasetNames returns the datasets of the report, sorted.
func (r Report) DatasetNames() []string {
	names := make([]string, 0, len(r.Datasets))
	for n := range r.Datasets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// WriteText writes the report as a table: one row per dataset and one for all.
func (r Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "dataset\tepisodes\tEM\tSubEM\tF1\tanswered\tsearches\tfailed")
	row := func(name string, s Scores) {
		fmt.Fprintf(tw, "%s\t%d\t%.4f\t%.4f\t%.4f\t%d\t%.2f\t%d\n", name, s.Episodes, s.EM, s.SubEM, s.F1, s.Answered, s.Searches, s.Failed)
	}
	for _, n := range r.DatasetNames() {
		row(n, r.Datasets[n])
	}
	row("all", r.Overall)
	if err := tw.Flush(); err != nil {
		return err
	}
	if n := r.Overall.EmptyGold; n > 0 {
		if _, err := fmt.Fprintf(w, "note: %d episodes are of questions without a non-empty golden answer, scored as Search-R1's qa_em.py scores them (none: 0; only empty ones: SubEM 1)\n", n); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "run: %d episodes in %v (%.1f episodes/s), %d search batches, retrieval %.1f%% of the time\n",
		r.Run.Written, r.Run.Elapsed.Round(time.Millisecond), r.Run.EpisodesPerSecond(), r.Run.SearchBatches, 100*r.Run.SearchShare())
	return err
}

// acc accumulates scores.
type acc struct {
	s                    Scores
	em, subem, f1, turns float64
}

func (a *acc) add(t *searchr1.Trajectory) {
	a.s.Episodes++
	if EmptyGold(Question{GoldenAnswers: t.GoldenAnswers}) {
		a.s.EmptyGold++
	}
	if t.Error != "" {
		a.s.Failed++
		return
	}
	if t.Answered {
		a.s.Answered++
		m := Score(t.Answer, t.GoldenAnswers)
		a.em += m.EM
		a.subem += m.SubEM
		a.f1 += m.F1
	}
	a.turns += float64(t.Searches)
}

func (a *acc) scores() Scores {
	s := a.s
	if s.Episodes > 0 {
		n := float64(s.Episodes)
		s.EM, s.SubEM, s.F1, s.Searches = a.em/n, a.subem/n, a.f1/n, a.turns/n
	}
	return s
}

// Evaluate runs every question through runner (its Rollouts times; each rollout is
// scored) and returns the scores overall and per data_source. The runner is not changed:
// a copy runs, calling runner.OnEpisode too when it is set. On error the report holds the
// episodes finished so far.
func Evaluate(ctx context.Context, runner *searchr1.Runner, questions []Question) (Report, error) {
	if runner == nil {
		return Report{}, fmt.Errorf("%w: no runner", searchr1.ErrInvalidOption)
	}
	if len(questions) == 0 {
		return Report{}, ErrNoQuestions
	}
	var all acc
	per := map[string]*acc{}
	rn := *runner
	rn.OnEpisode = func(t *searchr1.Trajectory) {
		all.add(t)
		a := per[t.DataSource]
		if a == nil {
			a = &acc{}
			per[t.DataSource] = a
		}
		a.add(t)
		if runner.OnEpisode != nil {
			runner.OnEpisode(t)
		}
	}
	st, err := rn.Run(ctx, questions)
	rep := Report{Overall: all.scores(), Datasets: map[string]Scores{}, Run: st}
	for n, a := range per {
		rep.Datasets[n] = a.scores()
	}
	return rep, err
}
