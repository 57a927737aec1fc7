package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/memtest"
	"github.com/agentmem/memory/vectorstore"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// chromaFixture adds the script's documents to collection "kb" through chroma_add_documents.
func chromaFixture(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	var out addDocumentsOutput
	res := call(t, cs, toolChromaAddDocuments, map[string]any{
		"collection_name": "kb",
		"documents": []string{
			"Deploy the service with kubectl apply after the image is built.",
			"Python is a dynamically typed language used for scripting.",
			"Go is a statically typed language; deploy Go binaries as one file.",
			"Bananas are yellow fruit rich in potassium.",
		},
		"ids":       []string{"deploy", "python", "go", "banana"},
		"metadatas": []map[string]any{{"topic": "ops", "year": 2024}, {"topic": "lang", "year": 2019}, {"topic": "lang", "year": 2023}, {"topic": "food", "year": 2020}},
	}, &out)
	if res.IsError || out.Added != 4 || out.Collection != "kb" {
		t.Fatalf("add: %s %+v", errorText(res), out)
	}
}

// TestChromaTools runs every Chroma-compatible tool as an agent written for Chroma's MCP
// server calls it, over the in-memory transport.
func TestChromaTools(t *testing.T) {
	m := newStore(t)
	cs := connect(t, New(m, Options{}))
	chromaFixture(t, cs)

	var cols listCollectionsOutput
	if res := call(t, cs, toolChromaListCollections, nil, &cols); res.IsError || !slices.Contains(cols.Collections, "kb") {
		t.Fatalf("list: %s %+v", errorText(res), cols)
	}
	var created collectionOutput
	if res := call(t, cs, toolChromaCreateCollection, map[string]any{"collection_name": "notes", "space": "cosine"}, &created); res.IsError || created.Collection != "notes" {
		t.Fatalf("create: %s %+v", errorText(res), created)
	}
	if res := call(t, cs, toolChromaCreateCollection, map[string]any{"collection_name": "notes"}, nil); !res.IsError || !strings.Contains(errorText(res), "already exists") {
		t.Fatalf("create twice: %s", errorText(res))
	}
	if res := call(t, cs, toolChromaListCollections, map[string]any{"limit": 1, "offset": 1}, &cols); res.IsError || !reflect.DeepEqual(cols.Collections, []string{"notes"}) {
		t.Fatalf("list page: %s %+v", errorText(res), cols)
	}
	var count countOutput
	if res := call(t, cs, toolChromaCollectionCount, map[string]any{"collection_name": "kb"}, &count); res.IsError || count.Count != 4 {
		t.Fatalf("count: %s %+v", errorText(res), count)
	}
	var peek chromaGetOutput
	if res := call(t, cs, toolChromaPeekCollection, map[string]any{"collection_name": "kb", "limit": 2}, &peek); res.IsError ||
		!reflect.DeepEqual(peek.IDs, []string{"banana", "deploy"}) || len(peek.Documents) != 2 || peek.Metadatas[0]["topic"] != "food" {
		t.Fatalf("peek: %s %+v", errorText(res), peek)
	}
	var info collectionInfoOutput
	if res := call(t, cs, toolChromaCollectionInfo, map[string]any{"collection_name": "kb"}, &info); res.IsError || info.Count != 4 || len(info.SampleDocuments.IDs) != 3 {
		t.Fatalf("info: %s %+v", errorText(res), info)
	}
	if info.Metadata == nil || len(info.Metadata) != 0 {
		t.Fatalf("info metadata of a collection without any = %#v, want {}", info.Metadata)
	}

	// Collection metadata and modify: a rename answers under the new name as before, the old
	// name is a tool error; then back.
	if res := call(t, cs, toolChromaCreateCollection, map[string]any{"collection_name": "meta", "metadata": map[string]any{"purpose": "scratch", "v": 1, "gold": true}}, nil); res.IsError {
		t.Fatalf("create with metadata: %s", errorText(res))
	}
	var minfo collectionInfoOutput
	if res := call(t, cs, toolChromaCollectionInfo, map[string]any{"collection_name": "meta"}, &minfo); res.IsError ||
		!reflect.DeepEqual(minfo.Metadata, map[string]any{"purpose": "scratch", "v": 1.0, "gold": true}) {
		t.Fatalf("info with metadata: %s %+v", errorText(res), minfo)
	}
	queryIDs := func(col string) ([][]string, *mcp.CallToolResult) {
		var q queryDocumentsOutput
		res := call(t, cs, toolChromaQueryDocuments, map[string]any{"collection_name": col, "query_texts": []string{"deploy", "typed language"}, "n_results": 3}, &q)
		return q.IDs, res
	}
	beforeIDs, qres := queryIDs("kb")
	if qres.IsError {
		t.Fatalf("query before rename: %s", errorText(qres))
	}
	var mod collectionOutput
	if res := call(t, cs, toolChromaModifyCollection, map[string]any{"collection_name": "kb", "new_name": "kb2", "new_metadata": map[string]any{"owner": "ops"}}, &mod); res.IsError || mod.Collection != "kb2" {
		t.Fatalf("modify: %s %+v", errorText(res), mod)
	}
	if got, res := queryIDs("kb2"); res.IsError || !reflect.DeepEqual(got, beforeIDs) {
		t.Fatalf("query of the new name: %s %v, want %v", errorText(res), got, beforeIDs)
	}
	if _, res := queryIDs("kb"); !res.IsError || !strings.Contains(errorText(res), "not found") {
		t.Fatalf("query of the old name: error=%v %s", res.IsError, errorText(res))
	}
	if res := call(t, cs, toolChromaCollectionInfo, map[string]any{"collection_name": "kb2"}, &info); res.IsError || info.Count != 4 || info.Metadata["owner"] != "ops" {
		t.Fatalf("info after modify: %s %+v", errorText(res), info)
	}
	for _, bad := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"collection_name": "kb2"}, "new_name, new_metadata"},
		{map[string]any{"collection_name": "kb2", "new_name": "meta"}, "already exists"},
		{map[string]any{"collection_name": "nope", "new_name": "x"}, "not found"},
		{map[string]any{"collection_name": "kb2", "new_name": "bad\nname"}, "invalid collection name"},
		{map[string]any{"collection_name": "kb2", "new_name": "x", "new_metadata": map[string]any{"k": []any{1}}}, "invalid metadata"},
	} {
		if res := call(t, cs, toolChromaModifyCollection, bad.args, nil); !res.IsError || !strings.Contains(errorText(res), bad.want) {
			t.Fatalf("modify %v: error=%v %s, want %q", bad.args, res.IsError, errorText(res), bad.want)
		}
	}
	if res := call(t, cs, toolChromaModifyCollection, map[string]any{"collection_name": "meta", "new_metadata": map[string]any{}}, nil); res.IsError {
		t.Fatalf("modify metadata only: %s", errorText(res))
	}
	var cleared collectionInfoOutput
	if res := call(t, cs, toolChromaCollectionInfo, map[string]any{"collection_name": "meta"}, &cleared); res.IsError || cleared.Metadata == nil || len(cleared.Metadata) != 0 {
		t.Fatalf("metadata cleared: %s %+v", errorText(res), cleared)
	}
	if res := call(t, cs, toolChromaModifyCollection, map[string]any{"collection_name": "kb2", "new_name": "kb"}, nil); res.IsError {
		t.Fatalf("modify back: %s", errorText(res))
	}
	if res := call(t, cs, toolChromaDeleteCollection, map[string]any{"collection_name": "meta"}, nil); res.IsError {
		t.Fatalf("delete meta: %s", errorText(res))
	}

	// Query: two queries, where, where_document, include.
	var q queryDocumentsOutput
	res := call(t, cs, toolChromaQueryDocuments, map[string]any{
		"collection_name": "kb", "query_texts": []string{"deploy", "typed language"}, "n_results": 3,
		"where": map[string]any{"year": map[string]any{"$gte": 2020}}, "where_document": map[string]any{"$not_contains": "kubectl"},
		"include": []string{"documents", "distances", "embeddings"},
	}, &q)
	if res.IsError {
		t.Fatalf("query: %s", errorText(res))
	}
	if len(q.IDs) != 2 || !reflect.DeepEqual(q.IDs[0], []string{"go"}) || !reflect.DeepEqual(q.IDs[1], []string{"go"}) {
		t.Fatalf("query ids = %v", q.IDs)
	}
	// Without an embedder the distance is 1 - relevance: 0 for BM25's best.
	if q.Metadatas != nil || len(q.Documents[0]) != 1 || !strings.HasPrefix(q.Documents[0][0], "Go is") || q.Distances[0][0] != 0 || len(q.Embeddings[0]) != 1 {
		t.Fatalf("query includes: %+v", q)
	}
	res = call(t, cs, toolChromaQueryDocuments, map[string]any{"collection_name": "kb", "query_texts": []string{"deploy"},
		"where_document": map[string]any{"$or": []any{map[string]any{"$contains": "kubectl"}, map[string]any{"$contains": "Bananas"}}}}, &q)
	if res.IsError || !reflect.DeepEqual(q.IDs, [][]string{{"deploy"}}) || q.Metadatas[0][0]["topic"] != "ops" || q.Embeddings != nil {
		t.Fatalf("query $or: %s %+v", errorText(res), q)
	}

	// Get by ids (in their order), by filter, with limit and offset.
	var got chromaGetOutput
	if res := call(t, cs, toolChromaGetDocuments, map[string]any{"collection_name": "kb", "ids": []string{"python", "nope", "deploy"}}, &got); res.IsError ||
		!reflect.DeepEqual(got.IDs, []string{"python", "deploy"}) || got.Embeddings != nil || got.Metadatas[1]["year"] != 2024.0 {
		t.Fatalf("get ids: %s %+v", errorText(res), got)
	}
	if res := call(t, cs, toolChromaGetDocuments, map[string]any{"collection_name": "kb", "where": map[string]any{"topic": "lang"},
		"where_document": map[string]any{"$contains": "typed"}, "limit": 1, "offset": 1, "include": []string{"metadatas"}}, &got); res.IsError ||
		!reflect.DeepEqual(got.IDs, []string{"python"}) || got.Documents != nil {
		t.Fatalf("get filter: %s %+v", errorText(res), got)
	}

	// Update: text and merged metadata; the text is searchable afterwards.
	var up updateDocumentsOutput
	if res := call(t, cs, toolChromaUpdateDocuments, map[string]any{"collection_name": "kb", "ids": []string{"banana"},
		"documents": []string{"Plantains are starchy cooking bananas."}, "metadatas": []map[string]any{{"year": 2025}}}, &up); res.IsError || up.Updated != 1 {
		t.Fatalf("update: %s %+v", errorText(res), up)
	}
	d, err := m.Collection("kb").Get(context.Background(), "banana")
	if err != nil || d.Text != "Plantains are starchy cooking bananas." || d.Metadata["topic"] != "food" || d.Metadata["year"] != 2025.0 {
		t.Fatalf("after update: %+v %v", d, err)
	}
	if res := call(t, cs, toolChromaUpdateDocuments, map[string]any{"collection_name": "kb", "ids": []string{"nope"}, "documents": []string{"x"}}, nil); !res.IsError {
		t.Fatal("update of a missing id accepted")
	}

	// Delete by where, then by ids.
	var del deleteDocumentsOutput
	if res := call(t, cs, toolChromaDeleteDocuments, map[string]any{"collection_name": "kb", "where": map[string]any{"topic": "lang"}}, &del); res.IsError ||
		del.Deleted != 2 || !reflect.DeepEqual(del.IDs, []string{"go", "python"}) {
		t.Fatalf("delete where: %s %+v", errorText(res), del)
	}
	if res := call(t, cs, toolChromaDeleteDocuments, map[string]any{"collection_name": "kb", "ids": []string{"deploy", "nope"}}, &del); res.IsError || del.Deleted != 1 {
		t.Fatalf("delete ids: %s %+v", errorText(res), del)
	}
	if res := call(t, cs, toolChromaDeleteDocuments, map[string]any{"collection_name": "kb"}, nil); !res.IsError {
		t.Fatal("delete without ids or filter accepted")
	}
	if n := memtest.Count(t, m.Collection("kb")); n != 1 {
		t.Fatalf("kb holds %d documents, want 1", n)
	}
	if res := call(t, cs, toolChromaDeleteCollection, map[string]any{"collection_name": "notes"}, nil); res.IsError || slices.Contains(memtest.Collections(t, m), "notes") {
		t.Fatalf("delete collection: %s %v", errorText(res), memtest.Collections(t, m))
	}
	if res := call(t, cs, toolChromaCollectionCount, map[string]any{"collection_name": "notes"}, nil); !res.IsError || !strings.Contains(errorText(res), "not found") {
		t.Fatalf("count of a deleted collection: %s", errorText(res))
	}
}

