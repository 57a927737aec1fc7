package models

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/memory/internal/environ"
)

// fakeHub serves files in the Hugging Face layout and counts requests. Handlers can be
// overridden per path to inject faults.
type fakeHub struct {
	mu       sync.Mutex
	files    map[string][]byte // "repo/revision/path" -> content
	requests map[string]int
	ranges   []string
	faults   map[string]func(w http.ResponseWriter, r *http.Request, n int) bool
	served   int64
}

func newHub(t *testing.T) (*fakeHub, *httptest.Server) {
	h := &fakeHub{files: map[string][]byte{}, requests: map[string]int{}, faults: map[string]func(http.ResponseWriter, *http.Request, int) bool{}}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}

func (h *fakeHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// /{owner}/{name}/resolve/{rev}/{path...}
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 5)
	if len(parts) < 5 || parts[2] != "resolve" {
		http.NotFound(w, r)
		return
	}
	key := parts[0] + "/" + parts[1] + "/" + parts[3] + "/" + parts[4]
	h.mu.Lock()
	h.requests[key]++
	n := h.requests[key]
	if rg := r.Header.Get("Range"); rg != "" {
		h.ranges = append(h.ranges, key+" "+rg)
	}
	fault := h.faults[key]
	data, ok := h.files[key]
	h.mu.Unlock()
	if fault != nil && fault(w, r, n) {
		return
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	start := 0
	if rg := r.Header.Get("Range"); rg != "" {
		s, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(rg, "bytes="), "-"))
		if err != nil || s > len(data) {
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		if s == len(data) {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", len(data)))
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		start = s
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", s, len(data)-1, len(data)))
		w.Header().Set("Content-Length", strconv.Itoa(len(data)-s))
		w.WriteHeader(http.StatusPartialContent)
	} else {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	}
	m, _ := w.Write(data[start:])
	h.mu.Lock()
	h.served += int64(m)
	h.mu.Unlock()
}

func (h *fakeHub) count(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.requests[key]
}

func blob(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ seed
	}
	return b
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// testModel publishes two files on the hub and returns their manifest entry.
func testModel(h *fakeHub, size int) (Model, []byte, []byte) {
	weights, tok := blob(size, 1), []byte(`{"model":{"type":"WordPiece"}}`)
	h.files["acme/tiny/main/onnx/model.onnx"] = weights
	h.files["acme/tiny/main/tokenizer.json"] = tok
	return Model{Name: "tiny", Repo: "acme/tiny", Revision: "main", Files: []File{
		{Path: "onnx/model.onnx", Size: int64(len(weights)), SHA256: digest(weights)},
		{Path: "tokenizer.json", Size: int64(len(tok)), SHA256: digest(tok)},
	}}, weights, tok
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func testOpts(t *testing.T, srv *httptest.Server) Options {
	return Options{BaseURL: srv.URL, CacheDir: t.TempDir(), Backoff: time.Millisecond, Logger: quiet()}
}

func TestPullModel(t *testing.T) {
	t.Setenv(environ.Models, "")
	h, srv := newHub(t)
	m, weights, tok := testModel(h, 1<<20+123)
	opts := testOpts(t, srv)
	var last = map[string]Progress{}
	var calls int
	opts.Progress = func(p Progress) {
		calls++
		if p.Done > p.Total && p.Total >= 0 {
			t.Errorf("progress past total: %+v", p)
		}
		last[p.File] = p
	}
	dir, err := PullModel(context.Background(), m, opts)
	if err != nil {
		t.Fatal(err)
	}
	if dir != filepath.Join(opts.CacheDir, "tiny") {
		t.Fatalf("dir %s", dir)
	}
	for path, want := range map[string][]byte{"onnx/model.onnx": weights, "tokenizer.json": tok} {
		got, err := os.ReadFile(filepath.Join(dir, path))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes, %v", path, len(got), err)
		}
		if p := last[path]; p.Done != int64(len(want)) || p.Total != int64(len(want)) || p.Files != 2 {
			t.Fatalf("last progress of %s: %+v", path, p)
		}
	}
	if calls < 4 {
		t.Fatalf("only %d progress calls", calls)
	}
	if got, err := resolveModel(m, opts.CacheDir); err != nil || got != dir {
		t.Fatalf("resolve after pull: %q, %v", got, err)
	}
	// A second pull re-verifies and downloads nothing.
	before := h.count("acme/tiny/main/onnx/model.onnx")
	if _, err := PullModel(context.Background(), m, opts); err != nil {
		t.Fatal(err)
	}
	if after := h.count("acme/tiny/main/onnx/model.onnx"); after != before {
		t.Fatalf("verified file downloaded again (%d -> %d requests)", before, after)
	}
	// A file damaged in the cache: Resolve notices the size change, Pull repairs it.
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := resolveModel(m, opts.CacheDir); !errors.Is(err, ErrChecksum) {
		t.Fatalf("resolve of a damaged folder: %v", err)
	}
	if _, err := PullModel(context.Background(), m, opts); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "tokenizer.json")); !bytes.Equal(got, tok) {
		t.Fatal("damaged file not repaired")
	}
}

