package memory

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"

	"math"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/memory/internal/memtest"
	"github.com/agentmem/memory/vectorstore"
)

func TestCollectionMetadata(t *testing.T) {
	dir := t.TempDir()
	m := openT(t, dir)
	md := map[string]any{"owner": "qa", "version": 3, "gold": true, "score": 0.5}
	if _, err := m.CreateCollection("qna", WithCollectionMetadata(md)); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"owner": "qa", "version": 3.0, "gold": true, "score": 0.5}
	got, err := m.CollectionMetadata(bg, "qna")
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("metadata = %v, %v; want %v", got, err, want)
	}
	// CreateCollection of an existing collection leaves its metadata.
	if _, err := m.CreateCollection("qna", WithCollectionMetadata(map[string]any{"other": 1})); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Collection("qna").Metadata(bg); !reflect.DeepEqual(got, want) {
		t.Fatalf("after a second create: %v", got)
	}
	// A collection made without metadata (as every collection of an older store) has none.
	must(t, m.Add(bg, corpus...))
	if got, err := m.CollectionMetadata(bg, ""); err != nil || len(got) != 0 {
		t.Fatalf("default collection metadata = %v, %v", got, err)
	}
	if _, err := m.CollectionMetadata(bg, "nope"); !errors.Is(err, ErrCollectionNotFound) {
		t.Fatalf("metadata of a missing collection: %v", err)
	}
	must(t, m.SetCollectionMetadata(bg, "qna", map[string]any{"owner": "ops"}))
	if err := m.SetCollectionMetadata(bg, "nope", map[string]any{"a": 1}); !errors.Is(err, ErrCollectionNotFound) {
		t.Fatalf("set on a missing collection: %v", err)
	}
	tooMany := map[string]any{}
	for i := range MaxCollectionMetadataKeys + 1 {
		tooMany[fmt.Sprint("k", i)] = i
	}
	for _, tc := range []struct {
		name string
		md   map[string]any
		want error
	}{
		{"empty key", map[string]any{"": 1}, ErrInvalidMetadata},
		{"nested", map[string]any{"a": map[string]any{"b": 1}}, ErrInvalidMetadata},
		{"list", map[string]any{"a": []any{1}}, ErrInvalidMetadata},
		{"nil value", map[string]any{"a": nil}, ErrInvalidMetadata},
		{"infinite", map[string]any{"a": math.Inf(1)}, ErrInvalidMetadata},
		{"NaN", map[string]any{"a": math.NaN()}, ErrInvalidMetadata},
		{"bad UTF-8 key", map[string]any{"\xff": 1}, ErrInvalidUTF8},
		{"bad UTF-8 value", map[string]any{"a": "\xff"}, ErrInvalidUTF8},
		{"too many keys", tooMany, ErrInvalidMetadata},
		{"too large", map[string]any{"a": strings.Repeat("x", MaxCollectionMetadataBytes)}, ErrInvalidMetadata},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := m.SetCollectionMetadata(bg, "qna", tc.md); !errors.Is(err, tc.want) {
				t.Fatalf("set: %v, want %v", err, tc.want)
			}
			if _, err := m.CreateCollection("new-"+tc.name, WithCollectionMetadata(tc.md)); !errors.Is(err, tc.want) {
				t.Fatalf("create: %v, want %v", err, tc.want)
			}
			if slicesContain(memtest.Collections(t, m), "new-"+tc.name) {
				t.Fatal("a create with bad metadata made the collection")
			}
		})
	}
	must(t, m.Close())
	// Durable, and read-only stores read it but cannot change it.
	ro := openT(t, dir, ReadOnly())
	if got, err := ro.CollectionMetadata(bg, "qna"); err != nil || !reflect.DeepEqual(got, map[string]any{"owner": "ops"}) {
		t.Fatalf("after reopen: %v, %v", got, err)
	}
	if err := ro.SetCollectionMetadata(bg, "qna", nil); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only set: %v", err)
	}
	must(t, ro.Close())
	m = openT(t, dir)
	must(t, m.SetCollectionMetadata(bg, "qna", nil))
	if got, err := m.CollectionMetadata(bg, "qna"); err != nil || len(got) != 0 {
		t.Fatalf("cleared: %v, %v", got, err)
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// renameSnapshot is what searches of collection col answer, in each mode.
func renameSnapshot(t *testing.T, m *Memory, col string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, mode := range []Mode{BM25, Dense, Hybrid} {
		for _, q := range []string{"compiled language", "garbage collection memory", "web browser"} {
			res := searchT(t, m.Collection(col), q, WithMode(mode), TopK(5))
			var got []string
			for _, r := range res {
				got = append(got, fmt.Sprintf("%s:%.5f", r.ID, r.Score))
			}
			out[fmt.Sprint(mode, "/", q)] = got
		}
	}
	return out
}

func TestRenameCollection(t *testing.T) {
	for _, backend := range vectorstore.Backends() {
		if backend == "chromem" {
			continue // keeps no files of its own either: flat covers it
		}
		t.Run(backend, func(t *testing.T) { testRenameCollection(t, backend) })
	}
}

// testRenameCollection renames a collection whose vectors are indexed by backend.
func testRenameCollection(t *testing.T, backend string) {
	dir := t.TempDir()
	emb := vectorstore.NewHashEmbedder(64)
	var logs strings.Builder
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	index := WithIndex(vectorstore.IndexConfig{Backend: backend})
	persisted := backend != "flat" // flat keeps no files: it is loaded from the store of record on every open
	m := openT(t, dir, WithEmbedder(emb), WithLogger(logger), index)
	c, err := m.CreateCollection("old", WithCollectionMetadata(map[string]any{"gold": true}))
	must(t, err)
	must(t, c.Add(bg, corpus...))
	must(t, m.Collection("other").Add(bg, corpus[0]))
	before := renameSnapshot(t, m, "old")

	logs.Reset()
	must(t, m.RenameCollection(bg, "old", "new"))
	if got := renameSnapshot(t, m, "new"); !reflect.DeepEqual(got, before) {
		t.Fatalf("searches of the new name differ:\n%v\nbefore:\n%v", got, before)
	}
	// The indexes moved with the collection: none is built again.
	if strings.Contains(logs.String(), "index=bm25") || (persisted && strings.Contains(logs.String(), "index=vectors")) {
		t.Fatalf("the renamed collection's BM25 index was built again: %s", logs.String())
	}
	if _, err := m.Collection("old").Search(bg, "compiled language"); !errors.Is(err, ErrCollectionNotFound) {
		t.Fatalf("search of the old name: %v", err)
	}
	if _, err := m.Collection("old").Get(bg, "go"); !errors.Is(err, ErrCollectionNotFound) && !errors.Is(err, ErrNotFound) {
		t.Fatalf("get from the old name: %v", err)
	}
	if got := memtest.Collections(t, m); !reflect.DeepEqual(got, []string{"new", "other"}) {
		t.Fatalf("collections = %v", got)
	}
	if md, err := m.CollectionMetadata(bg, "new"); err != nil || md["gold"] != true {
		t.Fatalf("metadata after rename: %v, %v", md, err)
	}
	if n, err := m.Collection("new").Count(bg); err != nil || n != len(corpus) {
		t.Fatalf("len = %d, %v", n, err)
	}
	for _, k := range []string{bm25Dir, vecDir} {
		if fileExists(filepath.Join(dir, k, "old")) {
			t.Fatalf("%s/old is left", k)
		}
	}
	// The renamed collection takes writes under its new name; the old name can be made again.
	must(t, m.Collection("new").Add(bg, Document{ID: "zig", Text: "Zig is a compiled language."}))
	must(t, m.Collection("old").Add(bg, Document{ID: "x", Text: "unrelated"}))
	if res := searchT(t, m.Collection("old"), "compiled language", WithMode(BM25)); len(res) != 0 {
		t.Fatalf("the new collection of the old name finds %v", ids(res))
	}
	must(t, m.Collection("old").Delete(bg, "x"))
	must(t, m.DeleteCollection(bg, "old"))
	must(t, m.Collection("new").Delete(bg, "zig"))
	must(t, m.Close())

	// Reopened: the moved indexes are the collection's, verified, not rebuilt.
	logs.Reset()
	m = openT(t, dir, WithEmbedder(emb), WithLogger(logger), index)
	if got := renameSnapshot(t, m, "new"); !reflect.DeepEqual(got, before) {
		t.Fatalf("after reopen, searches differ:\n%v\nbefore:\n%v", got, before)
	}
	if strings.Contains(logs.String(), "index=bm25") || (persisted && strings.Contains(logs.String(), "index=vectors")) || strings.Contains(logs.String(), "rebuild") {
		t.Fatalf("the renamed collection's indexes were rebuilt: %s", logs.String())
	}
	rep, err := m.Check(bg, false)
	if err != nil || !rep.OK() {
		t.Fatalf("check: %+v %v", rep, err)
	}
}

func TestRenameCollectionErrors(t *testing.T) {
	dir := t.TempDir()
	m := openT(t, dir)
	must(t, m.Collection("a").Add(bg, corpus[0]))
	must(t, m.Collection("b").Add(bg, corpus[1]))
	for _, tc := range []struct {
		name, from, to string
		want           error
	}{
		{"unknown", "nope", "z", ErrCollectionNotFound},
		{"target exists", "a", "b", ErrCollectionExists},
		{"empty target", "a", "\x00", ErrInvalidCollection},
		{"control character", "a", "x\ny", ErrInvalidCollection},
		{"dot dot", "a", "..", ErrInvalidCollection},
		{"too long", "a", strings.Repeat("é", 120), ErrInvalidCollection},
		{"bad UTF-8", "a", "\xff", ErrInvalidCollection},
		{"bad source", "\xff", "z", ErrInvalidCollection},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := m.RenameCollection(bg, tc.from, tc.to); !errors.Is(err, tc.want) {
				t.Fatalf("RenameCollection(%q, %q) = %v, want %v", tc.from, tc.to, err, tc.want)
			}
			if got := memtest.Collections(t, m); !reflect.DeepEqual(got, []string{"a", "b"}) {
				t.Fatalf("collections changed: %v", got)
			}
		})
	}
	if err := m.RenameCollection(bg, "a", "z", WithCollectionMetadata(map[string]any{"": 1})); !errors.Is(err, ErrInvalidMetadata) {
		t.Fatalf("rename with bad metadata: %v", err)
	}
	if got := memtest.Collections(t, m); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("a rename with bad metadata changed the collections: %v", got)
	}
	must(t, m.RenameCollection(bg, "a", "a")) // its own name: nothing
	// A new name and new metadata in one transaction.
	must(t, m.RenameCollection(bg, "a", "c", WithCollectionMetadata(map[string]any{"k": "v"})))
	if md, err := m.CollectionMetadata(bg, "c"); err != nil || !reflect.DeepEqual(md, map[string]any{"k": "v"}) {
		t.Fatalf("metadata after rename: %v, %v", md, err)
	}
	must(t, m.RenameCollection(bg, "c", "c", WithCollectionMetadata(nil)))
	if md, err := m.CollectionMetadata(bg, "c"); err != nil || len(md) != 0 {
		t.Fatalf("metadata cleared by a rename to its own name: %v, %v", md, err)
	}
	must(t, m.RenameCollection(bg, "c", "a"))
	must(t, m.Close())
	ro := openT(t, dir, ReadOnly())
	if err := ro.RenameCollection(bg, "a", "z"); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only rename: %v", err)
	}
}

