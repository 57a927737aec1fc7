package memory

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/vectorstore"
)

// The tamper suite copies a populated store, damages one file of it (deleted, truncated to
// nothing or to half, bytes flipped at seeded positions, or another store's BM25 index
// swapped in) and opens the copy. Each damaged copy must either fail to open with a typed
// error or open and answer a fixed set of queries exactly as the undamaged store does:
// never a panic, never a wrong or missing result without an error.
//
// Each case runs in a child process (this test binary again, with tamperChildEnv set), so
// a crash that no recover can catch (a fault in a goroutine of Bleve or bbolt, a fatal
// runtime error) is one failed case with its output, not the end of the suite.
const tamperChildEnv = "MEMORY_TAMPER_CHILD"

// tamperDim is the dimension of the hash embedder the tamper stores are made with (so
// the store holds vectors and a vector index is loaded).
const tamperDim = 16

// tamperCols are the collections of a tamper store and how many documents each holds.
var tamperCols = []struct {
	name string
	n    int
}{{DefaultCollection, 240}, {"notes", 60}}

// tamperDoc is document i of collection col of the store with prefix p ("a": the store
// under test, "b": the other store whose index is swapped in; both have the same shape:
// the same texts' lengths, chunks and sequence numbers, other ids and words). Every 8th
// document is long enough to be chunked.
func tamperDoc(p, col string, i int) Document {
	var b strings.Builder
	fmt.Fprintf(&b, "%suniq%04d %sgroup%d %sband%d common words about %s things.", p, i, p, i%7, p, i%13, col)
	if i%8 == 0 {
		for j := range 60 {
			fmt.Fprintf(&b, " %slong%02d paragraph sentence number %02d of a longer record.", p, j%10, j)
			if j%15 == 14 {
				b.WriteString("\n\n")
			}
		}
	}
	return Document{ID: fmt.Sprintf("%s%04d", p, i), Title: fmt.Sprintf("%s title %d", col, i), Text: b.String(),
		Metadata: map[string]any{"i": float64(i), "odd": i%2 == 1}}
}

// tamperOptions open a tamper store: a hash embedder (its vectors are stored in store.db
// and loaded into the default flat index, which keeps no files), and in a build with FAISS
// (-tags faiss, as make test runs this package a second time) the FAISS backend, which
// persists its index under vectors/, so those files are damaged too.
func tamperOptions() []Option {
	opts := []Option{WithEmbedder(vectorstore.NewHashEmbedder(tamperDim))}
	if slices.Contains(vectorstore.Backends(), "faiss") {
		opts = append(opts, WithIndex(vectorstore.IndexConfig{Backend: "faiss"}))
	}
	return opts
}

// tamperQueries are searched in every collection of a probed store.
func tamperQueries(p string) []string {
	return []string{
		p + "uniq0007", p + "uniq0016 " + p + "uniq0042", p + "group3", p + "group5 " + p + "band11",
		"common words", p + "long04 paragraph", p + "band2 things", "title 33",
	}
}