func TestPullResumesAfterCut(t *testing.T) {
	h, srv := newHub(t)
	m, weights, _ := testModel(h, 3<<20)
	key := "acme/tiny/main/onnx/model.onnx"
	cut := len(weights) / 3
	h.faults[key] = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if n != 1 {
			return false
		}
		// Promise the whole file, send a third, then drop the connection.
		w.Header().Set("Content-Length", strconv.Itoa(len(weights)))
		w.WriteHeader(http.StatusOK)
		w.Write(weights[:cut])
		w.(http.Flusher).Flush()
		h.mu.Lock()
		h.served += int64(cut)
		h.mu.Unlock()
		panic(http.ErrAbortHandler)
	}
	opts := testOpts(t, srv)
	dir, err := PullModel(context.Background(), m, opts)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "onnx", "model.onnx"))
	if !bytes.Equal(got, weights) {
		t.Fatal("resumed file differs")
	}
	if h.count(key) != 2 {
		t.Fatalf("%d requests, want 2", h.count(key))
	}
	if len(h.ranges) != 1 || h.ranges[0] != key+" bytes="+strconv.Itoa(cut)+"-" {
		t.Fatalf("range requests %v, want one from byte %d", h.ranges, cut)
	}
	if h.served > int64(len(weights))+int64(len(`{"model":{"type":"WordPiece"}}`))+1 {
		t.Fatalf("served %d bytes: the resumed part was sent again", h.served)
	}
	if _, err := os.Stat(filepath.Join(dir, "onnx", "model.onnx.part")); !os.IsNotExist(err) {
		t.Fatal(".part left behind")
	}
}

func TestPullResumesPartFromEarlierRun(t *testing.T) {
	h, srv := newHub(t)
	m, weights, _ := testModel(h, 100_000)
	opts := testOpts(t, srv)
	part := filepath.Join(opts.CacheDir, "tiny", "onnx", "model.onnx.part")
	if err := os.MkdirAll(filepath.Dir(part), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(part, weights[:60_000], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := PullModel(context.Background(), m, opts); err != nil {
		t.Fatal(err)
	}
	if len(h.ranges) != 1 || !strings.HasSuffix(h.ranges[0], "bytes=60000-") {
		t.Fatalf("ranges %v", h.ranges)
	}
}

func TestPullRetriesServerErrors(t *testing.T) {
	h, srv := newHub(t)
	m, _, _ := testModel(h, 5000)
	key := "acme/tiny/main/tokenizer.json"
	h.faults[key] = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if n <= 2 {
			http.Error(w, "busy", http.StatusInternalServerError)
			return true
		}
		if n == 3 {
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return true
		}
		return false
	}
	opts := testOpts(t, srv)
	if _, err := PullModel(context.Background(), m, opts); err != nil {
		t.Fatal(err)
	}
	if h.count(key) != 4 {
		t.Fatalf("%d requests, want 4", h.count(key))
	}

	// Out of retries.
	h2, srv2 := newHub(t)
	m2, _, _ := testModel(h2, 5000)
	h2.faults[key] = func(w http.ResponseWriter, r *http.Request, n int) bool {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return true
	}
	opts2 := testOpts(t, srv2)
	opts2.Retries = 2
	_, err := PullModel(context.Background(), m2, opts2)
	if !errors.Is(err, ErrDownload) || h2.count(key) != 3 {
		t.Fatalf("err %v after %d requests, want ErrDownload after 3", err, h2.count(key))
	}
	if _, err := resolveModel(m2, opts2.CacheDir); !errors.Is(err, ErrNotPulled) {
		t.Fatalf("resolve after failed pull: %v", err)
	}
}

func TestPullBadChecksum(t *testing.T) {
	h, srv := newHub(t)
	m, weights, _ := testModel(h, 10_000)
	h.files["acme/tiny/main/onnx/model.onnx"] = blob(len(weights), 9) // same size, other bytes
	opts := testOpts(t, srv)
	_, err := PullModel(context.Background(), m, opts)
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("err %v, want ErrChecksum", err)
	}
	for _, p := range []string{"onnx/model.onnx", "onnx/model.onnx.part"} {
		if _, err := os.Stat(filepath.Join(opts.CacheDir, "tiny", p)); !os.IsNotExist(err) {
			t.Fatalf("%s kept after a checksum mismatch", p)
		}
	}
	// Wrong size is a checksum failure too.
	h.files["acme/tiny/main/onnx/model.onnx"] = weights[:5000]
	m.Files[0].SHA256 = digest(weights[:5000])
	if _, err := PullModel(context.Background(), m, opts); !errors.Is(err, ErrChecksum) {
		t.Fatalf("short file: %v", err)
	}
}

