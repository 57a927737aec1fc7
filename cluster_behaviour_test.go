//go:build weaviate

// The behaviour suite (behaviour_test.go) and the cluster's own tests against a real
// three-node Weaviate cluster, started by scripts/weaviate-cluster.sh in a temporary
// directory (run: go test -tags weaviate -run TestBehaviour .).
//
// The root package already has a TestMain (crash_test.go), so the cluster is started by
// the top-level test TestBehaviourCluster and stopped by its cleanup, which runs when it
// passes, fails or calls t.Fatal; a panic in a subtest is turned into a failure first
// (noPanic), and a signal handler stops the cluster on SIGINT, SIGTERM and SIGHUP. (A
// `go test -timeout` panic kills the binary without cleanups: the nodes, started under
// setsid, are then stopped by the next `weaviate-cluster.sh stop DIR`, which also finds
// orphans.) If the cluster cannot start, the test fails with the script's output; it never
// skips. MEMORY_WEAVIATE_URL, when set, names a running cluster to use instead (nothing is
// started or stopped then).

package memory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentmem/memory/internal/weaviate"
	"github.com/agentmem/memory/vectorstore"
)

// testCluster is the cluster of this test binary.
var testCluster struct {
	mu     sync.Mutex
	addr   string // weaviate://... ("" until started)
	dir    string
	script string
	owned  bool // started here: stopped here
	stop   sync.Once
}

// clusterAddr starts the cluster (once per top-level test that calls it; the top-level
// test's cleanup stops it) and returns its weaviate:// address.
func clusterAddr(t testing.TB) string {
	t.Helper()
	testCluster.mu.Lock()
	defer testCluster.mu.Unlock()
	if testCluster.addr != "" {
		return testCluster.addr
	}
	if u := os.Getenv("MEMORY_WEAVIATE_URL"); u != "" {
		testCluster.addr = u
		return u
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	testCluster.script = filepath.Join(root, "scripts", "weaviate-cluster.sh")
	testCluster.dir, err = os.MkdirTemp("", "memory-weaviate-")
	if err != nil {
		t.Fatal(err)
	}
	testCluster.owned = true
	testCluster.stop = sync.Once{}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s, ok := <-sig
		if !ok {
			return
		}
		fmt.Fprintf(os.Stderr, "%v: stopping the weaviate cluster in %s\n", s, testCluster.dir)
		stopTestCluster(false)
		os.Exit(1)
	}()
	t.Cleanup(func() {
		signal.Stop(sig)
		stopTestCluster(!t.Failed())
		testCluster.mu.Lock()
		testCluster.addr = ""
		testCluster.mu.Unlock()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, testCluster.script, "start", testCluster.dir).CombinedOutput()
	if err != nil {
		t.Fatalf("could not start the weaviate cluster (%s start %s): %v\n%s", testCluster.script, testCluster.dir, err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], ClusterScheme) {
			testCluster.addr = f[0]
		}
	}
	if testCluster.addr == "" {
		t.Fatalf("no endpoint line from the cluster script:\n%s", out)
	}
	t.Logf("weaviate cluster up: %s (dir %s)", testCluster.addr, testCluster.dir)
	return testCluster.addr
}

// stopTestCluster stops the cluster this binary started; its directory is removed when
// the tests passed (else kept, with the nodes' logs).
func stopTestCluster(passed bool) {
	if !testCluster.owned {
		return
	}
	testCluster.stop.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, testCluster.script, "stop", testCluster.dir).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "weaviate-cluster.sh stop %s: %v\n%s", testCluster.dir, err, out)
		}
		if passed {
			os.RemoveAll(testCluster.dir)
		} else {
			fmt.Fprintf(os.Stderr, "weaviate cluster data and logs kept in %s\n", testCluster.dir)
		}
	})
}

// noPanic turns a panic in a subtest into its failure, so that the top-level test's
// cleanup still stops the cluster.
func noPanic(t *testing.T) {
	if r := recover(); r != nil {
		t.Errorf("panic: %v\n%s", r, debug.Stack())
	}
}

var prefixSeq atomic.Int64

// testConsistency is the consistency level of the suite's stores. Weaviate answers a
// search (and a count) from one replica of each shard, whatever the level: only a write
// acknowledged by every replica (ALL) is seen by every later search. At QUORUM a search
// right after a write may miss it on the replica that has not applied it yet (seen here:
// a dense search returning 5 of 10 documents just written), which would make the suite
// depend on timing.
const testConsistency = "ALL"

