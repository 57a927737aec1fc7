package mcpserver

import (
	"reflect"
	"strings"
	"testing"
)

// TestChromaCollectionAnalyzer: chroma_create_collection takes a BM25 analyzer as a flat
// argument (beside Chroma's flat HNSW ones), the collection's BM25 uses it, and
// chroma_get_collection_info reports it; an unknown analyzer or a Chroma configuration
// object is a tool error that creates nothing.
func TestChromaCollectionAnalyzer(t *testing.T) {
	m := newStore(t)
	cs := connect(t, New(m, Options{}))
	for _, c := range []struct {
		name     string
		args     map[string]any
		errWant  string // "" = success
		analyzer string // its analyzer afterwards
	}{
		{"german", map[string]any{"collection_name": "de", "analyzer": "de", "metadata": map[string]any{"lang": "de"}}, "", "de"},
		{"cjk", map[string]any{"collection_name": "ja", "analyzer": "cjk"}, "", "cjk"},
		{"default", map[string]any{"collection_name": "plain"}, "", "en"},
		{"empty analyzer is the default", map[string]any{"collection_name": "plain2", "analyzer": ""}, "", "en"},
		{"unknown", map[string]any{"collection_name": "x1", "analyzer": "klingon"}, `unknown analyzer "klingon"`, ""},
		{"not a string", map[string]any{"collection_name": "x2", "analyzer": 7}, "analyzer", ""},
		{"huge", map[string]any{"collection_name": "x3", "analyzer": strings.Repeat("a", 500<<10)}, "unknown analyzer", ""},
		{"configuration object", map[string]any{"collection_name": "x4", "configuration": map[string]any{"analyzer": "de"}}, "configuration", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out collectionOutput
			res := call(t, cs, toolChromaCreateCollection, c.args, &out)
			name := c.args["collection_name"].(string)
			if c.errWant != "" {
				if !res.IsError || !strings.Contains(errorText(res), c.errWant) {
					t.Fatalf("error=%v %q, want %q", res.IsError, errorText(res), c.errWant)
				}
				if _, err := m.GetCollection(name); err == nil {
					t.Fatalf("a refused create made collection %s", name)
				}
				return
			}
			if res.IsError || !strings.Contains(out.Message, "analyzer "+c.analyzer) {
				t.Fatalf("create: %s %+v", errorText(res), out)
			}
			var info collectionInfoOutput
			if res := call(t, cs, toolChromaCollectionInfo, map[string]any{"collection_name": name}, &info); res.IsError || info.Analyzer != c.analyzer {
				t.Fatalf("info: %s %+v, want analyzer %s", errorText(res), info, c.analyzer)
			}
			if got := m.Collection(name).Analyzer(); got != c.analyzer {
				t.Fatalf("library sees %q", got)
			}
		})
	}
	// The German collection's BM25 stems German: "Haus" finds "Häuser".
	if res := call(t, cs, toolChromaAddDocuments, map[string]any{"collection_name": "de", "documents": []string{"Die Häuser sind groß.", "Der Hund schläft."}, "ids": []string{"de1", "de2"}}, nil); res.IsError {
		t.Fatalf("add: %s", errorText(res))
	}
	var q queryDocumentsOutput
	if res := call(t, cs, toolChromaQueryDocuments, map[string]any{"collection_name": "de", "query_texts": []string{"Haus"}}, &q); res.IsError || !reflect.DeepEqual(q.IDs, [][]string{{"de1"}}) {
		t.Fatalf("query: %s %+v", errorText(res), q.IDs)
	}
}

// TestMemorySearchStrategies: memory_search takes cascade, cascade_threshold and
// dedupe_source; each result names the collection and step that answered it.
func TestMemorySearchStrategies(t *testing.T) {
	m := newStore(t)
	cs := connect(t, New(m, Options{}))
	add := func(col string, docs []map[string]any) {
		t.Helper()
		if res := call(t, cs, toolAdd, map[string]any{"collection": col, "documents": docs}, nil); res.IsError {
			t.Fatalf("add: %s", errorText(res))
		}
	}
	add("gold", []map[string]any{{"id": "g1", "text": "to deploy run make deploy", "metadata": map[string]any{"source": "faq.md"}}})
	add("kb", []map[string]any{{"id": "k1", "text": "deploy deploy deploy with kubectl", "metadata": map[string]any{"source": "a.md"}},
		{"id": "k2", "text": "deploy deploy notes", "metadata": map[string]any{"source": "a.md"}}, {"id": "k3", "text": "deploy on friday", "metadata": map[string]any{"source": "b.md"}}})
	type hit struct {
		ID, Collection string
		Cascade        int
	}
	for _, c := range []struct {
		name    string
		args    map[string]any
		want    []hit
		errWant string
	}{
		{"cascade stops at gold", map[string]any{"cascade": []string{"gold", "kb"}, "cascade_threshold": 0.1}, []hit{{"g1", "gold", 1}}, ""},
		{"cascade falls back", map[string]any{"cascade": []string{"gold", "kb"}, "cascade_threshold": 100},
			[]hit{{"g1", "gold", 1}, {"k1", "kb", 2}, {"k2", "kb", 2}, {"k3", "kb", 2}}, ""},
		{"cascade with dedupe", map[string]any{"cascade": []string{"gold", "kb"}, "cascade_threshold": 100, "dedupe_source": true},
			[]hit{{"g1", "gold", 1}, {"k1", "kb", 2}, {"k3", "kb", 2}}, ""},
		{"dedupe one collection", map[string]any{"collection": "kb", "dedupe_source": true}, []hit{{"k1", "kb", 0}, {"k3", "kb", 0}}, ""},
		{"cascade and collection", map[string]any{"cascade": []string{"gold"}, "collection": "kb"}, nil, "cascade and collection"},
		{"threshold alone", map[string]any{"cascade_threshold": 1}, nil, "cascade_threshold without cascade"},
		{"empty cascade", map[string]any{"cascade": []string{}}, nil, "without collections"},
		{"missing collection", map[string]any{"cascade": []string{"gold", "nope"}, "cascade_threshold": 100}, nil, "not found"},
		{"too many", map[string]any{"cascade": strings.Split(strings.Repeat("c,", 5000)+"c", ",")}, nil, "invalid"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := map[string]any{"query": "deploy", "mode": "bm25"}
			for k, v := range c.args {
				args[k] = v
			}
			var out searchOutput
			res := call(t, cs, toolSearch, args, &out)
			if c.errWant != "" {
				if !res.IsError || !strings.Contains(errorText(res), c.errWant) {
					t.Fatalf("error=%v %q, want %q", res.IsError, errorText(res), c.errWant)
				}
				return
			}
			if res.IsError {
				t.Fatal(errorText(res))
			}
			var got []hit
			for _, r := range out.Results {
				got = append(got, hit{r.ID, r.Collection, r.Cascade})
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("%+v, want %+v", got, c.want)
			}
		})
	}
}