// The rename crash test: a child renames collection "a" to "b" and back, searching it after
// each rename (so its indexes are open when the next rename moves them), printing "ack
// <name>"; the parent kills it at a random moment and checks that the collection is whole
// under exactly the acknowledged name or the next, found by BM25 and dense searches, and
// that the other name answers nothing.
const renameCrashEnv = "MEMORY_RENAME_CRASH_CHILD"

func renameCrashOpts() []Option { return []Option{WithEmbedder(vectorstore.NewHashEmbedder(32))} }

func renameCrashChild(dir string) {
	childStarted()
	m, err := Open(dir, renameCrashOpts()...)
	if err != nil {
		fmt.Println("open error:", err)
		os.Exit(3)
	}
	out := bufio.NewWriter(os.Stdout)
	from, to := "a", "b"
	if names, _ := m.Collections(context.Background()); slicesContain(names, "b") {
		from, to = "b", "a"
	}
	for {
		if err := m.RenameCollection(bg, from, to); err != nil {
			fmt.Println("rename error:", err)
			os.Exit(4)
		}
		if _, err := m.Collection(to).Search(bg, "crashword7", WithMode(Hybrid)); err != nil {
			fmt.Println("search error:", err)
			os.Exit(5)
		}
		fmt.Fprintf(out, "ack %s\n", to)
		out.Flush()
		from, to = to, from
	}
}

