package memorylc_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/memory"
	memorylc "github.com/agentmem/memory/adapters/langchaingo"
	"github.com/agentmem/memory/vectorstore"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/embeddings"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/fake"
	"github.com/tmc/langchaingo/schema"
	"github.com/tmc/langchaingo/vectorstores"
)

var corpus = []schema.Document{
	{PageContent: "The deploy script pushes the release to the staging cluster first.", Metadata: map[string]any{"id": "deploy", "topic": "ops", "year": 2024}},
	{PageContent: "Rollbacks restore the previous release from the artifact bucket.", Metadata: map[string]any{"id": "rollback", "topic": "ops", "year": 2023}},
	{PageContent: "The cafeteria serves soup on Fridays.", Metadata: map[string]any{"id": "soup", "topic": "food", "year": 2024}},
}

// openStore opens a temporary store (with emb as its embedder when not nil) holding corpus
// in the default collection and, with other ids, in collection "archive".
func openStore(t *testing.T, emb vectorstore.Embedder) (*memory.Memory, *memorylc.Store) {
	t.Helper()
	var opts []memory.Option
	if emb != nil {
		opts = append(opts, memory.WithEmbedder(emb))
	}
	m, err := memory.Open(t.TempDir(), append(opts, memory.WithNoSync())...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	s := memorylc.New(m)
	ctx := context.Background()
	if _, err := s.AddDocuments(ctx, corpus); err != nil {
		t.Fatal(err)
	}
	archive := []schema.Document{
		{PageContent: "Old deploy notes: the release was copied by hand.", Metadata: map[string]any{"id": "old-deploy"}},
	}
	if _, err := s.AddDocuments(ctx, archive, vectorstores.WithNameSpace("archive")); err != nil {
		t.Fatal(err)
	}
	return m, s
}

func ids(docs []schema.Document) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i], _ = d.Metadata[memorylc.IDKey].(string)
	}
	return out
}

// recordingLLM is langchaingo's fake LLM that also records the prompts it was given.
type recordingLLM struct {
	*fake.LLM
	mu      sync.Mutex
	prompts []string
}

func (r *recordingLLM) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	var b strings.Builder
	for _, m := range msgs {
		for _, p := range m.Parts {
			if t, ok := p.(llms.TextContent); ok {
				b.WriteString(t.Text)
			}
		}
	}
	r.mu.Lock()
	r.prompts = append(r.prompts, b.String())
	r.mu.Unlock()
	return r.LLM.GenerateContent(ctx, msgs, opts...)
}

func (r *recordingLLM) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, r, prompt, opts...)
}

var _ llms.Model = (*recordingLLM)(nil)

func TestRetrievalQA(t *testing.T) {
	tests := []struct {
		name     string
		emb      vectorstore.Embedder
		opts     []vectorstores.Option
		question string
		want     []string // texts that must reach the prompt
		notWant  []string // texts that must not
	}{
		{
			name:     "bm25",
			question: "how does the deploy script push a release",
			want:     []string{"pushes the release to the staging cluster"},
			notWant:  []string{"soup", "copied by hand"},
		},
		{
			name:     "hybrid with embedder",
			emb:      vectorstore.NewHashEmbedder(64),
			question: "how does the deploy script push a release",
			want:     []string{"pushes the release to the staging cluster"},
			notWant:  []string{"soup"},
		},
		{
			name:     "namespace",
			opts:     []vectorstores.Option{vectorstores.WithNameSpace("archive")},
			question: "how was the release deployed",
			want:     []string{"copied by hand"},
			notWant:  []string{"staging cluster"},
		},
		{
			name:     "filter",
			opts:     []vectorstores.Option{vectorstores.WithFilters(memory.Where{"year": 2023})},
			question: "what happens to a release",
			want:     []string{"restore the previous release"},
			notWant:  []string{"staging cluster", "soup"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, s := openStore(t, tc.emb)
			llm := &recordingLLM{LLM: fake.NewFakeLLM([]string{"Through the staging cluster."})}
			qa := chains.NewRetrievalQAFromLLM(llm, s.Retriever(2, tc.opts...))
			answer, err := chains.Run(context.Background(), qa, tc.question)
			if err != nil {
				t.Fatal(err)
			}
			if answer != "Through the staging cluster." {
				t.Errorf("answer %q", answer)
			}
			if len(llm.prompts) != 1 {
				t.Fatalf("%d prompts, want 1", len(llm.prompts))
			}
			p := llm.prompts[0]
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
					t.Errorf("prompt holds %q, which the search should not return:\n%s", w, p)
				}
			}
		})
	}
}

