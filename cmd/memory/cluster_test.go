//go:build weaviate

// End-to-end tests of the CLI and its servers on a real three-node Weaviate cluster
// (issue #41): run with `go test -tags weaviate -run Cluster ./cmd/memory` (make
// test-weaviate). TestMain starts the cluster with scripts/weaviate-cluster.sh before the
// tests and stops it after; if it cannot start, every test of the binary fails with the
// script's output: none is skipped.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/testcluster"
	"github.com/agentmem/memory/vectorstore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testCluster is the cluster of this test binary.
var testCluster *testcluster.Cluster

func init() { runTests = runWithCluster }

func runWithCluster(m *testing.M) int {
	c, err := testcluster.Start("../..")
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		return 1
	}
	testCluster = c
	fmt.Fprintf(os.Stderr, "weaviate cluster up: %s\n", c.Addr)
	code := m.Run()
	if err := c.Stop(code == 0); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return code
}

// clusterDim is the dimension of the hash embedder of the tests' stores.
const clusterDim = 64

// clusterCorpus is the JSONL corpus of the tests: countries and their capitals.
func clusterCorpus() string {
	rows := []struct{ id, title, text, region string }{
		{"fr", "France", "Paris is the capital of France, on the Seine.", "europe"},
		{"de", "Germany", "Berlin is the capital of Germany, on the Spree.", "europe"},
		{"it", "Italy", "Rome is the capital of Italy, on the Tiber.", "europe"},
		{"es", "Spain", "Madrid is the capital of Spain, on the Manzanares.", "europe"},
		{"pt", "Portugal", "Lisbon is the capital of Portugal, on the Tagus.", "europe"},
		{"jp", "Japan", "Tokyo is the capital of Japan, on Tokyo Bay.", "asia"},
		{"kr", "Korea", "Seoul is the capital of South Korea, on the Han river.", "asia"},
		{"eg", "Egypt", "Cairo is the capital of Egypt, on the Nile.", "africa"},
		{"ar", "Argentina", "Buenos Aires is the capital of Argentina, on the River Plate.", "america"},
		{"pe", "Peru", "Lima is the capital of Peru, near the Pacific coast.", "america"},
		{"otter", "Otters", "Sea otters hold hands while sleeping so that they do not drift apart.", "nature"},
		{"heron", "Herons", "Herons stand still in shallow water waiting for fish.", "nature"},
	}
	var b strings.Builder
	for _, r := range rows {
		line, _ := json.Marshal(map[string]any{"id": r.id, "title": r.title, "text": r.text, "metadata": map[string]any{"region": r.region, "len": len(r.text)}})
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

const clusterDocs = 12

// seedCluster builds an embedded store from the corpus with `memory index`, exports it
// with `memory export` and imports the export into a new store on the cluster with
// `memory import`; it returns the cluster store's address, the embedded store's directory
// and the export.
func seedCluster(t *testing.T) (addr, dir, export string) {
	t.Helper()
	tmp := t.TempDir()
	corpus := filepath.Join(tmp, "corpus.jsonl")
	writeFile(t, corpus, clusterCorpus())
	dir = filepath.Join(tmp, "store")
	mustCLI(t, 0, "index", "--store", dir, "--embedder", fmt.Sprintf("hash:%d", clusterDim), corpus)
	export = filepath.Join(tmp, "export.jsonl")
	mustCLI(t, 0, "export", "--store", dir, export)
	addr = testCluster.Store(t)
	// ALL: every replica has every document before the tests search (Weaviate ranks on
	// one replica of each shard).
	out, _ := mustCLI(t, 0, "import", "--store", addr, "--consistency", "ALL", export)
	if !strings.Contains(out, fmt.Sprintf("%d documents read, %d stored", clusterDocs, clusterDocs)) {
		t.Fatalf("import into the cluster: %s", out)
	}
	return addr, dir, export
}

// openCluster opens the cluster store addr with the library, with the tests' embedder.
func openCluster(t *testing.T, addr string) *memory.Memory {
	t.Helper()
	m, err := memory.Open(addr, memory.WithEmbedder(vectorstore.NewHashEmbedder(clusterDim)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func ids(rs []memory.Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

// sameRanking compares a ranking (keys and scores: ids, or titles with byTitle) with the
// library's results: the same scores position by position, and the same keys, except that
// documents of equal score may come in any order (Weaviate answers from one replica of
// each shard, chosen per request, and each replica's HNSW graph breaks ties its own way),
// and a tied group that reaches the end of the list may hold other members of the tie.
func sameRanking(keys []string, scores []float64, want []memory.Result, byTitle bool) error {
	if len(keys) != len(want) {
		return fmt.Errorf("%d results, library %d", len(keys), len(want))
	}
	wkeys := make([]string, len(want))
	for i, r := range want {
		wkeys[i] = r.ID
		if byTitle {
			wkeys[i] = r.Title
		}
	}
	for i, r := range want {
		if math.Abs(scores[i]-r.Score) > 1e-9*math.Max(1, math.Abs(r.Score)) {
			return fmt.Errorf("score #%d %v, library %v (%v, library %v)", i, scores[i], r.Score, keys, wkeys)
		}
	}
	for lo := 0; lo < len(want); {
		hi := lo + 1
		for hi < len(want) && want[hi].Score == want[lo].Score {
			hi++
		}
		if hi < len(want) || lo == 0 && hi == len(want) && len(want) == 1 {
			a, b := slices.Sorted(slices.Values(keys[lo:hi])), slices.Sorted(slices.Values(wkeys[lo:hi]))
			if !slices.Equal(a, b) {
				return fmt.Errorf("results %d-%d: %v, library %v", lo, hi-1, keys, wkeys)
			}
		}
		lo = hi
	}
	return nil
}

// docLines are the document lines of an export (its header and end lines left out).
func docLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if !strings.HasPrefix(l, `{"memory_export`) {
			out = append(out, l)
		}
	}
	return out
}

// TestClusterSearchCLI: `memory search` on a store on the cluster, as a table and as
// --json, answers what the library's Search on the same store answers; export, import,
// index, count and get work there too, and the flags a cluster cannot honour are refused
// by name.
func TestClusterSearchCLI(t *testing.T) {
	addr, dir, export := seedCluster(t)
	m := openCluster(t, addr)
	ctx := context.Background()

	for _, mode := range []memory.Mode{memory.BM25, memory.Dense, memory.Hybrid} {
		want, err := m.Search(ctx, "capital of Germany", memory.WithMode(mode), memory.TopK(5))
		if err != nil || len(want) != 5 {
			t.Fatalf("library %s search: %v %v", mode, ids(want), err)
		}
		out, _ := mustCLI(t, 0, "search", "--store", addr, "--mode", string(mode), "-k", "5", "--json", "capital", "of", "Germany")
		var got []memory.Result
		dec := json.NewDecoder(strings.NewReader(out))
		for {
			var r memory.Result
			if err := dec.Decode(&r); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("--json output: %v\n%s", err, out)
			}
			got = append(got, r)
		}
		if mode == memory.Hybrid {
			// RRF fuses ranks, and ranks within a tie (dense scores of 0 here) differ from
			// replica to replica: only the best, first in both lists, is compared.
			if len(got) != len(want) || got[0].ID != "de" || want[0].ID != "de" || got[0].Explain.BM25 == nil || got[0].Explain.Dense == nil {
				t.Fatalf("hybrid: CLI %v, library %v, first's explanation %+v", ids(got), ids(want), got[0].Explain)
			}
			continue
		}
		scores := make([]float64, len(got))
		for i, r := range got {
			scores[i] = r.Score
		}
		if err := sameRanking(ids(got), scores, want, false); err != nil {
			t.Fatalf("%s: CLI and library: %v", mode, err)
		}
		if mode == memory.BM25 && (got[0].ID != "de" || got[0].Explain.BM25 == nil) {
			t.Errorf("bm25: first %s, explain %+v", got[0].ID, got[0].Explain)
		}
	}

	// The table: a header, one row per result (the best first), its snippet under it.
	out, _ := mustCLI(t, 0, "search", "--store", addr, "-k", "3", "where do otters sleep")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[0], "#") || !strings.Contains(lines[0], "BM25") || !strings.Contains(lines[0], "DENSE") {
		t.Fatalf("table:\n%s", out)
	}
	if f := strings.Fields(lines[1]); len(f) < 6 || f[0] != "1" || !slices.Contains(f, "otter") || !strings.Contains(out, "Otters") {
		t.Fatalf("table's first row: %q\n%s", lines[1], out)
	}
	// --where is translated to Weaviate's filter.
	out, _ = mustCLI(t, 0, "search", "--store", addr, "--json", "--where", `{"region":"asia"}`, "capital")
	if n := strings.Count(out, "\n"); n != 2 || !strings.Contains(out, `"id":"jp"`) || !strings.Contains(out, `"id":"kr"`) {
		t.Fatalf("--where region asia: %d results\n%s", n, out)
	}

	// count, get; export back: the same document lines as the embedded store's export.
	if out, _ := mustCLI(t, 0, "count", "--store", addr); strings.TrimSpace(out) != fmt.Sprint(clusterDocs) {
		t.Fatalf("count: %q", out)
	}
	if out, _ := mustCLI(t, 0, "get", "--store", addr, "heron"); !strings.Contains(out, "Herons stand still") {
		t.Fatalf("get: %s", out)
	}
	back := filepath.Join(t.TempDir(), "back.jsonl")
	mustCLI(t, 0, "export", "--store", addr, back)
	if a, b := docLines(t, export), docLines(t, back); !slices.Equal(a, b) || len(a) != clusterDocs {
		t.Fatalf("the cluster's export differs from the embedded store's:\n%s\n---\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	// Importing it again stores nothing (every document is there identically).
	if out, _ := mustCLI(t, 0, "import", "--store", addr, back); !strings.Contains(out, fmt.Sprintf("0 stored, %d already stored identically", clusterDocs)) {
		t.Fatalf("second import: %s", out)
	}

	// collections lists it; delete removes a document.
	if out, _ := mustCLI(t, 0, "collections", "--store", addr); !regexp.MustCompile(`(?m)^default +12 +weaviate:word +-$`).MatchString(out) {
		t.Fatalf("collections:\n%s", out)
	}
	mustCLI(t, 0, "delete", "--store", addr, "--consistency", "ALL", "heron")
	if out, _ := mustCLI(t, 0, "count", "--store", addr); strings.TrimSpace(out) != fmt.Sprint(clusterDocs-1) {
		t.Fatalf("count after delete: %q", out)
	}

	// index writes into a cluster store too.
	addr2 := testCluster.Store(t)
	corpus := filepath.Join(t.TempDir(), "c.jsonl")
	writeFile(t, corpus, clusterCorpus())
	out, _ = mustCLI(t, 0, "index", "--store", addr2, "--consistency", "ALL", "--embedder", fmt.Sprintf("hash:%d", clusterDim), corpus)
	if !strings.Contains(out, fmt.Sprintf("collection now holds %d", clusterDocs)) {
		t.Fatalf("index into the cluster: %s", out)
	}
	out, _ = mustCLI(t, 0, "search", "--store", addr2, "--mode", "bm25", "--json", "-k", "1", "Nile")
	if !strings.Contains(out, `"id":"eg"`) {
		t.Fatalf("search after index: %s", out)
	}
	// The file re-indexed without its first line: that document is removed, as from a
	// directory store (the cluster lists the sources it holds).
	corpusLines := strings.SplitAfter(strings.TrimSpace(clusterCorpus()), "\n")
	writeFile(t, corpus, strings.Join(corpusLines[1:], ""))
	out, _ = mustCLI(t, 0, "index", "--store", addr2, "--consistency", "ALL", "--embedder", fmt.Sprintf("hash:%d", clusterDim), corpus)
	if !strings.Contains(out, fmt.Sprintf("collection now holds %d", clusterDocs-1)) || !strings.Contains(out, "removed 1 stale") {
		t.Fatalf("re-index into the cluster: %s", out)
	}

	// Flags the cluster cannot honour fail naming them; --consistency is for a cluster.
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"search", "--store", addr, "--bm25-scoring", "lucene", "x"}, 1, "--bm25-scoring"},
		{[]string{"search", "--store", addr, "--index", "flat", "x"}, 1, "--index"},
		{[]string{"search", "--store", addr, "--consistency", "MOST", "x"}, 1, "MOST"},
		{[]string{"search", "--store", dir, "--consistency", "ALL", "x"}, 2, "--consistency"},
		{[]string{"search", "--store", testCluster.Addr + "/NoSuchStore", "x"}, 1, "holds no collection of the store"},
		{[]string{"serve", "--store", testCluster.Addr + "/NoSuchStore", "--mcp"}, 1, "holds no collection of the store"},
		{[]string{"export", "--store", testCluster.Addr + "/NoSuchStore", "-"}, 1, "holds no collection of the store"},
		{[]string{"restore", "--store", addr, back}, 1, "Weaviate"},
		{[]string{"backup", "--store", addr, filepath.Join(t.TempDir(), "b.tar")}, 1, "Memory.Backup"},
	} {
		_, _, errs := func() (int, string, string) {
			code, o, e := cli(t, c.args...)
			if code != c.code {
				t.Errorf("%q: exit %d, want %d\n%s%s", c.args, code, c.code, o, e)
			}
			return code, o, e
		}()
		if !strings.Contains(errs, c.want) {
			t.Errorf("%q: %q does not name %s", c.args, errs, c.want)
		}
	}
}

// TestClusterServeRetrieve: `serve --retrieve --compat search-r1` on a store on the
// cluster answers a Search-R1 request (several queries, topk, return_scores) with the
// documents and scores of the library's Search on the same store, dense (the default
// with an embedder) and BM25.
func TestClusterServeRetrieve(t *testing.T) {
	addr, _, _ := seedCluster(t)
	m := openCluster(t, addr)
	queries := []string{"capital of Japan", "sleeping otters", "river Nile"}
	corpusText := map[string]string{} // by title
	for _, l := range strings.Split(strings.TrimSpace(clusterCorpus()), "\n") {
		var d struct{ Title, Text string }
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatal(err)
		}
		corpusText[d.Title] = d.Text
	}
	for _, mode := range []memory.Mode{memory.Dense, memory.BM25} {
		args := []string{"--compat", "search-r1"}
		if mode == memory.BM25 {
			args = append(args, "--mode", "bm25")
		}
		base, stderr := startServeLog(t, addr, args...)
		body, _ := json.Marshal(map[string]any{"queries": queries, "topk": 3, "return_scores": true})
		resp, err := http.Post(base+"/retrieve", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var r struct {
			Result [][]struct {
				Document struct{ Title, Text, Contents string } `json:"document"`
				Score    float64                                `json:"score"`
			} `json:"result"`
		}
		if err := json.Unmarshal(data, &r); err != nil || resp.StatusCode != 200 || len(r.Result) != len(queries) {
			t.Fatalf("%s: %d %v\n%s\n%s", mode, resp.StatusCode, err, data, stderr.String())
		}
		for i, q := range queries {
			want, err := m.Search(context.Background(), q, memory.WithMode(mode), memory.TopK(3))
			if err != nil || len(want) == 0 {
				t.Fatalf("%s %q: library %v %v", mode, q, ids(want), err)
			}
			var titles []string
			var scores []float64
			for _, h := range r.Result[i] {
				// --compat search-r1 gives a document with a title as a corpus row: "title"\ntext.
				title, text, ok := strings.Cut(h.Document.Contents, "\n")
				title, uerr := strconv.Unquote(title)
				if !ok || uerr != nil || corpusText[title] != text {
					t.Errorf("%s %q: served %+v, not a document of the corpus", mode, q, h.Document)
				}
				titles, scores = append(titles, title), append(scores, h.Score)
			}
			if err := sameRanking(titles, scores, want, true); err != nil {
				t.Errorf("%s %q: served and library: %v", mode, q, err)
			}
		}
		if mode == memory.BM25 && !strings.Contains(stderr.String(), "BM25 scores are Weaviate's") {
			t.Errorf("no warning that the BM25 scores are Weaviate's:\n%s", stderr.String())
		}
	}
}

// TestClusterServeMCP: `serve --mcp` on a store on the cluster answers the memory_search
// tool over stdio (JSON-RPC) with the library's hybrid results, and memory_add and
// memory_get write to and read from the cluster.
func TestClusterServeMCP(t *testing.T) {
	addr, _, _ := seedCluster(t)
	m := openCluster(t, addr)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	old := serveStdin
	serveStdin = inR
	defer func() { serveStdin = old }()
	var stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- runServe(context.Background(), []string{"--store", addr, "--consistency", "ALL", "--mcp"}, outW, &stderr)
		outW.Close()
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	call := func(tool string, args map[string]any) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v\n%s", tool, err, res, stderr.String())
		}
		out, _ := json.Marshal(res.StructuredContent)
		return string(out)
	}
	for _, mode := range []memory.Mode{memory.BM25, memory.Dense, memory.Hybrid} {
		out := call("memory_search", map[string]any{"query": "capital of Italy", "top_k": 3, "mode": string(mode)})
		var sr struct {
			Results []struct {
				ID    string  `json:"id"`
				Score float64 `json:"score"`
			} `json:"results"`
		}
		if err := json.Unmarshal([]byte(out), &sr); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		want, err := m.Search(ctx, "capital of Italy", memory.WithMode(mode), memory.TopK(3))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		var scores []float64
		for _, r := range sr.Results {
			got, scores = append(got, r.ID), append(scores, r.Score)
		}
		if len(got) == 0 || got[0] != "it" {
			t.Fatalf("memory_search %s over stdio: %v\n%s", mode, got, out)
		}
		if mode == memory.Hybrid {
			continue // RRF of ranks within ties: see TestClusterSearchCLI
		}
		if err := sameRanking(got, scores, want, false); err != nil {
			t.Fatalf("memory_search %s over stdio and the library: %v", mode, err)
		}
	}
	// The Chroma tools: a query is SearchBatch, a get is Find, both built for the cluster.
	if out := call("chroma_query_documents", map[string]any{"collection_name": "default", "query_texts": []string{"capital of Italy", "Nile"}, "n_results": 2}); !strings.Contains(out, `"it"`) || !strings.Contains(out, `"eg"`) {
		t.Fatalf("chroma_query_documents: %s", out)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chroma_get_documents", Arguments: map[string]any{"collection_name": "default", "where": map[string]any{"region": "asia"}}})
	if err != nil || res.IsError {
		t.Fatalf("chroma_get_documents on a cluster: %v %+v", err, res)
	}
	got, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(got), `"ids":["jp","kr"]`) {
		t.Fatalf("chroma_get_documents on a cluster, region asia: %s", got)
	}
	call("memory_add", map[string]any{"documents": []map[string]any{{"id": "nz", "text": "Wellington is the capital of New Zealand."}}})
	if out := call("memory_get", map[string]any{"id": "nz"}); !strings.Contains(out, "Wellington") {
		t.Fatalf("memory_get after memory_add: %s", out)
	}
	if d, err := m.Get(ctx, "nz"); err != nil || !strings.Contains(d.Text, "Wellington") {
		t.Fatalf("the library does not see the MCP write: %+v %v", d, err)
	}
	cs.Close()
	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop when stdin closed")
	}
}

