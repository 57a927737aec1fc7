// Command densetruth measures the dense recall of a store built with the hash:DIM embedder
// (bench/wiki21m.sh, step dense-recall): it computes the exact float32 top k of each query
// over every passage of a BEIR corpus.jsonl, by brute force in one streaming pass (the
// passages are read and embedded a batch at a time, as `memory index` embeds them: title,
// a newline, text), so no run holds the whole set of vectors (21M x 768 float32 is 64 GB);
// only each query's best k+1 are kept. It writes them as a TREC run (-out), and with -run
// it reports the recall@k of that run (querybench -mode dense -run-out) against them: the
// share of each query's exact top k the run found, averaged over the queries. With -exact
// it reads the exact results a former run wrote (-out) instead of computing them.
//
//	go run ./bench/densetruth -corpus DIR/corpus.jsonl -queries DIR/queries.jsonl [-limit 300]
//	    [-dim 768] [-k 10] [-out exact.run] [-run dense.run]
//	go run ./bench/densetruth -queries DIR/queries.jsonl [-limit 300] -exact exact.run -run dense.run
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentmem/memory/internal/atomicfile"
	"github.com/agentmem/memory/internal/beir"
	"github.com/agentmem/memory/vectorstore"
)

func main() {
	var (
		corpus  = flag.String("corpus", "", "BEIR corpus.jsonl (required)")
		queries = flag.String("queries", "", "BEIR queries.jsonl (required)")
		limit   = flag.Int("limit", 300, "use the first N queries (0: all)")
		dim     = flag.Int("dim", 768, "dimension of the hash embedder (hash:DIM)")
		k       = flag.Int("k", 10, "results per query")
		out     = flag.String("out", "", "write the exact results to this file as a TREC run")
		runFile = flag.String("run", "", "a TREC run (querybench -run-out) whose recall@k is reported")
		batch   = flag.Int("batch", 8192, "passages embedded at a time")
		exactF  = flag.String("exact", "", "read the exact results from this TREC run (a former -out) instead of computing them")
	)
	flag.Parse()
	if (*corpus == "" && *exactF == "") || *queries == "" || *k < 1 || *batch < 1 {
		fmt.Fprintln(os.Stderr, "usage: densetruth -corpus corpus.jsonl -queries queries.jsonl [-limit 300] [-dim 768] [-k 10] [-out FILE] [-run FILE]")
		os.Exit(2)
	}
	if err := run(*corpus, *queries, *limit, *dim, *k, *batch, *out, *runFile, *exactF); err != nil {
		fmt.Fprintln(os.Stderr, "densetruth:", err)
		os.Exit(1)
	}
}

// hit is one passage's score for a query.
type hit struct {
	id    string
	score float64
}

// top keeps the best n hits of one query, worst first (a small sorted slice: n is about 11).
type top struct {
	n  int
	hs []hit
}

// better orders hits by score, then by id (the lower first), so that ties are decided
// the same way in every run.
func better(a, b hit) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.id < b.id
}

func (t *top) add(h hit) {
	if len(t.hs) == t.n && !better(h, t.hs[0]) {
		return
	}
	if len(t.hs) == t.n {
		t.hs = t.hs[1:]
	}
	i := sort.Search(len(t.hs), func(i int) bool { return better(t.hs[i], h) })
	t.hs = append(t.hs, hit{})
	copy(t.hs[i+1:], t.hs[i:])
	t.hs[i] = h
}

// best is the hits best first.
func (t *top) best() []hit {
	r := make([]hit, len(t.hs))
	for i, h := range t.hs {
		r[len(r)-1-i] = h
	}
	return r
}

// dot is the inner product of two vectors of the same length, accumulated in float64.
func dot(a, b []float32) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float64(a[i] * b[i])
		s1 += float64(a[i+1] * b[i+1])
		s2 += float64(a[i+2] * b[i+2])
		s3 += float64(a[i+3] * b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += float64(a[i] * b[i])
	}
	return s0 + s1 + s2 + s3
}