func TestRetrievalQAReturnsSourceDocuments(t *testing.T) {
	_, s := openStore(t, nil)
	qa := chains.NewRetrievalQAFromLLM(fake.NewFakeLLM([]string{"ok"}), s.Retriever(1))
	qa.ReturnSourceDocuments = true
	out, err := chains.Call(context.Background(), qa, map[string]any{"query": "rollbacks restore the previous release"})
	if err != nil {
		t.Fatal(err)
	}
	docs, ok := out["source_documents"].([]schema.Document)
	if !ok || len(docs) != 1 {
		t.Fatalf("source_documents = %#v", out["source_documents"])
	}
	d := docs[0]
	if d.Metadata[memorylc.IDKey] != "rollback" || d.Metadata[memorylc.CollectionKey] != memory.DefaultCollection ||
		d.Metadata["topic"] != "ops" || d.Score <= 0 {
		t.Errorf("source document %+v", d)
	}
}

func TestSimilaritySearch(t *testing.T) {
	ctx := context.Background()
	m, _ := openStore(t, vectorstore.NewHashEmbedder(64))
	// Dense recall returns every document; the keyword cases search with BM25 alone.
	s := memorylc.New(m, memorylc.WithSearchOptions(memory.WithMode(memory.BM25)))
	dense := memorylc.New(m, memorylc.WithSearchOptions(memory.WithMode(memory.Dense)))
	top1 := memorylc.New(m, memorylc.WithSearchOptions(memory.WithMode(memory.BM25), memory.TopK(1)))
	tests := []struct {
		name    string
		store   *memorylc.Store
		query   string
		n       int
		opts    []vectorstores.Option
		want    []string // ids, in order when ordered
		ordered bool
		err     error
	}{
		{name: "top n", store: s, query: "deploy release", n: 1, want: []string{"deploy"}},
		{name: "default n", store: s, query: "deploy release", n: 0, want: []string{"deploy", "rollback"}},
		{name: "store's top k", store: top1, query: "deploy release", n: 0, want: []string{"deploy"}},
		{name: "call's n wins", store: top1, query: "deploy release", n: 2, want: []string{"deploy", "rollback"}},
		{name: "namespace", store: s, query: "release", n: 5, opts: []vectorstores.Option{vectorstores.WithNameSpace("archive")}, want: []string{"old-deploy"}},
		{name: "where", store: s, query: "release", n: 5, opts: []vectorstores.Option{vectorstores.WithFilters(memory.Where{"year": 2023})}, want: []string{"rollback"}},
		{name: "map filter", store: s, query: "release", n: 5, opts: []vectorstores.Option{vectorstores.WithFilters(map[string]any{"year": map[string]any{"$gte": 2024}})}, want: []string{"deploy"}},
		{name: "where document", store: s, query: "release", n: 5, opts: []vectorstores.Option{vectorstores.WithFilters(memorylc.Filter{WhereDocument: memory.WhereDocument{"$contains": "artifact"}})}, want: []string{"rollback"}},
		{name: "filter pointer", store: s, query: "release", n: 5, opts: []vectorstores.Option{vectorstores.WithFilters(&memorylc.Filter{Where: memory.Where{"topic": "ops"}, WhereDocument: memory.WhereDocument{"$contains": "staging"}})}, want: []string{"deploy"}},
		{name: "threshold keeps the exact match", store: dense, query: corpus[2].PageContent, n: 5, opts: []vectorstores.Option{vectorstores.WithScoreThreshold(0.999)}, want: []string{"soup"}},
		{name: "no threshold", store: dense, query: corpus[2].PageContent, n: 5, want: []string{"soup", "deploy", "rollback"}},
		{name: "bad filter type", store: s, query: "release", n: 5, opts: []vectorstores.Option{vectorstores.WithFilters("topic=ops")}, err: memory.ErrInvalidFilter},
		{name: "bad filter", store: s, query: "release", n: 5, opts: []vectorstores.Option{vectorstores.WithFilters(memory.Where{"year": map[string]any{"$nope": 1}})}, err: memory.ErrInvalidFilter},
		{name: "embedder option", store: s, query: "release", n: 5, opts: []vectorstores.Option{vectorstores.WithEmbedder(memorylc.ToEmbeddings(vectorstore.NewHashEmbedder(64)))}, err: memorylc.ErrUnsupportedOption},
		{name: "negative threshold", store: s, query: "release", n: 5, opts: []vectorstores.Option{vectorstores.WithScoreThreshold(-1)}, err: memory.ErrInvalidOption},
		{name: "negative n", store: s, query: "release", n: -1, err: memory.ErrInvalidOption},
		{name: "unknown namespace", store: s, query: "release", n: 5, opts: []vectorstores.Option{vectorstores.WithNameSpace("nope")}, err: memory.ErrCollectionNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := tc.store.SimilaritySearch(ctx, tc.query, tc.n, tc.opts...)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := ids(docs)
			if tc.name == "no threshold" {
				slices.Sort(got[1:])
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("ids %v, want %v", got, tc.want)
			}
			for i := 1; i < len(docs); i++ {
				if docs[i].Score > docs[i-1].Score {
					t.Errorf("scores not descending: %v then %v", docs[i-1].Score, docs[i].Score)
				}
			}
		})
	}
}

