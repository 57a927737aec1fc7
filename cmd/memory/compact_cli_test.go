package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/vecfile"
	"github.com/agentmem/memory/webui"
)

// TestIndexCompacts: an index run that stores at least compactMin documents compacts the
// collection's BM25 index and says so (--compact=false does not), searches answer the
// same after it, and memory compact does it on demand, --all for every collection.
func TestIndexCompacts(t *testing.T) {
	defer func(n int) { compactMin = n }(compactMin)
	compactMin = 20
	dir := t.TempDir()
	src := filepath.Join(dir, "docs.jsonl")
	jsonl(t, src, 30, nil)
	small := filepath.Join(dir, "small.jsonl")
	jsonl(t, small, 5, nil)
	store := filepath.Join(dir, "s")

	out, _ := mustCLI(t, 0, "index", "--store", store, "--batch", "4", "--compact=false", small)
	if strings.Contains(out, "compacted") {
		t.Fatalf("--compact=false compacted:\n%s", out)
	}
	out, _ = mustCLI(t, 0, "index", "--store", store, "--batch", "4", small)
	if strings.Contains(out, "compacted") {
		t.Fatalf("a run of 5 documents (under %d) compacted:\n%s", compactMin, out)
	}
	before, _ := mustCLI(t, 0, "search", "--store", store, "--mode", "bm25", "-k", "5", "--json", "otters number 7")
	out, _ = mustCLI(t, 0, "index", "--store", store, "--batch", "4", src)
	if !strings.Contains(out, `compacted the BM25 index of "default"`) {
		t.Fatalf("a run of 30 documents did not compact:\n%s", out)
	}
	after, _ := mustCLI(t, 0, "search", "--store", store, "--mode", "bm25", "-k", "5", "--json", "otters number 7")
	if strings.Count(after, "\n") != 5 || !strings.Contains(after, `"id":"d7"`) || strings.Count(before, "\n") != 5 {
		t.Fatalf("search after compacting:\n%s\nbefore:\n%s", after, before)
	}
	mustCLI(t, 0, "collections", "--store", store, "--create", "notes")
	out, _ = mustCLI(t, 0, "compact", "--store", store, "--all")
	if !strings.Contains(out, "compacted the BM25 index of every collection") {
		t.Fatalf("compact --all:\n%s", out)
	}
	out, _ = mustCLI(t, 0, "compact", "--store", store, "-c", "notes")
	if !strings.Contains(out, `"notes"`) {
		t.Fatalf("compact -c notes:\n%s", out)
	}
	mustCLI(t, 1, "compact", "--store", store, "-c", "nope")
	mustCLI(t, 2, "compact", "--store", store, "--all", "-c", "notes")
	mustCLI(t, 2, "compact", "--store", store, "extra")
	again, _ := mustCLI(t, 0, "search", "--store", store, "--mode", "bm25", "-k", "5", "--json", "otters number 7")
	if again != after {
		t.Fatalf("compact changed the results:\n%s\n%s", after, again)
	}
}

// TestSearchByVectorFlag: --vector reads one vector (a JSON array or a one-row .npy) and
// searches by it, dense without a QUERY; a vector of another dimension, an embedder id
// that is not the store's, or a file of two vectors are errors naming what is wrong.
func TestSearchByVectorFlag(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "docs.jsonl")
	jsonl(t, src, 12, nil)
	store := filepath.Join(dir, "s")
	mustCLI(t, 0, "index", "--store", store, "--embedder", "hash:16", src)
	// The vector the store's embedder makes for one document's text finds that document.
	m := openTest(t, store)
	vs, err := m.Embedder().Embed(context.Background(), []string{"Doc 7\ndocument number 7 about otters"})
	m.Close()
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(vs[0])
	vfile := filepath.Join(dir, "v.json")
	writeFile(t, vfile, string(js))
	out, _ := mustCLI(t, 0, "search", "--store", store, "--vector", vfile, "-k", "3", "--json")
	if !strings.HasPrefix(out, `{"id":"d7"`) {
		t.Fatalf("--vector: want d7 first:\n%s", out)
	}
	npy := filepath.Join(dir, "v.npy")
	writeMatrix(t, npy, vecfile.NPY, [][]float32{vs[0]})
	if out2, _ := mustCLI(t, 0, "search", "--store", store, "--vector", npy, "-k", "3", "--json"); out2 != out {
		t.Fatalf("--vector .npy answers otherwise:\n%s\n%s", out2, out)
	}
	mustCLI(t, 0, "search", "--store", store, "--vector", vfile, "--vector-embedder", "hash-bigram-v1/16", "otters", "-k", "3")
	two := filepath.Join(dir, "two.npy")
	writeMatrix(t, two, vecfile.NPY, [][]float32{vs[0], vs[0]})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--vector", writeTemp(t, dir, "short.json", "[1, 2]")}, "have 16"},
		{[]string{"--vector", vfile, "--vector-embedder", "e5-base-v2"}, `"e5-base-v2"`},
		{[]string{"--vector", two}, "holds 2 vectors"},
		{[]string{"--vector", writeTemp(t, dir, "junk.json", "[1, \"x\"]")}, "not a JSON array of numbers"},
	} {
		_, errs := mustCLI(t, 1, append([]string{"search", "--store", store}, c.args...)...)
		if !strings.Contains(errs, "invalid query vector") || !strings.Contains(errs, c.want) {
			t.Fatalf("%v: %s", c.args, errs)
		}
	}
	mustCLI(t, 2, "search", "--store", store, "--vector-embedder", "x", "otters")
}

// TestEvalReportServedByUI: eval --report-out writes a report that serve --ui lists, and
// the page and its API answer from the store.
func TestEvalReportServedByUI(t *testing.T) {
	dir := t.TempDir()
	beirDir := tinyBEIR(t, dir)
	kept, report := filepath.Join(dir, "kept"), filepath.Join(dir, "report.json")
	out, _ := mustCLI(t, 0, "eval", "--data", beirDir, "--keep", kept, "--report-out", report)
	if !strings.Contains(out, "report       "+report) {
		t.Fatalf("eval --report-out:\n%s", out)
	}
	rep, err := webui.ReadEvalReport(report)
	if err != nil || rep.Metrics.NDCG10 != 1 {
		t.Fatalf("report: %+v, %v", rep.Metrics, err)
	}
	mustCLI(t, 2, "serve", "--store", kept, "--retrieve", "127.0.0.1:0", "--ui-report", report)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"--store", kept, "--ui", "127.0.0.1:0", "--ui-report", report}, &stdout, &stderr)
	}()
	addrs := waitAddrs(t, &stderr, 1, done)
	for path, want := range map[string]string{
		"/":                                 "<html",
		"/api/reports":                      `"ndcg@10":1`,
		"/api/search?q=sleeping+otters&k=1": `"id":"1"`,
		"/api/collections":                  `"count":2`,
	} {
		resp, err := http.Get(addrs["ui"] + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(strings.ToLower(string(b)), strings.ToLower(want)) {
			t.Fatalf("GET %s: %d %.400s (want %s)", path, resp.StatusCode, b, want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
}

// writeTemp writes content to dir/name and returns the path.
func writeTemp(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	writeFile(t, p, content)
	return p
}