func TestPullNotFound(t *testing.T) {
	h, srv := newHub(t)
	m, _, _ := testModel(h, 100)
	delete(h.files, "acme/tiny/main/tokenizer.json")
	_, err := PullModel(context.Background(), m, testOpts(t, srv))
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err %v, want ErrNotFound", err)
	}
	if n := h.count("acme/tiny/main/tokenizer.json"); n != 1 {
		t.Fatalf("404 retried: %d requests", n)
	}
	h.faults["acme/tiny/main/onnx/model.onnx"] = func(w http.ResponseWriter, r *http.Request, n int) bool {
		http.Error(w, "no", http.StatusForbidden)
		return true
	}
	if _, err := PullModel(context.Background(), m, testOpts(t, srv)); !errors.Is(err, ErrDownload) {
		t.Fatalf("403: %v", err)
	}
}

func TestPullUnpinnedRecordsDigest(t *testing.T) {
	h, srv := newHub(t)
	m, weights, _ := testModel(h, 4000)
	m.Files[0].SHA256, m.Files[0].Size = "", 0
	opts := testOpts(t, srv)
	dir, err := PullModel(context.Background(), m, opts)
	if err != nil {
		t.Fatal(err)
	}
	s, err := readStamp(dir)
	if err != nil || s.Files[0].SHA256 != digest(weights) {
		t.Fatalf("stamp %+v, %v", s, err)
	}
	// The server now serves other bytes: the recorded digest rejects them.
	h.files["acme/tiny/main/onnx/model.onnx"] = blob(4000, 3)
	os.Remove(filepath.Join(dir, "onnx", "model.onnx"))
	if _, err := PullModel(context.Background(), m, opts); !errors.Is(err, ErrChecksum) {
		t.Fatalf("changed unpinned file: %v", err)
	}
	// A partial pin checks the digest's ends.
	h.files["acme/tiny/main/onnx/model.onnx"] = weights
	d := digest(weights)
	m.Files[0].SHA256 = d[:8] + "…" + d[60:]
	if _, err := PullModel(context.Background(), m, opts); err != nil {
		t.Fatal(err)
	}
	m.Files[0].SHA256 = "00000000…" + d[60:]
	os.Remove(filepath.Join(dir, "onnx", "model.onnx"))
	if _, err := PullModel(context.Background(), m, opts); !errors.Is(err, ErrChecksum) {
		t.Fatalf("wrong partial pin: %v", err)
	}
}

func TestPullCancelled(t *testing.T) {
	h, srv := newHub(t)
	m, _, _ := testModel(h, 100)
	h.faults["acme/tiny/main/onnx/model.onnx"] = func(w http.ResponseWriter, r *http.Request, n int) bool {
		http.Error(w, "down", http.StatusBadGateway)
		return true
	}
	opts := testOpts(t, srv)
	opts.Backoff = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := PullModel(ctx, m, opts); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want deadline exceeded", err)
	}
}

