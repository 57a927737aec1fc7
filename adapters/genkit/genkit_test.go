package memorygk_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/memory"
	memorygk "github.com/agentmem/memory/adapters/genkit"
	"github.com/agentmem/memory/vectorstore"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
)

func corpus() []*ai.Document {
	return []*ai.Document{
		ai.DocumentFromText("The deploy script pushes the release to the staging cluster first.", map[string]any{"id": "deploy", "topic": "ops", "year": 2024}),
		ai.DocumentFromText("Rollbacks restore the previous release from the artifact bucket.", map[string]any{"id": "rollback", "topic": "ops", "year": 2023}),
		ai.DocumentFromText("The cafeteria serves soup on Fridays.", map[string]any{"id": "soup", "topic": "food", "year": 2024, "title": "Menu"}),
	}
}

// openStore opens a temporary store (with emb as its embedder when not nil) holding corpus
// in the default collection and one more document in collection "archive".
func openStore(t *testing.T, emb vectorstore.Embedder) *memory.Memory {
	t.Helper()
	opts := []memory.Option{memory.WithNoSync()}
	if emb != nil {
		opts = append(opts, memory.WithEmbedder(emb))
	}
	m, err := memory.Open(t.TempDir(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	ctx := context.Background()
	if _, err := memorygk.Index(ctx, m, "", corpus()); err != nil {
		t.Fatal(err)
	}
	archive := []*ai.Document{ai.DocumentFromText("Old deploy notes: the release was copied by hand.", map[string]any{"id": "old-deploy"})}
	if _, err := memorygk.Index(ctx, m, "archive", archive); err != nil {
		t.Fatal(err)
	}
	return m
}

// recorder is a fake model's memory of the requests it was given.
type recorder struct {
	mu   sync.Mutex
	reqs []*ai.ModelRequest
}

// defineFakeModel registers a model that records its requests and answers with answer. It
// does not support context natively, so Genkit writes the documents into the prompt.
func defineFakeModel(g *genkit.Genkit, answer string) (ai.Model, *recorder) {
	rec := &recorder{}
	m := genkit.DefineModel(g, "test/fake", &ai.ModelOptions{Supports: &ai.ModelSupports{Multiturn: true}},
		func(_ context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
			rec.mu.Lock()
			rec.reqs = append(rec.reqs, req)
			rec.mu.Unlock()
			return &ai.ModelResponse{Request: req, Message: ai.NewModelTextMessage(answer)}, nil
		})
	return m, rec
}

func TestRAGFlow(t *testing.T) {
	tests := []struct {
		name     string
		emb      vectorstore.Embedder
		cfg      memorygk.Config
		opts     any
		question string
		want     []string
		notWant  []string
	}{
		{
			name:     "bm25",
			cfg:      memorygk.Config{K: 2},
			question: "how does the deploy script push a release",
			want:     []string{"pushes the release to the staging cluster"},
			notWant:  []string{"soup", "copied by hand"},
		},
		{
			name:     "hybrid, k per call",
			emb:      vectorstore.NewHashEmbedder(64),
			opts:     &memorygk.RetrieverOptions{K: 1},
			question: "how does the deploy script push a release",
			want:     []string{"pushes the release to the staging cluster"},
			notWant:  []string{"soup", "artifact bucket"},
		},
		{
			name:     "collection",
			opts:     memorygk.RetrieverOptions{Collection: "archive"},
			question: "how was the release deployed",
			want:     []string{"copied by hand"},
			notWant:  []string{"staging cluster"},
		},
		{
			name:     "where as JSON",
			opts:     map[string]any{"where": map[string]any{"year": 2023}},
			question: "what happens to a release",
			want:     []string{"restore the previous release"},
			notWant:  []string{"staging cluster", "soup"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			m := openStore(t, tc.emb)
			g := genkit.Init(ctx)
			r, err := memorygk.DefineRetriever(g, "memory/kb", m, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			model, rec := defineFakeModel(g, "Through the staging cluster.")
			flow := genkit.DefineFlow(g, "rag", func(ctx context.Context, q string) (string, error) {
				docs, err := genkit.Retrieve(ctx, g, ai.WithRetriever(r), ai.WithTextDocs(q), ai.WithConfig(tc.opts))
				if err != nil {
					return "", err
				}
				resp, err := genkit.Generate(ctx, g, ai.WithModel(model), ai.WithPrompt(q), ai.WithDocs(docs.Documents...))
				if err != nil {
					return "", err
				}
				return resp.Text(), nil
			})
			answer, err := flow.Run(ctx, tc.question)
			if err != nil {
				t.Fatal(err)
			}
			if answer != "Through the staging cluster." {
				t.Errorf("answer %q", answer)
			}
			if len(rec.reqs) != 1 {
				t.Fatalf("%d model requests", len(rec.reqs))
			}
			var prompt strings.Builder
			for _, msg := range rec.reqs[0].Messages {
				prompt.WriteString(msg.Text())
			}
			p := prompt.String()
			if !strings.Contains(p, tc.question) {
				t.Errorf("prompt lacks the question:\n%s", p)
			}
			for _, w := range tc.want {
				if !strings.Contains(p, w) {
					t.Errorf("prompt lacks retrieved text %q:\n%s", w, p)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(p, w) {
					t.Errorf("prompt holds %q, which the retriever should not return:\n%s", w, p)
				}
			}
		})
	}
}

// errSchema stands for the error of Genkit's schema check of a retrieval's options.
var errSchema = errors.New("schema")

func TestRetrieve(t *testing.T) {
	ctx := context.Background()
	m := openStore(t, vectorstore.NewHashEmbedder(64))
	g := genkit.Init(ctx)
	define := func(name string, cfg memorygk.Config) ai.Retriever {
		r, err := memorygk.DefineRetriever(g, name, m, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	bm25 := define("memory/bm25", memorygk.Config{SearchOptions: []memory.SearchOption{memory.WithMode(memory.BM25)}})
	dense := define("memory/dense", memorygk.Config{SearchOptions: []memory.SearchOption{memory.WithMode(memory.Dense)}})
	top1 := define("memory/top1", memorygk.Config{SearchOptions: []memory.SearchOption{memory.WithMode(memory.BM25), memory.TopK(1)}})
	tests := []struct {
		name  string
		r     ai.RetrieverArg
		query string
		opts  any
		want  []string
		err   error
	}{
		{name: "k", r: bm25, query: "deploy release", opts: memorygk.RetrieverOptions{K: 1}, want: []string{"deploy"}},
		{name: "search options' top k", r: top1, query: "deploy release", want: []string{"deploy"}},
		{name: "call's k wins", r: top1, query: "deploy release", opts: memorygk.RetrieverOptions{K: 2}, want: []string{"deploy", "rollback"}},
		{name: "default k", r: bm25, query: "deploy release", want: []string{"deploy", "rollback"}},
		{name: "where", r: bm25, query: "release", opts: memorygk.RetrieverOptions{Where: memory.Where{"year": map[string]any{"$lt": 2024}}}, want: []string{"rollback"}},
		{name: "where document", r: bm25, query: "release", opts: memorygk.RetrieverOptions{WhereDocument: memory.WhereDocument{"$contains": "staging"}}, want: []string{"deploy"}},
		{name: "min score", r: dense, query: corpus()[1].Content[0].Text, opts: map[string]any{"minScore": 0.999}, want: []string{"rollback"}},
		{name: "registered name", r: ai.NewRetrieverRef("memory/bm25", nil), query: "cafeteria", want: []string{"soup"}},
		{name: "unknown option key", r: bm25, query: "release", opts: map[string]any{"topK": 3}, err: memorygk.ErrUnsupportedOption},
		{name: "options of another type", r: bm25, query: "release", opts: 3, err: errSchema},
		{name: "negative k", r: bm25, query: "release", opts: memorygk.RetrieverOptions{K: -1}, err: errSchema},
		{name: "negative min score", r: bm25, query: "release", opts: memorygk.RetrieverOptions{MinScore: -1}, err: errSchema},
		{name: "bad filter", r: bm25, query: "release", opts: memorygk.RetrieverOptions{Where: memory.Where{"$bogus": 1}}, err: memory.ErrInvalidFilter},
		{name: "unknown collection", r: bm25, query: "release", opts: memorygk.RetrieverOptions{Collection: "nope"}, err: memory.ErrCollectionNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := genkit.Retrieve(ctx, g, ai.WithRetriever(tc.r), ai.WithTextDocs(tc.query), ai.WithConfig(tc.opts))
			if tc.err == errSchema {
				// Genkit checks the options against the retriever's schema before calling it.
				if err == nil || !strings.Contains(err.Error(), "schema") {
					t.Fatalf("err %v, want a schema error", err)
				}
				return
			}
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range resp.Documents {
				got = append(got, d.Metadata[memorygk.IDKey].(string))
				if d.Metadata[memorygk.CollectionKey] == nil || d.Metadata[memorygk.ScoreKey] == nil {
					t.Errorf("metadata %v", d.Metadata)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("ids %v, want %v", got, tc.want)
			}
		})
	}
	// A retrieved document can be indexed again as it is.
	resp, err := genkit.Retrieve(ctx, g, ai.WithRetriever(bm25), ai.WithTextDocs("cafeteria"))
	if err != nil || len(resp.Documents) != 1 || resp.Documents[0].Metadata[memorygk.TitleKey] != "Menu" {
		t.Fatalf("retrieve: %+v, %v", resp, err)
	}
	if _, err := memorygk.Index(ctx, m, "copy", resp.Documents); err != nil {
		t.Fatal(err)
	}
	d, err := m.Collection("copy").Get(ctx, "soup")
	if err != nil || d.Title != "Menu" || d.Metadata["topic"] != "food" || d.Metadata[memorygk.ScoreKey] != nil {
		t.Errorf("re-indexed document %+v, %v", d, err)
	}
}

func TestIndex(t *testing.T) {
	ctx := context.Background()
	media := &ai.Document{Content: []*ai.Part{ai.NewMediaPart("image/png", "data:image/png;base64,AAAA")}}
	tests := []struct {
		name  string
		first []*ai.Document
		docs  []*ai.Document
		check func(t *testing.T, m *memory.Memory, ids []string)
		err   error
	}{
		{
			name: "random ids",
			docs: []*ai.Document{ai.DocumentFromText("a", map[string]any{"k": "v"}), ai.DocumentFromText("b", nil)},
			check: func(t *testing.T, m *memory.Memory, ids []string) {
				if len(ids) != 2 || ids[0] == ids[1] || ids[0] == "" {
					t.Fatalf("ids %q", ids)
				}
				if d, err := m.Get(ctx, ids[0]); err != nil || d.Text != "a" || d.Metadata["k"] != "v" {
					t.Errorf("stored %+v, %v", d, err)
				}
			},
		},
		{
			name:  "replaces the same id",
			first: []*ai.Document{ai.DocumentFromText("one", map[string]any{"id": "d"})},
			docs:  []*ai.Document{ai.DocumentFromText("two", map[string]any{"id": "d"})},
			check: func(t *testing.T, m *memory.Memory, _ []string) {
				if d, err := m.Get(ctx, "d"); err != nil || d.Text != "two" {
					t.Errorf("Get = %+v, %v", d, err)
				}
			},
		},
		{name: "media part", docs: []*ai.Document{media}, err: memorygk.ErrUnsupportedContent},
		{name: "id not a string", docs: []*ai.Document{ai.DocumentFromText("x", map[string]any{"id": 3})}, err: memorygk.ErrInvalidID},
		{
			name: "list metadata", // Genkit documents carry lists (tags); they are stored and filter
			docs: []*ai.Document{ai.DocumentFromText("tagged", map[string]any{"id": "t", "tags": []any{"a", "b"}})},
			check: func(t *testing.T, m *memory.Memory, _ []string) {
				res, err := m.Search(ctx, "tagged", memory.WithMode(memory.BM25), memory.WithWhere(memory.Where{"tags": "b"}))
				if err != nil || len(res) != 1 || res[0].ID != "t" {
					t.Errorf("Search where tags = b: %v, %v", res, err)
				}
			},
		},
		{name: "nested metadata", docs: []*ai.Document{ai.DocumentFromText("x", map[string]any{"m": map[string]any{"k": 1}})}, err: memory.ErrInvalidMetadata},
		{name: "list of lists", docs: []*ai.Document{ai.DocumentFromText("x", map[string]any{"m": []any{[]any{1}}})}, err: memory.ErrInvalidMetadata},
		{name: "nil document", docs: []*ai.Document{ai.DocumentFromText("x", nil), nil}, err: memory.ErrEmptyText},
		{name: "empty text", docs: []*ai.Document{ai.DocumentFromText("", map[string]any{"id": "e"})}, err: memory.ErrEmptyText},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := memory.Open(t.TempDir(), memory.WithNoSync())
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if _, err := memorygk.Index(ctx, m, "", tc.first); err != nil {
				t.Fatal(err)
			}
			before, _ := m.Count(ctx)
			ids, err := memorygk.Index(ctx, m, "", tc.docs)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				if after, _ := m.Count(ctx); after != before {
					t.Errorf("a failed index changed the store: %d documents, then %d", before, after)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, m, ids)
		})
	}
}

func TestEmbedders(t *testing.T) {
	ctx := context.Background()
	hash := vectorstore.NewHashEmbedder(32)
	g := genkit.Init(ctx)
	theirs, err := memorygk.DefineEmbedder(g, "memory/hash", hash)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("store's embedder as Genkit's", func(t *testing.T) {
		resp, err := genkit.Embed(ctx, g, ai.WithEmbedderName("memory/hash"), ai.WithTextDocs("alpha beta", "gamma"))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := hash.Embed(ctx, []string{"alpha beta", "gamma"})
		if len(resp.Embeddings) != 2 || !slices.Equal(resp.Embeddings[0].Embedding, want[0]) || !slices.Equal(resp.Embeddings[1].Embedding, want[1]) {
			t.Errorf("embeddings differ from the store's embedder")
		}
	})

	t.Run("Genkit embedder as the store's", func(t *testing.T) {
		ours, err := memorygk.FromEmbedder(ctx, theirs, "gk-hash/32", nil)
		if err != nil {
			t.Fatal(err)
		}
		if ours.Dim() != 32 || ours.ID() != "gk-hash/32" {
			t.Fatalf("Dim %d ID %q", ours.Dim(), ours.ID())
		}
		m, err := memory.Open(t.TempDir(), memory.WithEmbedder(ours), memory.WithNoSync())
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if _, err := memorygk.Index(ctx, m, "", corpus()); err != nil {
			t.Fatal(err)
		}
		res, err := m.Search(ctx, corpus()[1].Content[0].Text, memory.WithMode(memory.Dense), memory.TopK(1))
		if err != nil || len(res) != 1 || res[0].ID != "rollback" || res[0].Score < 0.999 {
			t.Errorf("dense search through the Genkit embedder: %+v, %v", res, err)
		}
	})

	t.Run("bad Genkit embedder", func(t *testing.T) {
		short := genkit.DefineEmbedder(g, "test/short", nil, func(_ context.Context, req *ai.EmbedRequest) (*ai.EmbedResponse, error) {
			return &ai.EmbedResponse{Embeddings: []*ai.Embedding{{Embedding: make([]float32, 4)}}}, nil
		})
		e, err := memorygk.FromEmbedder(ctx, short, "short", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Embed(ctx, []string{"a", "b"}); !errors.Is(err, memorygk.ErrBadEmbedding) {
			t.Errorf("err %v, want ErrBadEmbedding", err)
		}
		if _, err := memorygk.FromEmbedder(ctx, short, "", nil); !errors.Is(err, memorygk.ErrUnsupportedOption) {
			t.Errorf("no model id: err %v", err)
		}
	})
}

// TestMinScoreRelevance: the threshold an agent uses, minScore 0.5, keeps the exact match
// and drops unrelated documents in every search mode, and the documents' scores are the
// results' Relevance (in a hybrid search the store's own score is RRF's, about 0.03, which
// such a threshold would drop entirely).
func TestMinScoreRelevance(t *testing.T) {
	ctx := context.Background()
	m := openStore(t, vectorstore.NewHashEmbedder(256))
	g := genkit.Init(ctx)
	query := corpus()[1].Content[0].Text // the rollback document's text
	tests := []struct {
		name string
		opts []memory.SearchOption
	}{
		{name: "hybrid"},
		{name: "bm25", opts: []memory.SearchOption{memory.WithMode(memory.BM25)}},
		{name: "dense", opts: []memory.SearchOption{memory.WithMode(memory.Dense)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := memorygk.DefineRetriever(g, "relevance/"+tc.name, m, memorygk.Config{SearchOptions: tc.opts})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := genkit.Retrieve(ctx, g, ai.WithRetriever(r), ai.WithTextDocs(query), ai.WithConfig(map[string]any{"minScore": 0.5}))
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Documents) != 1 || resp.Documents[0].Metadata[memorygk.IDKey] != "rollback" {
				t.Fatalf("documents %v, want rollback alone", resp.Documents)
			}
			if s, _ := resp.Documents[0].Metadata[memorygk.ScoreKey].(float64); s < 0.99 || s > 1 {
				t.Errorf("exact match's score %v, want its relevance, near 1", resp.Documents[0].Metadata[memorygk.ScoreKey])
			}
			all, err := genkit.Retrieve(ctx, g, ai.WithRetriever(r), ai.WithTextDocs(query))
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range all.Documents {
				s, ok := d.Metadata[memorygk.ScoreKey].(float64)
				if id := d.Metadata[memorygk.IDKey]; id != "rollback" && !(ok && s >= 0 && s < 0.5) {
					t.Errorf("unrelated %v: score %v, want in [0, 0.5)", id, d.Metadata[memorygk.ScoreKey])
				}
			}
		})
	}
}
