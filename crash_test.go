package memory

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmem/memory/internal/memtest"
	"github.com/agentmem/memory/internal/vecmath"
	"github.com/agentmem/memory/vectorstore"
)

// The crash test runs this test binary as a child that writes to a store and prints
// "ack <n>" after each Add returns; the parent kills it with SIGKILL right after a random
// one of its lines (killedChild), then reopens the store and checks that every
// acknowledged document survived, is searchable, and that nothing half-written is visible.
const crashEnv = "MEMORY_CRASH_CHILD"

// crashInt8Env makes the crash child's store embed its documents (crashInt8Options): its
// vectors in int8 in store.db, its dense index without rows of its own.
const crashInt8Env = "MEMORY_CRASH_INT8"

// crashListsEnv adds to crashInt8Env's store a dense index with inverted lists, and makes
// the child compact the store (Compact: the lists written again in order,
// DiskIndex.OrderLists) after every second Add.
const crashListsEnv = "MEMORY_CRASH_LISTS"

// crashInt8Options open the store of the int8 crash test, in the child and the parent
// (lists: with crashListsEnv's inverted lists, every list probed). Every row is rescored:
// the 64-bit codes of the test's near-duplicate texts tie by the hundred (229 of 997
// documents share one code), so a search for k=3 keeping 168 candidates would drop a
// document tied past them by ordinal, with or without lists; the search check stays
// exact while the codes (and lists) are read.
func crashInt8Options(lists bool) []Option {
	params := map[string]int{"oversample": 1 << 20}
	if lists {
		params["nlist"], params["nprobe"] = 4, 4
	}
	return []Option{WithEmbedder(vectorstore.NewHashEmbedder(64)), WithVectorPrecision(Int8), WithIndex(vectorstore.IndexConfig{Params: params})}
}

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashEnv); dir != "" {
		crashChild(dir)
		os.Exit(0)
	}
	if dir := os.Getenv(replaceCrashEnv); dir != "" {
		replaceCrashChild(dir)
		os.Exit(0)
	}
	if dir := os.Getenv(renameCrashEnv); dir != "" {
		renameCrashChild(dir)
		os.Exit(0)
	}
	if dir := os.Getenv(groupCrashEnv); dir != "" {
		groupCrashChild(dir)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashDoc is the n-th document the child writes; the parent rebuilds it to compare.
func crashDoc(n int) Document {
	return Document{
		ID:       fmt.Sprintf("doc-%05d", n),
		Title:    fmt.Sprintf("title %d", n),
		Text:     fmt.Sprintf("crashword%d body of document %d %s", n, n, strings.Repeat("padding ", n%50)),
		Metadata: map[string]any{"n": float64(n)},
	}
}

func crashChild(dir string) {
	seed, _ := strconv.ParseInt(os.Getenv("MEMORY_CRASH_SEED"), 10, 64)
	rng := rand.New(rand.NewSource(seed))
	childStarted()
	var opts []Option
	lists := os.Getenv(crashListsEnv) != ""
	if os.Getenv(crashInt8Env) != "" {
		opts = crashInt8Options(lists)
	}
	m, err := Open(dir, opts...)
	if err != nil {
		fmt.Println("open error:", err)
		os.Exit(3)
	}
	next, _ := m.Count(context.Background())
	adds := 0
	out := bufio.NewWriter(os.Stdout)
	for {
		size := 1 + rng.Intn(40)
		docs := make([]Document, size)
		for i := range docs {
			docs[i] = crashDoc(next + i)
		}
		if err := m.Add(context.Background(), docs...); err != nil {
			fmt.Println("add error:", err)
			os.Exit(4)
		}
		next += size
		fmt.Fprintf(out, "ack %d\n", next) // documents 0..next-1 are acknowledged
		out.Flush()
		if adds++; lists && adds%2 == 0 {
			if err := m.Compact(context.Background()); err != nil {
				fmt.Println("compact error:", err)
				os.Exit(5)
			}
		}
	}
}

// childStarted is a kill test child's first line, before it opens the store: a kill
// right after it lands in the open (start-up, the first manifest write, catch-up).
func childStarted() {
	fmt.Println(childStartLine)
}

const childStartLine = "start"

// killedChild runs this test binary as a child with env added to its environment, sends
// it SIGKILL once it has printed kill lines after childStartLine (0: right after that
// line), and returns the lines it printed after childStartLine, those printed before the
// kill landed included. Where the kill lands is chosen by what the child acknowledged,
// never by a clock: a loaded machine only makes the test slower. From the second line on,
// the kill waits a random part of the time the child took between its last two lines, so
// that it lands anywhere in the child's next step (a jitter scaled by the child's own
// pace, which no outcome depends on). A child that ends before it is killed (it printed an
// error) fails the test.
func killedChild(t *testing.T, kill int, env ...string) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		lines           []string
		started, killed bool
		prev, last      time.Time // when the last two lines came
	)
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		prev, last = last, time.Now()
		if !started && sc.Text() == childStartLine {
			started = true
		} else {
			lines = append(lines, sc.Text())
		}
		if started && !killed && len(lines) >= kill {
			if kill >= 2 {
				if step := last.Sub(prev); step > 0 {
					time.Sleep(time.Duration(rand.Int63n(int64(step))))
				}
			}
			_ = cmd.Process.Signal(syscall.SIGKILL)
			killed = true
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("the child ended before it was killed (%v), saying %q", err, lines)
	}
	return lines
}

