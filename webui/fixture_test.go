package webui

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/beir"
	"github.com/agentmem/memory/vectorstore"
)

// xssTitle and xssText are stored as a document's title and text: the page must show them
// as text, running nothing.
const (
	xssTitle = `Payload <b onmouseover="window.__xss='title'">bold</b>`
	xssText  = `payload alert <script>window.__xss='script'</script><img src=x onerror="window.__xss='img'"> end`
)

// notesDocs are the documents of the fixture's collection "notes", in id order.
var notesDocs = []memory.Document{
	{ID: "n1", Title: "Deploys", Text: "Deploy a release with make release; the pipeline tags and ships it.", Source: "docs/deploy.md"},
	{ID: "n2", Title: "Kubernetes", Text: "kubectl apply rolls out a deploy to the cluster.", Metadata: map[string]any{"team": "infra"}},
	{ID: "n3", Title: "Bananas", Text: "Bananas are rich in potassium and make a good snack."},
	{ID: "n4", Title: "Python", Text: "Python is a dynamically typed scripting language."},
	{ID: "n5", Title: xssTitle, Text: xssText},
}

// overlap is a stand-in cross-encoder: a passage scores the number of query words it holds.
type overlap struct{}

func (overlap) Score(_ context.Context, query string, passages []string) ([]float32, error) {
	out := make([]float32, len(passages))
	for i, p := range passages {
		lp := strings.ToLower(p)
		for _, w := range strings.Fields(strings.ToLower(query)) {
			if strings.Contains(lp, w) {
				out[i]++
			}
		}
	}
	return out, nil
}

// testStore opens a store in a temporary folder with a hash embedder (and the overlap
// reranker when rerank is set) holding the collections "notes" (notesDocs) and "code".
func testStore(t *testing.T, rerank bool) *memory.Memory {
	t.Helper()
	opts := []memory.Option{memory.WithEmbedder(vectorstore.NewHashEmbedder(64)), memory.WithNoSync()}
	if rerank {
		opts = append(opts, memory.WithReranker(overlap{}))
	}
	m, err := memory.Open(filepath.Join(t.TempDir(), "store"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	ctx := context.Background()
	if err := m.Collection("notes").Add(ctx, notesDocs...); err != nil {
		t.Fatal(err)
	}
	if err := m.Collection("code").Add(ctx, memory.Document{ID: "c1", Text: "func main() { deploy() }"}); err != nil {
		t.Fatal(err)
	}
	return m
}

// testEvalInput is a small run: q1 finds its document first (nDCG 1), q2 second of two
// judged (MRR 0.5), q3 nothing; q4 is judged but not searched.
func testEvalInput() EvalInput {
	return EvalInput{
		Name: "fixture hybrid", Dataset: "testdata/fixture", Mode: "hybrid", Docs: 5, K: 10,
		Date:    time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC),
		Queries: []beir.Query{{ID: "q1", Text: "deploy release"}, {ID: "q2", Text: "bananas"}, {ID: "q3", Text: "python"}},
		Qrels: beir.Qrels{
			"q1": {"n1": 1},
			"q2": {"n3": 1},
			"q3": {"n4": 2},
			"q4": {"n2": 1},
		},
		Run: beir.Run{
			"q1": {{DocID: "n1", Score: 3}, {DocID: "n2", Score: 1}},
			"q2": {{DocID: "n2", Score: 2}, {DocID: "n3", Score: 1}},
			"q3": {{DocID: "n1", Score: 1}},
		},
		Latencies: []time.Duration{3 * time.Millisecond, 1 * time.Millisecond, 2 * time.Millisecond},
	}
}

// testReport writes testEvalInput's report in a temporary folder and returns its path.
func testReport(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "report.json")
	if err := WriteEvalReport(p, NewEvalReport(testEvalInput())); err != nil {
		t.Fatal(err)
	}
	return p
}
