// Command scifact measures Weaviate's BM25 on BEIR SciFact (issue #41): it starts one
// weaviate-server node (or uses -endpoint), loads the corpus (title + text, no vectors) into a
// class per BM25 configuration, runs the judged queries as bm25 queries (k=100) and writes one
// TREC run file per configuration, to be scored with trec_eval (docs/weaviate.md).
//
// Usage:
//
//	go run ./bench/weaviate/scifact [-data DIR] [-bin weaviate-server] [-out DIR] [-endpoint URL]
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/agentmem/memory/internal/beir"
	"github.com/agentmem/memory/internal/weaviate"
)

// config is one measured BM25 setting.
type config struct {
	tag   string
	class weaviate.ClassConfig
	// concat stores title + "\n" + text in the text property (title empty) and searches text
	// alone: one field, as the embedded store indexes a document.
	concat bool
}

func main() { os.Exit(mainCode()) }

// mainCode is main's body; it returns the exit code, so deferred cleanups (stopping the node)
// run before the process exits.
func mainCode() int {
	data := flag.String("data", "/work/shared/data/beir/scifact", "BEIR folder")
	bin := flag.String("bin", ".deps/weaviate/weaviate-server", "weaviate-server binary (scripts/weaviate.sh)")
	ip := flag.String("ip", "127.0.0.5", "loopback address the node binds (HTTP :8080, gossip :7100, Raft :8300/8301)")
	grpcPort := flag.Int("grpc-port", 25061, "gRPC port (bound on all addresses: must not clash with the test cluster's 25051-25053; below the ephemeral port range)")
	dataPort := flag.Int("data-port", 7111, "cluster data port (bound on all addresses)")
	endpoint := flag.String("endpoint", "", "use this running node instead of starting one")
	out := flag.String("out", "bench-weaviate-scifact", "folder for the run files and the node's data and log")
	k := flag.Int("k", 100, "hits per query")
	batch := flag.Int("batch", 200, "objects per batch request")
	only := flag.String("only", "", "comma-separated config tags to run (default all)")
	keep := flag.Bool("keep", false, "keep each class after measuring it (with -endpoint: to inspect it)")
	reuse := flag.Bool("reuse", false, "query a class that exists with the whole corpus instead of reloading it (with -keep)")
	settle := flag.Duration("settle", 0, "wait this long after loading before querying (lets the node flush its memtables)")
	flushAfter := flag.Int("flush-after", 0, "the node's PERSISTENCE_MEMTABLES_FLUSH_DIRTY_AFTER_SECONDS (0: Weaviate's default)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("scifact: ")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Print(err)
		return 1
	}
	ep := *endpoint
	if ep == "" {
		node, err := startNode(*bin, *ip, *grpcPort, *dataPort, *flushAfter, *out)
		if err != nil {
			log.Print(err)
			return 1
		}
		defer node.stop()
		ep = "http://" + *ip + ":8080"
	}
	if err := run(ctx, ep, *data, *out, *k, *batch, *only, opts{keep: *keep, reuse: *reuse, settle: *settle}); err != nil {
		log.Print(err)
		return 1
	}
	return 0
}

// opts are the measurement's switches.
type opts struct {
	keep, reuse bool
	settle      time.Duration
}

func run(ctx context.Context, ep, data, out string, k, batch int, only string, o opts) error {
	c, err := weaviate.New(ctx, weaviate.Config{Endpoints: []string{ep}, Timeout: 60 * time.Second, MaxAttempts: 4})
	if err != nil {
		return err
	}
	if err := waitReady(ctx, c); err != nil {
		return err
	}
	ds, err := beir.Load(data, "test")
	if err != nil {
		return err
	}
	log.Printf("%d docs, %d judged test queries", len(ds.Corpus), len(ds.Queries))
	off := false
	configs := []config{
		{"default", weaviate.ClassConfig{Name: "SciFactDefault", Replication: 1}, false},
		{"k1_0.9_b_0.4", weaviate.ClassConfig{Name: "SciFactK09B04", Replication: 1, BM25: &weaviate.BM25Params{K1: 0.9, B: 0.4}}, false},
		{"k1_0.9_b_0.4_nostop", weaviate.ClassConfig{Name: "SciFactK09B04NoStop", Replication: 1, Stopwords: "none", BM25: &weaviate.BM25Params{K1: 0.9, B: 0.4}}, false},
		{"concat_default", weaviate.ClassConfig{Name: "SciFactConcat", Replication: 1}, true},
		{"concat_k1_0.9_b_0.4", weaviate.ClassConfig{Name: "SciFactConcatK09B04", Replication: 1, BM25: &weaviate.BM25Params{K1: 0.9, B: 0.4}}, true},
		// the same without block-max WAND (exhaustive scoring)
		{"default_nowand", weaviate.ClassConfig{Name: "SciFactDefaultNoWand", Replication: 1, BlockMaxWAND: &off}, false},
		{"k1_0.9_b_0.4_nowand", weaviate.ClassConfig{Name: "SciFactK09B04NoWand", Replication: 1, BlockMaxWAND: &off, BM25: &weaviate.BM25Params{K1: 0.9, B: 0.4}}, false},
	}
	for _, cfg := range configs {
		if only != "" && !strings.Contains(","+only+",", ","+cfg.tag+",") {
			continue
		}
		if err := measure(ctx, c, ds, cfg, out, k, batch, o); err != nil {
			return fmt.Errorf("%s: %w", cfg.tag, err)
		}
	}
	return nil
}