func TestCrashDurability(t *testing.T) {
	runs := 24
	if testing.Short() {
		runs = 6
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	dir := filepath.Join(t.TempDir(), "store")
	acked := 0
	for run := 0; run < runs; run++ {
		// Kill at a random point: every third run early (right after the child started,
		// so during start-up, the first manifest write, open and catch-up, or right after
		// its first write), the others after a few writes, in the write that follows.
		kill := 1 + rng.Intn(8)
		if run%3 == 0 {
			kill = rng.Intn(2)
		}
		lines := killedChild(t, kill, crashEnv+"="+dir, fmt.Sprintf("MEMORY_CRASH_SEED=%d", rng.Int63()))
		for _, l := range lines {
			if n, ok := strings.CutPrefix(l, "ack "); ok {
				v, _ := strconv.Atoi(n)
				acked = max(acked, v)
			} else {
				t.Fatalf("run %d: child said %q", run, l)
			}
		}

		m, err := Open(dir)
		if err != nil {
			t.Fatalf("run %d: store does not open after kill -9: %v", run, err)
		}
		count := memtest.Count(t, m)
		if count < acked {
			m.Close()
			t.Fatalf("run %d: %d documents acknowledged, %d present", run, acked, count)
		}
		// Every present document is whole; the acknowledged ones are all there.
		for n := 0; n < count; n++ {
			want := crashDoc(n)
			got, err := m.Get(context.Background(), want.ID)
			if err != nil || got.Text != want.Text || got.Title != want.Title || got.Metadata["n"] != want.Metadata["n"] {
				m.Close()
				t.Fatalf("run %d: document %d: %+v %v", run, n, got, err)
			}
		}
		// The BM25 index caught up: the last document is searchable.
		if count > 0 {
			last := crashDoc(count - 1)
			res, err := m.Search(context.Background(), fmt.Sprintf("crashword%d", count-1), WithMode(BM25), TopK(1))
			if err != nil || len(res) != 1 || res[0].ID != last.ID {
				m.Close()
				t.Fatalf("run %d: last document not searchable: %v %v", run, res, err)
			}
		}
		acked = count
		if err := m.Close(); err != nil {
			t.Fatalf("run %d: close: %v", run, err)
		}
	}
	if acked == 0 {
		t.Fatal("the child never acknowledged a write: the test proved nothing")
	}
	t.Logf("%d kill -9 runs, %d documents survived", runs, acked)
}

// TestCrashDurabilityInt8 is TestCrashDurability for a store that embeds its documents
// and keeps their vectors in int8 (its dense index reads the vectors it rescores from
// store.db): after each kill -9 every acknowledged document is whole, its vector reads
// back as the embedder's rounded to int8 (vecmath.RoundInt8), and a dense search of its
// text finds it at the top (tied at most with a document of the same vector) — each
// document searched in the first run after its write, and a few older ones every run.
func TestCrashDurabilityInt8(t *testing.T) { crashInt8(t, false) }

// TestCrashDurabilityInt8Lists is TestCrashDurabilityInt8 with a dense index of inverted
// lists, the child compacting the store (its lists written again in list order,
// DiskIndex.OrderLists) after every second Add: a kill lands in those writes too.
func TestCrashDurabilityInt8Lists(t *testing.T) { crashInt8(t, true) }

func crashInt8(t *testing.T, lists bool) {
	runs := 8
	if testing.Short() {
		runs = 3
	}
	env := []string{crashInt8Env + "=1"}
	if lists {
		env = append(env, crashListsEnv+"=1")
	}
	ctx := context.Background()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	dir := filepath.Join(t.TempDir(), "store")
	emb := vectorstore.NewHashEmbedder(64)
	acked, searched, listed, gen := 0, 0, 0, 0
	for run := 0; run < runs; run++ {
		kill := 1 + rng.Intn(6)
		if lists {
			kill = 3 + rng.Intn(4) // after "ack 3": the Compact after the second Add is done
		}
		if run%3 == 0 {
			kill = rng.Intn(2)
		}
		lines := killedChild(t, kill, append(env, crashEnv+"="+dir, fmt.Sprintf("MEMORY_CRASH_SEED=%d", rng.Int63()))...)
		for _, l := range lines {
			if n, ok := strings.CutPrefix(l, "ack "); ok {
				v, _ := strconv.Atoi(n)
				acked = max(acked, v)
			} else {
				t.Fatalf("run %d: child said %q", run, l)
			}
		}
		if g := diskGen(dir); g > gen {
			listed++ // the child wrote the dense index (Compact)
		}
		m, err := Open(dir, crashInt8Options(lists)...)
		if err != nil {
			t.Fatalf("run %d: store does not open after kill -9: %v", run, err)
		}
		count := memtest.Count(t, m)
		if count < acked {
			m.Close()
			t.Fatalf("run %d: %d documents acknowledged, %d present", run, acked, count)
		}
		texts := make([]string, count)
		for n := range count {
			d := crashDoc(n)
			texts[n] = embedText(d.Title, d.Text) // what the store embeds
		}
		vecs, err := emb.Embed(ctx, texts)
		if err != nil {
			t.Fatal(err)
		}
		for n := range count {
			want := crashDoc(n)
			got, err := m.Get(ctx, want.ID)
			if err != nil || got.Text != want.Text || got.Metadata["n"] != want.Metadata["n"] {
				m.Close()
				t.Fatalf("run %d: document %d: %+v %v", run, n, got, err)
			}
			wv, err := vecmath.RoundInt8(vecs[n])
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Embedding, wv) {
				m.Close()
				t.Fatalf("run %d: document %d's vector reads back as %v, want the embedder's in int8 %v", run, n, got.Embedding, wv)
			}
		}
		// Dense searches: the documents not searched yet, and a few older ones.
		check := []int{}
		for n := searched; n < count; n++ {
			check = append(check, n)
		}
		for range min(3, searched) {
			check = append(check, rng.Intn(searched))
		}
		for _, n := range check {
			res, err := m.Search(ctx, texts[n], WithMode(Dense), TopK(3))
			found := false
			for _, r := range res {
				if r.ID == crashDoc(n).ID && r.Score >= res[0].Score-1e-6 {
					found = true
				}
			}
			if err != nil || !found {
				m.Close()
				t.Fatalf("run %d: a dense search of document %d's text does not find it first: %+v %v", run, n, res, err)
			}
		}
		acked, searched = count, count
		if err := m.Close(); err != nil {
			t.Fatalf("run %d: close: %v", run, err)
		}
		gen = diskGen(dir)
	}
	if acked == 0 {
		t.Fatal("the child never acknowledged a write: the test proved nothing")
	}
	if lists && listed == 0 {
		t.Fatal("no child wrote its dense index before the kill: the test proved nothing of OrderLists")
	}
	t.Logf("%d kill -9 runs, %d documents survived with their int8 vectors (%d children wrote the dense index)", runs, acked, listed)
}

// diskGen is the generation of the default collection's disk index in the store at dir
// (0: none written).
func diskGen(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "vectors", "default", "disk.json"))
	if err != nil {
		return 0
	}
	var m struct {
		Gen int `json:"gen"`
	}
	_ = json.Unmarshal(b, &m)
	return m.Gen
}
