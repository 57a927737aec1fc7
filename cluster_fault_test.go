//go:build weaviate

// Fault tests of the store on a three-node Weaviate cluster (issue #41, point 4): a node
// SIGKILLed over and over during an ingest at QUORUM, the Raft leader killed, a node cut off
// (SIGSTOP). Each top-level test starts a cluster of its own (clusterAddr) and stops it at
// its end, so a node left down by a failure never reaches another test.
//
// Knobs (environment):
//
//	MEMORY_FAULT_DOCS     documents of TestClusterFaultKill (default 10000; the 100000)
//	MEMORY_FAULT_KILLS    SIGKILLs during that ingest (default 10), plus one after it
//	MEMORY_FAULT_WRITERS  goroutines adding batches (default 3)
//	MEMORY_FAULT_BATCH    documents per Add (default 100)
//	MEMORY_FAULT_WAIT     how long a test waits for the cluster to come right (default 5m)
//	MEMORY_FAULT_PLANT    a fault to plant, to see the tests fail (never set in make test):
//	  drop       the store drops every document whose id ends in 777 from its batches, and
//	             still acknowledges them (TestClusterFaultKill must report them lost)
//	  noasync    the kill test's collection without asynchronous replication: a node back
//	             from an outage does not catch up (the catch-up check must fail)
//	  noguard    the store does not check the replicas around a write (clusterStore.
//	             replicated): Weaviate's own ALL, acknowledged by the replicas left once it
//	             drops a node from its membership (TestClusterFaultPartition must fail)
//	  raftquorum TestClusterFaultLeader kills a second node with the leader: no Raft majority,
//	             no schema operation (the test must fail)
package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/memory/internal/weaviate"
	"github.com/agentmem/memory/vectorstore"
)

// faultPlant is MEMORY_FAULT_PLANT; plantFaults sets the store's hooks it names for the
// test, and clears them when the test ends.
func plantFaults(t *testing.T) string {
	p := os.Getenv("MEMORY_FAULT_PLANT")
	switch p {
	case "":
		return ""
	case "drop":
		clusterFaults.dropAcked = func(objs []weaviate.Object) []weaviate.Object {
			out := objs[:0:0]
			for _, o := range objs {
				if !strings.HasSuffix(o.ID, "777") {
					out = append(out, o)
				}
			}
			return out
		}
	case "noguard":
		clusterFaults.noReplicaCheck = true
	case "noasync", "raftquorum":
	default:
		t.Fatalf("MEMORY_FAULT_PLANT=%q: want drop, noasync, noguard or raftquorum", p)
	}
	t.Logf("PLANTED FAULT: %s (this run must fail)", p)
	t.Cleanup(func() { clusterFaults.dropAcked, clusterFaults.noReplicaCheck = nil, false })
	return p
}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a count", name, s)
	}
	return n
}

func faultWait(t *testing.T) time.Duration {
	if s := os.Getenv("MEMORY_FAULT_WAIT"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("MEMORY_FAULT_WAIT=%q: %v", s, err)
		}
		return d
	}
	return 5 * time.Minute
}

// faultCluster starts this test's cluster and returns its address; the fault tests need one
// they started, to kill its nodes.
func faultCluster(t *testing.T) (addr string, nodes []string) {
	if os.Getenv("MEMORY_WEAVIATE_URL") != "" {
		t.Fatal("the fault tests kill nodes of a cluster they start: unset MEMORY_WEAVIATE_URL")
	}
	addr = clusterAddr(t)
	nodes, _, err := parseClusterAddress(addr)
	if err != nil || len(nodes) != 3 {
		t.Fatalf("cluster %s: %v", addr, err)
	}
	return addr, nodes
}

// clusterScript runs the cluster script on this test's cluster (cmd DIR args...).
func clusterScript(t *testing.T, cmd string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, testCluster.script, append([]string{cmd, testCluster.dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("weaviate-cluster.sh %s %v: %v\n%s", cmd, args, err, out)
	}
	return string(out)
}

// leaderNode is the number (1..3) of the Raft leader, once the running nodes agree on one.
func leaderNode(t *testing.T, wait time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		out, err := exec.Command(testCluster.script, "leader", testCluster.dir).Output()
		if n, perr := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && perr == nil {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Raft leader after %v: %v %s", wait, err, out)
		}
		time.Sleep(time.Second)
	}
}

