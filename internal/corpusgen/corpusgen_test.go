package corpusgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/beir"
)

func testSource() *beir.Dataset {
	return &beir.Dataset{
		Corpus: []beir.Doc{
			{ID: "a", Title: "Alpha title", Text: "Cells grow fast. Tumors grow slower. 3 mice died! Why? Nobody knows."},
			{ID: "b", Title: "Beta title", Text: "Insulin lowers glucose. Diabetes is common in adults."},
			{ID: "c", Title: "", Text: "No title here. So it is skipped."},
		},
		Queries: []beir.Query{{ID: "q1", Text: "insulin glucose"}, {ID: "q2", Text: "tumor growth"}},
		Qrels:   beir.Qrels{"q1": {"b": 1}, "q2": {"a": 2, "zz": 1}},
	}
}

func TestSentences(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"One. Two. 3 three", []string{"One.", "Two.", "3 three"}},
		{"e.g. lower case stays. End", []string{"e.g. lower case stays.", "End"}},
		{"", nil},
		{"No end", []string{"No end"}},
	} {
		if got := Sentences(tc.in); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%q: %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestGenerateDeterministic: same options, same bytes; a smaller N is a prefix of a larger
// one; qrels name only passages built from relevant documents; the batch has its size.
func TestGenerateDeterministic(t *testing.T) {
	ctx := context.Background()
	gen := func(n int) string {
		dir := t.TempDir()
		if err := Generate(ctx, testSource(), dir, Options{N: n, TargetBytes: 120, BatchQueries: 7}); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	a, b, small := gen(300), gen(300), gen(100)
	read := func(dir, name string) []byte {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	for _, f := range []string{"corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "batch-queries.jsonl"} {
		if !bytes.Equal(read(a, f), read(b, f)) {
			t.Fatalf("%s differs between two runs", f)
		}
	}
	if !bytes.HasPrefix(read(a, "corpus.jsonl"), read(small, "corpus.jsonl")) {
		t.Fatal("100 passages are not a prefix of 300")
	}
	ds, err := beir.Load(a, "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Corpus) != 300 || len(ds.Queries) != 2 {
		t.Fatalf("%d passages, %d queries", len(ds.Corpus), len(ds.Queries))
	}
	titles := map[string]string{}
	var total int
	for _, d := range ds.Corpus {
		titles[d.ID] = d.Title
		total += len(d.Title) + len(d.Text)
		if d.Title == "" || d.Text == "" {
			t.Fatalf("empty passage %+v", d)
		}
	}
	if mean := total / len(ds.Corpus); mean < 60 || mean > 180 {
		t.Fatalf("mean passage %d bytes, target 120", mean)
	}
	for q, rel := range ds.Qrels {
		want := map[string]string{"q1": "Beta title", "q2": "Alpha title"}[q]
		if len(rel) == 0 {
			t.Fatalf("%s: no relevant passages", q)
		}
		for p := range rel {
			if titles[p] != want {
				t.Fatalf("%s: relevant %s has title %q", q, p, titles[p])
			}
		}
	}
	if n := bytes.Count(read(a, "batch-queries.jsonl"), []byte("\n")); n != 7 {
		t.Fatalf("batch has %d queries", n)
	}
	p, err := Passage(testSource(), Options{N: 300, TargetBytes: 120, BatchQueries: 7}, 42)
	if err != nil || p.ID != ds.Corpus[42].ID || p.Text != ds.Corpus[42].Text {
		t.Fatalf("Passage(42) = %+v, %v; file has %+v", p, err, ds.Corpus[42])
	}
	if err := Generate(ctx, &beir.Dataset{}, t.TempDir(), Options{}); !errors.Is(err, ErrSource) {
		t.Fatalf("empty source: %v", err)
	}
}

// TestMetadata: every passage line carries its bucket and lang, and each value of either
// key selects a tenth of the passages.
func TestMetadata(t *testing.T) {
	dir := t.TempDir()
	if err := Generate(context.Background(), testSource(), dir, Options{N: 200, TargetBytes: 120, BatchQueries: 3}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "corpus.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	buckets, langs := map[float64]int{}, map[string]int{}
	for i, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var d struct {
			ID       string         `json:"_id"`
			Metadata map[string]any `json:"metadata"`
		}
		if err := json.Unmarshal(line, &d); err != nil {
			t.Fatal(err)
		}
		want := Metadata(i)
		if d.Metadata["bucket"] != want["bucket"] || d.Metadata["lang"] != want["lang"] {
			t.Fatalf("passage %d (%s): metadata %v, want %v", i, d.ID, d.Metadata, want)
		}
		buckets[d.Metadata["bucket"].(float64)]++
		langs[d.Metadata["lang"].(string)]++
	}
	if len(buckets) != 10 || len(langs) != 10 {
		t.Fatalf("%d buckets, %d langs", len(buckets), len(langs))
	}
	for b, n := range buckets {
		if n != 20 {
			t.Errorf("bucket %v: %d passages, want 20", b, n)
		}
	}
	for l, n := range langs {
		if n != 20 {
			t.Errorf("lang %q: %d passages, want 20", l, n)
		}
	}
}