// TestChromaToolsReadOnly: a read-only server lists the reading Chroma tools only.
func TestChromaToolsReadOnly(t *testing.T) {
	cs := connect(t, New(newStore(t), Options{ReadOnly: true}))
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	want := "chroma_get_collection_count,chroma_get_collection_info,chroma_get_documents,chroma_list_collections,chroma_peek_collection,chroma_query_documents,memory_get,memory_search,sop_match"
	if got := strings.Join(names, ","); got != want {
		t.Fatalf("tools = %s", got)
	}
}

// TestSearchWhereDocument: memory_search takes where_document (the base rejected it as an
// unexpected property).
func TestSearchWhereDocument(t *testing.T) {
	cs := connect(t, New(newStore(t), Options{}))
	chromaFixture(t, cs)
	var out searchOutput
	res := call(t, cs, toolSearch, map[string]any{"query": "deploy", "collection": "kb", "where_document": map[string]any{"$contains": "kubectl"}}, &out)
	if res.IsError || len(out.Results) != 1 || out.Results[0].ID != "deploy" {
		t.Fatalf("search: %s %+v", errorText(res), out)
	}
}

// snapshot is every stored document of every collection, for "nothing changed" checks.
func snapshot(t *testing.T, m *memory.Memory) string {
	t.Helper()
	var b strings.Builder
	for _, c := range memtest.Collections(t, m) {
		docs, err := m.Collection(c).Find(context.Background(), memory.FindOptions{})
		if err != nil {
			t.Fatal(err)
		}
		md, err := m.CollectionMetadata(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(docs)
		mdata, _ := json.Marshal(md)
		fmt.Fprintf(&b, "%s %s:%s\n", c, mdata, data)
	}
	return b.String()
}

// hostileCase is a call with hostile arguments and the cap its tool error must name.
type hostileCase struct {
	name, tool string
	args       map[string]any
	capName    string
}

// hostileCases are deep nesting, huge lists and huge strings, for each tool that takes them.
func hostileCases() []hostileCase {
	many := func(n int, f func(i int) any) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	id := func(i int) any { return fmt.Sprintf("id%d", i) }
	deep := func(depth int) map[string]any { return nestedWhere(depth) }
	deepDoc := func(depth int) map[string]any {
		w := map[string]any{"$contains": "x"}
		for range depth {
			w = map[string]any{"$and": []any{w}}
		}
		return w
	}
	return []hostileCase{
		{"where at the filter cap + 1", toolChromaQueryDocuments, map[string]any{"collection_name": "kb", "query_texts": []string{"x"}, "where": deep(memory.MaxFilterDepth + 1)}, "MaxFilterDepth"},
		{"where nested past the argument cap", toolChromaQueryDocuments, map[string]any{"collection_name": "kb", "query_texts": []string{"x"}, "where": deep(45)}, "MaxArgDepth"},
		{"where_document nested deep", toolChromaGetDocuments, map[string]any{"collection_name": "kb", "where_document": deepDoc(45)}, "MaxArgDepth"},
		{"delete where nested deep", toolChromaDeleteDocuments, map[string]any{"collection_name": "kb", "where": deep(memory.MaxFilterDepth + 1)}, "MaxFilterDepth"},
		{"delete where_document nested deep", toolChromaDeleteDocuments, map[string]any{"collection_name": "kb", "where_document": deepDoc(45)}, "MaxArgDepth"},
		{"too many query_texts", toolChromaQueryDocuments, map[string]any{"collection_name": "kb", "query_texts": many(defaultMaxQueries+1, func(int) any { return "q" })}, "MaxQueries"},
		{"huge query_text", toolChromaQueryDocuments, map[string]any{"collection_name": "kb", "query_texts": []string{strings.Repeat("w", defaultMaxQueryBytes+1)}}, "MaxQueryBytes"},
		{"too many get ids", toolChromaGetDocuments, map[string]any{"collection_name": "kb", "ids": many(defaultMaxGetIDs+1, id)}, "MaxGetIDs"},
		{"ids over the argument bytes", toolChromaGetDocuments, map[string]any{"collection_name": "kb", "ids": many(200_000, id)}, "MaxArgBytes"},
		{"huge n_results", toolChromaQueryDocuments, map[string]any{"collection_name": "kb", "query_texts": []string{"x"}, "n_results": 1 << 40}, "n_results"},
		{"huge peek limit", toolChromaPeekCollection, map[string]any{"collection_name": "kb", "limit": 1 << 40}, "MaxGetLimit"},
		{"get limit over the cap", toolChromaGetDocuments, map[string]any{"collection_name": "kb", "limit": defaultMaxGetLimit + 1}, "MaxGetLimit"},
		{"too many delete ids", toolChromaDeleteDocuments, map[string]any{"collection_name": "kb", "ids": many(defaultMaxDeleteIDs+1, id)}, "MaxDeleteIDs"},
		{"too many added documents", toolChromaAddDocuments, map[string]any{"collection_name": "kb", "documents": many(defaultMaxAddDocs+1, func(int) any { return "t" }), "ids": many(defaultMaxAddDocs+1, id)}, "MaxAddDocs"},
		{"huge added document", toolChromaAddDocuments, map[string]any{"collection_name": "kb", "documents": []string{strings.Repeat("w ", defaultMaxAddBytes/2+1)}, "ids": []string{"huge"}}, "MaxAddBytes"},
		{"too many updated documents", toolChromaUpdateDocuments, map[string]any{"collection_name": "kb", "ids": many(defaultMaxAddDocs+1, id), "documents": many(defaultMaxAddDocs+1, func(int) any { return "t" })}, "MaxAddDocs"},
		{"huge collection name", toolChromaCreateCollection, map[string]any{"collection_name": strings.Repeat("c", defaultMaxArgBytes+1)}, "MaxArgBytes"},
		{"too many collection metadata keys", toolChromaModifyCollection, map[string]any{"collection_name": "kb", "new_name": "kb9", "new_metadata": manyKeys(memory.MaxCollectionMetadataKeys + 1)}, "keys (max"},
		{"huge collection metadata", toolChromaCreateCollection, map[string]any{"collection_name": "c9", "metadata": map[string]any{"k": strings.Repeat("v", memory.MaxCollectionMetadataBytes)}}, "metadata of more than"},
		{"huge new name", toolChromaModifyCollection, map[string]any{"collection_name": "kb", "new_name": strings.Repeat("n", 300)}, "invalid collection name"},
		{"huge metadata value", toolChromaAddDocuments, map[string]any{"collection_name": "kb", "documents": []string{"t"}, "ids": []string{"m"}, "metadatas": []any{map[string]any{"k": strings.Repeat("v", defaultMaxAddBytes)}}}, "MaxAddBytes"},
		{"huge memory_search query", toolSearch, map[string]any{"query": strings.Repeat("w", defaultMaxQueryBytes+1)}, "MaxQueryBytes"},
	}
}

// TestChromaHostileArguments: deep nesting, huge lists and huge strings each get a tool
// error naming the cap, and leave the store as it was. What a call costs is counted, not
// timed (BenchmarkHostileArguments times it): the bytes the process allocates while it is
// sent, refused and answered stay within a small multiple of its arguments' size (about
// 24 times at most, for the client's encoding, the transport and the server's decoding
// together, plus a fixed 0.5 MB) — an answer that decoded more than the caps allow, or
// sized anything by a hostile count, would not.
func TestChromaHostileArguments(t *testing.T) {
	m := newStore(t)
	cs := connect(t, New(m, Options{}))
	chromaFixture(t, cs)
	before := snapshot(t, m)
	for _, c := range hostileCases() {
		t.Run(c.name, func(t *testing.T) {
			raw, err := json.Marshal(c.args)
			if err != nil {
				t.Fatal(err)
			}
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: json.RawMessage(raw)})
			runtime.ReadMemStats(&ms1)
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || !strings.Contains(errorText(res), c.capName) {
				t.Fatalf("want a tool error naming %s, got error=%v %.300s", c.capName, res.IsError, errorText(res))
			}
			alloc := ms1.TotalAlloc - ms0.TotalAlloc
			if limit := 64*uint64(len(raw)) + 4<<20; alloc > limit {
				t.Errorf("%d argument bytes: %d bytes allocated, over %d", len(raw), alloc, limit)
			}
			t.Logf("%d argument bytes: %d bytes allocated, %q", len(raw), alloc, errorText(res))
		})
	}
	if after := snapshot(t, m); after != before {
		t.Fatalf("store changed:\n%s\nwant\n%s", after, before)
	}
}

