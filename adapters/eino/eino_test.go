package memoryeino_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/memory"
	memoryeino "github.com/agentmem/memory/adapters/eino"
	"github.com/agentmem/memory/vectorstore"
	"github.com/cloudwego/eino/components/embedding"
	"github.com/cloudwego/eino/components/indexer"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/prompt"
	"github.com/cloudwego/eino/components/retriever"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

func corpus() []*schema.Document {
	return []*schema.Document{
		{ID: "deploy", Content: "The deploy script pushes the release to the staging cluster first.", MetaData: map[string]any{"topic": "ops", "year": 2024}},
		{ID: "rollback", Content: "Rollbacks restore the previous release from the artifact bucket.", MetaData: map[string]any{"topic": "ops", "year": 2023}},
		{ID: "soup", Content: "The cafeteria serves soup on Fridays.", MetaData: map[string]any{"topic": "food", "year": 2024, "title": "Menu"}},
	}
}

// openStore opens a temporary store (with emb as its embedder when not nil) holding corpus
// in the default collection and one more document in collection "archive", stored through
// the Indexer.
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
	ix, err := memoryeino.NewIndexer(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := ix.Store(ctx, corpus()); err != nil {
		t.Fatal(err)
	}
	archive := []*schema.Document{{ID: "old-deploy", Content: "Old deploy notes: the release was copied by hand."}}
	if _, err := ix.Store(ctx, archive, indexer.WithSubIndexes([]string{"archive"})); err != nil {
		t.Fatal(err)
	}
	return m
}

// fakeChatModel is a chat model that records its input and answers with a fixed message.
type fakeChatModel struct {
	answer string
	mu     sync.Mutex
	inputs [][]*schema.Message
}

func (f *fakeChatModel) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	f.mu.Lock()
	f.inputs = append(f.inputs, in)
	f.mu.Unlock()
	return schema.AssistantMessage(f.answer, nil), nil
}

func (f *fakeChatModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	m, err := f.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{m}), nil
}

var _ model.BaseChatModel = (*fakeChatModel)(nil)