// buildTamperStore makes a closed, populated store at dir with prefix p.
func buildTamperStore(t *testing.T, dir, p string) {
	t.Helper()
	m, err := Open(dir, tamperOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range tamperCols {
		col := m.Collection(c.name)
		for lo := 0; lo < c.n; lo += 40 {
			var docs []Document
			for i := lo; i < min(lo+40, c.n); i++ {
				docs = append(docs, tamperDoc(p, c.name, i))
			}
			if err := col.Add(bg, docs...); err != nil {
				t.Fatal(err)
			}
		}
		// A few deletes and replacements, so the change log and the indexes hold both.
		if err := col.Delete(bg, fmt.Sprintf("%s%04d", p, 1), fmt.Sprintf("%s%04d", p, 2)); err != nil {
			t.Fatal(err)
		}
		up := tamperDoc(p, c.name, 3)
		up.Text += " replaced"
		if err := col.Upsert(bg, up); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

// tamperProbe is what a child reports of opening a store and querying it.
type tamperProbe struct {
	OpenErr   string              `json:"open_err,omitempty"`
	Typed     bool                `json:"typed,omitempty"` // OpenErr or SearchErr matches a store sentinel
	Panic     string              `json:"panic,omitempty"`
	SearchErr string              `json:"search_err,omitempty"`
	Counts    map[string]int      `json:"counts,omitempty"`
	Hits      map[string][]string `json:"hits,omitempty"` // "collection|query" -> ids
}

// typedStoreError reports whether err is one of the typed errors a damaged store may give.
func typedStoreError(err error) bool {
	for _, s := range []error{ErrCorrupt, ErrStoreNotFound, ErrNotAStore, ErrFormatVersion, ErrEmbedderMismatch} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// probeStore opens dir and runs the tamper queries (prefix "a") on every collection.
func probeStore(dir string) (p tamperProbe) {
	defer func() {
		if r := recover(); r != nil {
			p.Panic = fmt.Sprint(r)
		}
	}()
	m, err := Open(dir, tamperOptions()...)
	if err != nil {
		return tamperProbe{OpenErr: err.Error(), Typed: typedStoreError(err)}
	}
	defer m.Close()
	p.Counts, p.Hits = map[string]int{}, map[string][]string{}
	for _, c := range tamperCols {
		col := m.Collection(c.name)
		p.Counts[c.name] = col.Count()
		for _, q := range tamperQueries("a") {
			res, err := col.Search(bg, q, WithMode(BM25), TopK(10))
			if err != nil {
				p.SearchErr, p.Typed = err.Error(), typedStoreError(err)
				return p
			}
			p.Hits[c.name+"|"+q] = ids(res)
			res, err = col.Search(bg, q, WithMode(Dense), TopK(10))
			if err != nil {
				p.SearchErr, p.Typed = "dense: "+err.Error(), typedStoreError(err)
				return p
			}
			p.Hits[c.name+"|dense|"+q] = ids(res)
		}
		// Every hit's document is readable.
		for _, id := range p.Hits[c.name+"|common words"] {
			if _, err := col.Get(bg, id); err != nil {
				p.SearchErr, p.Typed = "Get "+id+": "+err.Error(), typedStoreError(err)
				return p
			}
		}
	}
	return p
}

// TestTamperChild is the child of TestTamper (it does nothing in a normal run): it probes
// the store named by tamperChildEnv and prints the probe as one JSON line.
func TestTamperChild(t *testing.T) {
	dir := os.Getenv(tamperChildEnv)
	if dir == "" {
		return
	}
	b, _ := json.Marshal(probeStore(dir))
	fmt.Printf("probe %s\n", b)
	os.Exit(0)
}

// tamperChildTimeout bounds one probe (they take well under a second).
const tamperChildTimeout = 60 * time.Second

// runTamperChild probes dir in a child process.
func runTamperChild(dir string) (tamperProbe, string, error) {
	// A child that hangs is stopped with SIGQUIT, which makes it print every goroutine.
	ctx, cancel := context.WithTimeout(context.Background(), tamperChildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestTamperChild$")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGQUIT) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Env = append(childEnv(), tamperChildEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return tamperProbe{}, string(out), fmt.Errorf("hung for %v: %w", tamperChildTimeout, err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if j, ok := strings.CutPrefix(sc.Text(), "probe "); ok {
			var p tamperProbe
			if jerr := json.Unmarshal([]byte(j), &p); jerr != nil {
				return p, string(out), jerr
			}
			return p, string(out), nil
		}
	}
	if err == nil {
		err = errors.New("no probe line")
	}
	return tamperProbe{}, string(out), err
}

// tamperCase is one way of damaging a copy of the store.
type tamperCase struct {
	name   string
	damage func(dir string) error
}

// tamperCases lists the damage done to every file of the store at dir (paths relative
// to it), and the swaps of the other store's BM25 indexes.
func tamperCases(t *testing.T, dir, other string) []tamperCase {
	t.Helper()
	var files []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, rel)
		}
		return nil
	})
	slices.Sort(files)
	var cases []tamperCase
	for _, f := range files {
		cases = append(cases,
			tamperCase{f + "/delete", func(d string) error { return os.Remove(filepath.Join(d, f)) }},
			tamperCase{f + "/truncate-0", func(d string) error { return os.Truncate(filepath.Join(d, f), 0) }},
			tamperCase{f + "/truncate-half", func(d string) error {
				fi, err := os.Stat(filepath.Join(d, f))
				if err != nil {
					return err
				}
				return os.Truncate(filepath.Join(d, f), fi.Size()/2)
			}},
		)
		if f == dbName {
			// bbolt checksums only its two meta pages, which random flips seldom hit: they
			// are flipped on purpose too. (store.db's and root.bolt's layouts differ from
			// one build of the store to the next, so a seed names other bytes each run:
			// the seeded flips are random damage, and MEMORY_TAMPER_SEEDS adds more.)
			for _, pages := range [][]int64{{0}, {1}, {0, 1}} {
				cases = append(cases, tamperCase{fmt.Sprintf("%s/flip-meta%v", f, pages), func(d string) error {
					return flipMeta(filepath.Join(d, f), pages)
				}})
			}
		}
		for _, seed := range flipSeeds(f) {
			cases = append(cases, tamperCase{fmt.Sprintf("%s/flip-seed%d", f, seed), func(d string) error {
				return flipBytes(filepath.Join(d, f), seed)
			}})
		}
	}
	for _, c := range tamperCols {
		rel := filepath.Join(bm25Dir, c.name)
		cases = append(cases, tamperCase{rel + "/swap-other-store", func(d string) error {
			if err := os.RemoveAll(filepath.Join(d, rel)); err != nil {
				return err
			}
			return os.CopyFS(filepath.Join(d, rel), os.DirFS(filepath.Join(other, rel)))
		}})
	}
	if _, err := os.Stat(filepath.Join(dir, vecDir)); err == nil {
		cases = append(cases, tamperCase{vecDir + "/swap-other-store", func(d string) error {
			if err := os.RemoveAll(filepath.Join(d, vecDir)); err != nil {
				return err
			}
			return os.CopyFS(filepath.Join(d, vecDir), os.DirFS(filepath.Join(other, vecDir)))
		}})
	}
	return cases
}

