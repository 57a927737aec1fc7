package webui

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentmem/memory/internal/atomicfile"
	"github.com/agentmem/memory/internal/beir"
)

// EvalReportFormat is the format number of the reports WriteEvalReport writes; ReadEvalReport
// reads this format only.
const EvalReportFormat = 1

// MaxEvalReportBytes is the largest report file ReadEvalReport reads.
const MaxEvalReportBytes = 64 << 20

// EvalReport is what one evaluation run measured, as `memory eval --report-out` writes it:
// the averages of its metrics, each query's figures and the latency percentiles.
type EvalReport struct {
	// Format is EvalReportFormat (WriteEvalReport sets it).
	Format int `json:"format"`
	// Name labels the run in charts (required).
	Name string `json:"name"`
	// Dataset is the evaluated collection (the BEIR folder's path or name).
	Dataset string `json:"dataset,omitempty"`
	// Mode is the search mode used (hybrid, bm25, dense; "hybrid+rerank" says a reranked
	// run): a label, not checked.
	Mode string `json:"mode,omitempty"`
	// Date is when the run ended.
	Date time.Time `json:"date"`
	// Docs is the number of documents searched; K the results asked per query (0: unknown).
	Docs int `json:"docs"`
	K    int `json:"k,omitempty"`
	// Metrics are the averages over the judged queries.
	Metrics EvalMetrics `json:"metrics"`
	// Latency is over every query searched, in milliseconds.
	Latency Latency `json:"latency_ms"`
	// PerQuery holds each judged query's figures, in the order of the queries.
	PerQuery []QueryScore `json:"per_query"`
}

// EvalMetrics are a run's averages over its judged queries (trec_eval's definitions; see
// internal/beir.Evaluate), each in [0, 1].
type EvalMetrics struct {
	Queries   int     `json:"queries"`
	NDCG10    float64 `json:"ndcg@10"`
	Recall100 float64 `json:"recall@100"`
	MRR10     float64 `json:"mrr@10"`
}

// Latency are query latency percentiles in milliseconds over Queries queries (all 0 when
// none was timed). A percentile p is the latency at index min(n-1, floor(p*n)) of the
// sorted latencies, as `memory eval` prints it.
type Latency struct {
	Queries int     `json:"queries"`
	P50     float64 `json:"p50"`
	P90     float64 `json:"p90"`
	P99     float64 `json:"p99"`
	Mean    float64 `json:"mean"`
	Max     float64 `json:"max"`
}

// QueryScore is one judged query's figures; LatencyMS is nil when the run's latencies were
// not given query by query.
type QueryScore struct {
	ID        string   `json:"id"`
	Text      string   `json:"text,omitempty"`
	NDCG10    float64  `json:"ndcg@10"`
	Recall100 float64  `json:"recall@100"`
	MRR10     float64  `json:"mrr@10"`
	LatencyMS *float64 `json:"latency_ms,omitempty"`
}

// EvalInput is what NewEvalReport builds a report from: the run of `memory eval` and its
// judgments.
type EvalInput struct {
	// Name labels the report ("": the dataset's base name and the mode).
	Name, Dataset, Mode string
	// Docs is the number of documents searched; K the results asked per query.
	Docs, K int
	// Date is when the run ended (zero: now).
	Date time.Time
	// Queries are the queries searched, in order; nil: every query of Qrels, by id.
	Queries []beir.Query
	// Qrels are the judgments (those of queries not in Queries are left out), Run the
	// results of each query.
	Qrels beir.Qrels
	Run   beir.Run
	// Latencies are the queries' search times: Latencies[i] is Queries[i]'s when the two
	// have the same length (else only the percentiles are reported). Not modified.
	Latencies []time.Duration
}

// NewEvalReport scores in.Run against in.Qrels (internal/beir.Evaluate: nDCG@10,
// Recall@100, MRR@10) and returns the report of the run: the averages, each judged query's
// figures in the order of in.Queries, and the latency percentiles.
func NewEvalReport(in EvalInput) EvalReport {
	qrels := in.Qrels
	ids := make([]string, 0, len(in.Qrels))
	texts := map[string]string{}
	if in.Queries != nil {
		qrels = beir.Qrels{}
		for _, q := range in.Queries {
			if rel, ok := in.Qrels[q.ID]; ok {
				qrels[q.ID] = rel
			}
			ids = append(ids, q.ID)
			texts[q.ID] = q.Text
		}
	} else {
		for id := range in.Qrels {
			ids = append(ids, id)
		}
		slices.Sort(ids)
	}
	met, per := beir.Evaluate(qrels, in.Run)
	r := EvalReport{
		Format: EvalReportFormat, Name: in.Name, Dataset: in.Dataset, Mode: in.Mode, Date: in.Date,
		Docs: in.Docs, K: in.K,
		Metrics: EvalMetrics{Queries: met.Queries, NDCG10: met.NDCG10, Recall100: met.Recall100, MRR10: met.MRR10},
		Latency: latencyOf(in.Latencies), PerQuery: []QueryScore{},
	}
	if r.Name == "" {
		r.Name = strings.TrimSpace(filepath.Base(in.Dataset) + " " + in.Mode)
		if in.Dataset == "" {
			r.Name = strings.TrimSpace("eval " + in.Mode)
		}
	}
	if r.Date.IsZero() {
		r.Date = time.Now()
	}
	r.Date = r.Date.UTC().Truncate(time.Second)
	timed := in.Queries != nil && len(in.Latencies) == len(in.Queries)
	seen := make(map[string]bool, len(ids))
	for i, id := range ids {
		qm, judged := per[id]
		if !judged || seen[id] {
			continue
		}
		seen[id] = true
		qs := QueryScore{ID: id, Text: texts[id], NDCG10: qm.NDCG10, Recall100: qm.Recall100, MRR10: qm.MRR10}
		if timed {
			ms := millis(in.Latencies[i])
			qs.LatencyMS = &ms
		}
		r.PerQuery = append(r.PerQuery, qs)
	}
	return r
}

