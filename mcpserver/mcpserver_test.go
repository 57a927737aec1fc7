package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/memtest"
	"github.com/agentmem/memory/sop"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func newStore(t testing.TB) *memory.Memory {
	t.Helper()
	m, err := memory.Open("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	return m
}

func newLibrary(t *testing.T) *sop.Library {
	t.Helper()
	lib := sop.NewLibrary(sop.Options{})
	if err := lib.Add(sop.Procedure{
		Name: "debug_python_code", Description: "Find and fix a bug in Python code.",
		Trigger: sop.Triggers{"debug", "bug", "not working"}, Category: "coding", Priority: 8,
		Steps: []sop.Step{{Action: "Reproduce the problem."}, {Action: "Run the tests again.", Condition: "fix proposed"}},
	}, sop.Procedure{
		Name: "deploy_service", Trigger: sop.Triggers{"deploy", "release"}, Category: "devops", Priority: 5,
		Steps: []sop.Step{{Action: "Build the image."}},
	}); err != nil {
		t.Fatal(err)
	}
	return lib
}

func connect(t testing.TB, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v1"}, nil)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call invokes a tool and decodes its structured output into out; it returns the result.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if out != nil && !res.IsError {
		data, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s: decode %s: %v", name, data, err)
		}
	}
	return res
}

func errorText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestToolsOverInMemoryTransport(t *testing.T) {
	m := newStore(t)
	cs := connect(t, New(m, Options{SOPs: newLibrary(t)}))
	ctx := context.Background()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		schema, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatalf("%s: input schema: %v", tool.Name, err)
		}
		if !strings.Contains(string(schema), `"type":"object"`) {
			t.Errorf("%s: input schema %s", tool.Name, schema)
		}
		if tool.Description == "" {
			t.Errorf("%s: no description", tool.Name)
		}
		if tool.Name == toolSearch && !strings.Contains(string(schema), `"required":["query"]`) {
			t.Errorf("memory_search schema does not require query: %s", schema)
		}
	}
	sort.Strings(names)
	want := "chroma_add_documents,chroma_create_collection,chroma_delete_collection,chroma_delete_documents,chroma_get_collection_count," +
		"chroma_get_collection_info,chroma_get_documents,chroma_list_collections,chroma_modify_collection,chroma_peek_collection," +
		"chroma_query_documents,chroma_update_documents,memory_add,memory_delete,memory_get,memory_search,sop_match"
	if got := strings.Join(names, ","); got != want {
		t.Fatalf("tools = %s", got)
	}

	var added addOutput
	res := call(t, cs, toolAdd, map[string]any{"documents": []any{
		map[string]any{"id": "go", "title": "Go", "text": "Go is a statically typed language from Google.", "metadata": map[string]any{"lang": "go"}},
		map[string]any{"id": "py", "title": "Python", "text": "Python is a dynamically typed language.", "metadata": map[string]any{"lang": "py"}},
	}}, &added)
	if res.IsError || added.Stored != 2 {
		t.Fatalf("add: %v %+v", errorText(res), added)
	}
	if memtest.Count(t, m) != 2 {
		t.Fatalf("store holds %d docs", memtest.Count(t, m))
	}

	var found searchOutput
	res = call(t, cs, toolSearch, map[string]any{"query": "statically typed language", "top_k": 1}, &found)
	if res.IsError || len(found.Results) != 1 || found.Results[0].ID != "go" || found.Results[0].Score <= 0 {
		t.Fatalf("search: %v %+v", errorText(res), found)
	}
	res = call(t, cs, toolSearch, map[string]any{"query": "typed language", "where": map[string]any{"lang": "py"}, "mode": "bm25"}, &found)
	if res.IsError || len(found.Results) != 1 || found.Results[0].ID != "py" {
		t.Fatalf("filtered search: %v %+v", errorText(res), found)
	}

	var got getOutput
	res = call(t, cs, toolGet, map[string]any{"id": "py"}, &got)
	if res.IsError || got.Title != "Python" || got.Metadata["lang"] != "py" {
		t.Fatalf("get: %v %+v", errorText(res), got)
	}

	var del deleteOutput
	res = call(t, cs, toolDelete, map[string]any{"ids": []string{"py", "unknown"}}, &del)
	if res.IsError || del.Deleted != 1 || memtest.Count(t, m) != 1 {
		t.Fatalf("delete: %v %+v count %d", errorText(res), del, memtest.Count(t, m))
	}
	res = call(t, cs, toolGet, map[string]any{"id": "py"}, nil)
	if !res.IsError || !strings.Contains(errorText(res), "not found") {
		t.Fatalf("get deleted: isError %v %q", res.IsError, errorText(res))
	}

	var sops sopOutput
	res = call(t, cs, toolSOP, map[string]any{"query": "my script is not working, help me debug it"}, &sops)
	if res.IsError || len(sops.Matches) != 1 || sops.Matches[0].Name != "debug_python_code" {
		t.Fatalf("sop_match: %v %+v", errorText(res), sops)
	}
	mt := sops.Matches[0]
	if len(mt.MatchedTriggers) != 2 || len(mt.Steps) != 2 || !strings.Contains(mt.Rendered, "Reproduce the problem.") || mt.Score <= 0 {
		t.Fatalf("sop match = %+v", mt)
	}
	res = call(t, cs, toolSOP, map[string]any{"query": "nothing relevant here"}, &sops)
	if res.IsError || len(sops.Matches) != 0 {
		t.Fatalf("sop_match none: %+v", sops)
	}
}

