package memory

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/memory/vectorstore"
)

// waitQueued makes the next committing writer wait until n writes are queued, so that a
// test knows they share one transaction (no clock: it waits for the writers themselves).
func waitQueued(t *testing.T, n int) {
	t.Helper()
	var once sync.Once
	groupCommitHook = func(m *Memory) {
		once.Do(func() {
			for m.queued() < n {
				runtime.Gosched()
			}
		})
	}
	t.Cleanup(func() { groupCommitHook = nil })
}

// TestGroupCommit: concurrent Adds and Upserts waiting for the writer share one
// transaction; each keeps its own outcome (a duplicate id fails alone), writes of one id
// are committed one after the other, and everything committed is stored, searchable and
// still there after a reopen.
func TestGroupCommit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	opts := []Option{WithEmbedder(vectorstore.NewHashEmbedder(32))}
	m, err := Open(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { m.Close() }()
	if err := m.Add(ctx, Document{ID: "taken", Text: "already stored"}); err != nil {
		t.Fatal(err)
	}
	base := m.gq.commits

	const writers = 8
	waitQueued(t, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch i {
			case 0: // a duplicate: fails alone
				errs[i] = m.Add(ctx, Document{ID: "taken", Text: "second version"})
			case 1, 2: // one id twice: committed one after the other
				errs[i] = m.Upsert(ctx, Document{ID: "same", Text: fmt.Sprintf("twiceword from writer %d", i)})
			default:
				errs[i] = m.Add(ctx, Document{ID: fmt.Sprintf("w%d", i), Text: fmt.Sprintf("groupword%d from writer %d", i, i)})
			}
		}()
	}
	wg.Wait()
	if !errors.Is(errs[0], ErrDuplicateID) {
		t.Errorf("the duplicate Add: %v, want ErrDuplicateID", errs[0])
	}
	for i := 1; i < writers; i++ {
		if errs[i] != nil {
			t.Errorf("writer %d: %v", i, errs[i])
		}
	}
	// Seven writes, one id twice: two transactions (the second write of "same" waits for
	// the first to be stored), not seven.
	if got := m.gq.commits - base; got != 2 {
		t.Errorf("%d transactions for 8 queued writes, want 2", got)
	}
	check := func(stage string) {
		t.Helper()
		if n, err := m.Count(ctx); err != nil || n != 1+1+writers-3 {
			t.Fatalf("%s: Count %d %v, want %d", stage, n, err, 1+1+writers-3)
		}
		if d, err := m.Get(ctx, "taken"); err != nil || d.Text != "already stored" {
			t.Errorf("%s: taken: %q %v", stage, d.Text, err)
		}
		if d, err := m.Get(ctx, "same"); err != nil || !strings.HasPrefix(d.Text, "twiceword from writer") {
			t.Errorf("%s: same: %q %v", stage, d.Text, err)
		}
		for i := 3; i < writers; i++ {
			res, err := m.Search(ctx, fmt.Sprintf("groupword%d", i), WithMode(BM25), TopK(3))
			if err != nil || len(res) != 1 || res[0].ID != fmt.Sprintf("w%d", i) {
				t.Errorf("%s: groupword%d: %v %v", stage, i, res, err)
			}
		}
		if res, err := m.Search(ctx, "twiceword", WithMode(BM25), TopK(5)); err != nil || len(res) != 1 {
			t.Errorf("%s: the id written twice is found %d times (%v)", stage, len(res), err)
		}
	}
	check("open")
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if m, err = Open(dir, opts...); err != nil {
		t.Fatal(err)
	}
	check("reopened")
}