func TestRenameCrash(t *testing.T) {
	runs := 16
	if testing.Short() {
		runs = 6
	}
	const n = 60
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	dir := filepath.Join(t.TempDir(), "store")
	m, err := Open(dir, renameCrashOpts()...)
	must(t, err)
	for i := range n {
		must(t, m.Collection("a").Add(bg, crashDoc(i)))
	}
	must(t, m.Close())
	at, renames := "a", 0
	for run := range runs {
		// Killed during the open (0), or in the rename or search after the kill-th.
		kill := rng.Intn(7)
		if run == 1 {
			kill = max(kill, 1) // at least one run acknowledges a rename
		}
		lines := killedChild(t, kill, renameCrashEnv+"="+dir)
		acked := at
		for _, l := range lines {
			name, ok := strings.CutPrefix(l, "ack ")
			if !ok {
				t.Fatalf("run %d: child said %q", run, l)
			}
			acked = name
			renames++
		}
		m, err := Open(dir, renameCrashOpts()...)
		if err != nil {
			t.Fatalf("run %d: the store does not open after kill -9: %v", run, err)
		}
		cols := memtest.Collections(t, m)
		if len(cols) != 1 {
			m.Close()
			t.Fatalf("run %d: collections %v, want one of a, b", run, cols)
		}
		name, other := cols[0], map[string]string{"a": "b", "b": "a"}[cols[0]]
		// acked or the rename after it (which may have committed unacknowledged)
		if name != acked && name != map[string]string{"a": "b", "b": "a"}[acked] {
			m.Close()
			t.Fatalf("run %d: acknowledged %q, store holds %q", run, acked, name)
		}
		c := m.Collection(name)
		for i := 0; i < n; i += 7 {
			d := crashDoc(i)
			for _, mode := range []Mode{BM25, Dense} {
				res, err := c.Search(bg, d.Title+" crashword"+fmt.Sprint(i), WithMode(mode), TopK(n))
				if err != nil || !slicesContain(ids(res), d.ID) {
					m.Close()
					t.Fatalf("run %d: %v search of %q under %q: %v, %v", run, mode, d.ID, name, ids(res), err)
				}
			}
		}
		if got, err := c.Count(bg); err != nil || got != n {
			m.Close()
			t.Fatalf("run %d: %q holds %d documents (%v), want %d", run, name, got, err, n)
		}
		if _, err := m.Collection(other).Search(bg, "crashword1"); !errors.Is(err, ErrCollectionNotFound) {
			m.Close()
			t.Fatalf("run %d: the other name %q: %v", run, other, err)
		}
		checkAndClose(t, m, run)
		at = name
	}
	if renames == 0 {
		t.Fatal("the child never renamed: the test proved nothing")
	}
	t.Logf("%d kill -9 runs, %d renames acknowledged, none torn", runs, renames)
}

