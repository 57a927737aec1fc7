package webui

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNewEvalReport(t *testing.T) {
	in := testEvalInput()
	lat := slices.Clone(in.Latencies)
	r := NewEvalReport(in)
	if !slices.Equal(in.Latencies, lat) {
		t.Errorf("the caller's latencies were reordered: %v", in.Latencies)
	}
	// q1 first (nDCG 1, MRR 1), q2 second (nDCG 1/log2(3), MRR 0.5), q3 missed; q4 is
	// judged but was not searched: left out.
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	ndcg2 := 1 / math.Log2(3)
	m := r.Metrics
	if m.Queries != 3 || !near(m.NDCG10, (1+ndcg2)/3) || !near(m.Recall100, 2.0/3) || !near(m.MRR10, 0.5) {
		t.Errorf("metrics %+v", m)
	}
	if len(r.PerQuery) != 3 {
		t.Fatalf("per query %+v", r.PerQuery)
	}
	for i, want := range []QueryScore{
		{ID: "q1", Text: "deploy release", NDCG10: 1, Recall100: 1, MRR10: 1},
		{ID: "q2", Text: "bananas", NDCG10: ndcg2, Recall100: 1, MRR10: 0.5},
		{ID: "q3", Text: "python"},
	} {
		got := r.PerQuery[i]
		if got.ID != want.ID || got.Text != want.Text || !near(got.NDCG10, want.NDCG10) || got.Recall100 != want.Recall100 ||
			got.MRR10 != want.MRR10 || got.LatencyMS == nil || *got.LatencyMS != millis(in.Latencies[i]) {
			t.Errorf("per query %d: %+v, want %+v", i, got, want)
		}
	}
	if r.Latency != (Latency{Queries: 3, P50: 2, P90: 3, P99: 3, Mean: 2, Max: 3}) {
		t.Errorf("latency %+v", r.Latency)
	}
	if r.Name != "fixture hybrid" || r.Format != EvalReportFormat || !r.Date.Equal(in.Date) {
		t.Errorf("report %q format %d date %v", r.Name, r.Format, r.Date)
	}

	// Without queries: every judged query by id; latencies not per query; a default name.
	in.Queries, in.Name, in.Date = nil, "", time.Time{}
	r = NewEvalReport(in)
	var ids []string
	for _, q := range r.PerQuery {
		ids = append(ids, q.ID)
		if q.LatencyMS != nil {
			t.Errorf("query %s has a latency without the query order", q.ID)
		}
	}
	if strings.Join(ids, ",") != "q1,q2,q3,q4" || r.Metrics.Queries != 4 || r.Name != "fixture hybrid" || r.Date.IsZero() {
		t.Errorf("without queries: ids %v, %d queries, name %q, date %v", ids, r.Metrics.Queries, r.Name, r.Date)
	}
}

func TestLatencyPercentiles(t *testing.T) {
	lat := make([]time.Duration, 100)
	for i := range lat {
		lat[i] = time.Duration(100-i) * time.Millisecond // 100 ms .. 1 ms
	}
	got := latencyOf(lat)
	if want := (Latency{Queries: 100, P50: 51, P90: 91, P99: 100, Mean: 50.5, Max: 100}); got != want {
		t.Errorf("latency %+v, want %+v", got, want)
	}
	if got := latencyOf(nil); got != (Latency{}) {
		t.Errorf("no latencies: %+v", got)
	}
}

func TestEvalReportRoundTrip(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.json")
	want := NewEvalReport(testEvalInput())
	want.Format = 0 // set by WriteEvalReport
	if err := WriteEvalReport(p, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadEvalReport(p)
	if err != nil {
		t.Fatal(err)
	}
	want.Format = EvalReportFormat
	if !jsonEqual(got, want) {
		t.Errorf("read back %+v, want %+v", got, want)
	}
	// Overwritten whole, with no temporary file left beside it.
	want.Name = "second"
	if err := WriteEvalReport(p, want); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadEvalReport(p); err != nil || got.Name != "second" {
		t.Errorf("rewritten: %q %v", got.Name, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("folder holds %d files", len(entries))
	}
}

func TestWriteEvalReportRefuses(t *testing.T) {
	good := NewEvalReport(testEvalInput())
	for _, tc := range []struct {
		name  string
		spoil func(*EvalReport)
		says  string
	}{
		{"no name", func(r *EvalReport) { r.Name = " " }, "no name"},
		{"metric over 1", func(r *EvalReport) { r.Metrics.Recall100 = 1.5 }, "Recall@100 1.5"},
		{"NaN metric", func(r *EvalReport) { r.Metrics.MRR10 = math.NaN() }, "MRR@10 NaN"},
		{"negative latency", func(r *EvalReport) { r.Latency.P99 = -1 }, "latency -1"},
		{"per-query metric", func(r *EvalReport) { r.PerQuery[1].NDCG10 = -0.1 }, "per_query[q2] nDCG@10"},
		{"per-query id", func(r *EvalReport) { r.PerQuery[0].ID = "" }, "per_query[0] has no id"},
		{"negative docs", func(r *EvalReport) { r.Docs = -1 }, "negative docs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := good
			r.PerQuery = slices.Clone(good.PerQuery)
			tc.spoil(&r)
			p := filepath.Join(t.TempDir(), "r.json")
			err := WriteEvalReport(p, r)
			if !errors.Is(err, ErrInvalidReport) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %v, want ErrInvalidReport saying %q", err, tc.says)
			}
			if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a refused report was written: %v", err)
			}
		})
	}
}

func TestReadEvalReportErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content string
		want          error
		says          string
	}{
		{"malformed JSON", `{"format": 1, "name": "x"`, ErrInvalidReport, "unexpected end"},
		{"not an object", `[1, 2]`, ErrInvalidReport, "cannot unmarshal array"},
		{"another JSON file", `{"name": "package", "version": "1.0.0"}`, ErrInvalidReport, "format 0, want 1"},
		{"newer format", `{"format": 2, "name": "x"}`, ErrInvalidReport, "format 2, want 1"},
		{"metric out of range", `{"format": 1, "name": "x", "metrics": {"ndcg@10": 1.01}}`, ErrInvalidReport, "nDCG@10 1.01"},
		{"trailing data", `{"format": 1, "name": "x"} {}`, ErrInvalidReport, "invalid character"},
		{"wrong type", `{"format": 1, "name": 7}`, ErrInvalidReport, "cannot unmarshal number"},
		{"missing file", "", fs.ErrNotExist, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".json")
			if tc.content != "" {
				if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := ReadEvalReport(p)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), p) {
				t.Errorf("error %v, want %v saying %q and naming the file", err, tc.want, tc.says)
			}
		})
	}
	// A minimal valid report reads, with an empty per-query list.
	p := filepath.Join(dir, "min.json")
	if err := os.WriteFile(p, []byte(`{"format": 1, "name": "min"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := ReadEvalReport(p); err != nil || r.Name != "min" || r.PerQuery == nil {
		t.Errorf("minimal report: %+v, %v", r, err)
	}
}