// openAt opens a store on addr (a weaviate:// address with its prefix) at level.
func openAt(t *testing.T, addr, level string, opts ...Option) *Memory {
	t.Helper()
	m, err := Open(addr, append([]Option{WithConsistency(level)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// nodeAddr is prefixed address addr with only node n (1..3) of nodes.
func nodeAddr(addr string, nodes []string, n int) string {
	_, prefix, _ := strings.Cut(strings.TrimPrefix(addr, ClusterScheme), "/")
	return ClusterScheme + nodes[n-1] + "/" + prefix
}

// faultDoc is document i of the fault tests.
func faultDoc(tag string, i int) Document {
	return Document{ID: fmt.Sprintf("%s%06d", tag, i), Text: fmt.Sprintf("fault test %s document %d, word%d and word%d", tag, i, i%97, i%13)}
}

// checkDocs reads every id of want through get (8 at a time, each id tried up to 3 times
// over a few seconds when the read fails for another reason than its absence) and returns
// the ids not found and those whose read kept failing, with the first such error.
func checkDocs(ctx context.Context, get func(context.Context, string) (Document, error), want []Document) (missing, failed []string, firstErr error) {
	var mu sync.Mutex
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(want) || ctx.Err() != nil {
					return
				}
				w := want[i]
				var err error
				for try := 0; try < 3; try++ {
					var d Document
					if d, err = get(ctx, w.ID); err == nil && d.Text != w.Text {
						err = fmt.Errorf("%s: text %q, want %q", w.ID, d.Text, w.Text)
					}
					if err == nil || errors.Is(err, ErrNotFound) {
						break
					}
					time.Sleep(time.Duration(try+1) * time.Second)
				}
				if err != nil {
					mu.Lock()
					if errors.Is(err, ErrNotFound) {
						missing = append(missing, w.ID)
					} else {
						failed = append(failed, w.ID)
						if firstErr == nil {
							firstErr = err
						}
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil && firstErr == nil {
		firstErr = ctx.Err()
	}
	return missing, failed, firstErr
}

// ackLog records the documents a store acknowledged, in order.
type ackLog struct {
	mu   sync.Mutex
	docs []Document
}

func (a *ackLog) add(docs []Document) { a.mu.Lock(); a.docs = append(a.docs, docs...); a.mu.Unlock() }
func (a *ackLog) upto(n int) []Document {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n < 0 || n > len(a.docs) {
		n = len(a.docs)
	}
	return a.docs[:n:n]
}
func (a *ackLog) len() int { a.mu.Lock(); defer a.mu.Unlock(); return len(a.docs) }

// TestClusterFaultKill: an ingest at QUORUM from several goroutines while nodes are
// SIGKILLed (a different one each time, round robin) and restarted; every document the
// store acknowledged is found by QUORUM reads during each outage (those acknowledged since
// the previous check), during a last outage after the ingest (all of them) and after every
// node is back (all of them); then each node, read alone at ONE, holds every acknowledged
// document with its text: the nodes caught up (asynchronous replication, which the script
// runs every 5 s) and answer the same.
func TestClusterFaultKill(t *testing.T) {
	plant := plantFaults(t)
	n := envInt(t, "MEMORY_FAULT_DOCS", 10000)
	kills := envInt(t, "MEMORY_FAULT_KILLS", 10)
	writers := max(1, envInt(t, "MEMORY_FAULT_WRITERS", 3))
	wait := faultWait(t)
	base, nodes := faultCluster(t)
	addr := clusterOpener{addr: base}.newAddr(t)
	opts := []Option{WithEmbedder(vectorstore.NewHashEmbedder(64))}
	if plant != "noasync" {
		opts = append(opts, WithAsyncReplication())
	}
	m := openAt(t, addr, "QUORUM", opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	t0 := time.Now()

	batch := max(1, envInt(t, "MEMORY_FAULT_BATCH", 100))
	var acked ackLog
	var nextBatch atomic.Int64
	var retried atomic.Int64
	// Kill k (0-based) comes once mark(k) documents are acknowledged; batches that start
	// below allowed may be sent.
	var allowed atomic.Int64
	mark := func(k int) int { return (k + 1) * n / (kills + 1) }
	allowed.Store(int64(mark(0)))
	if kills == 0 {
		allowed.Store(int64(n))
	}
	ingestErr := make(chan error, writers)
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(nextBatch.Add(1)-1) * batch
				if lo >= n {
					return
				}
				// Hold the ingest at the next kill's mark until that kill: the kills fall
				// during the ingest however slow the outage checks are.
				for lo >= int(allowed.Load()) && ctx.Err() == nil {
					time.Sleep(50 * time.Millisecond)
				}
				docs := make([]Document, 0, batch)
				for i := lo; i < min(lo+batch, n); i++ {
					docs = append(docs, faultDoc("k", i))
				}
				err := m.Add(ctx, docs...)
				// A failed Add may have stored part of the batch: Upsert it until it is
				// acknowledged (not counted as acknowledged before).
				for err != nil {
					retried.Add(1)
					t.Logf("batch %d: %v (upserting it again)", lo/batch, err)
					if ctx.Err() != nil {
						ingestErr <- fmt.Errorf("batch %d: %w", lo/batch, err)
						return
					}
					time.Sleep(time.Second)
					err = m.Upsert(ctx, docs...)
				}
				acked.add(docs)
			}
		}()
	}
	ingestDone := make(chan struct{})
	go func() { wg.Wait(); close(ingestDone) }()
	defer func() { cancel(); <-ingestDone }() // no writer outlives the test (t.Logf)

	checked := 0 // acked[:checked] were read during an outage
	outage := func(k, node int, all bool, killed func()) {
		clusterScript(t, "kill", strconv.Itoa(node))
		killed()
		down := time.Now()
		want := acked.upto(-1)
		from := checked
		if all {
			from = 0
		}
		missing, failed, err := checkDocs(ctx, m.Get, want[from:])
		t.Logf("kill %d: node%d down; %d acknowledged, %d read at QUORUM during the outage (%v): %d missing, %d unreadable",
			k, node, len(want), len(want)-from, time.Since(down).Round(time.Millisecond), len(missing), len(failed))
		if len(missing)+len(failed) > 0 {
			t.Errorf("kill %d (node%d down): %d acknowledged documents not found at QUORUM (first %v), %d unreadable (%v)",
				k, node, len(missing), first(missing, 5), len(failed), err)
		}
		checked = len(want)
		clusterScript(t, "restart", strconv.Itoa(node))
	}
	k := 0
	for ; k < kills; k++ {
		// Spread the kills over the ingest: kill k comes once mark(k) documents are
		// acknowledged, and lets the ingest go on to the next mark.
		for acked.len() < mark(k) {
			select {
			case <-ingestDone:
			case <-time.After(200 * time.Millisecond):
				continue
			}
			break
		}
		outage(k+1, k%3+1, false, func() {
			if k+1 < kills {
				allowed.Store(int64(mark(k + 1)))
			} else {
				allowed.Store(int64(n))
			}
		})
	}
	<-ingestDone
	close(ingestErr)
	for err := range ingestErr {
		t.Fatalf("ingest: %v", err)
	}
	ingest := time.Since(t0)
	if got := acked.len(); got != n {
		t.Fatalf("%d documents acknowledged, want %d", got, n)
	}
	t.Logf("ingest: %d documents at QUORUM by %d writers in %v (%.0f docs/s) over %d kills; %d batches upserted again",
		n, writers, ingest.Round(time.Millisecond), float64(n)/ingest.Seconds(), kills, retried.Load())
	all := acked.upto(-1)
	outage(kills+1, k%3+1, true, func() {})

	t1 := time.Now()
	missing, failed, err := checkDocs(ctx, m.Get, all)
	t.Logf("all nodes back: %d read at QUORUM in %v: %d missing, %d unreadable", len(all), time.Since(t1).Round(time.Millisecond), len(missing), len(failed))
	if len(missing)+len(failed) > 0 {
		t.Fatalf("all nodes back: %d acknowledged documents not found at QUORUM (first %v), %d unreadable (%v)", len(missing), first(missing, 5), len(failed), err)
	}

	// Each node alone, at ONE (its own replica answers), until it holds every document.
	for node := 1; node <= 3; node++ {
		mn := openAt(t, nodeAddr(addr, nodes, node), "ONE", WithEmbedder(vectorstore.NewHashEmbedder(64)))
		t2 := time.Now()
		deadline := t2.Add(wait)
		todo := all
		for round := 1; ; round++ {
			missing, failed, err := checkDocs(ctx, mn.Get, todo)
			t.Logf("node%d alone at ONE, round %d: %d read, %d missing, %d unreadable (%v)", node, round, len(todo), len(missing), len(failed), time.Since(t2).Round(time.Millisecond))
			if len(missing)+len(failed) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node%d has not caught up after %v: %d acknowledged documents missing on it (first %v), %d unreadable (%v)",
					node, wait, len(missing), first(missing, 5), len(failed), err)
			}
			todo = todo[:0:0]
			for _, id := range append(missing, failed...) {
				i, _ := strconv.Atoi(strings.TrimPrefix(id, "k"))
				todo = append(todo, faultDoc("k", i))
			}
			time.Sleep(5 * time.Second)
		}
	}
	t.Logf("TestClusterFaultKill: %d documents, %d kills, 0 lost, all nodes caught up; %v in all", n, kills+1, time.Since(t0).Round(time.Second))
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }

// TestClusterFaultLeader: the Raft leader is SIGKILLed; creating a collection (a schema
// operation) succeeds once the others have elected a new leader (retried until then), and
// a write to it at QUORUM too; after the old leader is back, every node's own schema (read
// without going through the leader) holds the new collection and answers for it.
func TestClusterFaultLeader(t *testing.T) {
	plant := plantFaults(t)
	wait := faultWait(t)
	base, nodes := faultCluster(t)
	addr := clusterOpener{addr: base}.newAddr(t)
	m := openAt(t, addr, "QUORUM", WithEmbedder(vectorstore.NewHashEmbedder(16)))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if err := m.Add(ctx, faultDoc("a", 1)); err != nil {
		t.Fatal(err)
	}
	leader := leaderNode(t, wait)
	clusterScript(t, "kill", strconv.Itoa(leader))
	down := []int{leader}
	if plant == "raftquorum" {
		other := leader%3 + 1
		clusterScript(t, "kill", strconv.Itoa(other))
		down = append(down, other)
	}
	killed := time.Now()
	const name = "after leader kill"
	var err error
	for tries := 1; ; tries++ {
		if _, err = m.CreateCollection(name); err == nil {
			t.Logf("collection created %v after the leader (node%d) was killed, attempt %d", time.Since(killed).Round(time.Millisecond), leader, tries)
			break
		}
		if time.Since(killed) > wait {
			t.Fatalf("no schema operation for %v after the leader (node%d) was killed: %v", wait, leader, err)
		}
		t.Logf("create collection, attempt %d: %v", tries, err)
		time.Sleep(2 * time.Second)
	}
	if err := m.Collection(name).Add(ctx, faultDoc("b", 1)); err != nil {
		t.Fatalf("QUORUM write to the new collection with the old leader down: %v", err)
	}
	t.Logf("new leader: node%d", leaderNode(t, wait))
	for _, n := range down {
		clusterScript(t, "restart", strconv.Itoa(n))
	}
	cn := m.cluster.className(name)
	for n := 1; n <= 3; n++ {
		deadline := time.Now().Add(wait)
		for {
			classes, err := localClasses(ctx, nodes[n-1])
			if err == nil && classes[cn] {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node%d's own schema lacks class %s after %v (%v)", n, cn, wait, err)
			}
			time.Sleep(time.Second)
		}
		mn := openAt(t, nodeAddr(addr, nodes, n), "ONE", WithEmbedder(vectorstore.NewHashEmbedder(16)))
		cols, err := mn.Collections(ctx)
		if err != nil || !strings.Contains(strings.Join(cols, "\n"), name) {
			t.Fatalf("node%d: collections %q, %v", n, cols, err)
		}
	}
	// The write made with the leader down reaches every replica (a read at ALL repairs).
	if d, err := openAt(t, addr, "ALL", WithEmbedder(vectorstore.NewHashEmbedder(16))).Collection(name).Get(ctx, faultDoc("b", 1).ID); err != nil || d.Text != faultDoc("b", 1).Text {
		t.Fatalf("read at ALL after the restart: %+v, %v", d, err)
	}
}

// localClasses lists the classes node (host:port) holds in its own schema (the header
// consistency: false keeps Weaviate from asking the leader).
func localClasses(ctx context.Context, node string) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+node+"/v1/schema", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("consistency", "false")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /v1/schema on %s: HTTP %d", node, resp.StatusCode)
	}
	var s struct {
		Classes []struct {
			Class string `json:"class"`
		} `json:"classes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, c := range s.Classes {
		out[c.Class] = true
	}
	return out, nil
}

// TestClusterFaultPartition: one node (not the Raft leader) is cut off by SIGSTOP: writes
// at QUORUM succeed and are read back at QUORUM; writes at ALL fail with ErrConsistency,
// both while Weaviate's membership still lists the node and after it has dropped it (when
// Weaviate alone acknowledges ALL with the two replicas left); after SIGCONT, ALL writes
// succeed again and every node, read alone at ONE, holds every acknowledged document.
func TestClusterFaultPartition(t *testing.T) {
	plantFaults(t)
	wait := faultWait(t)
	base, nodes := faultCluster(t)
	addr := clusterOpener{addr: base}.newAddr(t)
	emb := WithEmbedder(vectorstore.NewHashEmbedder(16))
	mq := openAt(t, addr, "QUORUM", emb)
	ma := openAt(t, addr, "ALL", emb)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var acked []Document
	add := func(m *Memory, tag string, lo, hi int) error {
		var docs []Document
		for i := lo; i < hi; i++ {
			docs = append(docs, faultDoc(tag, i))
		}
		err := m.Add(ctx, docs...)
		if err == nil {
			acked = append(acked, docs...)
		}
		return err
	}
	if err := add(ma, "p", 0, 50); err != nil {
		t.Fatalf("ALL write with every node up: %v", err)
	}
	cc, err := mq.cluster.class(ctx, DefaultCollection)
	if err != nil || cc == nil {
		t.Fatalf("class: %v", err)
	}
	victim := leaderNode(t, wait)%3 + 1
	clusterScript(t, "pause", strconv.Itoa(victim))
	paused := true
	defer func() {
		if paused {
			exec.Command(testCluster.script, "resume", testCluster.dir, strconv.Itoa(victim)).Run()
		}
	}()
	t0 := time.Now()
	if err := add(mq, "q", 0, 20); err != nil {
		t.Fatalf("QUORUM write with node%d cut off: %v", victim, err)
	}
	t.Logf("QUORUM write acknowledged %v after the SIGSTOP of node%d", time.Since(t0).Round(time.Millisecond), victim)
	err = add(ma, "x", 0, 5)
	t.Logf("ALL write %v after the SIGSTOP: %v", time.Since(t0).Round(time.Millisecond), err)
	if !errors.Is(err, ErrConsistency) {
		t.Errorf("ALL write with node%d cut off (still a member): %v, want ErrConsistency", victim, err)
	}
	// Wait for Weaviate to drop the node from its membership: the shards then list two live
	// replicas, and Weaviate alone would acknowledge ALL with them.
	for deadline := time.Now().Add(wait); ; {
		r, err := mq.cluster.wc.Replicas(ctx, cc.name)
		if err == nil && r.Unanswered == "" && len(r.Shards) > 0 && liveBelow(r) {
			t.Logf("node%d out of the membership %v after the SIGSTOP: %+v", victim, time.Since(t0).Round(time.Millisecond), r.Shards)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node%d still in the membership %v after its SIGSTOP (%+v, %v)", victim, wait, r, err)
		}
		time.Sleep(time.Second)
	}
	err = add(ma, "y", 0, 5)
	if !errors.Is(err, ErrConsistency) {
		t.Errorf("ALL write with node%d cut off and out of the membership: %v, want ErrConsistency", victim, err)
	} else {
		t.Logf("ALL write with node%d out of the membership: %v", victim, err)
	}
	if err := add(mq, "q", 20, 40); err != nil {
		t.Fatalf("QUORUM write with node%d cut off and out of the membership: %v", victim, err)
	}
	missing, failed, err := checkDocs(ctx, mq.Get, acked)
	if len(missing)+len(failed) > 0 {
		t.Fatalf("QUORUM reads with node%d cut off: %d missing (first %v), %d unreadable (%v)", victim, len(missing), first(missing, 5), len(failed), err)
	}

	clusterScript(t, "resume", strconv.Itoa(victim))
	paused = false
	t0 = time.Now()
	for deadline := time.Now().Add(wait); ; {
		err = add(ma, "z", 0, 5)
		if err == nil {
			t.Logf("ALL write accepted %v after the SIGCONT", time.Since(t0).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ALL write still refused %v after node%d's SIGCONT: %v", wait, victim, err)
		}
		time.Sleep(time.Second)
	}
	clusterScript(t, "status")
	// Reads at ALL repair the node that missed the QUORUM writes; then each node alone
	// holds every acknowledged document.
	if missing, failed, err := checkDocs(ctx, ma.Get, acked); len(missing)+len(failed) > 0 {
		t.Fatalf("ALL reads after the SIGCONT: %d missing (first %v), %d unreadable (%v)", len(missing), first(missing, 5), len(failed), err)
	}
	for n := 1; n <= 3; n++ {
		mn := openAt(t, nodeAddr(addr, nodes, n), "ONE", emb)
		if missing, failed, err := checkDocs(ctx, mn.Get, acked); len(missing)+len(failed) > 0 {
			t.Errorf("node%d alone at ONE: %d of %d acknowledged documents missing (first %v), %d unreadable (%v)", n, len(missing), len(acked), first(missing, 5), len(failed), err)
		}
	}
}

// liveBelow reports whether some shard has fewer live replicas than it wants.
func liveBelow(r weaviate.Replicas) bool {
	for _, s := range r.Shards {
		if s.Live < s.Want {
			return true
		}
	}
	return false
}