func TestPullInvalidManifest(t *testing.T) {
	for _, m := range []Model{
		{Name: "", Files: []File{{Path: "a"}}},
		{Name: "../x", Files: []File{{Path: "a"}}},
		{Name: "x"},
		{Name: "x", Files: []File{{Path: "../escape"}}},
		{Name: "x", Files: []File{{Path: "/abs"}}},
	} {
		if _, err := PullModel(context.Background(), m, Options{CacheDir: t.TempDir()}); !errors.Is(err, ErrUnknownModel) {
			t.Errorf("%+v: %v", m, err)
		}
	}
	if _, err := Pull(context.Background(), "no-such-model", Options{}); !errors.Is(err, ErrUnknownModel) {
		t.Errorf("unknown name: %v", err)
	}
}

// TestPullBuiltinURLs checks the URLs the built-in manifest asks for, against a hub that
// has nothing.
func TestPullBuiltinURLs(t *testing.T) {
	t.Setenv(environ.Models, "")
	h, srv := newHub(t)
	_, err := Pull(context.Background(), "all-MiniLM-L6-v2", testOpts(t, srv))
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err %v", err)
	}
	if h.count("Xenova/all-MiniLM-L6-v2/main/onnx/model.onnx") != 1 {
		t.Fatalf("requests %v", h.requests)
	}
	p := newPuller(Options{BaseURL: "https://mirror.example/hf/"})
	m, _ := Lookup("all-MiniLM-L6-v2")
	if got := p.url(m, m.Files[len(m.Files)-1]); got != "https://mirror.example/hf/sentence-transformers/all-MiniLM-L6-v2/resolve/main/1_Pooling/config.json" {
		t.Fatalf("url %s", got)
	}
	t.Setenv(environ.HFEndpoint, "http://endpoint.example")
	p = newPuller(Options{URLTemplate: "{base}/{repo}@{revision}/{path}"})
	ce, _ := Lookup("ms-marco-MiniLM-L-6-v2")
	if got := p.url(ce, ce.Files[0]); got != "http://endpoint.example/cross-encoder/ms-marco-MiniLM-L6-v2@233902d25c440f23af6f7d6e94d2946bac0bee0a/onnx/model.onnx" {
		t.Fatalf("url %s", got)
	}
}

// TestPullChecksServedDigest: a file without a pin of ours is checked against the sha256
// the server names for it (Hugging Face's X-Linked-Etag, the LFS oid at the pinned
// revision); an ETag that is not a sha256 names nothing.
func TestPullChecksServedDigest(t *testing.T) {
	cases := []struct {
		name, header, value string
		wrongBytes          bool
		wantErr             bool
	}{
		{"linked etag agrees", "X-Linked-Etag", `"%s"`, false, false},
		{"cdn etag agrees", "ETag", `"%s"`, false, false},
		{"linked etag disagrees", "X-Linked-Etag", `"%s"`, true, true},
		{"weak etag disagrees", "ETag", `W/"%s"`, true, true},
		{"git blob sha1 is not a digest", "ETag", `"0123456789abcdef0123456789abcdef01234567"`, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, srv := newHub(t)
			m, weights, _ := testModel(h, 4000)
			m.Files[0].SHA256, m.Files[0].Size = "", 0
			key := "acme/tiny/main/onnx/model.onnx"
			named := digest(weights)
			if c.wrongBytes {
				h.files[key] = blob(4000, 9) // the server's bytes are not the object it names
			}
			value := c.value
			if strings.Contains(value, "%s") {
				value = fmt.Sprintf(value, named)
			}
			h.faults[key] = func(w http.ResponseWriter, r *http.Request, n int) bool {
				w.Header().Set(c.header, value)
				return false
			}
			dir, err := PullModel(context.Background(), m, testOpts(t, srv))
			if c.wantErr {
				if !errors.Is(err, ErrChecksum) {
					t.Fatalf("err %v, want ErrChecksum", err)
				}
				if _, serr := os.Stat(filepath.Join(dir, "onnx", "model.onnx")); dir != "" && serr == nil {
					t.Fatal("a file that disagrees with the served digest was kept")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