// BenchmarkHostileArguments times the round trip of each call of hostileCases over the
// in-memory transport (its arguments encoded beforehand): the server's refusal of each.
func BenchmarkHostileArguments(b *testing.B) {
	m := newStore(b)
	if err := m.Collection("kb").Add(context.Background(), memory.Document{ID: "d", Text: "a document"}); err != nil {
		b.Fatal(err)
	}
	cs := connect(b, New(m, Options{}))
	for _, c := range hostileCases() {
		raw, err := json.Marshal(c.args)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: json.RawMessage(raw)})
				if err != nil || !res.IsError {
					b.Fatalf("%v %v", res, err)
				}
			}
		})
	}
}

// TestChromaDeleteOverCap: a filter matching more documents than MaxDeleteIDs deletes
// nothing.
func TestChromaDeleteOverCap(t *testing.T) {
	m := newStore(t)
	cs := connect(t, New(m, Options{MaxDeleteIDs: 2}))
	chromaFixture(t, cs)
	before := snapshot(t, m)
	res := call(t, cs, toolChromaDeleteDocuments, map[string]any{"collection_name": "kb", "where": map[string]any{"year": map[string]any{"$gte": 2000}}}, nil)
	if !res.IsError || !strings.Contains(errorText(res), "MaxDeleteIDs") {
		t.Fatalf("want a MaxDeleteIDs error, got %s", errorText(res))
	}
	if snapshot(t, m) != before {
		t.Fatal("store changed")
	}
}

