package mcpserver

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/vectorstore"
)

// chroma_query_documents takes Chroma's query_embeddings: alone, each vector is searched by
// dense recall (the ids and distances of the texts the vectors embed); beside query_texts,
// dense recall follows the vectors while BM25 searches the texts; bad vectors and counts
// are tool errors naming the problem.
func TestChromaQueryEmbeddings(t *testing.T) {
	e := vectorstore.NewHashEmbedder(64)
	m, err := memory.Open("", memory.WithEmbedder(e))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cs := connect(t, New(m, Options{MaxQueries: 3}))
	chromaFixture(t, cs)
	embed := func(texts ...string) [][]float32 {
		vs, err := vectorstore.EmbedQueries(context.Background(), e, texts)
		if err != nil {
			t.Fatal(err)
		}
		return vs
	}
	texts := []string{"kubectl apply deploy", "bananas potassium", "dynamically typed scripting"}
	var byText, byVec queryDocumentsOutput
	if res := call(t, cs, toolChromaQueryDocuments, map[string]any{"collection_name": "kb", "query_texts": texts, "n_results": 1}, &byText); res.IsError {
		t.Fatal(errorText(res))
	}
	if res := call(t, cs, toolChromaQueryDocuments, map[string]any{"collection_name": "kb", "query_embeddings": embed(texts...), "n_results": 1}, &byVec); res.IsError {
		t.Fatal(errorText(res))
	}
	if !reflect.DeepEqual(byVec.IDs, [][]string{{"deploy"}, {"banana"}, {"python"}}) || !reflect.DeepEqual(byVec.IDs, byText.IDs) {
		t.Fatalf("by vector %v, by text %v", byVec.IDs, byText.IDs)
	}
	for i := range texts {
		// The same cosine distance as the text's own embedding has (a hybrid text search
		// and a dense vector search rank alike here).
		if math.Abs(byVec.Distances[i][0]-byText.Distances[i][0]) > 1e-6 {
			t.Fatalf("query %d: distance %v by vector, %v by text", i, byVec.Distances[i][0], byText.Distances[i][0])
		}
	}
	// Texts and vectors of other texts: BM25 finds the text's document, dense recall the
	// vector's; a blank text is searched by its vector alone.
	var mixed queryDocumentsOutput
	if res := call(t, cs, toolChromaQueryDocuments, map[string]any{"collection_name": "kb", "query_texts": []string{"bananas potassium", " "},
		"query_embeddings": embed("kubectl apply deploy", "bananas potassium"), "n_results": 2}, &mixed); res.IsError {
		t.Fatal(errorText(res))
	}
	if got := mixed.IDs[0]; len(got) != 2 || !(got[0] == "banana" && got[1] == "deploy" || got[0] == "deploy" && got[1] == "banana") {
		t.Fatalf("text and another text's vector: %v", got)
	}
	if mixed.IDs[1][0] != "banana" {
		t.Fatalf("a blank text with a vector: %v", mixed.IDs[1])
	}

	for _, tc := range []struct {
		name string
		args map[string]any
		says string
	}{
		{"neither", map[string]any{"collection_name": "kb"}, "query_texts and query_embeddings are empty"},
		{"counts differ", map[string]any{"collection_name": "kb", "query_texts": texts[:2], "query_embeddings": embed(texts[0])}, "1 query_embeddings for 2 query_texts"},
		{"too many", map[string]any{"collection_name": "kb", "query_embeddings": embed("a", "b", "c", "d")}, "MaxQueries"},
		{"dimension", map[string]any{"collection_name": "kb", "query_embeddings": [][]float32{{1, 2, 3}}}, "3 values, the store's vectors"},
		{"zero", map[string]any{"collection_name": "kb", "query_embeddings": [][]float32{make([]float32, 64)}}, "norm 0"},
		{"blank text without vector", map[string]any{"collection_name": "kb", "query_texts": []string{" "}}, "query is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, cs, toolChromaQueryDocuments, tc.args, nil)
			if !res.IsError || !strings.Contains(errorText(res), tc.says) {
				t.Fatalf("error %v %q, want one saying %q", res.IsError, errorText(res), tc.says)
			}
		})
	}
}