func run(corpus, queries string, limit, dim, k, batch int, out, runFile, exactFile string) error {
	qids, qtexts, err := beir.ReadQueryFile(queries, limit)
	if err != nil {
		return err
	}
	var exact map[string][]string
	if exactFile != "" {
		if exact, err = readRun(exactFile); err != nil {
			return err
		}
		for _, q := range qids {
			if len(exact[q]) == 0 {
				return fmt.Errorf("%s: no results for query %s (made with another -limit?)", exactFile, q)
			}
		}
	} else if exact, err = computeExact(corpus, qids, qtexts, dim, k, batch, out); err != nil {
		return err
	}
	if runFile == "" {
		return nil
	}
	got, err := readRun(runFile)
	if err != nil {
		return err
	}
	var sum float64
	for _, q := range qids {
		want := exact[q][:min(k, len(exact[q]))]
		in := make(map[string]bool, len(want))
		for _, id := range want {
			in[id] = true
		}
		found := 0
		for _, id := range got[q][:min(k, len(got[q]))] {
			if in[id] {
				found++
			}
		}
		if len(want) > 0 {
			sum += float64(found) / float64(len(want))
		}
	}
	fmt.Printf("recall@%d of %s against the exact float32 search: %.4f over %d queries\n", k, runFile, sum/float64(len(qids)), len(qids))
	return nil
}

// computeExact is each query's exact top k (ids, best first) over the corpus, in one pass;
// with out set it also writes them as a TREC run.
func computeExact(corpus string, qids, qtexts []string, dim, k, batch int, out string) (map[string][]string, error) {
	ctx := context.Background()
	start := time.Now()
	emb := vectorstore.NewHashEmbedder(dim)
	qv, err := emb.Embed(ctx, qtexts)
	if err != nil {
		return nil, err
	}
	tops := make([]top, len(qv))
	for i := range tops {
		tops[i].n = k + 1 // the (k+1)th tells the ties at the kth
	}
	f, err := os.Open(corpus)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	ids := make([]string, 0, batch)
	texts := make([]string, 0, batch)
	n := 0
	workers := runtime.GOMAXPROCS(0)
	score := func() error {
		if len(texts) == 0 {
			return nil
		}
		vs, err := emb.Embed(ctx, texts)
		if err != nil {
			return err
		}
		var wg sync.WaitGroup
		for w := range workers { // each worker owns a share of the queries
			wg.Add(1)
			go func() {
				defer wg.Done()
				for q := w; q < len(qv); q += workers {
					for j, v := range vs {
						tops[q].add(hit{ids[j], dot(qv[q], v)})
					}
				}
			}()
		}
		wg.Wait()
		n += len(texts)
		ids, texts = ids[:0], texts[:0]
		return nil
	}
	for line := 1; sc.Scan(); line++ {
		var d struct {
			ID    string `json:"_id"`
			Title string `json:"title"`
			Text  string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", corpus, line, err)
		}
		if d.ID == "" {
			return nil, fmt.Errorf("%s:%d: no _id", corpus, line)
		}
		ids, texts = append(ids, d.ID), append(texts, embedText(d.Title, d.Text))
		if len(texts) == batch {
			if err := score(); err != nil {
				return nil, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := score(); err != nil {
		return nil, err
	}
	exact := make(map[string][]string, len(tops))
	ties := 0
	var b strings.Builder
	for i := range tops {
		hs := tops[i].best()
		if len(hs) > k {
			if hs[k-1].score == hs[k].score {
				ties++
			}
			hs = hs[:k]
		}
		for r, h := range hs {
			exact[qids[i]] = append(exact[qids[i]], h.id)
			fmt.Fprintf(&b, "%s Q0 %s %d %s exact\n", qids[i], h.id, r+1, strconv.FormatFloat(h.score, 'g', -1, 64))
		}
	}
	fmt.Printf("exact float32 top %d of %d queries over %d passages (hash:%d): %v, %d workers; %d queries tie at rank %d\n",
		k, len(qv), n, dim, time.Since(start).Round(time.Millisecond), workers, ties, k)
	if out != "" {
		if err := atomicfile.WriteFile(out, []byte(b.String()), atomicfile.Options{}); err != nil {
			return nil, err
		}
	}
	return exact, nil
}

// embedText is what `memory index` embeds of a passage (the library's embedText).
func embedText(title, text string) string {
	if title == "" {
		return text
	}
	if text == "" {
		return title
	}
	return title + "\n" + text
}

// readQueries reads the first limit queries (0: all) of a BEIR queries.jsonl, as querybench does.

// readRun reads a TREC run: each query's document ids in rank order.
func readRun(path string) (map[string][]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	type ranked struct {
		id   string
		rank int
	}
	byQ := map[string][]ranked{}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			return nil, fmt.Errorf("%s:%d: not a TREC run line", path, i+1)
		}
		r, err := strconv.Atoi(f[3])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: rank %q: %w", path, i+1, f[3], err)
		}
		byQ[f[0]] = append(byQ[f[0]], ranked{f[2], r})
	}
	out := make(map[string][]string, len(byQ))
	for q, rs := range byQ {
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].rank < rs[j].rank })
		for _, r := range rs {
			out[q] = append(out[q], r.id)
		}
	}
	return out, nil
}