func TestToolErrors(t *testing.T) {
	m := newStore(t)
	cs := connect(t, New(m, Options{MaxAddDocs: 1}))
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{toolSearch, map[string]any{"query": " "}, "query is empty"},
		{toolSearch, map[string]any{"query": "x", "top_k": 1000}, "top_k"},
		{toolSearch, map[string]any{"query": "x", "mode": "magic"}, "mode"},
		{toolSearch, map[string]any{"query": "x", "where": map[string]any{"n": map[string]any{"$bogus": 1}}}, "filter"},
		{toolAdd, map[string]any{"documents": []any{}}, "no documents"},
		{toolAdd, map[string]any{"documents": []any{map[string]any{"id": "a", "text": "x"}, map[string]any{"id": "b", "text": "y"}}}, "at most 1"},
		{toolAdd, map[string]any{"documents": []any{map[string]any{"id": "", "text": "x"}}}, "empty document id"},
		{toolDelete, map[string]any{"ids": []string{}}, "no ids"},
		{toolGet, map[string]any{"id": "nope"}, "not found"},
		{toolSOP, map[string]any{"query": "debug"}, "no SOP library"},
	}
	for _, c := range cases {
		res := call(t, cs, c.tool, c.args, nil)
		if !res.IsError || !strings.Contains(errorText(res), c.want) {
			t.Errorf("%s %v: isError %v %q, want %q", c.tool, c.args, res.IsError, errorText(res), c.want)
		}
	}
	// Schema validation rejects a missing required field before the handler runs.
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: toolSearch, Arguments: map[string]any{}})
	if err == nil && !res.IsError {
		t.Fatal("missing query accepted")
	}
}

func TestReadOnly(t *testing.T) {
	cs := connect(t, New(newStore(t), Options{ReadOnly: true}))
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == toolAdd || tool.Name == toolDelete {
			t.Fatalf("read-only server lists %s", tool.Name)
		}
	}
}

func TestHTTPBearer(t *testing.T) {
	m := newStore(t)
	if err := m.Add(context.Background(), memory.Document{ID: "a", Text: "alpha beta"}); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(NewHTTPHandler(New(m, Options{}), HTTPOptions{Token: "s3cret"}))
	defer hs.Close()

	for _, auth := range []string{"", "Bearer wrong", "Basic s3cret"} {
		req, err := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
			t.Fatalf("auth %q: status %d", auth, resp.StatusCode)
		}
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "http-client", Version: "v1"}, nil)
	httpClient := &http.Client{Transport: bearerTransport{token: "s3cret"}}
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: httpClient}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var found searchOutput
	res := call(t, cs, toolSearch, map[string]any{"query": "alpha"}, &found)
	if res.IsError || len(found.Results) != 1 || found.Results[0].ID != "a" {
		t.Fatalf("search over HTTP: %v %+v", errorText(res), found)
	}
}

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestAddToLongCollectionName: memory_add to a collection whose name is too long for its
// index directories once escaped is a tool error naming the invalid collection name, and
// creates no collection (issue 21, point 8).
func TestAddToLongCollectionName(t *testing.T) {
	m := newStore(t)
	cs := connect(t, New(m, Options{}))
	long := strings.Repeat("é", 80) // 160 bytes, 480 escaped
	res := call(t, cs, toolAdd, map[string]any{"collection": long, "documents": []any{map[string]any{"id": "a", "text": "x"}}}, nil)
	if !res.IsError || !strings.Contains(errorText(res), "invalid collection name") {
		t.Fatalf("isError %v %q, want an invalid collection name", res.IsError, errorText(res))
	}
	if slices.Contains(memtest.Collections(t, m), long) {
		t.Fatal("the refused collection was created")
	}
}

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
