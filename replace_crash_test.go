package memory

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory/internal/memtest"
)

// The replace crash test: a child replaces one source's chunked documents with version
// after version (ReplaceSource: each version drops some ids, brings others back, and
// changes every document's length, so its chunks come and go), printing "ack <v>" after
// each; the parent kills it at a random moment and checks that the store holds exactly the
// acknowledged version or the next one, in the store of record and in the BM25 index.
const replaceCrashEnv = "MEMORY_REPLACE_CRASH_CHILD"

// replaceVersion is version v of source "s": 40 documents at most, each of 1 to 4
// paragraphs that name the version (a chunk budget of 200 makes each paragraph a chunk).
func replaceVersion(v int) []Document {
	var out []Document
	for i := range 40 {
		if (i+v)%4 == 0 {
			continue
		}
		var b strings.Builder
		for p := range 1 + (i+v)%4 {
			fmt.Fprintf(&b, "Paragraph %d of document %d in version v%dx says enough words to fill a chunk of its own here.\n\n", p, i, v)
		}
		out = append(out, Document{ID: fmt.Sprintf("r%02d", i), Text: b.String()})
	}
	return out
}

func replaceCrashOpts() []Option { return []Option{WithChunking(ChunkOptions{Budget: 200})} }

func replaceCrashChild(dir string) {
	v, _ := strconv.Atoi(os.Getenv("MEMORY_REPLACE_CRASH_FROM"))
	childStarted()
	m, err := Open(dir, replaceCrashOpts()...)
	if err != nil {
		fmt.Println("open error:", err)
		os.Exit(3)
	}
	out := bufio.NewWriter(os.Stdout)
	for ; ; v++ {
		if _, err := m.ReplaceSource(bg, "s", replaceVersion(v)...); err != nil {
			fmt.Println("replace error:", err)
			os.Exit(4)
		}
		fmt.Fprintf(out, "ack %d\n", v)
		out.Flush()
	}
}

// storedVersion is the version the store holds whole (-1: none, with what is wrong).
func storedVersion(t *testing.T, m *Memory, candidates ...int) (int, string) {
	t.Helper()
	ids := memtest.IDs(t, m.Collection(""))
	var why []string
	for _, v := range candidates {
		want := replaceVersion(v)
		if len(ids) != len(want) {
			why = append(why, fmt.Sprintf("v%d: %d documents, not %d", v, len(ids), len(want)))
			continue
		}
		ok := true
		for i, d := range want {
			got, err := m.Get(bg, d.ID)
			if ids[i] != d.ID || err != nil || got.Text != d.Text {
				why = append(why, fmt.Sprintf("v%d: %s differs", v, d.ID))
				ok = false
				break
			}
		}
		if ok {
			return v, ""
		}
	}
	return -1, strings.Join(why, "; ")
}

func TestReplaceCrash(t *testing.T) {
	runs := 16
	if testing.Short() {
		runs = 6
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	dir := filepath.Join(t.TempDir(), "store")
	m, err := Open(dir, replaceCrashOpts()...)
	must(t, err)
	_, err = m.ReplaceSource(bg, "s", replaceVersion(0)...)
	must(t, err)
	must(t, m.Close())
	at := 0 // the version stored
	for run := range runs {
		// Killed during the open (0), or in the replacement after the kill-th.
		kill := rng.Intn(6)
		if run == 1 {
			kill = max(kill, 1) // at least one run acknowledges a version
		}
		lines := killedChild(t, kill, replaceCrashEnv+"="+dir, fmt.Sprintf("MEMORY_REPLACE_CRASH_FROM=%d", at+1))
		acked := at
		for _, l := range lines {
			n, ok := strings.CutPrefix(l, "ack ")
			if !ok {
				t.Fatalf("run %d: child said %q", run, l)
			}
			acked, _ = strconv.Atoi(n)
		}
		m, err := Open(dir, replaceCrashOpts()...)
		if err != nil {
			t.Fatalf("run %d: the store does not open after kill -9: %v", run, err)
		}
		v, why := storedVersion(t, m, acked, acked+1)
		if v < 0 {
			m.Close()
			t.Fatalf("run %d: acknowledged v%d; the store holds neither it nor v%d whole: %s", run, acked, acked+1, why)
		}
		// The BM25 index caught up: no chunk of another version is found, this one's are.
		for _, q := range []string{fmt.Sprintf("v%dx", v-1), fmt.Sprintf("v%dx", v+1)} {
			if res := searchT(t, m, q, WithMode(BM25)); len(res) != 0 {
				m.Close()
				t.Fatalf("run %d: v%d stored, but %q finds %v", run, v, q, res)
			}
		}
		if res := searchT(t, m, fmt.Sprintf("v%dx", v), WithMode(BM25), TopK(100)); len(res) != len(replaceVersion(v)) {
			m.Close()
			t.Fatalf("run %d: v%d stored, its word finds %d documents", run, v, len(res))
		}
		checkAndClose(t, m, run)
		at = v
	}
	if at == 0 {
		t.Fatal("the child never replaced a version: the test proved nothing")
	}
	t.Logf("%d kill -9 runs, %d versions replaced, none torn", runs, at)
}

// checkAndClose closes m after a Check that must find it clean; run names the kill -9 run
// in the error.
func checkAndClose(t *testing.T, m *Memory, run int) {
	t.Helper()
	rep, err := m.Check(bg, false)
	if err != nil || !rep.OK() {
		m.Close()
		t.Fatalf("run %d: check: %+v %v", run, rep, err)
	}
	must(t, m.Close())
}
