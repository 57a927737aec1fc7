package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/memtest"
)

// The re-index kill test (issue 21): the test binary re-executed as a child runs the real
// `memory index` (runMain) over a corpus that an earlier run indexed, changed so that every
// document's text says which version it is and some ids come and go; the parent kills it
// with SIGKILL when it reads the child's k-th acknowledgement (a line written after a
// durable write), k drawn over the whole run, never on a timer, and checks that the store
// holds, for each source, its earlier documents or its new ones (or the earlier ones plus
// the acknowledged prefix of the new), with no acknowledged document lost.

// indexChildEnv holds the JSON arguments of the CLI run of a child.
const indexChildEnv = "MEMORY_INDEX_KILL_CHILD"

func TestMain(m *testing.M) {
	if args := os.Getenv(indexChildEnv); args != "" {
		var a []string
		if err := json.Unmarshal([]byte(args), &a); err != nil {
			fmt.Fprintln(os.Stderr, "child args:", err)
			os.Exit(3)
		}
		ackEveryWrite()
		os.Exit(runMain(context.Background(), a, os.Stdout, os.Stderr))
	}
	os.Exit(runTests(m))
}

// runTests runs the tests (TestMain); with -tags weaviate it starts the Weaviate cluster
// first and stops it after (cluster_test.go).
var runTests = func(m *testing.M) int { return m.Run() }

// killCorpus is a generated corpus: nMD .md files (one document each) under a/, one big
// .jsonl file b.jsonl of nBig lines (streamed in batches: it is bigger than a batch), and
// nSmall small .jsonl files of smallLines lines under c/ (several per batch).
type killCorpus struct {
	root                          string
	nMD, nBig, nSmall, smallLines int
}

// kdoc is one document of a version of the corpus, as the CLI stores it.
type kdoc struct {
	id, source, text string
}

// docs is version v of the corpus, in the order index reads it (a/, b.jsonl, c/). From
// version to version every text changes, and the .jsonl files drop some ids and bring
// back others.
func (k killCorpus) docs(v int) []kdoc {
	var out []kdoc
	abs := func(p string) string { return sourceOf(filepath.Join(k.root, p)) }
	for i := range k.nMD {
		p := fmt.Sprintf("a/n%03d.md", i)
		out = append(out, kdoc{filepath.ToSlash(filepath.Join(k.root, p)), abs(p), fmt.Sprintf("note %d says version%d with padding words", i, v)})
	}
	for i := range k.nBig {
		if (i+v)%7 != 0 {
			out = append(out, kdoc{fmt.Sprintf("b%05d", i), abs("b.jsonl"), fmt.Sprintf("big line %d of version%d about walruses and otters", i, v)})
		}
	}
	for f := range k.nSmall {
		p := fmt.Sprintf("c/s%02d.jsonl", f)
		for i := range k.smallLines {
			if (i+v)%5 != 0 {
				out = append(out, kdoc{fmt.Sprintf("c%02d-%03d", f, i), abs(p), fmt.Sprintf("small %d/%d of version%d about puffins", f, i, v)})
			}
		}
	}
	return out
}