// waitReady waits until the node answers ready and accepts schema reads (a Raft leader).
func waitReady(ctx context.Context, c *weaviate.Client) error {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		err := c.Ready(ctx)
		if err == nil {
			if _, err = c.ClassExists(ctx, "SciFactDefault"); err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("node not ready: %w", err)
		}
		time.Sleep(time.Second)
	}
}

func measure(ctx context.Context, c *weaviate.Client, ds *beir.Dataset, cfg config, out string, k, batch int, o opts) error {
	name := cfg.class.Name
	reused := false
	if o.reuse {
		if n, err := c.Count(ctx, name, weaviate.Filter{}); err == nil && n == len(ds.Corpus) {
			reused = true
		}
	}
	if !reused {
		if err := c.DeleteClass(ctx, name); err != nil {
			return err
		}
		if err := c.CreateClass(ctx, cfg.class); err != nil {
			return err
		}
	}
	start := time.Now()
	for lo := 0; lo < len(ds.Corpus) && !reused; lo += batch {
		hi := min(lo+batch, len(ds.Corpus))
		objs := make([]weaviate.Object, 0, hi-lo)
		for _, d := range ds.Corpus[lo:hi] {
			if cfg.concat {
				objs = append(objs, weaviate.Object{ID: d.ID, Text: d.Title + "\n" + d.Text})
			} else {
				objs = append(objs, weaviate.Object{ID: d.ID, Title: d.Title, Text: d.Text})
			}
		}
		if err := c.PutBatch(ctx, name, weaviate.One, objs); err != nil {
			return err
		}
	}
	load := time.Since(start)
	n, err := c.Count(ctx, name, weaviate.Filter{})
	if err != nil {
		return err
	}
	if n != len(ds.Corpus) {
		return fmt.Errorf("count %d after loading %d docs", n, len(ds.Corpus))
	}
	if o.settle > 0 {
		time.Sleep(o.settle)
	}
	var props []string // default: title, text
	if cfg.concat {
		props = []string{weaviate.PropText}
	}
	runs := beir.Run{}
	lat := make([]time.Duration, 0, len(ds.Queries))
	start = time.Now()
	for _, q := range ds.Queries {
		t0 := time.Now()
		hits, err := c.BM25(ctx, weaviate.Query{Class: name, Text: q.Text, Limit: k, Properties: props})
		if err != nil {
			return fmt.Errorf("query %s: %w", q.ID, err)
		}
		lat = append(lat, time.Since(t0))
		for _, h := range hits {
			runs[q.ID] = append(runs[q.ID], beir.Scored{DocID: h.ID, Score: h.Score})
		}
	}
	queries := time.Since(start)
	path := filepath.Join(out, "weaviate-"+cfg.tag+".run")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := beir.WriteTREC(f, runs, "weaviate-"+cfg.tag); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	m, _ := beir.Evaluate(ds.Qrels, runs)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	fmt.Printf("%-22s docs %d load %s (%.0f docs/s)  queries %d in %s  p50 %s p99 %s  nDCG@10 %.4f  Recall@100 %.4f  run %s\n",
		cfg.tag, n, load.Round(time.Millisecond), float64(n)/load.Seconds(), len(ds.Queries), queries.Round(time.Millisecond),
		lat[len(lat)/2].Round(time.Microsecond), lat[len(lat)*99/100].Round(time.Microsecond), m.NDCG10, m.Recall100, path)
	if o.keep {
		return nil
	}
	return c.DeleteClass(ctx, name)
}

// node is a weaviate-server process this command started.
type node struct{ cmd *exec.Cmd }

// startNode starts a single-node weaviate-server on ip (its own Raft cluster of one).
func startNode(bin, ip string, grpcPort, dataPort, flushAfter int, out string) (*node, error) {
	abs, err := filepath.Abs(out)
	if err != nil {
		return nil, err
	}
	dataDir := filepath.Join(abs, "node")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(abs, "node.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--scheme", "http", "--host", ip, "--port", "8080", "--read-timeout=600s", "--write-timeout=600s")
	cmd.Env = []string{
		"PATH=/usr/bin:/bin", "HOME=" + abs,
		"PERSISTENCE_DATA_PATH=" + dataDir,
		"CLUSTER_HOSTNAME=node1", "CLUSTER_BIND_ADDR=" + ip,
		"CLUSTER_GOSSIP_BIND_PORT=7100", fmt.Sprintf("CLUSTER_DATA_BIND_PORT=%d", dataPort),
		"RAFT_PORT=8300", "RAFT_INTERNAL_RPC_PORT=8301", "RAFT_JOIN=node1:8300", "RAFT_BOOTSTRAP_EXPECT=1",
		fmt.Sprintf("GRPC_PORT=%d", grpcPort),
		"AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED=true", "DEFAULT_VECTORIZER_MODULE=none", "ENABLE_MODULES=",
		"DISABLE_TELEMETRY=true", "GO_PROFILING_DISABLE=true", "PROMETHEUS_MONITORING_ENABLED=false",
		"QUERY_DEFAULTS_LIMIT=25", "LOG_LEVEL=warning", "LOG_FORMAT=text",
	}
	if flushAfter > 0 {
		cmd.Env = append(cmd.Env, fmt.Sprintf("PERSISTENCE_MEMTABLES_FLUSH_DIRTY_AFTER_SECONDS=%d", flushAfter))
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	log.Printf("weaviate-server pid %d on %s:8080 (data %s, log %s)", cmd.Process.Pid, ip, dataDir, logf.Name())
	return &node{cmd: cmd}, nil
}

// stop sends SIGTERM and waits (SIGKILL after 30 s).
func (n *node) stop() {
	n.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- n.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		n.cmd.Process.Kill()
		<-done
	}
	log.Printf("weaviate-server pid %d stopped", n.cmd.Process.Pid)
}