func TestAddDocuments(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		opts    []memorylc.Option
		first   []schema.Document
		second  []schema.Document
		addOpts []vectorstores.Option
		wantIDs int // ids returned by the second add
		check   func(t *testing.T, m *memory.Memory, ids []string)
		err     error
	}{
		{
			name:    "random ids",
			second:  []schema.Document{{PageContent: "a"}, {PageContent: "b"}},
			wantIDs: 2,
			check: func(t *testing.T, m *memory.Memory, ids []string) {
				if ids[0] == ids[1] || ids[0] == "" {
					t.Errorf("ids %q", ids)
				}
				d, err := m.Get(ctx, ids[1])
				if err != nil || d.Text != "b" {
					t.Errorf("Get(%q) = %+v, %v", ids[1], d, err)
				}
			},
		},
		{
			name:    "id and title from metadata",
			second:  []schema.Document{{PageContent: "body", Metadata: map[string]any{"id": "x", "title": "T", "collection": "ignored", "k": 1}}},
			wantIDs: 1,
			check: func(t *testing.T, m *memory.Memory, ids []string) {
				d, err := m.Get(ctx, "x")
				if err != nil {
					t.Fatal(err)
				}
				if ids[0] != "x" || d.Title != "T" || len(d.Metadata) != 1 || d.Metadata["k"] != float64(1) {
					t.Errorf("ids %q, stored %+v", ids, d)
				}
			},
		},
		{
			name:    "deduplicater",
			second:  []schema.Document{{PageContent: "keep"}, {PageContent: "skip"}},
			addOpts: []vectorstores.Option{vectorstores.WithDeduplicater(func(_ context.Context, d schema.Document) bool { return d.PageContent == "skip" })},
			wantIDs: 1,
			check: func(t *testing.T, m *memory.Memory, _ []string) {
				if n, _ := m.Count(ctx); n != 1 {
					t.Errorf("%d documents stored, want 1", n)
				}
			},
		},
		{
			name:   "duplicate id",
			first:  []schema.Document{{PageContent: "one", Metadata: map[string]any{"id": "d"}}},
			second: []schema.Document{{PageContent: "two", Metadata: map[string]any{"id": "d"}}},
			err:    memory.ErrDuplicateID,
		},
		{
			name:    "upsert",
			opts:    []memorylc.Option{memorylc.WithUpsert()},
			first:   []schema.Document{{PageContent: "one", Metadata: map[string]any{"id": "d"}}},
			second:  []schema.Document{{PageContent: "two", Metadata: map[string]any{"id": "d"}}},
			wantIDs: 1,
			check: func(t *testing.T, m *memory.Memory, _ []string) {
				if d, err := m.Get(ctx, "d"); err != nil || d.Text != "two" {
					t.Errorf("Get = %+v, %v", d, err)
				}
			},
		},
		{
			name:    "collection option",
			opts:    []memorylc.Option{memorylc.WithCollection("notes")},
			second:  []schema.Document{{PageContent: "n", Metadata: map[string]any{"id": "n"}}},
			wantIDs: 1,
			check: func(t *testing.T, m *memory.Memory, _ []string) {
				if _, err := m.Collection("notes").Get(ctx, "n"); err != nil {
					t.Error(err)
				}
			},
		},
		{
			name:   "id not a string",
			second: []schema.Document{{PageContent: "n", Metadata: map[string]any{"id": 7}}},
			err:    memorylc.ErrInvalidID,
		},
		{
			name:   "nested metadata",
			second: []schema.Document{{PageContent: "n", Metadata: map[string]any{"tags": map[string]any{"a": "b"}}}},
			err:    memory.ErrInvalidMetadata,
		},
		{
			name:    "embedder option",
			second:  []schema.Document{{PageContent: "n"}},
			addOpts: []vectorstores.Option{vectorstores.WithEmbedder(memorylc.ToEmbeddings(vectorstore.NewHashEmbedder(8)))},
			err:     memorylc.ErrUnsupportedOption,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := memory.Open(t.TempDir(), memory.WithNoSync())
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			s := memorylc.New(m, tc.opts...)
			if _, err := s.AddDocuments(ctx, tc.first); err != nil {
				t.Fatal(err)
			}
			before, _ := m.Count(ctx)
			got, err := s.AddDocuments(ctx, tc.second, tc.addOpts...)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				if after, _ := m.Count(ctx); after != before {
					t.Errorf("a failed add changed the store: %d documents, then %d", before, after)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.wantIDs {
				t.Fatalf("%d ids, want %d", len(got), tc.wantIDs)
			}
			tc.check(t, m, got)
		})
	}
}

