package beir

import (
	"bytes"
	"errors"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/fixtures"
)

// log2r is the DCG discount of 1-based rank r.
func log2r(r int) float64 { return math.Log2(float64(r) + 1) }

func TestEvaluateHandComputed(t *testing.T) {
	tests := []struct {
		name                    string
		rel                     map[string]int
		hits                    []Scored
		ndcg, recall, mrr       float64
		wantJudged, wantPresent bool
	}{
		{
			name: "perfect single relevant",
			rel:  map[string]int{"a": 1},
			hits: []Scored{{"a", 3}, {"b", 2}},
			ndcg: 1, recall: 1, mrr: 1,
		},
		{
			name: "relevant at rank 3 of 2 relevant, graded",
			rel:  map[string]int{"a": 2, "c": 1, "z": 0},
			hits: []Scored{{"x", 9}, {"z", 8}, {"a", 7}, {"y", 6}},
			// DCG = 2/log2(4); IDCG = 2/log2(2) + 1/log2(3)
			ndcg:   (2 / log2r(3)) / (2/log2r(1) + 1/log2r(2)),
			recall: 0.5, mrr: 1.0 / 3,
		},
		{
			name: "ties: trec_eval orders equal scores by doc id descending",
			rel:  map[string]int{"a": 1},
			// all equal: order is c, b, a -> relevant at rank 3 whatever the input order
			hits: []Scored{{"a", 1}, {"b", 1}, {"c", 1}},
			ndcg: 1 / log2r(3), recall: 1, mrr: 1.0 / 3,
		},
		{
			name: "relevant beyond rank 10 counts for recall only",
			rel:  map[string]int{"r": 1},
			hits: rankedWithTarget("r", 12),
			ndcg: 0, recall: 1, mrr: 0,
		},
		{
			name: "relevant beyond rank 100 counts for nothing",
			rel:  map[string]int{"r": 1},
			hits: rankedWithTarget("r", 101),
			ndcg: 0, recall: 0, mrr: 0,
		},
		{
			name: "query absent from the run scores zero",
			rel:  map[string]int{"a": 1},
			hits: nil,
			ndcg: 0, recall: 0, mrr: 0,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			qrels := Qrels{"q": tc.rel}
			run := Run{}
			if tc.hits != nil {
				run["q"] = tc.hits
			}
			m, per := Evaluate(qrels, run)
			if m.Queries != 1 {
				t.Fatalf("Queries = %d, want 1", m.Queries)
			}
			got := per["q"]
			for _, c := range []struct {
				what      string
				got, want float64
			}{{"nDCG@10", got.NDCG10, tc.ndcg}, {"Recall@100", got.Recall100, tc.recall}, {"MRR@10", got.MRR10, tc.mrr}} {
				if math.Abs(c.got-c.want) > 1e-12 {
					t.Errorf("%s = %.15f, want %.15f", c.what, c.got, c.want)
				}
			}
			if m.NDCG10 != got.NDCG10 {
				t.Errorf("mean over one query %v != per-query %v", m.NDCG10, got.NDCG10)
			}
		})
	}
}

// rankedWithTarget returns 150 hits with target at 1-based rank pos.
func rankedWithTarget(target string, pos int) []Scored {
	out := make([]Scored, 0, 150)
	for r := 1; r <= 150; r++ {
		id := "d" + strconv.Itoa(r)
		if r == pos {
			id = target
		}
		out = append(out, Scored{DocID: id, Score: float64(1000 - r)})
	}
	return out
}

func TestEvaluateAveragesOnlyJudgedQueries(t *testing.T) {
	qrels := Qrels{
		"q1": {"a": 1},
		"q2": {"b": 1},
		"q3": {"c": 0}, // no relevant doc: not averaged
	}
	run := Run{
		"q1": {{"a", 1}},
		"q2": {{"x", 2}, {"b", 1}},
		"q3": {{"c", 1}},
		"q9": {{"a", 1}}, // not in the qrels: ignored
	}
	m, _ := Evaluate(qrels, run)
	if m.Queries != 2 {
		t.Fatalf("Queries = %d, want 2", m.Queries)
	}
	if want := (1 + 0.5) / 2; math.Abs(m.MRR10-want) > 1e-12 {
		t.Errorf("MRR@10 = %v, want %v", m.MRR10, want)
	}
	if want := (1 + 1/log2r(2)) / 2; math.Abs(m.NDCG10-want) > 1e-12 {
		t.Errorf("nDCG@10 = %v, want %v", m.NDCG10, want)
	}
}