// flipSeeds are the seeds of the byte flips done to file f: 1, 2 and 3, and with
// MEMORY_TAMPER_SEEDS=N another N for every file (to explore; a failure there is a
// finding, not necessarily reproducible).
func flipSeeds(string) []int64 {
	seeds := []int64{1, 2, 3}
	var n int64
	fmt.Sscan(os.Getenv("MEMORY_TAMPER_SEEDS"), &n)
	for s := int64(100); s < 100+n; s++ {
		seeds = append(seeds, s)
	}
	return seeds
}

// flipMeta damages bbolt meta pages (0 and/or 1) of the store database at path: a byte
// of each page's meta (after the 16-byte page header), so its checksum fails.
func flipMeta(path string, pages []int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	pageSize, _, err := store.PageLayout(path)
	if err != nil {
		return err
	}
	for _, p := range pages {
		var b [1]byte
		off := p*pageSize + 16 + 40 // the high water mark page id
		if _, err := f.ReadAt(b[:], off); err != nil {
			return err
		}
		b[0] ^= 0x5a
		if _, err := f.WriteAt(b[:], off); err != nil {
			return err
		}
	}
	return nil
}

// flipBytes inverts 8 bytes of the file at positions drawn from seed: one in its first
// 4 KiB (headers, bbolt's first meta page), the rest anywhere.
func flipBytes(path string, seed int64) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(b) == 0 {
		return nil
	}
	rng := rand.New(rand.NewSource(seed))
	for i := range 8 {
		n := len(b)
		if i == 0 {
			n = min(n, 4096)
		}
		pos := rng.Intn(n)
		b[pos] ^= byte(1 + rng.Intn(255))
	}
	return os.WriteFile(path, b, 0o644)
}