// ragChain is a retrieval-augmented chain: the question goes to the retriever and, beside
// it, to a prompt template that lists the retrieved documents; the chat model answers.
func ragChain(t *testing.T, r retriever.Retriever, cm model.BaseChatModel) compose.Runnable[string, *schema.Message] {
	t.Helper()
	join := compose.InvokableLambda(func(_ context.Context, in map[string]any) (map[string]any, error) {
		docs, _ := in["documents"].([]*schema.Document)
		var b strings.Builder
		for _, d := range docs {
			fmt.Fprintf(&b, "[%s] %s\n", d.ID, d.Content)
		}
		return map[string]any{"question": in["question"], "context": b.String()}, nil
	})
	tmpl := prompt.FromMessages(schema.FString,
		schema.SystemMessage("Answer from these documents only:\n{context}"),
		schema.UserMessage("{question}"))
	chain := compose.NewChain[string, *schema.Message]().
		AppendParallel(compose.NewParallel().AddRetriever("documents", r).AddPassthrough("question")).
		AppendLambda(join).
		AppendChatTemplate(tmpl).
		AppendChatModel(cm)
	run, err := chain.Compile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func TestChainAnswersFromStore(t *testing.T) {
	tests := []struct {
		name     string
		emb      vectorstore.Embedder
		cfg      *memoryeino.RetrieverConfig
		opts     []retriever.Option
		question string
		want     []string // texts that must reach the chat model
		notWant  []string
	}{
		{
			name:     "bm25",
			cfg:      &memoryeino.RetrieverConfig{TopK: 2},
			question: "how does the deploy script push a release",
			want:     []string{"[deploy] The deploy script pushes the release"},
			notWant:  []string{"soup", "copied by hand"},
		},
		{
			name:     "hybrid with embedder, top 1 per call",
			emb:      vectorstore.NewHashEmbedder(64),
			opts:     []retriever.Option{retriever.WithTopK(1)},
			question: "how does the deploy script push a release",
			want:     []string{"[deploy]"},
			notWant:  []string{"[rollback]", "[soup]"},
		},
		{
			name:     "index names the collection",
			opts:     []retriever.Option{retriever.WithIndex("archive")},
			question: "how was the release deployed",
			want:     []string{"[old-deploy] Old deploy notes"},
			notWant:  []string{"staging cluster"},
		},
		{
			name:     "where filter through the chain",
			opts:     []retriever.Option{memoryeino.WithWhere(memory.Where{"year": 2023})},
			question: "what happens to a release",
			want:     []string{"[rollback] Rollbacks restore the previous release"},
			notWant:  []string{"[deploy]", "[soup]"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := openStore(t, tc.emb)
			r, err := memoryeino.NewRetriever(m, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			cm := &fakeChatModel{answer: "Through the staging cluster."}
			run := ragChain(t, r, cm)
			out, err := run.Invoke(context.Background(), tc.question, compose.WithRetrieverOption(tc.opts...))
			if err != nil {
				t.Fatal(err)
			}
			if out.Content != "Through the staging cluster." {
				t.Errorf("answer %q", out.Content)
			}
			if len(cm.inputs) != 1 || len(cm.inputs[0]) != 2 {
				t.Fatalf("chat model inputs %v", cm.inputs)
			}
			sys, user := cm.inputs[0][0].Content, cm.inputs[0][1].Content
			if user != tc.question {
				t.Errorf("user message %q", user)
			}
			for _, w := range tc.want {
				if !strings.Contains(sys, w) {
					t.Errorf("prompt lacks %q:\n%s", w, sys)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(sys, w) {
					t.Errorf("prompt holds %q, which the retriever should not return:\n%s", w, sys)
				}
			}
		})
	}
}

func TestRetrieve(t *testing.T) {
	ctx := context.Background()
	m := openStore(t, vectorstore.NewHashEmbedder(64))
	newR := func(cfg memoryeino.RetrieverConfig) *memoryeino.Retriever {
		r, err := memoryeino.NewRetriever(m, &cfg)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	bm25 := newR(memoryeino.RetrieverConfig{SearchOptions: []memory.SearchOption{memory.WithMode(memory.BM25)}})
	dense := newR(memoryeino.RetrieverConfig{SearchOptions: []memory.SearchOption{memory.WithMode(memory.Dense)}})
	archive := newR(memoryeino.RetrieverConfig{Collection: "archive", TopK: 1})
	top1 := newR(memoryeino.RetrieverConfig{SearchOptions: []memory.SearchOption{memory.WithMode(memory.BM25), memory.TopK(1)}})
	tests := []struct {
		name  string
		r     *memoryeino.Retriever
		query string
		opts  []retriever.Option
		want  []string
		err   error
	}{
		{name: "top k", r: bm25, query: "deploy release", opts: []retriever.Option{retriever.WithTopK(1)}, want: []string{"deploy"}},
		{name: "default k", r: bm25, query: "deploy release", want: []string{"deploy", "rollback"}},
		{name: "search options' top k", r: top1, query: "deploy release", opts: []retriever.Option{retriever.WithTopK(0)}, want: []string{"deploy"}},
		{name: "call's top k wins", r: top1, query: "deploy release", opts: []retriever.Option{retriever.WithTopK(2)}, want: []string{"deploy", "rollback"}},
		{name: "config collection", r: archive, query: "release", want: []string{"old-deploy"}},
		{name: "sub-index wins", r: bm25, query: "release", opts: []retriever.Option{retriever.WithIndex("nope"), retriever.WithSubIndex("archive")}, want: []string{"old-deploy"}},
		{name: "where", r: bm25, query: "release", opts: []retriever.Option{memoryeino.WithWhere(memory.Where{"year": map[string]any{"$lt": 2024}})}, want: []string{"rollback"}},
		{name: "where document", r: bm25, query: "release", opts: []retriever.Option{memoryeino.WithWhereDocument(memory.WhereDocument{"$contains": "staging"})}, want: []string{"deploy"}},
		{name: "search options", r: bm25, query: "release soup", opts: []retriever.Option{memoryeino.WithSearchOptions(memory.WithWhere(memory.Where{"topic": "food"}))}, want: []string{"soup"}},
		{name: "score threshold", r: dense, query: corpus()[1].Content, opts: []retriever.Option{retriever.WithScoreThreshold(0.999)}, want: []string{"rollback"}},
		{name: "embedding option", r: bm25, query: "release", opts: []retriever.Option{retriever.WithEmbedding(memoryeino.ToEmbedding(vectorstore.NewHashEmbedder(8)))}, err: memoryeino.ErrUnsupportedOption},
		{name: "dsl option", r: bm25, query: "release", opts: []retriever.Option{retriever.WithDSLInfo(map[string]any{"x": 1})}, err: memoryeino.ErrUnsupportedOption},
		{name: "negative k", r: bm25, query: "release", opts: []retriever.Option{retriever.WithTopK(-1)}, err: memory.ErrInvalidOption},
		{name: "negative threshold", r: bm25, query: "release", opts: []retriever.Option{retriever.WithScoreThreshold(-0.5)}, err: memory.ErrInvalidOption},
		{name: "bad filter", r: bm25, query: "release", opts: []retriever.Option{memoryeino.WithWhere(memory.Where{"$bogus": 1})}, err: memory.ErrInvalidFilter},
		{name: "unknown collection", r: bm25, query: "release", opts: []retriever.Option{retriever.WithIndex("nope")}, err: memory.ErrCollectionNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := tc.r.Retrieve(ctx, tc.query, tc.opts...)
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
			for i, d := range docs {
				got = append(got, d.ID)
				if d.MetaData[memoryeino.CollectionKey] == nil || d.Score() == 0 {
					t.Errorf("document %s: metadata %v, score %v", d.ID, d.MetaData, d.Score())
				}
				if i > 0 && d.Score() > docs[i-1].Score() {
					t.Errorf("scores not descending")
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("ids %v, want %v", got, tc.want)
			}
		})
	}
	docs, err := bm25.Retrieve(ctx, "cafeteria")
	if err != nil || len(docs) != 1 || docs[0].MetaData[memoryeino.TitleKey] != "Menu" || docs[0].MetaData["year"] != float64(2024) {
		t.Errorf("title and metadata of a result: %+v, %v", docs, err)
	}
}

func TestIndexer(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		cfg   *memoryeino.IndexerConfig
		emb   vectorstore.Embedder
		first []*schema.Document
		docs  []*schema.Document
		opts  []indexer.Option
		check func(t *testing.T, m *memory.Memory, ids []string)
		err   error
	}{
		{
			name: "random ids, eino keys not stored",
			docs: []*schema.Document{(&schema.Document{Content: "a", MetaData: map[string]any{"k": "v", "collection": "x"}}).WithScore(3).WithExtraInfo("e"), {Content: "b"}},
			check: func(t *testing.T, m *memory.Memory, ids []string) {
				if len(ids) != 2 || ids[0] == ids[1] || ids[0] == "" {
					t.Fatalf("ids %q", ids)
				}
				d, err := m.Get(ctx, ids[0])
				if err != nil || d.Text != "a" || len(d.Metadata) != 1 || d.Metadata["k"] != "v" {
					t.Errorf("stored %+v, %v", d, err)
				}
			},
		},
		{
			name: "sub-index names the collection",
			docs: []*schema.Document{{ID: "n", Content: "note"}},
			opts: []indexer.Option{indexer.WithSubIndexes([]string{"notes"})},
			check: func(t *testing.T, m *memory.Memory, _ []string) {
				if _, err := m.Collection("notes").Get(ctx, "n"); err != nil {
					t.Error(err)
				}
			},
		},
		{
			name: "config collection",
			cfg:  &memoryeino.IndexerConfig{Collection: "kb"},
			docs: []*schema.Document{{ID: "n", Content: "note"}},
			check: func(t *testing.T, m *memory.Memory, _ []string) {
				if _, err := m.Collection("kb").Get(ctx, "n"); err != nil {
					t.Error(err)
				}
			},
		},
		{
			name: "dense vector is the embedding",
			emb:  vectorstore.NewHashEmbedder(4),
			docs: []*schema.Document{(&schema.Document{ID: "v", Content: "vector"}).WithDenseVector([]float64{0, 1, 0, 0})},
			check: func(t *testing.T, m *memory.Memory, _ []string) {
				d, err := m.Get(ctx, "v")
				if err != nil || !slices.Equal(d.Embedding, []float32{0, 1, 0, 0}) {
					t.Errorf("stored %+v, %v", d, err)
				}
			},
		},
		{
			name:  "upsert",
			cfg:   &memoryeino.IndexerConfig{Upsert: true},
			first: []*schema.Document{{ID: "d", Content: "one"}},
			docs:  []*schema.Document{{ID: "d", Content: "two"}},
			check: func(t *testing.T, m *memory.Memory, _ []string) {
				if d, err := m.Get(ctx, "d"); err != nil || d.Text != "two" {
					t.Errorf("Get = %+v, %v", d, err)
				}
			},
		},
		{name: "duplicate id", first: []*schema.Document{{ID: "d", Content: "one"}}, docs: []*schema.Document{{ID: "d", Content: "two"}}, err: memory.ErrDuplicateID},
		{name: "two sub-indexes", docs: []*schema.Document{{ID: "d", Content: "x"}}, opts: []indexer.Option{indexer.WithSubIndexes([]string{"a", "b"})}, err: memoryeino.ErrUnsupportedOption},
		{name: "embedding option", docs: []*schema.Document{{ID: "d", Content: "x"}}, opts: []indexer.Option{indexer.WithEmbedding(memoryeino.ToEmbedding(vectorstore.NewHashEmbedder(8)))}, err: memoryeino.ErrUnsupportedOption},
		{name: "nested metadata", docs: []*schema.Document{{ID: "d", Content: "x", MetaData: map[string]any{"m": map[string]any{}}}}, err: memory.ErrInvalidMetadata},
		{name: "nil document", docs: []*schema.Document{{ID: "d", Content: "x"}, nil}, err: memory.ErrEmptyText},
		{name: "wrong vector length", emb: vectorstore.NewHashEmbedder(4), docs: []*schema.Document{(&schema.Document{ID: "v", Content: "x"}).WithDenseVector([]float64{1})}, err: memory.ErrBadVector},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := []memory.Option{memory.WithNoSync()}
			if tc.emb != nil {
				opts = append(opts, memory.WithEmbedder(tc.emb))
			}
			m, err := memory.Open(t.TempDir(), opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			ix, err := memoryeino.NewIndexer(m, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ix.Store(ctx, tc.first); err != nil {
				t.Fatal(err)
			}
			before, _ := m.Count(ctx)
			// The indexer runs as a node of a chain, as eino applications use it.
			chain, err := compose.NewChain[[]*schema.Document, []string]().AppendIndexer(ix).Compile(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ids, err := chain.Invoke(ctx, tc.docs, compose.WithIndexerOption(tc.opts...))
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				if after, _ := m.Count(ctx); after != before {
					t.Errorf("a failed store changed the store: %d documents, then %d", before, after)
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

// einoHash is an eino embedder over the store's hashing embedder, as a remote eino
// embedding component would be.
type einoHash struct {
	h     *vectorstore.HashEmbedder
	short bool // return one vector too few
}

func (e einoHash) EmbedStrings(ctx context.Context, texts []string, _ ...embedding.Option) ([][]float64, error) {
	vs, err := e.h.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	out := make([][]float64, len(vs))
	for i, v := range vs {
		out[i] = make([]float64, len(v))
		for j, x := range v {
			out[i][j] = float64(x)
		}
	}
	if e.short && len(out) > 1 {
		out = out[:len(out)-1]
	}
	return out, nil
}

func TestEmbedders(t *testing.T) {
	ctx := context.Background()
	hash := vectorstore.NewHashEmbedder(32)

	t.Run("eino embedder as the store's", func(t *testing.T) {
		ours, err := memoryeino.FromEmbedding(ctx, einoHash{h: hash}, "eino-hash/32")
		if err != nil {
			t.Fatal(err)
		}
		if ours.Dim() != 32 || ours.ID() != "eino-hash/32" {
			t.Fatalf("Dim %d ID %q", ours.Dim(), ours.ID())
		}
		m, err := memory.Open(t.TempDir(), memory.WithEmbedder(ours), memory.WithNoSync())
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		ix, _ := memoryeino.NewIndexer(m, nil)
		if _, err := ix.Store(ctx, corpus()); err != nil {
			t.Fatal(err)
		}
		r, _ := memoryeino.NewRetriever(m, &memoryeino.RetrieverConfig{SearchOptions: []memory.SearchOption{memory.WithMode(memory.Dense)}})
		docs, err := r.Retrieve(ctx, corpus()[0].Content, retriever.WithTopK(1))
		if err != nil || len(docs) != 1 || docs[0].ID != "deploy" || docs[0].Score() < 0.999 {
			t.Errorf("dense retrieval through the eino embedder: %+v, %v", docs, err)
		}
	})

	t.Run("store's embedder as eino's, in a chain", func(t *testing.T) {
		theirs := memoryeino.ToEmbedding(hash)
		run, err := compose.NewChain[[]string, [][]float64]().AppendEmbedding(theirs).Compile(ctx)
		if err != nil {
			t.Fatal(err)
		}
		texts := []string{"alpha beta", "gamma"}
		got, err := run.Invoke(ctx, texts)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := hash.Embed(ctx, texts)
		for i := range want {
			for j := range want[i] {
				if got[i][j] != float64(want[i][j]) {
					t.Fatalf("vector %d differs from the store's embedder at %d", i, j)
				}
			}
		}
		if _, err := theirs.EmbedStrings(ctx, texts, embedding.WithModel("other")); !errors.Is(err, memoryeino.ErrUnsupportedOption) {
			t.Errorf("another model: err %v", err)
		}
		if _, err := theirs.EmbedStrings(ctx, texts, embedding.WithModel(hash.ID())); err != nil {
			t.Errorf("its own model: err %v", err)
		}
	})

	t.Run("bad eino embedder", func(t *testing.T) {
		e, err := memoryeino.FromEmbedding(ctx, einoHash{h: hash, short: true}, "short")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Embed(ctx, []string{"a", "b"}); !errors.Is(err, memoryeino.ErrBadEmbedding) {
			t.Errorf("err %v, want ErrBadEmbedding", err)
		}
		if _, err := memoryeino.FromEmbedding(ctx, einoHash{h: hash}, ""); !errors.Is(err, memoryeino.ErrUnsupportedOption) {
			t.Errorf("no model id: err %v", err)
		}
	})
}

// TestScoreThresholdRelevance: the threshold an agent uses, WithScoreThreshold(0.5), keeps
// the exact match and drops unrelated documents in every search mode, and the documents'
// scores are the results' Relevance (in a hybrid search the store's own score is RRF's,
// about 0.03, which such a threshold would drop entirely).
func TestScoreThresholdRelevance(t *testing.T) {
	ctx := context.Background()
	m := openStore(t, vectorstore.NewHashEmbedder(256))
	query := corpus()[1].Content // the rollback document's text
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
			r, err := memoryeino.NewRetriever(m, &memoryeino.RetrieverConfig{SearchOptions: tc.opts})
			if err != nil {
				t.Fatal(err)
			}
			docs, err := r.Retrieve(ctx, query, retriever.WithScoreThreshold(0.5))
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) != 1 || docs[0].ID != "rollback" {
				t.Fatalf("documents %v, want rollback alone", docs)
			}
			if s := docs[0].Score(); s < 0.99 || s > 1 {
				t.Errorf("exact match's score %v, want its relevance, near 1", s)
			}
			all, err := r.Retrieve(ctx, query)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range all {
				if d.ID != "rollback" && !(d.Score() >= 0 && d.Score() < 0.5) {
					t.Errorf("unrelated %s: score %v, want in [0, 0.5)", d.ID, d.Score())
				}
			}
		})
	}
}
