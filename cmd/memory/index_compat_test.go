package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/searchr1"
	"github.com/agentmem/memory/vectorstore"
	"github.com/spf13/pflag"
)

// issue43Corpus are the Search-R1 rows whose contents came back changed (issue #43), and
// a plain one.
var issue43Corpus = map[string]string{
	"noquotes": "No quotes title\nkiwi text here",
	"oneline":  "single line kiwi only",
	"empty":    "\"\"\nkiwi empty title",
	"crlf":     "\"T3\"\r\nkiwi crlf",
	"plain":    "\"Kiwi\"\nThe kiwi is a bird.",
}

// corpusFile writes rows as a Search-R1 corpus ({"id", "contents"} lines).
func corpusFile(t *testing.T, path string, rows map[string]string) {
	t.Helper()
	var b strings.Builder
	for id, c := range rows {
		line, _ := json.Marshal(map[string]string{"id": id, "contents": c})
		b.Write(line)
		b.WriteByte('\n')
	}
	writeFile(t, path, b.String())
}

// retrieveBM25 posts one query to a --compat search-r1 server and returns its BM25 hits.
func retrieveBM25(t *testing.T, base, query string, topk int) []struct{ Title, Text, Contents string } {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"queries": []string{query}, "topk": topk, "return_scores": false})
	resp, err := http.Post(base+"/retrieve", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var r struct {
		Result [][]struct{ Title, Text, Contents string } `json:"result"`
	}
	if err := json.Unmarshal(data, &r); err != nil || resp.StatusCode != 200 || len(r.Result) != 1 {
		t.Fatalf("%d %s (%v)", resp.StatusCode, data, err)
	}
	return r.Result[0]
}

// TestIndexCompatContentsVerbatim: `index --compat search-r1` keeps each row's contents
// byte for byte, so `serve --compat search-r1` returns them as the corpus holds them, with
// the original BM25 retriever's title and text, for each of the four rows of issue #43;
// the new store gets the en_lucene analyzer, so serving warns of nothing. A store indexed
// without --compat serves rebuilt contents, and serve says so.
func TestIndexCompatContentsVerbatim(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "wiki.jsonl")
	corpusFile(t, file, issue43Corpus)
	store := filepath.Join(dir, "compat")
	_, errs := mustCLI(t, 0, "index", "--store", store, "--compat", "search-r1", file)
	if !strings.Contains(errs, "--compat search-r1: contents stored byte for byte, no chunking, analyzer en_lucene") {
		t.Errorf("index note:\n%s", errs)
	}
	base, log := startServeLog(t, store, "--compat", "search-r1")
	hits := retrieveBM25(t, base, "kiwi", 10)
	if len(hits) != len(issue43Corpus) {
		t.Fatalf("%d hits: %+v", len(hits), hits)
	}
	seen := map[string]bool{}
	for _, h := range hits {
		for id, c := range issue43Corpus {
			if c == h.Contents {
				seen[id] = true
			}
		}
		first, rest, _ := strings.Cut(h.Contents, "\n")
		if h.Title != strings.Trim(first, `"`) || h.Text != rest {
			t.Errorf("hit %q: title %q text %q, want the original's split", h.Contents, h.Title, h.Text)
		}
	}
	if len(seen) != len(issue43Corpus) {
		t.Errorf("rows returned verbatim: %v of %d\n%+v", seen, len(issue43Corpus), hits)
	}
	if strings.Contains(log.String(), "warning") {
		t.Errorf("serve warns of a store indexed for Search-R1:\n%s", log.String())
	}

	plain := filepath.Join(dir, "plain")
	mustCLI(t, 0, "index", "--store", plain, file)
	base, log = startServeLog(t, plain, "--compat", "search-r1")
	changed := 0
	for _, h := range retrieveBM25(t, base, "kiwi", 10) {
		found := false
		for _, c := range issue43Corpus {
			found = found || c == h.Contents
		}
		if !found {
			changed++
		}
	}
	if changed != 4 || !strings.Contains(log.String(), "documents have titles") || !strings.Contains(log.String(), "pyserini") {
		t.Errorf("default index: %d rows changed (want the 4 of the issue); serve log:\n%s", changed, log.String())
	}
}

// kiwiPassage is a passage of 1,368 characters: over the 1,000 non-space characters a
// prose chunk holds.
func kiwiPassage() string {
	var b strings.Builder
	b.WriteString("\"Kiwi (bird)\"\n")
	for b.Len() < 1368 {
		b.WriteString("Kiwi are flightless birds endemic to New Zealand and lay large eggs. ")
	}
	return b.String()[:1368]
}

// chunksOf returns the number of chunks of document id in store.
func chunksOf(t *testing.T, store, id string) int {
	t.Helper()
	m, err := memory.OpenExisting(store, memory.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	res, err := m.Search(context.Background(), "flightless kiwi birds", memory.WithMode(memory.BM25), memory.TopK(5))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.ID == id {
			return r.Chunks
		}
	}
	t.Fatalf("%s not found: %+v", id, res)
	return 0
}