func TestWriteTRECGolden(t *testing.T) {
	run := Run{
		"q2": {{"a", 0.5}, {"b", 0.25}},
		"q1": {{"x", 1}, {"z", 1}, {"y", 2.125}},
	}
	var buf bytes.Buffer
	if err := WriteTREC(&buf, run, "t"); err != nil {
		t.Fatal(err)
	}
	want := "q1 Q0 y 1 2.125 t\nq1 Q0 z 2 1 t\nq1 Q0 x 3 1 t\nq2 Q0 a 1 0.5 t\nq2 Q0 b 2 0.25 t\n"
	if buf.String() != want {
		t.Errorf("WriteTREC:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "corpus.jsonl"),
		`{"_id":"d1","title":"T1","text":"one"}`+"\n\n"+`{"_id":"d2","title":"","text":"two"}`+"\n")
	writeFile(t, filepath.Join(dir, "queries.jsonl"),
		`{"_id":"q1","text":"first"}`+"\n"+`{"_id":"q2","text":"unjudged"}`+"\n"+`{"_id":"q3","text":"third"}`+"\n")
	writeFile(t, filepath.Join(dir, "qrels", "test.tsv"), "query-id\tcorpus-id\tscore\nq1\td1\t1\nq3\td2\t2\n")
	ds, err := Load(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Corpus) != 2 || ds.Corpus[1].ID != "d2" || ds.Corpus[0].Title != "T1" {
		t.Errorf("corpus = %+v", ds.Corpus)
	}
	if len(ds.Queries) != 2 || ds.Queries[0].ID != "q1" || ds.Queries[1].ID != "q3" {
		t.Errorf("queries = %+v, want the judged q1, q3 in file order", ds.Queries)
	}
	if ds.Qrels["q3"]["d2"] != 2 {
		t.Errorf("qrels = %v", ds.Qrels)
	}
}

func TestLoadErrors(t *testing.T) {
	good := map[string]string{
		"corpus.jsonl":   `{"_id":"d1","text":"x"}` + "\n",
		"queries.jsonl":  `{"_id":"q1","text":"x"}` + "\n",
		"qrels/test.tsv": "q1\td1\t1\n",
	}
	tests := []struct {
		name     string
		file     string
		body     string // "" removes the file
		wantIs   error
		wantText string
	}{
		{"corpus line not JSON", "corpus.jsonl", `{"_id":"d1"}` + "\n{oops\n", ErrFormat, "corpus.jsonl:2"},
		{"corpus doc without id", "corpus.jsonl", `{"text":"x"}` + "\n", ErrFormat, "missing _id"},
		{"qrels bad grade", "qrels/test.tsv", "q1\td1\t1\nq1\td2\tyes\n", ErrFormat, "test.tsv:2"},
		{"qrels wrong columns", "qrels/test.tsv", "q1\td1\n", ErrFormat, "expected 3 or 4 columns"},
		{"queries missing", "queries.jsonl", "", fs.ErrNotExist, "queries.jsonl"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for f, b := range good {
				writeFile(t, filepath.Join(dir, f), b)
			}
			p := filepath.Join(dir, tc.file)
			if tc.body == "" {
				os.Remove(p)
			} else {
				writeFile(t, p, tc.body)
			}
			_, err := Load(dir, "test")
			if !errors.Is(err, tc.wantIs) {
				t.Fatalf("err = %v, want errors.Is %v", err, tc.wantIs)
			}
			if !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("err = %q, want it to name %q", err, tc.wantText)
			}
		})
	}
}

// TestAgreesWithTrecEvalPy scores one synthetic run (graded qrels, ties, hits past 10 and
// 100, an unanswered query) here and with the independent ../shared/tools/trec_eval.py.
func TestAgreesWithTrecEvalPy(t *testing.T) {
	tool := fixtures.Shared("tools", "trec_eval.py")
	// make test sets MEMORY_REQUIRE_FIXTURES when ../shared is there: then a missing scorer
	// or python3 fails the test instead of skipping it.
	missing := t.Skipf
	if os.Getenv("MEMORY_REQUIRE_FIXTURES") == "1" {
		missing = t.Fatalf
	}
	if _, err := os.Stat(tool); err != nil {
		missing("independent scorer not available: %v", err)
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		missing("python3 not available: %v", err)
	}
	qrels := Qrels{}
	run := Run{}
	var qb strings.Builder
	for q := 0; q < 40; q++ {
		qid := "q" + strconv.Itoa(q)
		qrels[qid] = map[string]int{}
		for j := 0; j < 1+q%5; j++ {
			did := "d" + strconv.Itoa((q*37+j*101)%300)
			g := 1 + (q+j)%3
			if q%7 == 0 && j == 0 {
				g = 0 // judged non-relevant
			}
			qrels[qid][did] = g
			qb.WriteString(qid + "\t" + did + "\t" + strconv.Itoa(g) + "\n")
		}
		if q == 39 {
			continue // judged but unanswered
		}
		var hits []Scored
		for r := 0; r < 120; r++ {
			did := "d" + strconv.Itoa((q*13+r*7)%300)
			score := float64(200-r) / 8 // coarse: some equal scores
			if r%4 == 1 {
				score = float64(200-r+1) / 8 // tie with the previous hit
			}
			hits = append(hits, Scored{did, score})
		}
		run[qid] = hits
	}
	dir := t.TempDir()
	qpath, rpath := filepath.Join(dir, "qrels.tsv"), filepath.Join(dir, "run.trec")
	writeFile(t, qpath, "query-id\tcorpus-id\tscore\n"+qb.String())
	var rb bytes.Buffer
	if err := WriteTREC(&rb, run, "x"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, rpath, rb.String())
	out, err := exec.Command(py, tool, qpath, rpath).CombinedOutput()
	if err != nil {
		t.Fatalf("trec_eval.py: %v\n%s", err, out)
	}
	// Cross-check the file round trip too: metrics of the qrels as loaded back.
	lq, err := LoadQrels(qpath)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := Evaluate(lq, run)
	want := map[string]float64{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			want[strings.TrimSuffix(f[0], ":")] = v
		}
	}
	for name, got := range map[string]float64{"nDCG@10": m.NDCG10, "Recall@100": m.Recall100, "MRR@10": m.MRR10} {
		w, ok := want[name]
		if !ok {
			t.Fatalf("trec_eval.py printed no %s:\n%s", name, out)
		}
		if math.Abs(got-w) > 5e-5 {
			t.Errorf("%s: ours %.6f, trec_eval.py %.6f", name, got, w)
		}
	}
}
