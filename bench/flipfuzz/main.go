// Command flipfuzz damages stores from outside, one byte at a time, and runs the CLI on each
// damaged copy to find crashes, hangs and silently wrong answers (issue #39).
//
// It builds two small template stores from the first documents of a BEIR corpus: one as
// `memory index` makes it (float32 rows and binary codes), one through the library with
// int8 codes over inverted lists in small segments (int8 codes, list numbers, centroids).
// Each trial copies a template with its modification times kept, flips one byte of one of
// its files (store.db or any derived file: BM25 segments, vector rows and codes, id tables,
// tombstones, metadata), puts the file's modification time back, and runs, each under a
// time limit: count, get, search in bm25, dense and hybrid modes, check, check --repair,
// and the searches again. Every command's output is compared with the same command's on an
// undamaged copy:
//
//   - crash: a Go panic or fatal error, or a signal;
//   - hang: the time limit was reached;
//   - wrong: exit status 0 and an output that differs from the undamaged store's;
//   - error: a non-zero exit with a message (the damage was reported; not a failure);
//   - same: the undamaged answer.
//
// `check` is judged only for crashes and hangs; when it exits 0 (nothing found) while another
// command of the same trial failed, the trial is counted under "check missed".
//
//	go build -o /tmp/memory ./cmd/memory
//	go run ./bench/flipfuzz -bin /tmp/memory -n 500 -seed 1 -work /tmp/flipfuzz
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/vectorstore"
)

type step struct {
	name string
	args []string
	// judged: outputs compared with the undamaged store's (count, get, searches).
	judged bool
}

type outcome struct {
	kind   string // same, error, wrong, crash, hang
	code   int
	stdout string
	stderr string
}

func main() {
	bin := flag.String("bin", "", "the memory CLI binary (required)")
	n := flag.Int("n", 500, "trials")
	seed := flag.Uint64("seed", 1, "seed")
	work := flag.String("work", "/tmp/flipfuzz", "work folder (emptied)")
	docs := flag.Int("docs", 300, "documents per template store")
	src := flag.String("src", "../shared/data/beir/scifact", "BEIR folder whose corpus and queries are used")
	limit := flag.Duration("timeout", 60*time.Second, "time limit of one command (a hang past it)")
	storeShare := flag.Float64("store-share", 0.4, "share of the flips that go to store.db (the rest: derived files)")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "flipfuzz: -bin is required")
		os.Exit(2)
	}
	if err := run(*bin, *n, *seed, *work, *docs, *src, *limit, *storeShare); err != nil {
		fmt.Fprintln(os.Stderr, "flipfuzz:", err)
		os.Exit(1)
	}
}