// TestDocumentResources: resources/list pages through every document of every collection
// (a small page size here), and each URI reads back the document.
func TestDocumentResources(t *testing.T) {
	m := newStore(t)
	ctx := context.Background()
	want := map[string]string{}
	for c, n := range map[string]int{"a": 3, "b b": 4, "c/d": 2} {
		for i := range n {
			id := fmt.Sprintf("doc %d/%s", i, c)
			if err := m.Collection(c).Add(ctx, memory.Document{ID: id, Title: "T" + id, Text: "body of " + id, Metadata: map[string]any{"n": i}}); err != nil {
				t.Fatal(err)
			}
			want[documentURI(c, id)] = "T" + id + "\n\nbody of " + id
		}
	}
	cs := connect(t, New(m, Options{ResourcePageSize: 3}))
	tmpls, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tmpls.ResourceTemplates) != 1 || tmpls.ResourceTemplates[0].URITemplate != documentURITemplate {
		t.Fatalf("templates: %v %v", tmpls, err)
	}
	got := map[string]bool{}
	pages := 0
	cursor := ""
	for {
		res, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(res.Resources) > 3 {
			t.Fatalf("page of %d", len(res.Resources))
		}
		for _, r := range res.Resources {
			if got[r.URI] {
				t.Fatalf("%s listed twice", r.URI)
			}
			got[r.URI] = true
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	if len(got) != len(want) || pages != 3 {
		t.Fatalf("listed %d resources in %d pages, want %d in 3", len(got), pages, len(want))
	}
	for uri, text := range want {
		if !got[uri] {
			t.Errorf("%s not listed", uri)
		}
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		if rr.Contents[0].Text != text || len(rr.Contents) != 2 || !strings.Contains(rr.Contents[1].Text, `"n"`) {
			t.Fatalf("read %s: %+v", uri, rr.Contents[0])
		}
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: documentURI("a", "missing")}); err == nil {
		t.Fatal("a missing document was read")
	}
	if _, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: "!!"}); err == nil {
		t.Fatal("a bad cursor was accepted")
	}
}