// clusterOpener opens stores on the test cluster, each under a class prefix of its own
// (its classes are deleted when the test ends).
type clusterOpener struct{ addr string }

func (co clusterOpener) newAddr(t testing.TB) string {
	p := fmt.Sprintf("T%dx%d", time.Now().UnixNano()%1e9, prefixSeq.Add(1))
	addr := co.addr + "/" + p
	t.Cleanup(func() { dropPrefix(t, addr, p) })
	return addr
}

func (co clusterOpener) open(t *testing.T, opts ...Option) *Memory {
	t.Helper()
	m, err := Open(co.newAddr(t), append([]Option{WithConsistency(testConsistency)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func (co clusterOpener) reopen(t *testing.T, m *Memory, opts ...Option) (*Memory, error) {
	m2, err := Open(m.Dir(), append([]Option{WithConsistency(testConsistency)}, opts...)...)
	if err == nil {
		t.Cleanup(func() { m2.Close() })
	}
	return m2, err
}

// dropPrefix deletes the classes of a test's store.
func dropPrefix(t testing.TB, addr, prefix string) {
	nodes, _, err := parseClusterAddress(addr)
	if err != nil {
		t.Error(err)
		return
	}
	wc, err := weaviate.New(context.Background(), weaviate.Config{Endpoints: nodes})
	if err != nil {
		t.Error(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	infos, err := wc.Classes(ctx, prefix+"_")
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	for _, ci := range infos {
		if err := wc.DeleteClass(ctx, ci.Name); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
}

// TestBehaviourCluster runs the behaviour suite on the three-node cluster, and the
// cluster's own tests after it (one cluster for all).
func TestBehaviourCluster(t *testing.T) {
	co := clusterOpener{addr: clusterAddr(t)}
	for _, bt := range behaviourTests {
		t.Run(bt.name, func(t *testing.T) {
			defer noPanic(t)
			bt.run(t, co)
		})
	}
	for _, ct := range clusterTests {
		t.Run(ct.name, func(t *testing.T) {
			defer noPanic(t)
			ct.run(t, co)
		})
	}
}

// clusterTests are the tests of what only a store on a cluster does.
var clusterTests = []struct {
	name string
	run  func(t *testing.T, co clusterOpener)
}{
	{"NotSupported", clusterNotSupported},
	{"Options", clusterOptions},
	{"Replicated", clusterReplicated},
	{"ParityWithEmbedded", clusterParity},
	{"Paging", clusterPaging},
}

// clusterPaging: IDs and DeleteWhere page past Weaviate's 1,000 a request (IDs by id
// order: ids of every case and of non-ASCII letters must all come back, sorted as Go
// sorts them), and Delete's batches of 200.
func clusterPaging(t *testing.T, co clusterOpener) {
	m := co.open(t)
	ctx := bctx(t)
	const n = 2100
	var docs []Document
	var want []string
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("%s-%04d", []string{"a", "B", "é", "日本", "z z", "A"}[i%6], i)
		want = append(want, id)
		docs = append(docs, Document{ID: id, Text: "paging text", Metadata: map[string]any{"odd": i%2 == 1}})
	}
	sort.Strings(want)
	for i := 0; i < n; i += 500 {
		mustAdd(t, m, docs[i:min(i+500, n)]...)
	}
	got, err := m.Collection("").IDs(ctx)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("IDs: %d ids, %v; want %d (first differences: %v)", len(got), err, len(want), firstDiff(got, want))
	}
	if c, err := m.Count(ctx); err != nil || c != n {
		t.Errorf("Count = %d, %v", c, err)
	}
	k, err := m.DeleteWhere(ctx, Where{"odd": true})
	if err != nil || k != n/2 {
		t.Fatalf("DeleteWhere(odd) = %d, %v; want %d", k, err, n/2)
	}
	var even []string
	for i := 0; i < n; i += 2 {
		even = append(even, docs[i].ID)
	}
	if err := m.Delete(ctx, even[:700]...); err != nil {
		t.Fatal(err)
	}
	want = append([]string(nil), even[700:]...)
	sort.Strings(want)
	got, err = m.Collection("").IDs(ctx)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("IDs after the deletes: %d ids, %v; want %d (%v)", len(got), err, len(want), firstDiff(got, want))
	}
}

// firstDiff shows where two id lists first differ.
func firstDiff(a, b []string) string {
	for i := 0; i < min(len(a), len(b)); i++ {
		if a[i] != b[i] {
			return fmt.Sprintf("#%d: %q vs %q", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("lengths %d, %d", len(a), len(b))
}

// clusterParity: the same documents in the embedded store and on the cluster give the
// same dense results (ids, scores, relevance, cosines) and the same hybrid explanations
// (fused score, cosine, relevance) for documents that one retriever did not return
// (dense's share then comes from the stored vector).
func clusterParity(t *testing.T, co clusterOpener) {
	ctx := bctx(t)
	emb := embeddedOpener{}.open(t, behaviourEmbedder())
	cl := co.open(t, behaviourEmbedder())
	docs := zoo()
	mustAdd(t, emb, docs...)
	mustAdd(t, cl, docs...)
	for _, q := range []string{"gecko food", "a bird of the zoo", "number 7"} {
		e, err1 := emb.Search(ctx, q, WithMode(Dense), TopK(10))
		c, err2 := cl.Search(ctx, q, WithMode(Dense), TopK(10))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if !reflect.DeepEqual(resultIDs(e), resultIDs(c)) {
			t.Errorf("dense %q: embedded %v, cluster %v", q, resultIDs(e), resultIDs(c))
			continue
		}
		for i := range e {
			if math.Abs(e[i].Score-c[i].Score) > 1e-5 || math.Abs(e[i].Relevance-c[i].Relevance) > 1e-5 || e[i].Explain.Cosine == nil || c[i].Explain.Cosine == nil {
				t.Errorf("dense %q #%d: embedded %v/%v/%v, cluster %v/%v/%v", q, i, e[i].Score, e[i].Relevance, e[i].Explain.Cosine, c[i].Score, c[i].Relevance, c[i].Explain.Cosine)
			}
		}
	}
	// Hybrid, each retriever asked for 1: BM25 finds p1 (the only document with "quasar"),
	// dense recall z01 (the query vector is z01's own), so each result is missing from one
	// list and dense's share of p1's Relevance is p1's stored vector's cosine.
	p1 := Document{ID: "p1", Text: "quasar quasar quasar"}
	mustAdd(t, emb, p1)
	mustAdd(t, cl, p1)
	qv, err := vectorstore.NewHashEmbedder(behaviourDim).Embed(ctx, []string{embedText(docs[1].Title, docs[1].Text)})
	if err != nil {
		t.Fatal(err)
	}
	e, err1 := emb.Search(ctx, "quasar", WithQueryVector(qv[0]), WithWindow(1), TopK(2))
	c, err2 := cl.Search(ctx, "quasar", WithQueryVector(qv[0]), WithWindow(1), TopK(2))
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if got := sortedIDs(c); !reflect.DeepEqual(got, []string{"p1", "z01"}) || !reflect.DeepEqual(sortedIDs(e), got) {
		t.Fatalf("hybrid: embedded %v, cluster %v; want p1 and z01", resultIDs(e), resultIDs(c))
	}
	byID := map[string]Result{}
	for _, r := range e {
		byID[r.ID] = r
	}
	for _, r := range c {
		o := byID[r.ID]
		if r.Explain.Cosine == nil || o.Explain.Cosine == nil || math.Abs(*o.Explain.Cosine-*r.Explain.Cosine) > 1e-5 ||
			math.Abs(o.Relevance-r.Relevance) > 1e-5 || math.Abs(o.Explain.Fused-r.Explain.Fused) > 1e-12 {
			t.Errorf("hybrid %s: embedded cosine %v relevance %v fused %v, cluster %v %v %v", r.ID,
				o.Explain.Cosine, o.Relevance, o.Explain.Fused, r.Explain.Cosine, r.Relevance, r.Explain.Fused)
		}
		if r.ID == "p1" && (r.Explain.Dense != nil || r.Explain.BM25 == nil) {
			t.Errorf("p1: %+v, want a BM25 hit only", r.Explain)
		}
	}
}

// clusterNotSupported: every operation not built for a cluster fails with ErrNotSupported
// naming it, and none panics.
func clusterNotSupported(t *testing.T, co clusterOpener) {
	m := co.open(t, behaviourEmbedder())
	ctx := bctx(t)
	mustAdd(t, m, zoo()...)
	c := m.Collection("")
	calls := map[string]func() error{
		"Collection.Compact":           func() error { return c.Compact(ctx) },
		"Memory.Compact":               func() error { return m.Compact(ctx) },
		"Memory.SetCollectionAnalyzer": func() error { return m.SetCollectionAnalyzer(ctx, "", "en") },
		"Memory.RenameCollection":      func() error { return m.RenameCollection(ctx, DefaultCollection, "other") },
		"CreateCollection analyzer":    func() error { _, err := m.CreateCollection("x", WithCollectionAnalyzer("en")); return err },
		"$ne": func() error {
			_, err := m.Search(ctx, "zoo", WithWhere(Where{"kind": Where{"$ne": "bird"}}))
			return err
		},
		"$nin":            func() error { _, err := m.DeleteWhere(ctx, Where{"kind": Where{"$nin": []any{"bird"}}}); return err },
		"$gt on a string": func() error { _, err := m.Search(ctx, "zoo", WithWhere(Where{"kind": Where{"$gt": "a"}})); return err },
		"Memory.Backup":   func() error { _, err := m.Backup(ctx, io.Discard); return err },
		"Memory.Check":    func() error { _, err := m.Check(ctx, false); return err },
	}
	if lib := m.SOPs(); lib == nil {
		t.Error("SOPs: nil library on a cluster store")
	}
	for name, call := range calls {
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
				}
			}()
			return call()
		}()
		if !errors.Is(err, ErrNotSupported) {
			t.Errorf("%s: %v, want ErrNotSupported", name, err)
			continue
		}
		word := strings.Fields(strings.TrimPrefix(name, "CreateCollection "))[0]
		if word == "CreateCollection" || strings.HasPrefix(name, "CreateCollection") {
			word = map[string]string{"metadata": "WithCollectionMetadata", "analyzer": "WithCollectionAnalyzer"}[strings.Fields(name)[1]]
		}
		if !strings.Contains(err.Error(), word) && !strings.Contains(err.Error(), strings.TrimPrefix(word, "Collection.")) {
			t.Errorf("%s: error %q does not name it", name, err)
		}
	}
	if n, _ := m.Count(ctx); n != 10 {
		t.Errorf("Count after the refused calls = %d, want 10", n)
	}
	for _, o := range []Option{ReadOnly(), WithAnalyzer("en"), WithLuceneBM25(), WithIndexRebuild(), WithConsistency("SOME")} {
		if _, err := Open(m.Dir(), o); err == nil {
			t.Errorf("Open with an option the cluster cannot honour succeeded")
		}
	}
}

// clusterOptions: the replication factor, consistency level and BM25 constants reach
// Weaviate.
func clusterOptions(t *testing.T, co clusterOpener) {
	addr := co.newAddr(t)
	m, err := Open(addr, behaviourEmbedder(), WithReplication(2), WithConsistency("ALL"), WithBM25(1.1, 0.6))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	mustAdd(t, m, Document{ID: "a", Text: "x"})
	cs := m.cluster
	if cs.level != weaviate.All {
		t.Errorf("consistency %q, want ALL", cs.level)
	}
	ci, err := cs.wc.Class(bctx(t), cs.className(DefaultCollection))
	if err != nil {
		t.Fatal(err)
	}
	if ci.Replication != 2 {
		t.Errorf("replication factor %d, want 2", ci.Replication)
	}
	m2, err := Open(co.newAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if m2.cluster.repl != 3 || m2.cluster.level != weaviate.Quorum {
		t.Errorf("defaults: replication %d, consistency %q; want 3, QUORUM", m2.cluster.repl, m2.cluster.level)
	}
}

// clusterReplicated: a write acknowledged at ALL is on every node (factor 3): every node
// alone, read at ONE, counts, lists and finds every document.
func clusterReplicated(t *testing.T, co clusterOpener) {
	addr := co.newAddr(t)
	m, err := Open(addr, behaviourEmbedder(), WithConsistency("ALL"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	mustAdd(t, m, zoo()...)
	want, err := m.Collection("").IDs(bctx(t))
	if err != nil || len(want) != 10 {
		t.Fatalf("IDs = %v, %v", want, err)
	}
	nodes, prefix, _ := parseClusterAddress(addr)
	for _, n := range nodes {
		mi, err := Open(ClusterScheme+n+"/"+prefix, behaviourEmbedder(), WithConsistency("ONE"))
		if err != nil {
			t.Fatal(err)
		}
		ctx := bctx(t)
		ids, err := mi.Collection("").IDs(ctx)
		if err != nil || !reflect.DeepEqual(ids, want) {
			t.Errorf("node %s: IDs %v, %v; want %v", n, ids, err, want)
		}
		if c, err := mi.Count(ctx); err != nil || c != 10 {
			t.Errorf("node %s: Count %d, %v", n, c, err)
		}
		for _, q := range []string{"heron", "camel"} {
			res, err := mi.Search(ctx, q, WithMode(BM25))
			if err != nil || len(res) != 1 {
				t.Errorf("node %s: %q: %v, %v", n, q, resultIDs(res), err)
			}
		}
		mi.Close()
	}
}
