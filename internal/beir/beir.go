// Package beir loads BEIR test collections (corpus.jsonl, queries.jsonl, qrels/test.tsv),
// scores runs with trec_eval's definitions (nDCG@k, Recall@k, MRR@k) and writes TREC run files.
package beir

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ErrFormat reports a malformed BEIR file; the error names the file and line.
var ErrFormat = errors.New("beir: malformed file")

// Doc is one corpus document.
type Doc struct {
	ID    string `json:"_id"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

// Query is one test query.
type Query struct {
	ID   string `json:"_id"`
	Text string `json:"text"`
}

// Qrels maps query id -> doc id -> relevance grade.
type Qrels map[string]map[string]int

// Dataset is a loaded BEIR folder.
type Dataset struct {
	Corpus  []Doc
	Queries []Query // only the queries that have judgments, in file order
	Qrels   Qrels
}

// Load reads dir/corpus.jsonl, dir/queries.jsonl and dir/qrels/<split>.tsv (split "" = "test")
// whole into memory: for small collections. EachDoc streams a corpus of any size, and
// LoadQueries reads the queries and judgments alone.
func Load(dir, split string) (*Dataset, error) {
	ds := &Dataset{}
	if _, err := EachDoc(context.Background(), dir, DefaultBatch, func(docs []Doc) error {
		ds.Corpus = append(ds.Corpus, docs...)
		return nil
	}); err != nil {
		return nil, err
	}
	queries, qrels, err := LoadQueries(dir, split)
	if err != nil {
		return nil, err
	}
	ds.Queries, ds.Qrels = queries, qrels
	return ds, nil
}

// LoadQueries reads dir/qrels/<split>.tsv (split "" = "test") and the queries of
// dir/queries.jsonl that have judgments there, in file order; it never opens the corpus.
func LoadQueries(dir, split string) ([]Query, Qrels, error) {
	if split == "" {
		split = "test"
	}
	qrels, err := LoadQrels(filepath.Join(dir, "qrels", split+".tsv"))
	if err != nil {
		return nil, nil, err
	}
	var queries []Query
	if err := readJSONL(filepath.Join(dir, "queries.jsonl"), func(line []byte) error {
		var q Query
		if err := json.Unmarshal(line, &q); err != nil {
			return err
		}
		if _, judged := qrels[q.ID]; judged {
			queries = append(queries, q)
		}
		return nil
	}); err != nil {
		return nil, nil, err
	}
	return queries, qrels, nil
}

// readJSONL calls fn with each non-blank line of path; an error of fn is ErrFormat naming
// the file and line.
func readJSONL(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return eachLine(f, path, func(n int, line []byte) error {
		if err := fn(line); err != nil {
			return lineErr(ErrFormat, path, n, err)
		}
		return nil
	})
}

// LoadQrels reads a BEIR qrels TSV (query-id, corpus-id, score; header optional) or a
// 4-column TREC qrels file.
func LoadQrels(path string) (Qrels, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	q := Qrels{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r\n")
		if strings.TrimSpace(line) == "" {
			continue
		}
		var parts []string
		if strings.Contains(line, "\t") {
			parts = strings.Split(line, "\t")
		} else {
			parts = strings.Fields(line)
		}
		var qid, did, g string
		switch len(parts) {
		case 3:
			qid, did, g = parts[0], parts[1], parts[2]
		case 4:
			qid, did, g = parts[0], parts[2], parts[3]
		default:
			return nil, fmt.Errorf("%w: %s:%d: expected 3 or 4 columns, got %d", ErrFormat, path, n, len(parts))
		}
		grade, err := strconv.Atoi(strings.TrimSpace(g))
		if err != nil {
			if n == 1 {
				continue // header
			}
			return nil, fmt.Errorf("%w: %s:%d: bad grade %q", ErrFormat, path, n, g)
		}
		qid, did = strings.TrimSpace(qid), strings.TrimSpace(did)
		if q[qid] == nil {
			q[qid] = map[string]int{}
		}
		q[qid][did] = grade
	}
	return q, sc.Err()
}

// Scored is one ranked hit of a run.
type Scored struct {
	DocID string
	Score float64
}

// Run maps query id -> hits.
type Run map[string][]Scored

// Ordered returns a query's hits in trec_eval's order: score descending, then doc id
// descending (byte order). Metrics use this order, so a run file scores the same here and
// under trec_eval whatever order its lines are in.
func Ordered(hits []Scored) []Scored {
	out := append([]Scored(nil), hits...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].DocID > out[j].DocID
	})
	return out
}

// Metrics are the averages over the judged queries.
type Metrics struct {
	Queries   int
	NDCG10    float64
	Recall100 float64
	MRR10     float64
}

// QueryMetrics are one query's figures.
type QueryMetrics struct {
	NDCG10, Recall100, MRR10 float64
}

// Evaluate scores run against qrels with trec_eval's definitions: linear-gain nDCG@10 with
// log2(rank+1) discount, Recall@100 over the relevant docs (grade > 0), MRR@10. Averages are
// over queries with at least one relevant doc; such a query absent from the run scores 0.
func Evaluate(qrels Qrels, run Run) (Metrics, map[string]QueryMetrics) {
	per := map[string]QueryMetrics{}
	var m Metrics
	for qid, rel := range qrels {
		var grades []int
		for _, g := range rel {
			if g > 0 {
				grades = append(grades, g)
			}
		}
		if len(grades) == 0 {
			continue
		}
		sort.Sort(sort.Reverse(sort.IntSlice(grades)))
		idcg := 0.0
		for r, g := range grades {
			if r >= 10 {
				break
			}
			idcg += float64(g) / math.Log2(float64(r)+2)
		}
		var qm QueryMetrics
		found := 0
		for r, h := range Ordered(run[qid]) {
			g := rel[h.DocID]
			if g <= 0 {
				continue
			}
			if r < 10 {
				qm.NDCG10 += float64(g) / math.Log2(float64(r)+2)
				if qm.MRR10 == 0 {
					qm.MRR10 = 1 / float64(r+1)
				}
			}
			if r < 100 {
				found++
			}
		}
		qm.NDCG10 /= idcg
		qm.Recall100 = float64(found) / float64(len(grades))
		per[qid] = qm
		m.NDCG10 += qm.NDCG10
		m.Recall100 += qm.Recall100
		m.MRR10 += qm.MRR10
		m.Queries++
	}
	if m.Queries > 0 {
		n := float64(m.Queries)
		m.NDCG10 /= n
		m.Recall100 /= n
		m.MRR10 /= n
	}
	return m, per
}

// WriteTREC writes run as a TREC run file (qid Q0 docid rank score tag), queries sorted by id,
// hits in trec_eval order, scores with full float64 precision.
func WriteTREC(w io.Writer, run Run, tag string) error {
	if tag == "" {
		tag = "memory"
	}
	qids := make([]string, 0, len(run))
	for q := range run {
		qids = append(qids, q)
	}
	sort.Strings(qids)
	bw := bufio.NewWriter(w)
	for _, q := range qids {
		for i, h := range Ordered(run[q]) {
			if _, err := fmt.Fprintf(bw, "%s Q0 %s %d %s %s\n", q, h.DocID, i+1,
				strconv.FormatFloat(h.Score, 'g', -1, 64), tag); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}
