package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIAnalyzer: --analyzer records the analyzer of a new store (and, with --collection,
// of a new collection); search uses it; another or an unknown one is an error.
func TestCLIAnalyzer(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "s")
	ja := filepath.Join(dir, "ja.jsonl")
	writeFile(t, ja, `{"id":"ja1","text":"コンピュータサイエンスを勉強します。"}`+"\n"+`{"id":"ja2","text":"東京の天気は晴れです。"}`+"\n")
	de := filepath.Join(dir, "de.jsonl")
	writeFile(t, de, `{"id":"de1","text":"Die Häuser sind groß."}`+"\n")
	mustCLI(t, 0, "index", "--store", store, "--analyzer", "cjk", ja)
	out, _ := mustCLI(t, 0, "search", "--store", store, "--mode", "bm25", "--json", "サイエンス")
	if !strings.Contains(out, `"ja1"`) || strings.Contains(out, `"ja2"`) {
		t.Fatalf("cjk search: %s", out)
	}
	mustCLI(t, 0, "index", "--store", store, "--collection", "de", "--analyzer", "de", de)
	out, _ = mustCLI(t, 0, "search", "--store", store, "--collection", "de", "--mode", "bm25", "--json", "Haus")
	if !strings.Contains(out, `"de1"`) {
		t.Fatalf("de search: %s", out)
	}
	_, errs := mustCLI(t, 1, "index", "--store", store, "--analyzer", "en", ja)
	if !strings.Contains(errs, "analyzer does not match") || !strings.Contains(errs, "--analyzer") {
		t.Fatalf("another analyzer: %s", errs)
	}
	_, errs = mustCLI(t, 1, "index", "--store", store, "--collection", "de", "--analyzer", "fr", de)
	if !strings.Contains(errs, "analyzer does not match") {
		t.Fatalf("another collection analyzer: %s", errs)
	}
	_, errs = mustCLI(t, 1, "index", "--store", filepath.Join(dir, "t"), "--analyzer", "klingon", ja)
	if !strings.Contains(errs, `unknown analyzer "klingon"`) || !strings.Contains(errs, "cjk") {
		t.Fatalf("unknown analyzer: %s", errs)
	}
}