func TestEmbedders(t *testing.T) {
	ctx := context.Background()
	hash := vectorstore.NewHashEmbedder(32)
	lc, err := embeddings.NewEmbedder(embeddings.EmbedderClientFunc(hash.Embed))
	if err != nil {
		t.Fatal(err)
	}
	ours, err := memorylc.FromEmbeddings(ctx, lc, "lc-hash/32")
	if err != nil {
		t.Fatal(err)
	}
	if ours.Dim() != 32 || ours.ID() != "lc-hash/32" {
		t.Fatalf("Dim %d ID %q", ours.Dim(), ours.ID())
	}

	t.Run("langchaingo embedder as the store's", func(t *testing.T) {
		m, err := memory.Open(t.TempDir(), memory.WithEmbedder(ours), memory.WithNoSync())
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		s := memorylc.New(m, memorylc.WithSearchOptions(memory.WithMode(memory.Dense)))
		if _, err := s.AddDocuments(ctx, corpus); err != nil {
			t.Fatal(err)
		}
		docs, err := s.SimilaritySearch(ctx, corpus[1].PageContent, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(docs); !slices.Equal(got, []string{"rollback"}) || docs[0].Score < 0.999 {
			t.Errorf("dense search through the langchaingo embedder: %v (score %v)", got, docs[0].Score)
		}
		if id, _, _ := m.StoredEmbedder(); id != "lc-hash/32" {
			t.Errorf("stored embedder %q", id)
		}
	})

	t.Run("store's embedder as langchaingo's", func(t *testing.T) {
		theirs := memorylc.ToEmbeddings(hash)
		texts := []string{"alpha beta", "gamma"}
		got, err := theirs.EmbedDocuments(ctx, texts)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := hash.Embed(ctx, texts)
		for i := range want {
			if !slices.Equal(got[i], want[i]) {
				t.Errorf("EmbedDocuments[%d] differs from the store's embedder", i)
			}
		}
		q, err := theirs.EmbedQuery(ctx, "gamma")
		if err != nil || !slices.Equal(q, want[1]) {
			t.Errorf("EmbedQuery = %v, %v", q, err)
		}
	})

	bad := []struct {
		name   string
		client embeddings.EmbedderClientFunc
		err    error
	}{
		{name: "too few vectors", client: func(_ context.Context, texts []string) ([][]float32, error) {
			return [][]float32{make([]float32, 32)}, nil
		}, err: memorylc.ErrBadEmbedding},
		{name: "wrong length", client: func(_ context.Context, texts []string) ([][]float32, error) {
			out := make([][]float32, len(texts))
			for i := range out {
				out[i] = make([]float32, 31+i)
			}
			return out, nil
		}, err: memorylc.ErrBadEmbedding},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			lc, _ := embeddings.NewEmbedder(tc.client, embeddings.WithBatchSize(1000))
			e, err := memorylc.FromEmbeddings(ctx, lc, "bad")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Embed(ctx, []string{"a", "b"}); !errors.Is(err, tc.err) {
				t.Errorf("err %v, want %v", err, tc.err)
			}
		})
	}
	if _, err := memorylc.FromEmbeddings(ctx, lc, ""); err == nil {
		t.Error("FromEmbeddings without a model id succeeded")
	}
}

// TestScoreThresholdRelevance: the threshold an agent uses, WithScoreThreshold(0.5), keeps
// the exact match and drops unrelated documents in every search mode, and the documents'
// Scores are the results' Relevance (in a hybrid search the store's own score is RRF's,
// about 0.03, which such a threshold would drop entirely).
func TestScoreThresholdRelevance(t *testing.T) {
	ctx := context.Background()
	m, _ := openStore(t, vectorstore.NewHashEmbedder(256))
	query := corpus[2].PageContent // the soup document's text
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
			s := memorylc.New(m, memorylc.WithSearchOptions(tc.opts...))
			docs, err := s.SimilaritySearch(ctx, query, 5, vectorstores.WithScoreThreshold(0.5))
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(docs); !slices.Equal(got, []string{"soup"}) {
				t.Fatalf("ids %v, want [soup]", got)
			}
			if docs[0].Score < 0.99 || docs[0].Score > 1 {
				t.Errorf("exact match's score %v, want its relevance, near 1", docs[0].Score)
			}
			all, err := s.SimilaritySearch(ctx, query, 5)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range all {
				if id := d.Metadata[memorylc.IDKey]; id != "soup" && !(d.Score >= 0 && d.Score < 0.5) {
					t.Errorf("unrelated %v: score %v, want in [0, 0.5)", id, d.Score)
				}
			}
		})
	}
}