// write writes version v of the corpus's files.
func (k killCorpus) write(t testing.TB, v int) []kdoc {
	t.Helper()
	docs := k.docs(v)
	jl := map[string]*strings.Builder{}
	for _, d := range docs {
		rel, err := filepath.Rel(k.root, filepath.FromSlash(d.source))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(rel, ".md") {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(k.root, rel)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(k.root, rel), []byte("# title\n"+d.text), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if jl[rel] == nil {
			jl[rel] = &strings.Builder{}
		}
		line, _ := json.Marshal(map[string]string{"id": d.id, "text": d.text})
		jl[rel].Write(append(line, '\n'))
	}
	for rel, b := range jl {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(k.root, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(k.root, rel), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return docs
}

// ackRE finds the documents a progress line says are stored.
var ackRE = regexp.MustCompile(`, (\d+) stored`)

// failRE finds the documents a failed run says it stored.
var failRE = regexp.MustCompile(`index failed: (\d+) documents were stored`)

// storeContents is id -> text of every document of the store, and its count.
func storeContents(t testing.TB, dir string) (map[string]string, int) {
	t.Helper()
	m, err := memory.OpenExisting(dir)
	if err != nil {
		t.Fatalf("the store does not open: %v", err)
	}
	defer m.Close()
	out := map[string]string{}
	for _, id := range memtest.IDs(t, m.Collection("")) {
		d, err := m.Get(context.Background(), id)
		if err != nil {
			t.Fatalf("get %s: %v", id, err)
		}
		out[id] = d.Text
	}
	return out, memtest.Count(t, m)
}

// genSource is the source group of a generated id: "b" for the big file, "cNN" for small
// file NN, the id itself for a .md file (one document per source).
func genSource(id string) string {
	switch {
	case strings.HasPrefix(id, "b"):
		return "b"
	case strings.HasPrefix(id, "c"):
		return id[:3]
	}
	return id
}

// checkReindex checks what a re-index that was stopped (killed, or failed) left: before
// is the store's content when it began, next the version it indexed (in order), acked how
// many of next it acknowledged, and done whether it finished. It returns the content now.
func checkReindex(t testing.TB, run string, dir string, before map[string]string, next []kdoc, acked int, done bool) map[string]string {
	t.Helper()
	after, count := storeContents(t, dir)
	if count != len(after) {
		t.Fatalf("%s: count says %d, the store holds %d documents", run, count, len(after))
	}
	want := map[string]string{}
	for _, d := range next {
		want[d.id] = d.text
	}
	// Every document is its earlier or its new version; an earlier one that is gone was
	// dropped by the new version.
	for id, text := range after {
		if text != before[id] && text != want[id] {
			t.Fatalf("%s: %s holds %q, neither its earlier %q nor its new %q", run, id, text, before[id], want[id])
		}
	}
	stale, gone := map[string]int{}, map[string]int{}
	for id := range before {
		_, inNext := want[id]
		_, kept := after[id]
		switch {
		case !kept && inNext:
			t.Fatalf("%s: %s was stored before, is in the new version, and is gone (%d documents now, %d before)", run, id, len(after), len(before))
		case !inNext:
			stale[genSource(id)]++
			if !kept {
				gone[genSource(id)]++
			}
		}
	}
	// A source whose stale documents went was replaced whole: all of its new documents are
	// there, and none of its stale ones.
	for src, n := range gone {
		if n != stale[src] {
			t.Fatalf("%s: source %s lost %d of its %d stale documents: a replacement half done", run, src, n, stale[src])
		}
		for _, d := range next {
			if genSource(d.id) == src && after[d.id] != d.text {
				t.Fatalf("%s: source %s was replaced, but its %s is %q, not the new %q", run, src, d.id, after[d.id], d.text)
			}
		}
	}
	if acked > len(next) {
		t.Fatalf("%s: %d acknowledged of %d documents", run, acked, len(next))
	}
	for _, d := range next[:acked] {
		if after[d.id] != d.text {
			t.Fatalf("%s: %s was acknowledged (%d stored), but holds %q", run, d.id, acked, after[d.id])
		}
	}
	if done && !sameContent(after, want) {
		t.Fatalf("%s: the run finished, but the store does not hold the new version", run)
	}
	return after
}

// sameContent reports whether a and b hold the same documents with the same texts.
func sameContent(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for id, text := range b {
		if got, ok := a[id]; !ok || got != text {
			return false
		}
	}
	return true
}

// ackLineRE finds the lines a child writes after a durable write: a progress line with the
// documents stored so far, or a line counting the stale documents removed so far.
var ackLineRE = regexp.MustCompile(`, \d+ stored|stale documents: \d+ removed`)

// killRun runs `memory args...` as a child and kills it (SIGKILL) once it has written
// killAt acknowledgements (ackLineRE: each follows a durable write); killAt 0 kills it as
// soon as it has started, a negative killAt never. No timer decides anything: the kill
// lands where the child is when its killAt-th acknowledgement reaches us. It returns how
// many documents the child acknowledged, how many acknowledgements it wrote, whether it
// exited by itself, its exit status, and its stderr.
func killRun(t testing.TB, args []string, killAt int) (acked, acks int, exited bool, code int, stderr string) {
	t.Helper()
	a, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), indexChildEnv+"="+string(a))
	cmd.Stdout = io.Discard
	// Our own pipe, read to its end (every line the child wrote) whatever Wait does.
	pipe, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pipe.Close()
	cmd.Stderr = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	kill := func() {
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("kill: %v", err)
		}
	}
	if killAt == 0 {
		kill()
	}
	var errb strings.Builder
	sc := bufio.NewScanner(pipe)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() { // until the child is gone: it holds the pipe's only write end
		l := sc.Text()
		errb.WriteString(l + "\n")
		if m := ackRE.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			acked = max(acked, n)
		}
		if ackLineRE.MatchString(l) {
			acks++
			if acks == killAt {
				kill()
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading the child's stderr: %v", err)
	}
	_ = cmd.Wait() // its status is read below
	// Killed, or exited by itself (before the signal, or never sent one).
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && !ws.Signaled() {
		exited, code = true, ws.ExitStatus()
	}
	return acked, acks, exited, code, errb.String()
}

// killPoints returns n kill points (killRun's killAt) spread over a run that writes acks
// acknowledgements: one drawn at random in each of n equal strata of [0, acks], so that
// every part of the run (before the first write, between any two, the end) is hit.
func killPoints(rng *rand.Rand, n, acks int) []int {
	out := make([]int, n)
	for i := range out {
		lo, hi := i*(acks+1)/n, (i+1)*(acks+1)/n
		out[i] = lo + rng.Intn(max(hi-lo, 1))
	}
	rng.Shuffle(n, func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// reindexKill indexes version 0 of corpus k, then runs the re-index of version v=1..runs
// in a child killed at a point spread over the run (killPoints), checking each outcome.
func reindexKill(t testing.TB, k killCorpus, runs int, batch int) (kills, finished, maxAcked int) {
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	store := filepath.Join(k.root, "..", "store")
	args := []string{"index", "--store", store, "--batch", strconv.Itoa(batch), k.root}
	k.write(t, 0)
	if _, _, _, code, errs := killRun(t, args, -1); code != 0 {
		t.Fatalf("first index: exit %d\n%s", code, errs)
	}
	before, _ := storeContents(t, store)
	// A full run of the re-index counts the acknowledgements to kill at.
	next := k.write(t, 1)
	_, acks, _, code, errs := killRun(t, args, -1)
	if code != 0 {
		t.Fatalf("re-index: exit %d\n%s", code, errs)
	}
	before = checkReindex(t, "uninterrupted re-index", store, before, next, len(next), true)
	for run, at := range killPoints(rng, runs, acks) {
		next := k.write(t, run+2)
		acked, _, exited, code, errs := killRun(t, args, at)
		if exited && code != 0 {
			t.Fatalf("run %d: exit %d\n%s", run, code, errs)
		}
		if exited {
			finished++
		} else {
			kills++
		}
		maxAcked = max(maxAcked, acked)
		before = checkReindex(t, fmt.Sprintf("run %d (killed at acknowledgement %d of %d, %d documents acknowledged)", run, at, acks, acked), store, before, next, acked, exited)
	}
	// The store is whole: every derived index agrees with the store of record.
	m, err := memory.OpenExisting(store)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	rep, err := m.Check(context.Background(), false)
	if err != nil || !rep.OK() {
		t.Fatalf("check after the kills: %+v %v", rep, err)
	}
	// The sources index is written in the records' transactions: no kill leaves it wrong
	// (Check would mend it, and say so).
	for _, ix := range rep.Indexes {
		for _, p := range ix.Problems {
			if strings.Contains(p, "sources index") {
				t.Fatalf("the sources index disagrees with the records after the kills: %s", p)
			}
		}
	}
	return kills, finished, maxAcked
}

func TestReindexKill(t *testing.T) {
	runs := 50
	if testing.Short() {
		runs = 12
	}
	k := killCorpus{root: filepath.Join(t.TempDir(), "corpus"), nMD: 60, nBig: 900, nSmall: 6, smallLines: 30}
	kills, finished, maxAcked := reindexKill(t, k, runs, 150)
	t.Logf("%d runs: %d killed, %d finished first; up to %d documents acknowledged before a kill; 0 lost", runs, kills, finished, maxAcked)
	if kills < runs/2 {
		t.Fatalf("only %d of %d runs were killed: the kill points are wrong", kills, runs)
	}
}

// BenchmarkReindexKill is the longer kill run: 100 runs over a corpus of about 21,000
// documents, with the default batch (go test -run '^$' -bench ReindexKill -benchtime 1x
// ./cmd/memory; -bench . skips it). It reports the runs killed and the documents lost
// (always 0: it fails otherwise).
func BenchmarkReindexKill(b *testing.B) {
	if f := flag.Lookup("test.bench"); f == nil || !strings.Contains(f.Value.String(), "ReindexKill") {
		b.Skip("a 2-3 minute kill run: ask for it with -bench ReindexKill")
	}
	for i := 0; i < b.N; i++ {
		k := killCorpus{root: filepath.Join(b.TempDir(), "corpus"), nMD: 400, nBig: 20000, nSmall: 40, smallLines: 100}
		kills, finished, maxAcked := reindexKill(b, k, 100, 4096)
		b.ReportMetric(float64(kills), "killed")
		b.ReportMetric(float64(finished), "finished")
		b.ReportMetric(float64(maxAcked), "max-acked")
		b.ReportMetric(0, "lost")
	}
}

// TestReindexDiskFull re-indexes a source on a full disk (a small tmpfs, filled but for a
// little room that differs from run to run): the run fails, says how many documents it
// stored, and the store keeps, for each source, its earlier documents or its new ones
// (or the earlier ones plus the acknowledged prefix of the new), never fewer documents
// than were acknowledged (issue 21: 10,366 became 9,279).
//
// The tmpfs needs CAP_SYS_ADMIN in the mount namespace. Without it (root in a container
// often lacks it) the test runs again in a child process in a user and mount namespace of
// its own, where tmpfs mounts. Where neither works the test fails when run as root (as CI
// is: a skip there would hide that it never runs), and skips otherwise.
func TestReindexDiskFull(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=24m"); err != nil {
		if os.Getenv(diskFullNSEnv) != "" {
			t.Fatalf("cannot mount a tmpfs in a user and mount namespace of our own: %v", err)
		}
		nsErr := diskFullInNamespace(t)
		if nsErr == nil {
			return // the child ran the test, and passed
		}
		if os.Geteuid() == 0 {
			t.Fatalf("running as root, and cannot mount a tmpfs to fill (%v), nor in a user and mount namespace of our own (%v): the test cannot run", err, nsErr)
		}
		t.Skipf("cannot mount a tmpfs to fill (needs CAP_SYS_ADMIN in this mount namespace: %v), nor in a user and mount namespace (%v)", err, nsErr)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(mnt, 0); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	k := killCorpus{root: filepath.Join(t.TempDir(), "corpus"), nMD: 60, nBig: 900, nSmall: 6, smallLines: 30}
	store := filepath.Join(mnt, "store")
	index := func() (int, string, string) {
		return cli(t, "index", "--store", store, "--batch", "150", k.root)
	}
	k.write(t, 0)
	if code, _, errs := index(); code != 0 {
		t.Fatalf("first index: exit %d\n%s", code, errs)
	}
	before, _ := storeContents(t, store)
	filler := filepath.Join(mnt, "filler")
	failed := 0
	for run, room := range []int64{0, 8 << 10, 16 << 10, 32 << 10, 48 << 10, 64 << 10, 96 << 10, 128 << 10, 160 << 10, 200 << 10, 256 << 10, 1 << 20} {
		next := k.write(t, run+1)
		fill(t, mnt, filler, room)
		code, _, errs := index()
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		acked := 0
		if code != 0 {
			failed++
			m := failRE.FindStringSubmatch(errs)
			if m == nil {
				t.Fatalf("run %d (%d bytes free): exit %d without saying what it stored:\n%s", run, room, code, errs)
			}
			acked, _ = strconv.Atoi(m[1])
		}
		before = checkReindex(t, fmt.Sprintf("run %d (%d bytes free, exit %d, %d acknowledged)", run, room, code, acked), store, before, next, acked, code == 0)
		t.Logf("%d bytes free: exit %d, %d of %d documents acknowledged, %d stored now", room, code, acked, len(next), len(before))
	}
	if failed == 0 {
		t.Fatal("no run met a full disk: the test proved nothing")
	}
	t.Logf("%d of 12 runs failed on a full disk; 0 documents lost", failed)
}

// diskFullNSEnv is set in the child that diskFullInNamespace runs.
const diskFullNSEnv = "MEMORY_DISKFULL_IN_NAMESPACE"

// diskFullInNamespace runs TestReindexDiskFull again in a child process in a new user and
// mount namespace (its user root, with the capabilities to mount a tmpfs there, being this
// process's user). It returns an error when the child cannot be started so (no user
// namespaces here); a child that starts and does not pass fails t.
func diskFullInNamespace(t *testing.T) error {
	cmd := exec.Command(os.Args[0], "-test.run=^TestReindexDiskFull$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), diskFullNSEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return err
	}
	err := cmd.Wait()
	t.Logf("run in a user and mount namespace of its own:\n%s", out.String())
	if err != nil || !strings.Contains(out.String(), "--- PASS: TestReindexDiskFull") {
		t.Fatalf("TestReindexDiskFull in a user and mount namespace: %v (it must pass there, not skip)", err)
	}
	return nil
}

// fill writes a file at path that leaves room bytes free on the file system mounted at mnt.
func fill(t *testing.T, mnt, path string, room int64) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * st.Bsize
	if free <= room {
		return
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for left := free - room; left > 0; {
		n, err := f.Write(buf[:min(int64(len(buf)), left)])
		left -= int64(n)
		if err != nil {
			break // full already
		}
	}
}

// TestReindexRejectedAndSharedSources re-indexes sources the way the kill test does not:
// a document the store rejects inside a re-indexed source (the batch is upserted one by one
// through a replacement: the rejected one is skipped, the stale ones still go), small and
// streamed; and two .jsonl files whose lines name one source (read as one unit: neither
// file's replacement removes the other's documents).
func TestReindexRejectedAndSharedSources(t *testing.T) {
	for _, batch := range []string{"1000", "7"} {
		t.Run("batch="+batch, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "c.jsonl")
			shared1, shared2 := filepath.Join(dir, "s1.jsonl"), filepath.Join(dir, "s2.jsonl")
			store := filepath.Join(dir, "s")
			jsonl(t, file, 30, nil)
			writeFile(t, shared1, `{"id": "x1", "text": "one", "source": "shared"}`+"\n"+`{"id": "x2", "text": "two", "source": "shared"}`+"\n")
			writeFile(t, shared2, `{"id": "y1", "text": "three", "source": "shared"}`+"\n")
			mustCLI(t, 0, "index", "--store", store, "--batch", batch, dir)
			// d5 is dropped, d9 is rejected by the store, the others change; s2.jsonl drops
			// nothing, s1.jsonl drops x2.
			jsonl(t, file, 30, map[int]string{
				6:  `   `,
				10: `{"id": "d9", "text": "t", "metadata": {"nested": {"no": 1}}}`,
			})
			writeFile(t, shared1, `{"id": "x1", "text": "one again", "source": "shared"}`+"\n")
			out, errs := mustCLI(t, 0, "index", "--store", store, "--batch", batch, dir)
			if !strings.Contains(errs, `c.jsonl:10: memory: invalid metadata`) {
				t.Fatalf("rejected document not reported:\n%s", errs)
			}
			// d5 (dropped) and x2 are stale; d9 keeps its earlier version (its new one was rejected).
			if !strings.Contains(out, "removed 2 stale documents") {
				t.Fatalf("summary: %s\n%s", out, errs)
			}
			m := openTest(t, store)
			ids := memtest.IDs(t, m.Collection(""))
			var want []string
			for i := range 30 {
				if i != 5 {
					want = append(want, fmt.Sprintf("d%d", i))
				}
			}
			want = append(want, "x1", "y1")
			slices.Sort(want)
			if !slices.Equal(ids, want) {
				t.Fatalf("ids %v\nwant %v", ids, want)
			}
			if d, err := m.Get(context.Background(), "x1"); err != nil || d.Text != "one again" {
				t.Fatalf("x1: %+v %v", d, err)
			}
		})
	}
}