// TestRenameWhileSearching: searches of a collection racing its rename each answer in full
// under the old name or fail with ErrCollectionNotFound, and the new name answers after.
// The rename waits for searches to have run, and the searches stop once some have seen it
// (counted, not timed).
func TestRenameWhileSearching(t *testing.T) {
	m := openT(t, t.TempDir())
	must(t, m.Collection("old").Add(bg, corpus...))
	want := ids(searchT(t, m.Collection("old"), "compiled language", WithMode(BM25)))
	stop := make(chan struct{})
	errs := make(chan error, 4)
	var answered, notFound, failed atomic.Int64
	for range 4 {
		go func() {
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				res, err := m.Collection("old").Search(bg, "compiled language", WithMode(BM25))
				if errors.Is(err, ErrCollectionNotFound) {
					notFound.Add(1)
					continue
				}
				if err != nil || !reflect.DeepEqual(ids(res), want) {
					failed.Add(1)
					errs <- fmt.Errorf("search during the rename: %v, %v", ids(res), err)
					return
				}
				answered.Add(1)
			}
		}()
	}
	for answered.Load() < 4 && failed.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	must(t, m.RenameCollection(bg, "old", "new"))
	for notFound.Load() < 4 && failed.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := ids(searchT(t, m.Collection("new"), "compiled language", WithMode(BM25))); !reflect.DeepEqual(got, want) {
		t.Fatalf("new name: %v, want %v", got, want)
	}
}