// TestSOPPrompts: each procedure of the library is a prompt whose messages are its steps.
func TestSOPPrompts(t *testing.T) {
	cs := connect(t, New(newStore(t), Options{SOPs: newLibrary(t)}))
	ctx := context.Background()
	list, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Prompts {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if !reflect.DeepEqual(names, []string{"debug_python_code", "deploy_service"}) {
		t.Fatalf("prompts = %v", names)
	}
	res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "debug_python_code", Arguments: map[string]string{"task": "the tests fail"}})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, msg := range res.Messages {
		texts = append(texts, msg.Content.(*mcp.TextContent).Text)
	}
	want := []string{
		"Follow the procedure debug_python_code: Find and fix a bug in Python code.\nTask: the tests fail",
		"Step 1 of 2: Reproduce the problem.",
		"Step 2 of 2: Run the tests again. (only when: fix proposed)",
	}
	if !reflect.DeepEqual(texts, want) {
		t.Fatalf("messages = %q", texts)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "nope"}); err == nil {
		t.Fatal("unknown prompt answered")
	}
}

// TestHTTPDeepArguments: over streamable HTTP (no stdio frame cap in front), arguments
// nested hundreds of levels deep are a tool error naming MaxArgDepth; a body nested past
// MaxDepth (128) is a JSON-RPC error naming it and carrying the call's id (issue 39, item
// 6), given before the SDK decodes the body: the server never sees the call, and the
// answer's cost is a pass over the body (counted in TestFrameIDOnePass, not timed here).
// The session goes on.
func TestHTTPDeepArguments(t *testing.T) {
	m := newStore(t)
	srv := New(m, Options{})
	var reached atomic.Int32 // tools/call requests that reached the server
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				reached.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	hs := httptest.NewServer(NewHTTPHandler(srv, HTTPOptions{}))
	defer hs.Close()
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "http-client", Version: "v1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	chromaFixture(t, cs)
	before := snapshot(t, m)
	fixture := reached.Load()
	deepWhere := func(depth int) string {
		return `{"collection_name":"kb","query_texts":["x"],"where":` + strings.Repeat(`{"$or":[`, depth) + `{"k":"v"}` + strings.Repeat(`]}`, depth) + `}`
	}
	// Past the argument cap: a tool error; past the body's (128, as on stdio): a JSON-RPC
	// error naming it, before the SDK decodes the body.
	for _, c := range []struct {
		depth   int
		want    string
		reaches int32
	}{{45, "MaxArgDepth", 1}, {500, "nested deeper than 128 (MaxDepth)", 0}, {4000, "nested deeper than 128 (MaxDepth)", 0}} {
		n := reached.Load()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: toolChromaQueryDocuments, Arguments: json.RawMessage(deepWhere(c.depth))})
		msg := fmt.Sprint(err)
		if err == nil {
			msg = errorText(res)
			if !res.IsError {
				t.Fatalf("depth %d accepted", c.depth)
			}
		}
		if !strings.Contains(msg, c.want) {
			t.Fatalf("depth %d: want an error naming %q, got %.300s", c.depth, c.want, msg)
		}
		if got := reached.Load() - n; got != c.reaches {
			t.Fatalf("depth %d: the call reached the server %d times, want %d", c.depth, got, c.reaches)
		}
	}
	// The id of the call, before or after its arguments, however deep (past
	// encoding/json's 10,000 levels too).
	for _, c := range []struct {
		depth int
		id    string
		last  bool
	}{{500, `77`, false}, {500, `"after"`, true}, {20000, `78`, true}, {20000, `"z"`, false}} {
		body := `"method":"tools/call","params":{"name":"` + toolChromaQueryDocuments + `","arguments":` + deepWhere(c.depth) + `}`
		if c.last {
			body = `{"jsonrpc":"2.0",` + body + `,"id":` + c.id + `}`
		} else {
			body = `{"jsonrpc":"2.0","id":` + c.id + `,` + body + `}`
		}
		resp, err := http.Post(hs.URL, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			ID    json.RawMessage
			Error struct {
				Code    int64
				Message string
			}
		}
		if err := json.Unmarshal(data, &got); err != nil || string(got.ID) != c.id || got.Error.Code != jsonrpc.CodeInvalidRequest ||
			!strings.Contains(got.Error.Message, "nested deeper than 128 (MaxDepth)") {
			t.Fatalf("depth %d, id %s: answered %.300s (%v)", c.depth, c.id, data, err)
		}
	}
	if n := reached.Load() - fixture; n != 1 {
		t.Fatalf("%d deep calls reached the server, want the one under MaxDepth", n)
	}
	var count countOutput
	if res := call(t, cs, toolChromaCollectionCount, map[string]any{"collection_name": "kb"}, &count); res.IsError || count.Count != 4 {
		t.Fatalf("after: %s %+v", errorText(res), count)
	}
	if snapshot(t, m) != before {
		t.Fatal("store changed")
	}
}