func TestTamper(t *testing.T) {
	if testing.Short() {
		t.Skip("the tamper suite runs a child process per case")
	}
	root := t.TempDir()
	dir, other := filepath.Join(root, "a"), filepath.Join(root, "b")
	buildTamperStore(t, dir, "a")
	buildTamperStore(t, other, "b")
	want := probeStore(dir)
	if want.OpenErr != "" || want.SearchErr != "" || want.Panic != "" {
		t.Fatalf("the undamaged store: %+v", want)
	}
	for _, c := range tamperCols {
		if len(want.Hits[c.name+"|"+tamperQueries("a")[0]]) == 0 {
			t.Fatalf("collection %s: the reference queries find nothing: the suite would prove nothing", c.name)
		}
	}
	cases := tamperCases(t, dir, other)
	start := time.Now()
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, "/", "_"), func(t *testing.T) {
			t.Parallel()
			d := filepath.Join(root, "case-"+strings.NewReplacer("/", "_", ".", "_").Replace(tc.name))
			if err := os.CopyFS(d, os.DirFS(dir)); err != nil {
				t.Fatal(err)
			}
			if err := tc.damage(d); err != nil {
				t.Fatalf("damaging the copy: %v", err)
			}
			got, out, err := runTamperChild(d)
			defer os.RemoveAll(d)
			if err != nil {
				t.Fatalf("the probe crashed (%v); its output ends:\n%s", err, tail(out, 1500)+"\nFULL:\n"+crashHead(out))
			}
			checkTamperProbe(t, got, want)
		})
	}
	t.Cleanup(func() { t.Logf("%d damage cases in %v", len(cases), time.Since(start).Round(time.Millisecond)) })
}

// checkTamperProbe fails t unless got is a typed error or the undamaged store's answers.
func checkTamperProbe(t *testing.T, got, want tamperProbe) {
	t.Helper()
	switch {
	case got.Panic != "":
		t.Fatalf("panic: %s", got.Panic)
	case got.OpenErr != "":
		if !got.Typed {
			t.Fatalf("Open failed with an untyped error: %s", got.OpenErr)
		}
		return
	case got.SearchErr != "":
		if !got.Typed {
			t.Fatalf("opened, then a search failed with an untyped error: %s", got.SearchErr)
		}
		return
	}
	for col, n := range want.Counts {
		if got.Counts[col] != n {
			t.Errorf("opened silently with collection %s counting %d documents, want %d", col, got.Counts[col], n)
		}
	}
	for k, w := range want.Hits {
		if g := got.Hits[k]; !slices.Equal(g, w) {
			t.Errorf("opened silently with wrong results for %q: %v, want %v", k, g, w)
		}
	}
}

// tail is the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// childEnv is the environment of a child test process: this one's, with the race
// detector's one-second pause at exit turned off (a -race child otherwise spends most of
// its life in it).
func childEnv() []string {
	race := "atexit_sleep_ms=0"
	if g := os.Getenv("GORACE"); g != "" {
		race = g + " " + race
	}
	return append(os.Environ(), "GORACE="+race)
}

// crashHead is what matters of a crashed or stopped child's report: its fatal error and
// the goroutine headers and frames of this module, Bleve and bbolt.
func crashHead(out string) string {
	var b strings.Builder
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "fatal error") || strings.HasPrefix(t, "panic:") || strings.HasPrefix(t, "SIGQUIT") ||
			strings.HasPrefix(t, "goroutine ") || strings.HasPrefix(t, "unexpected fault") ||
			(strings.Contains(t, "(") && !strings.HasPrefix(t, "/") && (strings.Contains(t, "agentmem/memory") || strings.Contains(t, "bleve") || strings.Contains(t, "bbolt") || strings.Contains(t, "zap"))) {
			b.WriteString(t + "\n")
		}
		if b.Len() > 6000 {
			break
		}
	}
	return b.String()
}