// TestGroupCommitCancelled: a queued write whose context is cancelled before its group
// is committed fails with the context's error and stores nothing; the others commit.
func TestGroupCommitCancelled(t *testing.T) {
	m, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	groupCommitHook = func(m *Memory) {
		once.Do(func() {
			for m.queued() < 3 {
				runtime.Gosched()
			}
			cancel()
		})
	}
	defer func() { groupCommitHook = nil }()
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			if i == 1 {
				ctx = cctx
			}
			errs[i] = m.Add(ctx, Document{ID: fmt.Sprintf("c%d", i), Text: "text"})
		}()
	}
	wg.Wait()
	if !errors.Is(errs[1], context.Canceled) || errs[0] != nil || errs[2] != nil {
		t.Fatalf("errors %v, want the cancelled write's only", errs)
	}
	if n, _ := m.Count(context.Background()); n != 2 {
		t.Fatalf("Count %d, want 2", n)
	}
	if _, err := m.Get(context.Background(), "c1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the cancelled write's document: %v", err)
	}
}

// TestGroupCommitLeaderPanics: when the writer about to commit a group panics, its own
// write fails, the writer lock is released and the lead passes on: the writes queued
// behind it commit instead of waiting forever, and later writes work. A panic in the
// middle of a group's commit fails that group's writes with ErrIndexUpdate.
func TestGroupCommitLeaderPanics(t *testing.T) {
	for _, mid := range []bool{false, true} {
		t.Run(fmt.Sprintf("mid=%v", mid), func(t *testing.T) {
			m, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			var once sync.Once
			groupCommitHook = func(m *Memory) {
				once.Do(func() {
					for m.queued() < 3 {
						runtime.Gosched()
					}
					if mid {
						m.gq.mu.Lock()
						q := m.gq.pending
						m.gq.mu.Unlock()
						q[0].c = nil // commitGroup panics on the group's collection
						return
					}
					panic("planted")
				})
			}
			defer func() { groupCommitHook = nil }()
			errs := make([]error, 3)
			panics := make([]any, 3)
			var wg sync.WaitGroup
			for i := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { panics[i] = recover() }()
					errs[i] = m.Add(context.Background(), Document{ID: fmt.Sprintf("p%d", i), Text: "text"})
				}()
			}
			wg.Wait()
			leaders, failed, stored := 0, 0, 0
			for i := range 3 {
				switch {
				case panics[i] != nil:
					leaders++
				case errs[i] == nil:
					stored++
				case errors.Is(errs[i], ErrIndexUpdate):
					failed++
				default:
					t.Errorf("write %d: %v", i, errs[i])
				}
			}
			wantFailed, wantStored := 0, 2
			if mid {
				wantFailed, wantStored = 2, 0
			}
			if leaders != 1 || failed != wantFailed || stored != wantStored {
				t.Fatalf("panicked %d, failed %d, stored %d; want 1, %d, %d (%v)", leaders, failed, stored, wantFailed, wantStored, errs)
			}
			if n, _ := m.Count(context.Background()); n != wantStored {
				t.Fatalf("Count %d, want %d", n, wantStored)
			}
			if err := m.Add(context.Background(), Document{ID: "after", Text: "text"}); err != nil {
				t.Fatalf("a write after the failed group: %v", err)
			}
			if q := m.queued(); q != 0 {
				t.Fatalf("%d writes left queued", q)
			}
		})
	}
}

// The group commit kill test runs this test binary as a child whose groupWriters
// goroutines each Add one document at a time and print "ack ID" once Add returned; the
// parent kills it with SIGKILL after a random number of acknowledgements and checks that
// every acknowledged document is stored whole.
const groupCrashEnv = "MEMORY_GROUP_CRASH_CHILD"

const groupWriters = 8

// groupCrashDoc is the document writer w adds n-th in run r.
func groupCrashDoc(r, w, n int) Document {
	id := fmt.Sprintf("r%02d-w%d-%05d", r, w, n)
	word := fmt.Sprintf("gcword%02d%d%05d", r, w, n) // one term that only this document has
	return Document{ID: id, Text: fmt.Sprintf("%s %s %s", word, id, strings.Repeat("padding ", n%30)), Metadata: map[string]any{"w": float64(w)}}
}