// TestIndexChunkFlag: a passage corpus is stored row by row, never chunked, by default
// (and with --compat search-r1); --chunk chunks it anyway; other documents are chunked by
// default and --chunk=false stores them whole. serve --compat search-r1 returns the whole
// row even from a chunked store.
func TestIndexChunkFlag(t *testing.T) {
	dir := t.TempDir()
	passage := kiwiPassage()
	corpus := filepath.Join(dir, "corpus.jsonl")
	corpusFile(t, corpus, map[string]string{"long": passage, "short": "\"Eggs\"\nKiwi eggs are large."})
	md := filepath.Join(dir, "md", "kiwi.md")
	writeFile(t, md, "# Kiwi\n\n"+passage[14:])

	s := filepath.Join(dir, "default")
	_, errs := mustCLI(t, 0, "index", "--store", s, corpus)
	if n := chunksOf(t, s, "long"); n != 1 || !strings.Contains(errs, "passage corpus") {
		t.Errorf("passage corpus by default: %d chunks; stderr:\n%s", n, errs)
	}
	s = filepath.Join(dir, "compat")
	mustCLI(t, 0, "index", "--store", s, "--compat", "search-r1", corpus)
	if n := chunksOf(t, s, "long"); n != 1 {
		t.Errorf("--compat search-r1: %d chunks", n)
	}
	chunked := filepath.Join(dir, "chunked")
	mustCLI(t, 0, "index", "--store", chunked, "--chunk", corpus)
	if n := chunksOf(t, chunked, "long"); n < 2 {
		t.Errorf("--chunk: %d chunks", n)
	}
	s = filepath.Join(dir, "md-default")
	mustCLI(t, 0, "index", "--store", s, filepath.Dir(md))
	if n := chunksOf(t, s, filepath.ToSlash(md)); n < 2 {
		t.Errorf("markdown by default: %d chunks", n)
	}
	s = filepath.Join(dir, "md-whole")
	mustCLI(t, 0, "index", "--store", s, "--chunk=false", filepath.Dir(md))
	if n := chunksOf(t, s, filepath.ToSlash(md)); n != 1 {
		t.Errorf("--chunk=false: %d chunks", n)
	}
	// The chunked store served for Search-R1: the whole row, not a chunk of it.
	base, _ := startServeLog(t, chunked, "--compat", "search-r1")
	hits := retrieveBM25(t, base, "flightless kiwi birds", 1)
	if len(hits) != 1 || hits[0].Contents != passage {
		t.Errorf("compat /retrieve over a chunked store: %+v, want the whole row of %d bytes", hits, len(passage))
	}
}

// TestIndexCompatEmbedText: with --compat search-r1 a passage is embedded as its contents
// verbatim (the original's index builder embeds "passage: " + contents, the quoted title
// included), and with --embedder its passages are cut at 256 tokens, as build_index.sh
// builds the original's index, unless --passage-max-tokens says otherwise.
func TestIndexCompatEmbedText(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "wiki.jsonl")
	contents := "\"Paris\"\nParis is the capital of France."
	corpusFile(t, file, map[string]string{"fr": contents})
	store := filepath.Join(dir, "s")
	mustCLI(t, 0, "index", "--store", store, "--compat", "search-r1", "--embedder", "hash:16", file)
	m, err := memory.OpenExisting(store, memory.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	d, err := m.Get(context.Background(), "fr")
	m.Close()
	if err != nil {
		t.Fatal(err)
	}
	want, err := vectorstore.NewHashEmbedder(16).Embed(context.Background(), []string{contents})
	if err != nil {
		t.Fatal(err)
	}
	if d.Title != "" || d.Text != contents || len(d.Embedding) != 16 {
		t.Fatalf("stored %+v", d)
	}
	for i := range want[0] {
		if d.Embedding[i] != want[0][i] {
			t.Fatalf("stored vector %v, want the embedding of the contents verbatim %v", d.Embedding, want[0])
		}
	}

	model := t.TempDir() // a model folder (not Model2Vec's): an ONNX bi-encoder
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"--embedder", model}, searchr1.CompatPassageMaxTokens},
		{[]string{"--embedder", model, "--passage-max-tokens", "180"}, 180},
		{[]string{"--embedder", "hash:16"}, 0}, // no token caps
		{nil, 0},                               // the store's recorded embedder, reloaded as recorded
	} {
		var sf storeFlags
		fs := pflag.NewFlagSet("index", pflag.ContinueOnError)
		sf.addStore(fs)
		sf.addEmbedder(fs, true)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		compatSettings(searchr1.CompatSearchR1, &sf, "", "", false, true, false, fileScan{}, io.Discard)
		if sf.modelFlags.passageMaxTokens != c.want {
			t.Errorf("%v: passage cap %d, want %d", c.args, sf.modelFlags.passageMaxTokens, c.want)
		}
	}
}
