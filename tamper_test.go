package memory

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
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
	bolt "go.etcd.io/bbolt"
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
// and in the default disk index, under vectors/), and in a build with FAISS (-tags faiss,
// as make test runs this package a second time) the FAISS backend, which persists its
// index under vectors/ too, so those files are damaged. tamperIndexEnv names another
// shape of disk index (tamperIndexShapes) for the children of TestTamperKeepMTime.
func tamperOptions() []Option {
	opts := []Option{WithEmbedder(vectorstore.NewHashEmbedder(tamperDim))}
	if slices.Contains(vectorstore.Backends(), "faiss") {
		opts = append(opts, WithIndex(vectorstore.IndexConfig{Backend: "faiss"}))
	}
	return append(opts, tamperShape(os.Getenv(tamperIndexEnv))...)
}

// tamperIndexEnv names the shape of disk index a tamper child opens its store with.
const tamperIndexEnv = "MEMORY_TAMPER_INDEX"

// tamperIndexShapes are the disk indexes TestTamperKeepMTime damages besides the default
// (float32 rows and binary codes): int8 codes with inverted lists (.i8, .ivl and the
// centroids' ivf-G.bin), every list probed and every row rescored, so that an index
// rebuilt from the store of record (its lists trained anew) answers as the original.
var tamperIndexShapes = map[string]map[string]int{
	"disk":     {},
	"int8-ivf": {"quant": vectorstore.DiskQuantInt8, "nlist": 4, "nprobe": 4, "oversample": 64},
}

// tamperShape is the option of the disk index shape named (none for "").
func tamperShape(name string) []Option {
	if p, ok := tamperIndexShapes[name]; ok {
		return []Option{WithIndex(vectorstore.IndexConfig{Backend: "disk", Params: p})}
	}
	return nil
}

// tamperQueries are searched in every collection of a probed store.
func tamperQueries(p string) []string {
	return []string{
		p + "uniq0007", p + "uniq0016 " + p + "uniq0042", p + "group3", p + "group5 " + p + "band11",
		"common words", p + "long04 paragraph", p + "band2 things", "title 33",
	}
}

// tamperCompressMin is the collection size from which a tamper store compresses its records
// (store.SetCompressMin): the default collection's first 80 documents are stored plain, the
// rest, and every document of "notes" (written once the store has its dictionary), packed.
const tamperCompressMin = 100

// buildTamperStore makes a closed, populated store at dir with prefix p.
func buildTamperStore(t *testing.T, dir, p string) {
	t.Helper()
	buildTamperStoreWith(t, dir, p, tamperOptions())
}

