// Command writes measures single-document writes as an agent makes them: one writer adding
// one document at a time, and 8 concurrent writers doing the same, each Add acknowledged
// only once durable. It runs memory (BM25 index; with -embedder also vectors) beside
// SQLite in WAL mode with synchronous=FULL (modernc.org/sqlite, pure Go) doing the same
// inserts, plain and with an FTS5 full-text index, in one run, alternating, and prints
// docs/s and p50/p99 latency per Add with the process's CPU seconds.
//
//	go run ./bench/writes -docs 400 -rounds 3 -dir /tmp/writes
//
// It is its own module (bench/writes/go.mod) so that SQLite is no dependency of the
// library.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/vectorstore"
	_ "modernc.org/sqlite"
)

func main() {
	docs := flag.Int("docs", 400, "documents each configuration writes (split across its writers)")
	rounds := flag.Int("rounds", 3, "rounds; each runs every engine and writer count once, in alternating order")
	dir := flag.String("dir", "", "scratch directory (default: a temporary one); must be on the disk being measured")
	embedder := flag.String("embedder", "", "memory's embedder (e.g. hash:384); default none (BM25 only)")
	engineList := flag.String("engines", "memory,sqlite-wal-full,sqlite-wal-full+fts5", "engines to run, comma-separated")
	cpuProf := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if *cpuProf != "" {
		f, err := os.Create(*cpuProf)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	base := *dir
	if base == "" {
		var err error
		if base, err = os.MkdirTemp("", "writes"); err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(base)
	}
	texts := makeTexts(*docs)
	engines := strings.Split(*engineList, ",")
	fmt.Printf("%-22s %7s %9s %9s %9s %8s\n", "engine", "writers", "docs/s", "p50 ms", "p99 ms", "cpu s")
	type key struct {
		engine  string
		writers int
	}
	all := map[key][]result{}
	for r := range *rounds {
		order := slices.Clone(engines)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, e := range order {
			for _, w := range []int{1, 8} {
				path := filepath.Join(base, fmt.Sprintf("%s-%d-%d", e, w, r))
				res, err := run(e, path, w, texts, *embedder)
				if err != nil {
					log.Fatalf("%s, %d writers: %v", e, w, err)
				}
				fmt.Printf("%-22s %7d %9.0f %9.2f %9.2f %8.2f   (round %d)\n", e, w, res.rate, res.p50, res.p99, res.cpu, r)
				all[key{e, w}] = append(all[key{e, w}], res)
				os.RemoveAll(path)
			}
		}
	}
	fmt.Println("median over rounds:")
	for _, e := range engines {
		for _, w := range []int{1, 8} {
			rs := all[key{e, w}]
			med := func(f func(result) float64) float64 {
				v := make([]float64, len(rs))
				for i, r := range rs {
					v[i] = f(r)
				}
				slices.Sort(v)
				return v[len(v)/2]
			}
			fmt.Printf("%-22s %7d %9.0f %9.2f %9.2f %8.2f\n", e, w, med(func(r result) float64 { return r.rate }),
				med(func(r result) float64 { return r.p50 }), med(func(r result) float64 { return r.p99 }), med(func(r result) float64 { return r.cpu }))
		}
	}
}

// makeTexts returns n varied texts of about 300-900 bytes (random words of a fixed
// vocabulary with a Zipf-like skew), the size of an agent's memory note.
func makeTexts(n int) []string {
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, 5000)
	for i := range vocab {
		var b strings.Builder
		for range 3 + rng.IntN(7) {
			b.WriteByte(byte('a' + rng.IntN(26)))
		}
		vocab[i] = b.String()
	}
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for b.Len() < 300+rng.IntN(600) {
			x := rng.Float64()
			b.WriteString(vocab[int(x*x*x*float64(len(vocab)))])
			b.WriteByte(' ')
		}
		out[i] = b.String()
	}
	return out
}

type result struct {
	rate, p50, p99, cpu float64
}

// cpuSeconds is the process's user+system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// run writes texts with writers goroutines, one document per call, into a new store of
// engine at path.
func run(engine, path string, writers int, texts []string, embedder string) (result, error) {
	var add func(ctx context.Context, id, text string) error
	var closeFn func() error
	switch engine {
	case "memory":
		var opts []memory.Option
		if embedder != "" {
			var dim int
			fmt.Sscanf(strings.TrimPrefix(embedder, "hash:"), "%d", &dim)
			e, err := vectorstore.ResolveEmbedder(context.Background(), embedder, dim)
			if err != nil {
				return result{}, err
			}
			opts = append(opts, memory.WithEmbedder(e))
		}
		m, err := memory.Open(path, opts...)
		if err != nil {
			return result{}, err
		}
		add = func(ctx context.Context, id, text string) error {
			return m.Add(ctx, memory.Document{ID: id, Text: text, Metadata: map[string]any{"kind": "note"}})
		}
		closeFn = m.Close
	default:
		if err := os.MkdirAll(path, 0o755); err != nil {
			return result{}, err
		}
		db, err := sql.Open("sqlite", "file:"+filepath.Join(path, "db.sqlite")+
			"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(60000)")
		if err != nil {
			return result{}, err
		}
		schema := `CREATE TABLE docs (id TEXT PRIMARY KEY, text TEXT NOT NULL, meta TEXT)`
		if strings.HasSuffix(engine, "+fts5") {
			schema += `; CREATE VIRTUAL TABLE docs_fts USING fts5(text, content='docs', content_rowid='rowid');
CREATE TRIGGER docs_ai AFTER INSERT ON docs BEGIN INSERT INTO docs_fts(rowid, text) VALUES (new.rowid, new.text); END;`
		}
		if _, err := db.Exec(schema); err != nil {
			return result{}, err
		}
		add = func(ctx context.Context, id, text string) error {
			_, err := db.ExecContext(ctx, `INSERT INTO docs (id, text, meta) VALUES (?, ?, ?)`, id, text, `{"kind":"note"}`)
			return err
		}
		closeFn = db.Close
	}
	lat := make([]time.Duration, len(texts))
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	cpu0 := cpuSeconds()
	start := time.Now()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(texts); i += writers {
				t0 := time.Now()
				if err := add(context.Background(), fmt.Sprintf("d%06d", i), texts[i]); err != nil {
					errs <- err
					return
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	cpu := cpuSeconds() - cpu0
	close(errs)
	if err := <-errs; err != nil {
		return result{}, err
	}
	if err := closeFn(); err != nil {
		return result{}, err
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	return result{rate: float64(len(texts)) / wall.Seconds(), p50: ms(lat[len(lat)/2]), p99: ms(lat[len(lat)*99/100]), cpu: cpu}, nil
}