// millis is d in milliseconds (microsecond precision).
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// latencyOf returns the percentiles of lat (a copy is sorted).
func latencyOf(lat []time.Duration) Latency {
	if len(lat) == 0 {
		return Latency{}
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	pct := func(p float64) float64 { return millis(s[min(len(s)-1, int(p*float64(len(s))))]) }
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Latency{Queries: len(s), P50: pct(0.50), P90: pct(0.90), P99: pct(0.99),
		Mean: millis(sum / time.Duration(len(s))), Max: millis(s[len(s)-1])}
}

// check reports the first thing wrong with r as ErrInvalidReport.
func (r EvalReport) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidReport, fmt.Sprintf(format, args...))
	}
	if r.Format != EvalReportFormat {
		return bad("format %d, want %d (not an eval report, or one of another version)", r.Format, EvalReportFormat)
	}
	if strings.TrimSpace(r.Name) == "" {
		return bad("no name")
	}
	if r.Docs < 0 || r.K < 0 || r.Metrics.Queries < 0 || r.Latency.Queries < 0 {
		return bad("negative docs %d, k %d or query count %d/%d", r.Docs, r.K, r.Metrics.Queries, r.Latency.Queries)
	}
	unit := func(what string, v float64) error {
		if !(v >= 0 && v <= 1) {
			return bad("%s %v: want 0 to 1", what, v)
		}
		return nil
	}
	m := r.Metrics
	if err := errors.Join(unit("nDCG@10", m.NDCG10), unit("Recall@100", m.Recall100), unit("MRR@10", m.MRR10)); err != nil {
		return err
	}
	l := r.Latency
	for _, v := range []float64{l.P50, l.P90, l.P99, l.Mean, l.Max} {
		if !(v >= 0) || math.IsInf(v, 0) {
			return bad("latency %v ms: want a finite number >= 0", v)
		}
	}
	for i, q := range r.PerQuery {
		if q.ID == "" {
			return bad("per_query[%d] has no id", i)
		}
		if err := errors.Join(unit("per_query["+q.ID+"] nDCG@10", q.NDCG10), unit("per_query["+q.ID+"] Recall@100", q.Recall100),
			unit("per_query["+q.ID+"] MRR@10", q.MRR10)); err != nil {
			return err
		}
		if q.LatencyMS != nil && (!(*q.LatencyMS >= 0) || math.IsInf(*q.LatencyMS, 0)) {
			return bad("per_query[%s] latency %v ms: want a finite number >= 0", q.ID, *q.LatencyMS)
		}
	}
	return nil
}

// WriteEvalReport writes r as JSON to path, replacing the file whole (internal/atomicfile):
// a reader never sees half a report. r.Format is set to EvalReportFormat; a report that
// ReadEvalReport would refuse (no name, a metric out of 0..1) is ErrInvalidReport and
// nothing is written.
func WriteEvalReport(path string, r EvalReport) error {
	r.Format = EvalReportFormat
	if r.PerQuery == nil {
		r.PerQuery = []QueryScore{}
	}
	if err := r.check(); err != nil {
		return fmt.Errorf("%w (writing %s)", err, path)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalidReport, path, err)
	}
	return atomicfile.WriteFile(path, append(data, '\n'), atomicfile.Options{})
}

// ReadEvalReport reads the report at path. A file that cannot be opened is the os error
// (fs.ErrNotExist...); one that is not a report of this format (malformed JSON, another
// format number, a metric out of range, over MaxEvalReportBytes) is ErrInvalidReport
// naming the file and what is wrong.
func ReadEvalReport(path string) (EvalReport, error) {
	f, err := os.Open(path)
	if err != nil {
		return EvalReport{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxEvalReportBytes+1))
	if err != nil {
		return EvalReport{}, fmt.Errorf("webui: reading %s: %w", path, err)
	}
	if len(data) > MaxEvalReportBytes {
		return EvalReport{}, fmt.Errorf("%w: %s is over %d bytes", ErrInvalidReport, path, MaxEvalReportBytes)
	}
	var r EvalReport
	if err := json.Unmarshal(data, &r); err != nil {
		return EvalReport{}, fmt.Errorf("%w: %s: %w", ErrInvalidReport, path, err)
	}
	if err := r.check(); err != nil {
		return EvalReport{}, fmt.Errorf("%w (in %s)", err, path)
	}
	if r.PerQuery == nil {
		r.PerQuery = []QueryScore{}
	}
	return r, nil
}
