package memory

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory/hybrid"
	"github.com/agentmem/memory/internal/memtest"
	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/vectorstore"
)

// remotePair opens a writer on dir with a hash embedder and the corpus in two collections,
// and a read-only store beside it, which reads through the writer.
func remotePair(t *testing.T, dir string) (w, r *Memory) {
	t.Helper()
	emb := vectorstore.NewHashEmbedder(16)
	w = openT(t, dir, WithEmbedder(emb))
	if err := w.Add(bg, roDocs()...); err != nil {
		t.Fatal(err)
	}
	other, err := w.CreateCollection("other")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Add(bg, Document{ID: "o1", Text: "otters hold hands while they sleep", Source: "a.md"},
		Document{ID: "o2", Text: "a long text about otters " + strings.Repeat("and rivers ", 300), Source: "b.md"}); err != nil {
		t.Fatal(err)
	}
	r, err = Open(dir, ReadOnly())
	if err != nil {
		t.Fatalf("read-only open beside a writer: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	if r.remote == nil {
		t.Fatal("the read-only store does not read through the writer")
	}
	return w, r
}

// jsonOf is v as JSON: results compare by what they show (their unexported fields are the
// writer's bookkeeping).
func jsonOf(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(data)
}

// The reads of a store that reads through its writer are the writer's, error types
// included; its writes are ErrReadOnly.
func TestRemoteReadsMatchWriter(t *testing.T) {
	w, r := remotePair(t, t.TempDir())
	searches := []struct {
		name string
		col  string
		q    string
		opts []SearchOption
	}{
		{"hybrid", "", "compiled language memory", []SearchOption{TopK(5)}},
		{"bm25 where", "", "language", []SearchOption{WithMode(BM25), WithWhere(Where{"year": map[string]any{"$gte": 1990}}), WithSnippets()}},
		{"dense", "", "garbage collection", []SearchOption{WithMode(Dense), TopK(3)}},
		{"weighted", "", "typed language", []SearchOption{WithFusion(hybrid.WeightedScore), WithWeights(1, 0.5)}},
		{"where document", "", "language", []SearchOption{WithWhereDocument(WhereDocument{"$contains": "compiled"})}},
		{"chunks", "other", "otters rivers", []SearchOption{WithAllChunks(), TopK(20)}},
		{"collections", "", "otters language", []SearchOption{InCollections(map[string]float64{"default": 1, "other": 2})}},
		{"without text", "", "language", []SearchOption{WithMode(BM25), WithoutText()}},
	}
	for _, s := range searches {
		want, werr := w.Collection(s.col).Search(bg, s.q, s.opts...)
		got, gerr := r.Collection(s.col).Search(bg, s.q, s.opts...)
		if werr != nil || gerr != nil || len(want) == 0 || jsonOf(got) != jsonOf(want) {
			t.Errorf("%s: reader %s (%v), writer %s (%v)", s.name, jsonOf(got), gerr, jsonOf(want), werr)
		}
		if s.name == "without text" && len(got) > 0 && got[0].Text != "" {
			t.Errorf("%s: the reader's results carry texts", s.name)
		}
	}
	var st SearchStats
	if _, err := r.Search(bg, "language", WithStats(&st)); err != nil || st.Total <= 0 || st.Mode != Hybrid {
		t.Errorf("stats through the writer: %+v, %v", st, err)
	}
	qs := []string{"language", "otters", "garbage"}
	wb, werr := w.SearchBatch(bg, qs, TopK(3))
	rb, rerr := r.SearchBatch(bg, qs, TopK(3))
	if werr != nil || rerr != nil || jsonOf(rb) != jsonOf(wb) {
		t.Errorf("batch: reader %s (%v), writer %s (%v)", jsonOf(rb), rerr, jsonOf(wb), werr)
	}
	wd, _ := w.Get(bg, "go")
	if d, err := r.Get(bg, "go"); err != nil || !reflect.DeepEqual(d, wd) || len(d.Embedding) != 16 {
		t.Errorf("get: %+v, %v; want %+v", d, err, wd)
	}
	wv, _ := w.Collection("other").Vectors(bg, "o2")
	if v, err := r.Collection("other").Vectors(bg, "o2"); err != nil || !reflect.DeepEqual(v, wv) || len(v) < 2 {
		t.Errorf("vectors: %d, %v; want %d", len(v), err, len(wv))
	}
	if n, err := r.Count(bg); err != nil || n != memtest.Count(t, w) || memtest.Count(t, r) != n {
		t.Errorf("len: %d, %v; want %d", n, err, memtest.Count(t, w))
	}
	if got, want := memtest.IDs(t, r.Collection("other")), memtest.IDs(t, w.Collection("other")); !reflect.DeepEqual(got, want) {
		t.Errorf("ids: %v, want %v", got, want)
	}
	if got, err := r.Collection("other").Sources(bg); err != nil || !reflect.DeepEqual(got, []string{"a.md", "b.md"}) {
		t.Errorf("sources: %v, %v", got, err)
	}
	if got := memtest.Collections(t, r); !reflect.DeepEqual(got, memtest.Collections(t, w)) {
		t.Errorf("collections: %v, want %v", got, memtest.Collections(t, w))
	}
	if _, err := r.GetCollection("other"); err != nil {
		t.Errorf("GetCollection(other): %v", err)
	}
	must(t, w.SetCollectionMetadata(bg, "other", map[string]any{"owner": "ops", "v": 2}))
	if got, err := r.CollectionMetadata(bg, "other"); err != nil || !reflect.DeepEqual(got, map[string]any{"owner": "ops", "v": 2.0}) {
		t.Errorf("collection metadata: %v, %v", got, err)
	}
	if got, err := r.CollectionMetadata(bg, ""); err != nil || got == nil || len(got) != 0 {
		t.Errorf("default collection metadata: %#v, %v", got, err)
	}
	if _, err := r.CollectionMetadata(bg, "nope"); !errors.Is(err, ErrCollectionNotFound) {
		t.Errorf("metadata of a missing collection: %v", err)
	}
	if err := r.RenameCollection(bg, "other", "x"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("rename through a reader: %v", err)
	}
	// Errors keep their types across the socket.
	for name, err := range map[string]error{
		"missing collection": func() error { _, err := r.GetCollection("nope"); return err }(),
		"missing document":   func() error { _, err := r.Get(bg, "nope"); return err }(),
		"bad mode":           func() error { _, err := r.Search(bg, "x", WithMode("nope")); return err }(),
		"bad filter": func() error {
			_, err := r.Search(bg, "x", WithWhere(Where{"a": map[string]any{"$nope": 1}}))
			return err
		}(),
		"no reranker": func() error { _, err := r.Search(bg, "x", WithRerank(5)); return err }(),
		"custom fusion": func() error {
			_, err := r.Search(bg, "x", WithFusion(func([]hybrid.List, hybrid.FusionOptions) []hybrid.Fused { return nil }))
			return err
		}(),
	} {
		want := map[string]error{"missing collection": ErrCollectionNotFound, "missing document": ErrNotFound, "bad mode": ErrInvalidOption,
			"bad filter": ErrInvalidFilter, "no reranker": ErrNoReranker, "custom fusion": ErrInvalidOption}[name]
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
	}
	// Writes are refused as on any read-only store; Check needs the files.
	if err := r.Add(bg, Document{ID: "x", Text: "x"}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Add: %v", err)
	}
	if _, err := r.CreateCollection("new"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("CreateCollection: %v", err)
	}
	if err := r.DeleteCollection(bg, "other"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("DeleteCollection: %v", err)
	}
	if _, err := r.Check(bg, false); !errors.Is(err, ErrLocked) {
		t.Errorf("Check: %v", err)
	}
	// The writer's writes are seen at once.
	if err := w.Add(bg, Document{ID: "new", Text: "zebras are striped"}); err != nil {
		t.Fatal(err)
	}
	if res, err := r.Search(bg, "zebras", WithMode(BM25)); err != nil || len(res) != 1 || res[0].ID != "new" {
		t.Errorf("a new document through the writer: %v, %v", res, err)
	}
	// Many calls at once share at most maxClientConns connections, and all answer.
	conc := make(chan error, 300)
	for range 300 {
		go func() { _, err := r.Search(bg, "language", TopK(3)); conc <- err }()
	}
	for range 300 {
		if err := <-conc; err != nil {
			t.Fatalf("300 searches at once: %v", err)
		}
	}
	w.srv.mu.Lock()
	open := len(w.srv.conns)
	w.srv.mu.Unlock()
	if open > maxClientConns {
		t.Errorf("the reader holds %d connections, more than %d", open, maxClientConns)
	}
	// A cancelled context ends a call with its error.
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := r.Search(ctx, "language"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// A writer that closes, or dies in the middle of a request, leaves its readers with
// ErrWriterGone; opening again reads the store directly.
func TestRemoteWriterGone(t *testing.T) {
	dir := t.TempDir()
	w, r := remotePair(t, dir)
	if _, err := r.Search(bg, "language"); err != nil {
		t.Fatal(err)
	}
	// Readers searching in a loop while the writer closes: each ends with ErrWriterGone
	// (never a cancellation of its own, never a hang).
	loopErrs := make(chan error, 8)
	for range 8 {
		go func() {
			for {
				if _, err := r.Search(bg, "compiled language", TopK(20)); err != nil {
					loopErrs <- err
					return
				}
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		select {
		case err := <-loopErrs:
			if !errors.Is(err, ErrWriterGone) || errors.Is(err, context.Canceled) {
				t.Errorf("a search under way as the writer closed: %v, want ErrWriterGone", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("a search under way as the writer closed did not end")
		}
	}
	for name, err := range map[string]error{
		"search": func() error { _, err := r.Search(bg, "language"); return err }(),
		"get":    func() error { _, err := r.Get(bg, "go"); return err }(),
		"len":    func() error { _, err := r.Count(bg); return err }(),
	} {
		if !errors.Is(err, ErrWriterGone) {
			t.Errorf("%s after the writer closed: %v, want ErrWriterGone", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, lockInfoName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the writer's lock file outlived it: %v", err)
	}
	r2 := openT(t, dir, ReadOnly())
	if r2.remote != nil {
		t.Fatal("with the writer gone a read-only open still reads through it")
	}
	if res, err := r2.Search(bg, "language", WithMode(BM25)); err != nil || len(res) == 0 {
		t.Fatalf("direct read: %v, %v", res, err)
	}
	r2.Close()

	// Mid-request: a writer (here a stand-in holding its socket) that reads a request and
	// dies before answering it whole.
	w2 := openT(t, dir)
	standInWriter(t, dir, `{"v":1,"pid":1}`, func(c net.Conn, _ string) {
		c.Write([]byte(`{"v":1,"results":[{"id":"half`)) // then dies
	})
	r3, err := Open(dir, ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer r3.Close()
	if _, err := r3.Search(bg, "language"); !errors.Is(err, ErrWriterGone) {
		t.Fatalf("writer died mid-answer: %v, want ErrWriterGone", err)
	}
	_ = w2
}

// Frames that are not requests (garbage, over the size cap, another version, unknown
// fields) are answered with an error and the connection closed; the writer goes on
// serving its readers and taking writes.
func TestRemoteBadFrames(t *testing.T) {
	dir := t.TempDir()
	w, r := remotePair(t, dir)
	li, err := readLockInfo(dir)
	if err != nil || li == nil || li.Socket == "" {
		t.Fatalf("lock file: %+v, %v", li, err)
	}
	big := strings.Repeat("x", maxRequestBytes+10)
	frames := map[string]string{
		"garbage":       "\x00\xff not json\n",
		"oversized":     `{"v":1,"op":"search","q":"` + big + `"}` + "\n",
		"no newline":    big,
		"version 2":     `{"v":2,"op":"len"}` + "\n",
		"unknown field": `{"v":1,"op":"len","rm":"-rf"}` + "\n",
		"unknown op":    `{"v":1,"op":"delete","id":"go"}` + "\n",
		"array":         `[1,2,3]` + "\n",
	}
	for name, f := range frames {
		c, err := net.Dial("unix", li.Socket)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(20 * time.Second))
		go func() { c.Write([]byte(f)); c.(*net.UnixConn).CloseWrite() }()
		br := bufio.NewReader(c)
		line, err := br.ReadString('\n')
		var resp wireResp
		if err != nil || json.Unmarshal([]byte(line), &resp) != nil || resp.Err == nil {
			t.Errorf("%s: answered %q (%v), want an error", name, line, err)
		}
		c.Close()
	}
	if n, err := r.Count(bg); err != nil || n != len(roDocs()) {
		t.Fatalf("reader after the bad frames: %d, %v", n, err)
	}
	if err := w.Add(bg, Document{ID: "after", Text: "still writable"}); err != nil {
		t.Fatal(err)
	}
	if d, err := r.Get(bg, "after"); err != nil || d.Text != "still writable" {
		t.Fatalf("reader sees the write: %+v, %v", d, err)
	}
}

// A writer kept out by readers waits for them up to WithLockTimeout; without it, it fails
// at once with ErrLocked naming them.
func TestLockTimeoutWaitsForReaders(t *testing.T) {
	dir := t.TempDir()
	m := openT(t, dir)
	m.Add(bg, corpus...)
	m.Close()
	r, err := Open(dir, ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = Open(dir)
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) || le.Holder != "read-only readers" || time.Since(start) > 5*time.Second {
		t.Fatalf("writer beside a reader, no timeout: %v after %v", err, time.Since(start))
	}
	type result struct {
		m   *Memory
		err error
	}
	done := make(chan result, 1)
	go func() {
		w, err := Open(dir, WithLockTimeout(20*time.Second))
		done <- result{w, err}
	}()
	select {
	case res := <-done:
		t.Fatalf("the writer did not wait for the reader: %v", res.err)
	case <-time.After(700 * time.Millisecond):
	}
	r.Close()
	res := <-done
	if res.err != nil {
		t.Fatalf("writer after the reader closed: %v", res.err)
	}
	defer res.m.Close()
	if n := memtest.Count(t, res.m); n != len(corpus) {
		t.Fatalf("count %d", n)
	}
	// A writer that waits in vain fails after its timeout.
	start = time.Now()
	if _, err := Open(dir, WithLockTimeout(600*time.Millisecond)); !errors.Is(err, ErrLocked) || time.Since(start) < 500*time.Millisecond {
		t.Fatalf("writer beside a writer, 600 ms: %v after %v", err, time.Since(start))
	}
}

// ErrLocked names the writer that holds the store: pid, command, since when (a second
// Open in the holder's own process says so, not "another process"); a lock file whose
// process is gone is called stale.
func TestLockedErrorNamesHolder(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, dir)
	_, err := Open(dir)
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) {
		t.Fatalf("second writer: %v", err)
	}
	pid := strconv.Itoa(os.Getpid())
	if le.PID != os.Getpid() || le.Stale || len(le.Command) == 0 || le.Command[0] != os.Args[0] || time.Since(le.Since) > time.Minute ||
		!strings.Contains(err.Error(), "pid "+pid) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second writer: %v (%+v), want pid %s and command %s", err, le, pid, os.Args[0])
	}
	if msg := err.Error(); !strings.Contains(msg, "already open in this process") || strings.Contains(msg, "another process") {
		t.Fatalf("a second Open in the holder's process: %q, want it to say the store is already open in this process", msg)
	}
	// Held by another process: the holder's pid and command.
	other := (&LockedError{Dir: dir, Holder: "a writer", PID: os.Getpid() + 1, Command: []string{"memory", "serve", "--mcp"}, Since: time.Now()}).Error()
	if !strings.Contains(other, "held by another process") || !strings.Contains(other, `"memory serve --mcp"`) || !strings.Contains(other, strconv.Itoa(os.Getpid()+1)) {
		t.Fatalf("another process's lock: %q", other)
	}
	w.Close()

	// A writer killed leaves its lock file; the next holder (here one that writes none)
	// must not be named after it.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("no `true` to make a dead pid:", err)
	}
	if err := writeLockInfo(dir, lockInfo{PID: dead.Process.Pid, Argv: []string{"memory", "serve", "--mcp"}, Started: time.Now().Add(-time.Hour), Mode: "writer"}); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(dir, dbName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = Open(dir)
	if !errors.As(err, &le) || !le.Stale || le.PID != dead.Process.Pid || !strings.Contains(err.Error(), "no longer running") || !strings.Contains(err.Error(), "stale") {
		t.Fatalf("writer beside a holder with a stale lock file: %v (%+v)", err, le)
	}
	_, err = Open(dir, ReadOnly())
	if !errors.As(err, &le) || !le.Stale || !strings.Contains(err.Error(), "stale") {
		t.Fatalf("reader beside a holder with a stale lock file: %v", err)
	}
}

// A store whose path is too long for a socket address serves through a socket under
// os.TempDir, recorded in its lock file.
func TestRemoteLongPath(t *testing.T) {
	dir := t.TempDir()
	for len(dir) < 150 {
		dir = filepath.Join(dir, "a-rather-long-folder-name")
	}
	_, r := remotePair(t, dir)
	li, err := readLockInfo(dir)
	if err != nil || li == nil || len(li.Socket) > maxSockPath || strings.HasPrefix(li.Socket, dir) {
		t.Fatalf("socket %+v, %v", li, err)
	}
	if n, err := r.Count(bg); err != nil || n == 0 {
		t.Fatalf("len through a long path's writer: %d, %v", n, err)
	}
}

// byLength is a stand-in cross-encoder that prefers short passages (the opposite of what
// fusion favours here), so a rerank that did not happen, or happened elsewhere, shows.
type byLength struct{}

func (byLength) Score(_ context.Context, _ string, passages []string) ([]float32, error) {
	out := make([]float32, len(passages))
	for i, p := range passages {
		out[i] = -float32(len(p)) / 100
	}
	return out, nil
}

// TestRemoteRerankWithOwnReranker: a read-only open beside a writer that has no reranker,
// opened WithReranker, reranks with its own reranker over the writer's candidates (it used
// to get the writer's reranker or ErrNoReranker); its results equal those of the same
// store opened directly with that reranker. A collapse after its own rerank is refused.
func TestRemoteRerankWithOwnReranker(t *testing.T) {
	dir := t.TempDir()
	w, _ := remotePair(t, dir)
	r, err := Open(dir, ReadOnly(), WithReranker(byLength{}))
	if err != nil {
		t.Fatal(err)
	}
	if r.remote == nil {
		t.Fatal("the read-only store does not read through the writer")
	}
	searches := []struct {
		name string
		col  string
		q    string
		opts []SearchOption
	}{
		{"top 3 of 50", "", "language memory", []SearchOption{WithRerank(0), TopK(3)}},
		{"rerank 4, top 6", "", "language", []SearchOption{WithRerank(4), TopK(6), WithMode(BM25)}},
		{"min score", "", "language", []SearchOption{WithRerank(0), WithMinScore(0.3)}},
		{"source dedup", "other", "otters", []SearchOption{WithRerank(0), WithSourceDedup(), WithAllChunks(), TopK(5)}},
	}
	got := make([]string, len(searches))
	for i, s := range searches {
		res, err := r.Collection(s.col).Search(bg, s.q, s.opts...)
		if err != nil || len(res) == 0 || res[0].Explain.Rerank == nil {
			t.Fatalf("%s through the writer: %v, %v (want reranked results)", s.name, jsonOf(res), err)
		}
		got[i] = jsonOf(res)
	}
	qs := []string{"language", "otters"}
	gotBatch, err := r.SearchBatch(bg, qs, WithRerank(0), TopK(2))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Search(bg, "language", WithRerank(0), WithCollapse(0.9)); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("collapse after a reader's own rerank: %v, want ErrInvalidOption", err)
	}
	r.Close()
	w.Close()

	direct, err := Open(dir, ReadOnly(), WithEmbedder(vectorstore.NewHashEmbedder(16)), WithReranker(byLength{}))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	if direct.remote != nil {
		t.Fatal("the writer is closed, yet the store reads through it")
	}
	for i, s := range searches {
		want, err := direct.Collection(s.col).Search(bg, s.q, s.opts...)
		if err != nil || jsonOf(want) != got[i] {
			t.Errorf("%s: through the writer %s, opened directly %s (%v)", s.name, got[i], jsonOf(want), err)
		}
	}
	wantBatch, err := direct.SearchBatch(bg, qs, WithRerank(0), TopK(2))
	if err != nil || jsonOf(wantBatch) != jsonOf(gotBatch) {
		t.Errorf("batch: through the writer %s, opened directly %s (%v)", jsonOf(gotBatch), jsonOf(wantBatch), err)
	}
}

// A store that reads through its writer runs cascades and source de-duplication as the
// writer does (they were dropped on the way: a cascade searched only the collection it was
// called on, and every result of a source came back).
func TestRemoteCascadeAndSourceDedup(t *testing.T) {
	w, r := remotePair(t, t.TempDir())
	if err := w.Collection("other").Add(bg, Document{ID: "o3", Text: "otters otters otters sleep", Source: "a.md"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		name string
		col  string
		opts []SearchOption
	}{
		{"source dedup", "other", []SearchOption{WithMode(BM25), WithSourceDedup()}},
		{"cascade", "", []SearchOption{WithMode(BM25), WithCascade(100, "default", "other")}},
		{"cascade stops", "", []SearchOption{WithMode(BM25), WithCascade(0, "other", "default")}},
		{"cascade with dedup", "", []SearchOption{WithMode(BM25), WithCascade(100, "default", "other"), WithSourceDedup()}},
	} {
		want, werr := w.Collection(s.col).Search(bg, "otters", s.opts...)
		got, gerr := r.Collection(s.col).Search(bg, "otters", s.opts...)
		if werr != nil || gerr != nil || len(want) == 0 || jsonOf(got) != jsonOf(want) {
			t.Errorf("%s: reader %s (%v)\nwriter %s (%v)", s.name, jsonOf(got), gerr, jsonOf(want), werr)
		}
	}
	if _, err := r.Search(bg, "otters", WithCascade(100, "default", "nope")); err == nil {
		t.Error("a cascade through the writer of a missing collection: no error")
	}
}