// TestChromaQueryWithEmbedder: on a store with an embedder (hybrid search; the batch's
// dense retrieval shared between the queries), several query_texts each get their own
// list, and include embeddings returns the stored vectors.
func TestChromaQueryWithEmbedder(t *testing.T) {
	m, err := memory.Open("", memory.WithEmbedder(vectorstore.NewHashEmbedder(64)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cs := connect(t, New(m, Options{}))
	chromaFixture(t, cs)
	var q queryDocumentsOutput
	res := call(t, cs, toolChromaQueryDocuments, map[string]any{"collection_name": "kb",
		"query_texts": []string{"kubectl apply deploy", "bananas potassium", "dynamically typed scripting"}, "n_results": 1,
		"include": []string{"embeddings", "distances"}}, &q)
	if res.IsError {
		t.Fatal(errorText(res))
	}
	if !reflect.DeepEqual(q.IDs, [][]string{{"deploy"}, {"banana"}, {"python"}}) {
		t.Fatalf("ids = %v", q.IDs)
	}
	queries, err := vectorstore.NewHashEmbedder(64).Embed(context.Background(), []string{"kubectl apply deploy", "bananas potassium", "dynamically typed scripting"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range q.IDs {
		// Chroma's cosine distance between the query's and the document's embeddings.
		want := 1 - cosine(queries[i], q.Embeddings[i][0])
		if len(q.Embeddings[i][0]) != 64 || math.Abs(q.Distances[i][0]-want) > 1e-6 || q.Documents != nil {
			t.Fatalf("query %d: distance %v, want %v: %+v", i, q.Distances[i][0], want, q)
		}
	}
	var got chromaGetOutput
	if res := call(t, cs, toolChromaGetDocuments, map[string]any{"collection_name": "kb", "ids": []string{"go"}, "include": []string{"embeddings"}}, &got); res.IsError || len(got.Embeddings[0]) != 64 {
		t.Fatalf("get embeddings: %s %+v", errorText(res), got)
	}
}

// manyKeys is a metadata map of n keys.
func manyKeys(n int) map[string]any {
	md := make(map[string]any, n)
	for i := range n {
		md[fmt.Sprint("k", i)] = i
	}
	return md
}

// cosine is the cosine similarity of a and b.
func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

// TestChromaQueryDistances: an agent written for Chroma keeps the results whose distance
// is below a cut (0.5 here): the exact match passes and unrelated documents do not, with an
// embedder (Chroma's cosine distance, in a hybrid or a dense search) and without one
// (BM25: 1 - relevance). The store's own RRF score would give every result a distance
// above 0.96.
func TestChromaQueryDistances(t *testing.T) {
	tests := []struct {
		name string
		opts []memory.Option
	}{
		{name: "hash embedder", opts: []memory.Option{memory.WithEmbedder(vectorstore.NewHashEmbedder(256))}},
		{name: "no embedder"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := memory.Open("", tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			cs := connect(t, New(m, Options{}))
			chromaFixture(t, cs)
			var q queryDocumentsOutput
			exact := "Bananas are yellow fruit rich in potassium."
			res := call(t, cs, toolChromaQueryDocuments, map[string]any{"collection_name": "kb",
				"query_texts": []string{exact}, "n_results": 4, "include": []string{"distances"}}, &q)
			if res.IsError {
				t.Fatal(errorText(res))
			}
			var close []string
			for j, id := range q.IDs[0] {
				d := q.Distances[0][j]
				if !(d >= 0 && d <= 2) {
					t.Errorf("%s: distance %v outside [0, 2]", id, d)
				}
				if id == "banana" && d > 0.01 {
					t.Errorf("exact match's distance %v, want about 0", d)
				}
				if d < 0.5 {
					close = append(close, id)
				}
			}
			if !reflect.DeepEqual(close, []string{"banana"}) {
				t.Errorf("distance < 0.5: %v, want [banana] (ids %v, distances %v)", close, q.IDs[0], q.Distances[0])
			}
		})
	}
}