func groupCrashChild(dir string) {
	var run int
	fmt.Sscan(os.Getenv("MEMORY_GROUP_CRASH_RUN"), &run)
	childStarted()
	m, err := Open(dir)
	if err != nil {
		fmt.Println("open error:", err)
		os.Exit(3)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	for w := range groupWriters {
		go func() {
			for n := 0; ; n++ {
				d := groupCrashDoc(run, w, n)
				if err := m.Add(context.Background(), d); err != nil {
					mu.Lock()
					fmt.Fprintln(out, "add error:", err)
					out.Flush()
					os.Exit(4)
				}
				mu.Lock()
				fmt.Fprintln(out, "ack", d.ID)
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	select {}
}

// TestGroupCommitCrash: eight concurrent writers, one document per Add, killed with
// SIGKILL after a random number of acknowledgements (some right at the start): every
// acknowledged document is stored whole after each kill, and nothing stored is a torn
// write. A write acknowledged before its group's transaction was durable would be lost
// by a kill landing between the two.
func TestGroupCommitCrash(t *testing.T) {
	runs := 12
	if testing.Short() {
		runs = 4
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	dir := filepath.Join(t.TempDir(), "store")
	total := 0
	for run := range runs {
		kill := 1 + rng.Intn(60)
		if run%4 == 0 {
			kill = rng.Intn(3)
		}
		lines := killedChild(t, kill, groupCrashEnv+"="+dir, fmt.Sprintf("MEMORY_GROUP_CRASH_RUN=%d", run))
		var acked []string
		for _, l := range lines {
			id, ok := strings.CutPrefix(l, "ack ")
			if !ok {
				t.Fatalf("run %d: child said %q", run, l)
			}
			acked = append(acked, id)
		}
		m, err := Open(dir)
		if err != nil {
			t.Fatalf("run %d: store does not open after kill -9: %v", run, err)
		}
		for _, id := range acked {
			var r, w, n int
			if _, err := fmt.Sscanf(id, "r%02d-w%d-%05d", &r, &w, &n); err != nil {
				m.Close()
				t.Fatalf("run %d: ack of %q", run, id)
			}
			want := groupCrashDoc(r, w, n)
			got, err := m.Get(context.Background(), id)
			if err != nil || got.Text != want.Text {
				m.Close()
				t.Fatalf("run %d: acknowledged %s lost after kill -9: %v", run, id, err)
			}
		}
		// Nothing torn: every stored document of this run is whole and searchable.
		ids, err := m.Collection("").IDs(context.Background())
		if err != nil {
			m.Close()
			t.Fatal(err)
		}
		for _, id := range ids {
			var r, w, n int
			if _, err := fmt.Sscanf(id, "r%02d-w%d-%05d", &r, &w, &n); err != nil || r != run {
				continue
			}
			if got, err := m.Get(context.Background(), id); err != nil || got.Text != groupCrashDoc(r, w, n).Text {
				m.Close()
				t.Fatalf("run %d: stored %s is not whole: %v", run, id, err)
			}
		}
		if len(acked) > 0 { // the BM25 index caught up with the store of record
			last := acked[len(acked)-1]
			var r, w, n int
			fmt.Sscanf(last, "r%02d-w%d-%05d", &r, &w, &n)
			res, err := m.Search(context.Background(), fmt.Sprintf("gcword%02d%d%05d", r, w, n), WithMode(BM25), TopK(2))
			if err != nil || len(res) != 1 || res[0].ID != last {
				m.Close()
				t.Fatalf("run %d: %s not searchable after kill -9: %v %v", run, last, res, err)
			}
		}
		total = len(ids)
		if err := m.Close(); err != nil {
			t.Fatalf("run %d: close: %v", run, err)
		}
		t.Logf("run %d: killed after %d acknowledgements; %d documents stored", run, len(acked), total)
	}
	if total == 0 {
		t.Fatal("the child never stored a document: the test proved nothing")
	}
}