// TestClusterEval: `memory eval --keep` on a new store on the cluster fills it with the
// BEIR corpus and evaluates it; `eval --store` then evaluates the filled store as it is. A
// store the cluster does not hold is not found (as a mistyped directory), never searched
// as an empty one.
func TestClusterEval(t *testing.T) {
	beirDir := tinyBEIR(t, t.TempDir())
	addr := testCluster.Store(t)
	code, _, errs := cli(t, "eval", "--data", beirDir, "--store", addr)
	if code != 1 || !strings.Contains(errs, "holds no collection of the store") || !strings.Contains(errs, addr) {
		t.Fatalf("eval --store of a store the cluster does not hold: exit %d\n%s", code, errs)
	}
	for _, flag := range []string{"--keep", "--store"} {
		out, _ := mustCLI(t, 0, "eval", "--data", beirDir, flag, addr, "--consistency", "ALL")
		if !strings.Contains(out, "nDCG@10      1.0000") || !strings.Contains(out, "(2 docs, 1 queries)") {
			t.Fatalf("eval %s on the cluster:\n%s", flag, out)
		}
	}
	if out, _ := mustCLI(t, 0, "count", "--store", addr); strings.TrimSpace(out) != "2" {
		t.Fatalf("the evaluated cluster store holds %q", out)
	}
	code, _, errs = cli(t, "eval", "--data", beirDir, "--store", addr, "--analyzer", "en_lucene")
	if code != 1 || !strings.Contains(errs, "Analyzer") {
		t.Fatalf("eval --analyzer on the cluster: exit %d, %s", code, errs)
	}
}