func run(bin string, n int, seed uint64, work string, ndocs int, src string, limit time.Duration, storeShare float64) error {
	if err := os.RemoveAll(work); err != nil {
		return err
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	corpus, queries, ids, err := sample(src, ndocs, filepath.Join(work, "corpus.jsonl"))
	if err != nil {
		return err
	}
	tplA := filepath.Join(work, "tpl-cli")
	if out, err := exec.Command(bin, "index", "--store", tplA, "--embedder", "hash:64", corpus).CombinedOutput(); err != nil {
		return fmt.Errorf("index the CLI template: %v: %s", err, out)
	}
	tplB := filepath.Join(work, "tpl-ivf")
	if err := buildIVF(tplB, corpus); err != nil {
		return fmt.Errorf("build the IVF template: %w", err)
	}
	steps := plan(queries, ids)
	templates := []string{tplA, tplB}
	golden := map[string][]outcome{}
	for _, tpl := range templates {
		dir := filepath.Join(work, "golden")
		if err := copyKeep(tpl, dir); err != nil {
			return err
		}
		var outs []outcome
		for _, s := range steps {
			o := exec1(bin, dir, s, limit)
			if o.kind != "same" || o.code != 0 {
				return fmt.Errorf("the undamaged %s fails %s: exit %d: %s", filepath.Base(tpl), s.name, o.code, o.stderr)
			}
			outs = append(outs, o)
		}
		golden[tpl] = outs
		os.RemoveAll(dir)
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	type tally struct{ same, errs, wrong, crash, hang int }
	byKind := map[string]*tally{}
	total := &tally{}
	trials, checkMissed, noEffect := 0, 0, 0
	logf, err := os.Create(filepath.Join(work, "findings.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	lw := bufio.NewWriter(logf)
	defer lw.Flush()
	start := time.Now()
	for t := 0; t < n; t++ {
		tpl := templates[t%len(templates)]
		files, err := storeFiles(tpl)
		if err != nil {
			return err
		}
		var pick string
		if rng.Float64() < storeShare {
			pick = "store.db"
		} else {
			var derived []string
			for _, f := range files {
				if f != "store.db" {
					derived = append(derived, f)
				}
			}
			pick = derived[rng.IntN(len(derived))]
		}
		dir := filepath.Join(work, "trial")
		os.RemoveAll(dir)
		if err := copyKeep(tpl, dir); err != nil {
			return err
		}
		off, old, neu, err := flip(filepath.Join(dir, pick), rng)
		if err != nil {
			return err
		}
		kind := fileKind(pick)
		if byKind[kind] == nil {
			byKind[kind] = &tally{}
		}
		trials++
		bad := false
		var checkCode = -1
		var lines []string
		for i, s := range steps {
			o := exec1(bin, dir, s, limit)
			g := golden[tpl][i]
			if s.judged && o.kind == "same" && comparable(o.stdout) != comparable(g.stdout) {
				o.kind = "wrong"
			}
			if !s.judged && o.kind == "same" {
				o.kind = "ok"
			}
			if s.name == "check" {
				checkCode = o.code
			}
			switch o.kind {
			case "crash":
				total.crash++
				byKind[kind].crash++
			case "hang":
				total.hang++
				byKind[kind].hang++
			case "wrong":
				total.wrong++
				byKind[kind].wrong++
			case "error":
				total.errs++
				byKind[kind].errs++
			case "same":
				total.same++
				byKind[kind].same++
			}
			if o.kind == "error" && s.judged && s.name != "" && !strings.HasPrefix(s.name, "after-repair") {
				bad = true
			}
			if o.kind != "same" && o.kind != "ok" {
				lines = append(lines, fmt.Sprintf("  %-22s %-5s exit %d: %s", s.name, o.kind, o.code, firstLines(o.stderr, o.stdout, g.stdout, o.kind)))
			}
		}
		if checkCode == 0 && bad {
			checkMissed++
		}
		if len(lines) == 0 {
			noEffect++
		}
		fmt.Fprintf(lw, "trial %d %s %s offset %d: %#02x -> %#02x\n", t, filepath.Base(tpl), pick, off, old, neu)
		for _, l := range lines {
			fmt.Fprintln(lw, l)
		}
		lw.Flush()
		if (t+1)%25 == 0 {
			fmt.Fprintf(os.Stderr, "%d trials, %v: crash %d hang %d wrong %d\n", t+1, time.Since(start).Round(time.Second), total.crash, total.hang, total.wrong)
		}
	}
	fmt.Printf("flipfuzz: %d trials (%d flips in store.db or derived files, mtimes kept), %d commands each, %v\n", trials, trials, len(steps), time.Since(start).Round(time.Second))
	fmt.Printf("commands: same %d, error %d, wrong %d, crash %d, hang %d; trials with no visible effect %d; check missed %d\n",
		total.same, total.errs, total.wrong, total.crash, total.hang, noEffect, checkMissed)
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		t := byKind[k]
		fmt.Printf("  %-12s same %4d  error %4d  wrong %d  crash %d  hang %d\n", k, t.same, t.errs, t.wrong, t.crash, t.hang)
	}
	fmt.Printf("details: %s\n", filepath.Join(work, "findings.log"))
	if total.crash+total.hang+total.wrong > 0 {
		return errors.New("crashes, hangs or wrong answers found")
	}
	return nil
}

// plan is the command sequence of one trial.
func plan(queries, ids []string) []step {
	q := func(i int) string { return queries[i%len(queries)] }
	searches := func(prefix string) []step {
		return []step{
			{prefix + "search-bm25", []string{"search", "--json", "--k", "10", "--mode", "bm25", q(0)}, true},
			{prefix + "search-dense", []string{"search", "--json", "--k", "10", "--mode", "dense", q(1)}, true},
			{prefix + "search-hybrid", []string{"search", "--json", "--k", "10", "--mode", "hybrid", q(2)}, true},
			{prefix + "search-where", []string{"search", "--json", "--k", "5", "--mode", "hybrid", "--where", `{"bucket": {"$in": [1, 3]}}`, q(3)}, true},
		}
	}
	s := []step{
		{"count", []string{"count"}, true},
		{"get", []string{"get", "--json", ids[0], ids[len(ids)/2], ids[len(ids)-1]}, true},
	}
	s = append(s, searches("")...)
	s = append(s, step{"check", []string{"check"}, false}, step{"check-repair", []string{"check", "--repair"}, false})
	s = append(s, step{"after-repair-count", []string{"count"}, true})
	s = append(s, searches("after-repair-")...)
	return s
}

// exec1 runs one step on the store dir.
func exec1(bin, dir string, s step, limit time.Duration) outcome {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	args := append([]string{s.args[0], "--store", dir}, s.args[1:]...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "GOTRACEBACK=all")
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	o := outcome{stdout: so.String(), stderr: se.String()}
	if ctx.Err() != nil {
		o.kind = "hang"
		return o
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		o.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			o.kind = "crash"
			return o
		}
	} else if err != nil {
		o.kind, o.code = "crash", -1
		o.stderr = err.Error()
		return o
	}
	if strings.Contains(o.stderr, "panic:") || strings.Contains(o.stderr, "fatal error:") || strings.Contains(o.stderr, "goroutine ") {
		o.kind = "crash"
		return o
	}
	if o.code != 0 {
		o.kind = "error"
		return o
	}
	o.kind = "same"
	return o
}

// comparable is a command's output without the notes of search explanations, which say
// how the dense index searched (a read-only store whose index was rebuilt in memory
// searches another way and says so), not what it found: ids, texts, metadata, scores and
// ranks are compared whole.
func comparable(out string) string {
	var b strings.Builder
	for _, line := range strings.Split(out, "\n") {
		var v map[string]any
		if json.Unmarshal([]byte(line), &v) != nil {
			b.WriteString(line)
			b.WriteByte('\n')
			continue
		}
		if ex, ok := v["explain"].(map[string]any); ok {
			delete(ex, "notes")
		}
		j, _ := json.Marshal(v)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

func firstLines(stderr, stdout, golden, kind string) string {
	if kind == "wrong" {
		return fmt.Sprintf("got %q want %q", clip(stdout, 300), clip(golden, 300))
	}
	return clip(strings.TrimSpace(stderr), 400)
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " | ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// sample writes the first n documents of src's corpus, with bucket metadata, to out, and
// returns the test queries and the ids.
func sample(src string, n int, out string) (string, []string, []string, error) {
	f, err := os.Open(filepath.Join(src, "corpus.jsonl"))
	if err != nil {
		return "", nil, nil, err
	}
	defer f.Close()
	w, err := os.Create(out)
	if err != nil {
		return "", nil, nil, err
	}
	defer w.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var ids []string
	for sc.Scan() && len(ids) < n {
		var d struct {
			ID    string `json:"_id"`
			Title string `json:"title"`
			Text  string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			return "", nil, nil, err
		}
		line, _ := json.Marshal(map[string]any{"id": d.ID, "title": d.Title, "text": d.Text,
			"metadata": map[string]any{"bucket": len(ids) % 10}})
		w.Write(append(line, '\n'))
		ids = append(ids, d.ID)
	}
	qf, err := os.Open(filepath.Join(src, "queries.jsonl"))
	if err != nil {
		return "", nil, nil, err
	}
	defer qf.Close()
	var queries []string
	qs := bufio.NewScanner(qf)
	for qs.Scan() && len(queries) < 8 {
		var q struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(qs.Bytes(), &q) == nil && q.Text != "" {
			queries = append(queries, q.Text)
		}
	}
	return out, queries, ids, nil
}

// buildIVF makes a store through the library whose dense index keeps int8 codes over
// inverted lists in segments of 64 rows, then deletes and re-adds a few documents
// (tombstones, a second id table).
func buildIVF(dir, corpus string) error {
	ctx := context.Background()
	m, err := memory.Open(dir, memory.WithEmbedder(vectorstore.NewHashEmbedder(64)),
		memory.WithIndex(vectorstore.IndexConfig{Backend: "disk", Params: map[string]int{
			"quant": vectorstore.DiskQuantInt8, "nlist": 4, "nprobe": 4, "segrows": 64}}))
	if err != nil {
		return err
	}
	defer m.Close()
	f, err := os.Open(corpus)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var docs []memory.Document
	for sc.Scan() {
		var d struct {
			ID       string         `json:"id"`
			Title    string         `json:"title"`
			Text     string         `json:"text"`
			Metadata map[string]any `json:"metadata"`
		}
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			return err
		}
		docs = append(docs, memory.Document{ID: d.ID, Title: d.Title, Text: d.Text, Metadata: d.Metadata})
	}
	// Several writes: several segments and BM25 segments.
	for i := 0; i < len(docs); i += 100 {
		if err := m.Add(ctx, docs[i:min(i+100, len(docs))]...); err != nil {
			return err
		}
	}
	for i := 0; i < len(docs); i += 37 {
		if err := m.Delete(ctx, docs[i].ID); err != nil {
			return err
		}
		if err := m.Add(ctx, docs[i]); err != nil {
			return err
		}
	}
	return nil
}

// storeFiles lists the regular files of a store, relative to it, excluding locks.
func storeFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if fi.Size() == 0 || strings.Contains(rel, "lock") {
			return nil
		}
		out = append(out, rel)
		return nil
	})
	sort.Strings(out)
	return out, err
}

// fileKind groups a store file by what it holds.
func fileKind(rel string) string {
	base := filepath.Base(rel)
	switch {
	case base == "store.db":
		return "store.db"
	case strings.HasSuffix(base, ".zap"):
		return "bm25-zap"
	case strings.HasSuffix(base, ".zap.post"):
		return "bm25-post"
	case strings.Contains(rel, "bm25") || strings.Contains(rel, "bleve"):
		return "bm25-other"
	case strings.HasSuffix(base, ".f32"):
		return "vec-f32"
	case strings.HasSuffix(base, ".b1"):
		return "vec-b1"
	case strings.HasSuffix(base, ".i8"):
		return "vec-i8"
	case strings.HasSuffix(base, ".ivl"):
		return "vec-ivl"
	case strings.HasPrefix(base, "ids-"):
		return "vec-ids"
	case strings.HasPrefix(base, "tomb-"):
		return "vec-tomb"
	case strings.HasSuffix(base, ".json"):
		return "json"
	}
	return "other"
}

// flip XORs one byte at a random offset of path with a random non-zero mask and puts the
// file's modification and access times back.
func flip(path string, rng *rand.Rand) (int64, byte, byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, 0, 0, err
	}
	atime := fi.ModTime()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		atime = time.Unix(st.Atim.Sec, st.Atim.Nsec)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, 0, 0, err
	}
	off := rng.Int64N(fi.Size())
	b := []byte{0}
	if _, err := f.ReadAt(b, off); err != nil {
		f.Close()
		return 0, 0, 0, err
	}
	old := b[0]
	b[0] ^= byte(1 + rng.IntN(255))
	if _, err := f.WriteAt(b, off); err != nil {
		f.Close()
		return 0, 0, 0, err
	}
	if err := f.Close(); err != nil {
		return 0, 0, 0, err
	}
	return off, old, b[0], os.Chtimes(path, atime, fi.ModTime())
}

// copyKeep copies the folder src to dst with every file's modification time kept.
func copyKeep(src, dst string) error {
	os.RemoveAll(dst)
	out, err := exec.Command("cp", "-a", src, dst).CombinedOutput()
	if err != nil {
		return fmt.Errorf("cp -a: %v: %s", err, out)
	}
	return nil
}