// buildTamperStoreWith is buildTamperStore with the options opts.
func buildTamperStoreWith(t *testing.T, dir, p string, opts []Option) {
	t.Helper()
	withCompressMin(t, tamperCompressMin)
	m, err := Open(dir, opts...)
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

// tamperProbe is what a child reports of opening a store and querying it. Each query's
// answer is recorded on its own: its ids, or errTyped / "!untyped: ..." for an error.
type tamperProbe struct {
	OpenErr string         `json:"open_err,omitempty"`
	Typed   bool           `json:"typed,omitempty"` // OpenErr matches a store sentinel
	Panic   string         `json:"panic,omitempty"`
	Counts  map[string]int `json:"counts,omitempty"`
	// CountErrs are "collection" -> the outcome of a Len that failed (its count is then -1).
	CountErrs map[string]string   `json:"count_errs,omitempty"`
	Hits      map[string][]string `json:"hits,omitempty"` // "collection|query" -> ids
	// Gets are "collection|id" -> the document's title and text, notFound, or an error.
	Gets map[string]string `json:"gets,omitempty"`
	// Check is what a read-only check found before the probe (with tamperCheckEnv): the
	// lines of entries with problems, or its error; empty when it found nothing.
	Check []string `json:"check,omitempty"`
}

// Answers of a probe that are not results.
const (
	errTyped = "!typed"
	notFound = "!not found"
)

// outcome is what a probe records of a failed query: errTyped, or the untyped error.
func outcome(err error) string {
	if typedStoreError(err) {
		return errTyped
	}
	return "!untyped: " + err.Error()
}

// tamperGetsEnv names ids ("collection|id", comma-separated) a child Gets besides every
// id of the store: those a flipped key bit makes. tamperCheckEnv makes it run a read-only
// check before the probe.
const (
	tamperGetsEnv  = "MEMORY_TAMPER_GETS"
	tamperCheckEnv = "MEMORY_TAMPER_CHECK"
)

// typedStoreError reports whether err is one of the typed errors a damaged store may give
// (a vector index's damaged file found by a search: vectorstore.ErrCorrupt).
func typedStoreError(err error) bool {
	for _, s := range []error{ErrCorrupt, ErrStoreNotFound, ErrNotAStore, ErrFormatVersion, ErrEmbedderMismatch, vectorstore.ErrCorrupt} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// probeStore opens dir and runs the tamper queries (prefix "a") on every collection, and
// Gets every id the store was made with and the ids extra names ("collection|id").
func probeStore(dir string, extra []string, readOnly bool) (p tamperProbe) {
	defer func() {
		if r := recover(); r != nil {
			p.Panic = fmt.Sprint(r)
		}
	}()
	opts := tamperOptions()
	if readOnly {
		opts = append(opts, ReadOnly())
	}
	m, err := Open(dir, opts...)
	if err != nil {
		return tamperProbe{OpenErr: err.Error(), Typed: typedStoreError(err)}
	}
	defer m.Close()
	p.Counts, p.Hits, p.Gets = map[string]int{}, map[string][]string{}, map[string]string{}
	get := func(col, id string) {
		d, err := m.Collection(col).Get(bg, id)
		switch {
		case errors.Is(err, ErrNotFound):
			p.Gets[col+"|"+id] = notFound
		case err != nil:
			p.Gets[col+"|"+id] = outcome(err)
		default:
			p.Gets[col+"|"+id] = d.ID + "|" + d.Title + "|" + d.Text
		}
	}
	for _, c := range tamperCols {
		col := m.Collection(c.name)
		if n, err := col.Count(bg); err != nil {
			p.Counts[c.name] = -1
			if p.CountErrs == nil {
				p.CountErrs = map[string]string{}
			}
			p.CountErrs[c.name] = outcome(err)
		} else {
			p.Counts[c.name] = n
		}
		for _, q := range tamperQueries("a") {
			for _, mode := range []Mode{BM25, Dense} {
				key := c.name + "|" + q
				if mode == Dense {
					key = c.name + "|dense|" + q
				}
				res, err := col.Search(bg, q, WithMode(mode), TopK(10))
				if err != nil {
					p.Hits[key] = []string{outcome(err)}
				} else {
					p.Hits[key] = ids(res)
				}
			}
		}
		for i := range c.n {
			get(c.name, fmt.Sprintf("a%04d", i))
		}
	}
	for _, e := range extra {
		if col, id, ok := strings.Cut(e, "|"); ok {
			get(col, id)
		}
	}
	return p
}

// checkStoreFindings runs a read-only check of dir and returns the lines of its entries
// with problems (repaired or not), or its error (or its open's): what it reports.
func checkStoreFindings(dir string) []string {
	m, err := Open(dir, append(tamperOptions(), ReadOnly())...)
	if err != nil {
		return []string{"open: " + outcome(err)}
	}
	defer m.Close()
	rep, err := m.Check(bg, false)
	if err != nil {
		return []string{"check: " + outcome(err)}
	}
	var found []string
	for _, c := range rep.Indexes {
		if len(c.Problems) > 0 {
			found = append(found, c.String())
		}
	}
	return found
}

// TestTamperChild is the child of TestTamper (it does nothing in a normal run): it probes
// the store named by tamperChildEnv and prints the probe as one JSON line.
func TestTamperChild(t *testing.T) {
	dir := os.Getenv(tamperChildEnv)
	if dir == "" {
		return
	}
	var check []string
	if os.Getenv(tamperCheckEnv) != "" {
		check = checkStoreFindings(dir)
	}
	var extra []string
	if g := os.Getenv(tamperGetsEnv); g != "" {
		extra = strings.Split(g, ",")
	}
	p := probeStore(dir, extra, false)
	p.Check = check
	b, _ := json.Marshal(p)
	fmt.Printf("probe %s\n", b)
	os.Exit(0)
}

// tamperChildTimeout bounds one probe (they take well under a second).
const tamperChildTimeout = 60 * time.Second

// runTamperChild probes dir in a child process, with the environment env added.
func runTamperChild(dir string, env ...string) (tamperProbe, string, error) {
	// A child that hangs is stopped with SIGQUIT, which makes it print every goroutine.
	ctx, cancel := context.WithTimeout(context.Background(), tamperChildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestTamperChild$")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGQUIT) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Env = append(append(childEnv(), tamperChildEnv+"="+dir), env...)
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
	// gets are ids ("collection|id") the damage makes (a flipped key); check: the damage
	// is certain to be visible, so a read-only check must report it.
	gets  []string
	check bool
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
			tamperCase{name: f + "/delete", damage: func(d string) error { return os.Remove(filepath.Join(d, f)) }},
			tamperCase{name: f + "/truncate-0", damage: func(d string) error { return os.Truncate(filepath.Join(d, f), 0) }},
			tamperCase{name: f + "/truncate-half", damage: func(d string) error {
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
				cases = append(cases, tamperCase{name: fmt.Sprintf("%s/flip-meta%v", f, pages), damage: func(d string) error {
					return flipMeta(filepath.Join(d, f), pages)
				}})
			}
		}
		for _, seed := range flipSeeds(f) {
			cases = append(cases, tamperCase{name: fmt.Sprintf("%s/flip-seed%d", f, seed), damage: func(d string) error {
				return flipBytes(filepath.Join(d, f), seed)
			}})
		}
	}
	cases = append(cases, storeDBCases(t, dir)...)
	for _, c := range tamperCols {
		rel := filepath.Join(bm25Dir, c.name)
		cases = append(cases, tamperCase{name: rel + "/swap-other-store", damage: func(d string) error {
			if err := os.RemoveAll(filepath.Join(d, rel)); err != nil {
				return err
			}
			return os.CopyFS(filepath.Join(d, rel), os.DirFS(filepath.Join(other, rel)))
		}})
	}
	if _, err := os.Stat(filepath.Join(dir, vecDir)); err == nil {
		cases = append(cases, tamperCase{name: vecDir + "/swap-other-store", damage: func(d string) error {
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
	want := probeStore(dir, nil, false) // a writable open may change the files: before the cases list them
	if want.OpenErr != "" || want.Panic != "" {
		t.Fatalf("the undamaged store: %+v", want)
	}
	cases := tamperCases(t, dir, other)
	var extra []string
	for _, c := range cases {
		extra = append(extra, c.gets...)
	}
	// The ids that flipped keys make, read from the undamaged store without changing it.
	wx := probeStore(dir, extra, true)
	if wx.OpenErr != "" || wx.Panic != "" {
		t.Fatalf("the undamaged store, read-only: %+v", wx)
	}
	for k, v := range wx.Gets {
		want.Gets[k] = v
	}
	if found := checkStoreFindings(dir); len(found) > 0 {
		t.Fatalf("check of the undamaged store: %v", found)
	}
	for _, c := range tamperCols {
		if len(want.Hits[c.name+"|"+tamperQueries("a")[0]]) == 0 {
			t.Fatalf("collection %s: the reference queries find nothing: the suite would prove nothing", c.name)
		}
	}
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
			var env []string
			if tc.check {
				env = append(env, tamperCheckEnv+"=1")
			}
			if len(tc.gets) > 0 {
				env = append(env, tamperGetsEnv+"="+strings.Join(tc.gets, ","))
			}
			got, out, err := runTamperChild(d, env...)
			defer os.RemoveAll(d)
			if err != nil {
				t.Fatalf("the probe crashed (%v); its output ends:\n%s", err, tail(out, 1500)+"\nFULL:\n"+crashHead(out))
			}
			if i := strings.Index(out, "panic:"); i >= 0 {
				t.Errorf("a Go panic's words reach the output: %s", tail(out[:min(len(out), i+300)], 600))
			}
			checkTamperProbe(t, got, want)
			if tc.check && len(got.Check) == 0 && got.OpenErr == "" {
				t.Errorf("a read-only check reports nothing")
			}
		})
	}
	t.Cleanup(func() { t.Logf("%d damage cases in %v", len(cases), time.Since(start).Round(time.Millisecond)) })
}

// checkTamperProbe fails t unless each of got's answers is a typed error or the undamaged
// store's answer.
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
	}
	for col, n := range want.Counts {
		if e, failed := got.CountErrs[col]; failed {
			if e != errTyped {
				t.Errorf("counting collection %s: %s", col, e)
			}
			continue
		}
		if got.Counts[col] != n {
			t.Errorf("opened silently with collection %s counting %d documents, want %d", col, got.Counts[col], n)
		}
	}
	for k, w := range want.Hits {
		if g := got.Hits[k]; !slices.Equal(g, w) && !slices.Equal(g, []string{errTyped}) {
			t.Errorf("wrong results for %q: %v, want %v", k, g, w)
		}
	}
	for k, g := range got.Gets {
		if w := want.Gets[k]; g != w && g != errTyped {
			t.Errorf("Get %q: %.80q, want %.80q", k, g, w)
		}
	}
	for _, c := range tamperCols {
		for i := range c.n {
			if k := fmt.Sprintf("%s|a%04d", c.name, i); got.Gets[k] == "" {
				t.Errorf("Get %q not answered", k)
			}
		}
	}
}

// storeDBCases damage store.db where it matters, at offsets found through bbolt: one bit
// of stored keys (document ids and vectors' index ids: some flipped into ids of other
// stored documents, some out of key order), fields of leaf element headers (position, key
// size, value size), a collection's counters and their checksum, and the freelist page's
// type. Each leaves damage that a read-only check must report.
func storeDBCases(t *testing.T, dir string) []tamperCase {
	t.Helper()
	db := filepath.Join(dir, dbName)
	var cases []tamperCase
	at := func(name string, off int64, mask byte, gets ...string) {
		cases = append(cases, tamperCase{name: dbName + "/" + name, check: true, gets: gets, damage: func(d string) error {
			f, err := os.OpenFile(filepath.Join(d, dbName), os.O_RDWR, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			var b [1]byte
			if _, err := f.ReadAt(b[:], off); err != nil {
				return err
			}
			b[0] ^= mask
			_, err = f.WriteAt(b[:], off)
			return err
		}})
	}
	keyFlip := func(col string, sub []byte, key string, i int, mask byte) {
		e := locateElem(t, db, [][]byte{bkCols, []byte(col), sub}, []byte(key))
		flipped := []byte(key)
		flipped[i] ^= mask
		parent, _ := store.SplitUnit(string(flipped))
		at(fmt.Sprintf("key-%s-%s-%q-byte%d^%#x", col, sub, key, i, mask), e.key+int64(i), mask, col+"|"+parent)
	}
	keyFlip(DefaultCollection, bkDocs, "a0007", 4, 0x01)      // a0006: another stored document
	keyFlip(DefaultCollection, bkDocs, "a0016", 0, 0x20)      // A0016: out of key order (chunked)
	keyFlip(DefaultCollection, bkDocs, "a0033", 3, 0x08)      // a00;3: out of key order
	keyFlip(DefaultCollection, bkDocs, "a0100", 4, 0x04)      // a0104: another stored document
	keyFlip("notes", bkDocs, "a0042", 4, 0x40)                // a004r
	keyFlip(DefaultCollection, bkVecs, "a0007", 4, 0x02)      // a0005
	keyFlip(DefaultCollection, bkVecs, "a0021", 2, 0x10)      // a0 21
	keyFlip(DefaultCollection, bkVecs, "a0016\x000", 6, 0x01) // chunk 1 of a0016
	for _, h := range []struct {
		sub  []byte
		key  string
		name string
		off  int64
		mask byte
	}{
		{bkDocs, "a0007", "pos", 4, 0x04}, {bkDocs, "a0007", "ksize", 8, 0x01}, {bkDocs, "a0007", "vsize", 12, 0x01},
		{bkDocs, "a0050", "pos-high", 5, 0x01}, {bkDocs, "a0050", "ksize-grow", 8, 0x02},
		{bkVecs, "a0010", "pos", 4, 0x08}, {bkVecs, "a0010", "ksize", 8, 0x01},
	} {
		e := locateElem(t, db, [][]byte{bkCols, []byte(DefaultCollection), h.sub}, []byte(h.key))
		at(fmt.Sprintf("elem-%s-%s-%s", h.sub, h.key, h.name), e.hdr+h.off, h.mask)
	}
	for _, c := range []struct {
		col  string
		key  []byte
		off  int64
		mask byte
	}{
		{DefaultCollection, keyDocN, 7, 0x10}, {DefaultCollection, keyDocN, 0, 0x01}, {DefaultCollection, keyUnitN, 7, 0x01},
		{"notes", keyUnitN, 6, 0x80}, {DefaultCollection, keyCountSum, 0, 0x04},
	} {
		e, ok := findInline(t, db, [][]byte{bkCols, []byte(c.col)}, bkInfo, c.key)
		if !ok {
			t.Errorf("collection %s keeps no %s", c.col, c.key)
			continue
		}
		at(fmt.Sprintf("counter-%s-%s-byte%d", c.col, c.key, c.off), e.val+c.off, c.mask)
	}
	// A compressed record's value (its checksum, header, metadata, plain checksum and block)
	// and the store's compression dictionary (its tag, checksum and content).
	for _, c := range []struct {
		col, key string
		offs     []int64
	}{
		{DefaultCollection, "a0100", []int64{0, 2, 5, 7, 12, 40, -3}},
		{"notes", "a0044", []int64{1, 6, -1}},
	} {
		e := locateElem(t, db, [][]byte{bkCols, []byte(c.col), bkDocs}, []byte(c.key))
		v := storedValue(t, db, [][]byte{bkCols, []byte(c.col), bkDocs}, []byte(c.key))
		if len(v) == 0 || v[0] != 0x03 {
			t.Fatalf("%s %s is not a compressed record (%x)", c.col, c.key, v[:min(len(v), 1)])
		}
		for _, off := range c.offs {
			if off < 0 {
				off += int64(len(v))
			}
			at(fmt.Sprintf("zrecord-%s-%s-byte%d", c.col, c.key, off), e.val+off, 0x08, c.col+"|"+c.key)
		}
	}
	dk := []byte{0, 0, 0, 1}
	de := locateElem(t, db, [][]byte{[]byte("zdict")}, dk)
	dv := storedValue(t, db, [][]byte{[]byte("zdict")}, dk)
	for _, off := range []int64{0, 3, 6, 100, int64(len(dv)) / 2, int64(len(dv)) - 1} {
		at(fmt.Sprintf("zdict-byte%d", off), de.val+off, 0x02)
	}
	ps, _, err := store.PageLayout(db)
	if err != nil {
		t.Fatal(err)
	}
	if fl := freelistPage(t, db); fl > 0 {
		at("freelist-type", fl*ps+8, 0x10)
	}
	return cases
}

// storedValue is the value of key in the bucket at path of the bbolt file at path.
func storedValue(t *testing.T, file string, path [][]byte, key []byte) []byte {
	t.Helper()
	db, err := bolt.Open(file, 0o644, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v []byte
	if err := db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(path[0])
		for _, p := range path[1:] {
			b = b.Bucket(p)
		}
		if b == nil {
			return fmt.Errorf("no bucket %q", path)
		}
		v = bytes.Clone(b.Get(key))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return v
}

// freelistPage is the page id of the freelist that the first meta page of the bbolt file
// at path names (0: none).
func freelistPage(t *testing.T, path string) int64 {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Each meta page: its header (16 bytes), then magic, version, page size, flags (4
	// bytes each), the root bucket (16), the freelist, the high water mark, the txid (8
	// each). The current one has the larger txid.
	le := binary.LittleEndian
	ps := int64(le.Uint32(raw[16+8:]))
	meta := int64(16)
	if le.Uint64(raw[ps+16+48:]) > le.Uint64(raw[16+48:]) {
		meta = ps + 16
	}
	fl := le.Uint64(raw[meta+32:])
	if fl == ^uint64(0) {
		return 0
	}
	return int64(fl)
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

// TestTamperKeepMTime damages the files of the disk vector index in place and puts their
// modification times back, in a copy of the store whose files all keep their times (the
// tamper suite's copies have new times, so every damaged vector file was read whole on
// open and the index rebuilt; a damaged file with its time kept used to be trusted): bytes
// flipped at seeded places, the first and last bytes, a float32 row's exponent, the file
// cut short; for every kind of file of the default index (float32 rows, binary codes, id
// table, tombstones, block checksums, disk.json) and of one with int8 codes and inverted
// lists (.i8, .ivl, centroids); in a faiss build also the FAISS index's files (its index
// and faiss.json, which it checks whole on open: damage is found, the index rebuilt and
// the check must still say so). Each copy must answer as the undamaged store or with a
// typed error, never panic, and a read-only check must report the damage.
func TestTamperKeepMTime(t *testing.T) {
	if testing.Short() {
		t.Skip("the tamper suite runs a child process per case")
	}
	shapes := []string{"", "int8-ivf"} // "": the default index, FAISS in a faiss build
	faissBuilt := slices.Contains(vectorstore.Backends(), "faiss")
	if faissBuilt {
		shapes = append(shapes, "disk")
	}
	for _, shape := range shapes {
		t.Run("index="+shape, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			dir := filepath.Join(root, "a")
			buildTamperStoreWith(t, dir, "a", append(tamperOptions(), tamperShape(shape)...))
			env := []string{tamperIndexEnv + "=" + shape}
			// The reference answers, from a child too (a writable open may change files).
			want, out, err := runTamperChild(dir, env...)
			if err != nil || want.OpenErr != "" || want.Panic != "" {
				t.Fatalf("the undamaged store: %+v, %v\n%s", want, err, tail(out, 1500))
			}
			for _, c := range tamperCols {
				if len(want.Hits[c.name+"|dense|"+tamperQueries("a")[0]]) == 0 {
					t.Fatalf("collection %s: the dense reference queries find nothing", c.name)
				}
			}
			var files []string
			filepath.WalkDir(filepath.Join(dir, vecDir), func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					rel, _ := filepath.Rel(dir, p)
					files = append(files, rel)
				}
				return nil
			})
			kinds := map[string]bool{}
			for _, f := range files {
				base := filepath.Base(f)
				kinds[strings.SplitN(base, "-", 2)[0]+filepath.Ext(base)] = true
				for _, dm := range keepMTimeDamages(f) {
					t.Run(strings.ReplaceAll(f, "/", "_")+"_"+dm.name, func(t *testing.T) {
						t.Parallel()
						d := filepath.Join(root, "case-"+strings.NewReplacer("/", "_", ".", "_").Replace(f)+"-"+dm.name)
						copyTreeKeepMTimes(t, dir, d)
						defer os.RemoveAll(d)
						p := filepath.Join(d, f)
						fi, err := os.Stat(p)
						if err != nil {
							t.Fatal(err)
						}
						if err := dm.damage(p); err != nil {
							t.Fatalf("damaging the copy: %v", err)
						}
						if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
							t.Fatal(err)
						}
						got, out, err := runTamperChild(d, append(env, tamperCheckEnv+"=1")...)
						if err != nil {
							t.Fatalf("the probe crashed (%v); its output ends:\n%s", err, tail(out, 1500)+"\nFULL:\n"+crashHead(out))
						}
						if i := strings.Index(out, "panic:"); i >= 0 {
							t.Errorf("a Go panic's words reach the output: %s", tail(out[:min(len(out), i+300)], 600))
						}
						checkTamperProbe(t, got, want)
						if len(got.Check) == 0 && got.OpenErr == "" {
							t.Errorf("a read-only check reports nothing")
						}
					})
				}
			}
			need := []string{"seg.f32", "seg.b1", "ids.bin", "tomb.bin", "sums.bin", "disk.json.json"}
			switch {
			case shape == "int8-ivf":
				need = []string{"seg.f32", "seg.i8", "seg.ivl", "ivf.bin", "ids.bin", "tomb.bin", "sums.bin"}
			case shape == "" && faissBuilt:
				need = []string{"faiss.index", "faiss.json.json"}
			}
			for _, k := range need {
				if !kinds[k] {
					t.Errorf("no %s file was damaged (%v)", k, kinds)
				}
			}
		})
	}
}

// keepMTimeDamages are the in-place damages done to the vector index file f (its time is
// put back after each).
func keepMTimeDamages(f string) []tamperCase {
	at := func(off func(size int64) int64, mask byte) func(string) error {
		return func(p string) error {
			fh, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				return err
			}
			defer fh.Close()
			fi, err := fh.Stat()
			if err != nil || fi.Size() == 0 {
				return err
			}
			var b [1]byte
			o := off(fi.Size())
			if _, err := fh.ReadAt(b[:], o); err != nil {
				return err
			}
			b[0] ^= mask
			_, err = fh.WriteAt(b[:], o)
			return err
		}
	}
	cases := []tamperCase{
		{name: "first-byte", damage: at(func(int64) int64 { return 0 }, 0x01)},
		{name: "last-byte", damage: at(func(n int64) int64 { return n - 1 }, 0x80)},
		{name: "truncate-half", damage: func(p string) error {
			fi, err := os.Stat(p)
			if err != nil {
				return err
			}
			return os.Truncate(p, fi.Size()/2)
		}},
	}
	for _, seed := range []int64{1, 2, 3} {
		cases = append(cases, tamperCase{name: fmt.Sprintf("flip-seed%d", seed), damage: func(p string) error { return flipBytes(p, seed) }})
	}
	if strings.HasSuffix(f, ".f32") {
		// Issue #39's case: the exponent of a value in a middle row (the top byte of a
		// little-endian float32, 0x40: a normalised value's exponent becomes huge).
		cases = append(cases, tamperCase{name: "row-exponent", damage: at(func(n int64) int64 {
			row := n / (4 * tamperDim) / 2
			return row*4*tamperDim + 4*3 + 3
		}, 0x40)})
	}
	return cases
}

// copyTreeKeepMTimes copies the store at src to dst, every file with its modification time.
func copyTreeKeepMTimes(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		return os.Chtimes(filepath.Join(dst, rel), fi.ModTime(), fi.ModTime())
	})
	if err != nil {
		t.Fatal(err)
	}
}
