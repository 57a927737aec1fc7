package memory_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/hybrid"
	"github.com/agentmem/memory/internal/vecfile"
	"github.com/agentmem/memory/vectorstore"
)

func Example() {
	ctx := context.Background()
	m, err := memory.Open("") // "" = a temporary store; pass a directory to keep it
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	err = m.Add(ctx,
		memory.Document{ID: "a", Title: "Go", Text: "Go has a concurrent garbage collector."},
		memory.Document{ID: "b", Title: "Rust", Text: "Rust manages memory without a garbage collector."},
		memory.Document{ID: "c", Title: "Bleve", Text: "Bleve is a full-text search library for Go."},
	)
	if err != nil {
		log.Fatal(err)
	}
	res, err := m.Search(ctx, "full-text search in go", memory.WithMode(memory.BM25), memory.TopK(2))
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range res {
		fmt.Printf("%s bm25 rank %d\n", r.ID, r.Explain.BM25.Rank)
	}
	// Output:
	// c bm25 rank 1
	// a bm25 rank 2
}

func Example_hybridWithFilter() {
	ctx := context.Background()
	m, err := memory.Open("", memory.WithEmbedder(vectorstore.NewHashEmbedder(64)))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	err = m.Add(ctx,
		memory.Document{ID: "q1", Text: "reset your password from the account page", Metadata: map[string]any{"kind": "faq", "year": 2024}},
		memory.Document{ID: "q2", Text: "password reset emails can take five minutes", Metadata: map[string]any{"kind": "faq", "year": 2021}},
		memory.Document{ID: "d1", Text: "the account page lists your password settings", Metadata: map[string]any{"kind": "doc", "year": 2024}},
	)
	if err != nil {
		log.Fatal(err)
	}
	res, err := m.Search(ctx, "how do I reset my password",
		memory.WithWhere(memory.Where{"kind": "faq", "year": map[string]any{"$gte": 2022}}))
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range res {
		fmt.Printf("%s bm25=%v dense=%v\n", r.ID, r.Explain.BM25 != nil, r.Explain.Dense != nil)
	}
	// Output:
	// q1 bm25=true dense=true
}

func ExampleMemory_Collection() {
	ctx := context.Background()
	m, err := memory.Open("")
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	if err := m.Collection("qna").Add(ctx, memory.Document{ID: "1", Text: "Q: where are logs? A: in /var/log/app"}); err != nil {
		log.Fatal(err)
	}
	if err := m.Collection("docs").Add(ctx, memory.Document{ID: "1", Text: "The app writes logs to /var/log/app by default."}); err != nil {
		log.Fatal(err)
	}
	res, err := m.Search(ctx, "where are the app logs",
		memory.InCollections(map[string]float64{"qna": 2, "docs": 1}))
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range res {
		fmt.Println(r.Collection, r.ID)
	}
	// Output:
	// qna 1
	// docs 1
}

// openWith opens a temporary store with opts and adds docs, stopping the example on an
// error.
func openWith(ctx context.Context, docs []memory.Document, opts ...memory.Option) *memory.Memory {
	m, err := memory.Open("", opts...)
	if err != nil {
		log.Fatal(err)
	}
	if err := m.Add(ctx, docs...); err != nil {
		log.Fatal(err)
	}
	return m
}

// tempDir makes a directory for an example; the example removes it.
func tempDir() string {
	dir, err := os.MkdirTemp("", "agent-memory-*")
	if err != nil {
		log.Fatal(err)
	}
	return dir
}

// wordOverlap is a stand-in cross-encoder for the examples: it scores a passage by the
// query words it holds (a real one is rerank.NewCrossEncoder).
type wordOverlap struct{}

func (wordOverlap) Score(ctx context.Context, query string, passages []string) ([]float32, error) {
	out := make([]float32, len(passages))
	for i, p := range passages {
		for _, w := range strings.Fields(strings.ToLower(query)) {
			if strings.Contains(strings.ToLower(p), w) {
				out[i]++
			}
		}
	}
	return out, nil
}

// Example_readme is the README's quickstart flow (add, hybrid search with reranking, the
// per-stage explanation) with a stand-in embedder and reranker, so that it runs without
// models; internal/release's TestReadmeGoBlocks builds the README's own code as written.
func Example_readme() {
	ctx := context.Background()
	dir := tempDir()
	defer os.RemoveAll(dir)
	emb, rr := vectorstore.NewHashEmbedder(64), wordOverlap{}

	m, err := memory.Open(dir, memory.WithEmbedder(emb), memory.WithReranker(rr)) // emb: ONNX, Model2Vec or your own; rr: a cross-encoder
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	err = m.Add(ctx, memory.Document{ID: "1", Title: "Deploys", Text: "Deploy with make release.", Source: "docs/deploy.md",
		Metadata: map[string]any{"team": "infra", "year": 2024}})
	if err != nil {
		log.Fatal(err)
	}
	res, err := m.Search(ctx, "how do I ship a release", memory.TopK(5),
		memory.WithWhere(memory.Where{"team": "infra", "year": map[string]any{"$gte": 2020}}), memory.WithRerank(50), memory.WithSnippets())
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range res {
		fmt.Println(r.ID, r.Source, r.Snippet, r.Explain.BM25 != nil, r.Explain.Dense != nil, r.Explain.Rerank != nil) // per-stage breakdown
	}
	// Output:
	// 1 docs/deploy.md Deploy with make release. true true true
}

// ExampleCollection_DeleteWhere re-indexes a source: the chunks of its old version go, the
// new version is added, and sources that disappeared are deleted.
func ExampleCollection_DeleteWhere() {
	ctx := context.Background()
	m, err := memory.Open("")
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	docs, err := m.CreateCollection("docs")
	if err != nil {
		log.Fatal(err)
	}
	err = docs.Add(ctx,
		memory.Document{ID: "a.md", Text: "old text of a", Source: "a.md"},
		memory.Document{ID: "b.md", Text: "text of b", Source: "b.md"})
	if err != nil {
		log.Fatal(err)
	}
	// a.md changed: replace everything that came from it.
	if _, err := docs.DeleteWhere(ctx, memory.Where{"source": "a.md"}); err != nil {
		log.Fatal(err)
	}
	if err := docs.Add(ctx, memory.Document{ID: "a.md", Text: "new text of a", Source: "a.md"}); err != nil {
		log.Fatal(err)
	}
	// b.md is gone from the folder.
	present := map[string]bool{"a.md": true}
	srcs, err := docs.Sources(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range srcs {
		if !present[s] {
			n, err := docs.DeleteWhere(ctx, memory.Where{"source": s})
			if err != nil {
				log.Fatal(err)
			}
			fmt.Println("deleted", s, n)
		}
	}
	ids, err := docs.IDs(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ids)
	_, err = m.GetCollection("typo")
	fmt.Println(errors.Is(err, memory.ErrCollectionNotFound))
	// Output:
	// deleted b.md 1
	// [a.md]
	// true
}

// Example_reopen keeps a store in a directory: closed and opened again, it has its
// documents and answers as before.
func Example_reopen() {
	ctx := context.Background()
	dir := tempDir()
	defer os.RemoveAll(dir)
	m, err := memory.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	if err := m.Add(ctx, memory.Document{ID: "n1", Text: "the deploy key lives in the vault"}); err != nil {
		log.Fatal(err)
	}
	if err := m.Close(); err != nil {
		log.Fatal(err)
	}

	m, err = memory.Open(dir) // the same directory: the same store
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	res, err := m.Search(ctx, "where is the deploy key", memory.WithMode(memory.BM25))
	if err != nil {
		log.Fatal(err)
	}
	n, err := m.Count(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n, res[0].ID, res[0].Text)
	// Output:
	// 1 n1 the deploy key lives in the vault
}

// ExampleMemory_Upsert replaces a document by id, and Delete removes it; a search sees
// each change at once.
func ExampleMemory_Upsert() {
	ctx := context.Background()
	m := openWith(ctx, []memory.Document{{ID: "cfg", Text: "the cache holds 10 entries"}})
	defer m.Close()
	if err := m.Upsert(ctx, memory.Document{ID: "cfg", Text: "the cache holds 500 entries"}); err != nil {
		log.Fatal(err)
	}
	d, err := m.Get(ctx, "cfg")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.Text)
	if err := m.Delete(ctx, "cfg"); err != nil {
		log.Fatal(err)
	}
	_, err = m.Get(ctx, "cfg")
	fmt.Println(errors.Is(err, memory.ErrNotFound))
	res, err := m.Search(ctx, "cache entries", memory.WithMode(memory.BM25))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(res), "results")
	// Output:
	// the cache holds 500 entries
	// true
	// 0 results
}

// ExampleMemory_AddCode indexes a source tree one function or type per document, each
// with its path, lines and language in its metadata.
func ExampleMemory_AddCode() {
	ctx := context.Background()
	root := tempDir()
	defer os.RemoveAll(root)
	src := `package temp

// Celsius converts a temperature in degrees Fahrenheit to degrees Celsius.
func Celsius(f float64) float64 {
	return (f - 32) * 5 / 9
}

// Fahrenheit converts a temperature in degrees Celsius to degrees Fahrenheit.
func Fahrenheit(c float64) float64 {
	return c*9/5 + 32
}
`
	if err := os.WriteFile(filepath.Join(root, "temp.go"), []byte(src), 0o644); err != nil {
		log.Fatal(err)
	}
	m, err := memory.Open("")
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	sum, err := m.AddCode(ctx, root, memory.CodeOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("files:", sum.Files)
	res, err := m.Search(ctx, "convert fahrenheit to celsius", memory.WithMode(memory.BM25), memory.TopK(1))
	if err != nil {
		log.Fatal(err)
	}
	r := res[0]
	fmt.Println(r.ID, r.Source, r.Metadata["language"], r.Metadata["name"])
	// Output:
	// files: 1
	// temp.go#L1-L11 temp.go go Celsius
}

// ExampleWithRerank reorders the fused candidates with the store's cross-encoder (here a
// stand-in that counts the query words a passage holds, "the" included, which BM25 drops
// as a stop word; a real one is rerank.NewCrossEncoder over an ONNX model) and reports
// both rankings in each result's explanation, the score becoming sigmoid(logit).
func ExampleWithRerank() {
	ctx := context.Background()
	m := openWith(ctx, []memory.Document{
		{ID: "a", Text: "password password password reset"},
		{ID: "b", Text: "to reset the password, open the settings page"},
	}, memory.WithReranker(wordOverlap{}))
	defer m.Close()
	res, err := m.Search(ctx, "reset the password", memory.WithMode(memory.BM25), memory.WithRerank(0))
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range res {
		fmt.Printf("%s bm25 rank %d, rerank rank %d, score %.3f\n", r.ID, r.Explain.BM25.Rank, r.Explain.Rerank.Rank, r.Score)
	}
	// Output:
	// b bm25 rank 2, rerank rank 1, score 0.953
	// a bm25 rank 1, rerank rank 2, score 0.881
}

// ExampleWithFusion plugs a fusion method of one's own into hybrid search: any
// hybrid.FusionFunc, here CombSUM over the raw scores built on hybrid.Fuse.
func ExampleWithFusion() {
	ctx := context.Background()
	m := openWith(ctx, []memory.Document{
		{ID: "a", Text: "vector search with an exact flat scan"},
		{ID: "b", Text: "keyword search with BM25"},
	}, memory.WithEmbedder(vectorstore.NewHashEmbedder(64)))
	defer m.Close()
	combSUM := func(lists []hybrid.List, opt hybrid.FusionOptions) []hybrid.Fused {
		return hybrid.Fuse(lists, opt, "combsum", func(_ int, w float64, _ int, h hybrid.Hit) float64 {
			return w * h.Score
		})
	}
	res, err := m.Search(ctx, "keyword search", memory.WithFusion(combSUM), memory.TopK(1))
	if err != nil {
		log.Fatal(err)
	}
	r := res[0]
	fmt.Println(r.ID, r.Score == r.Explain.BM25.Score+r.Explain.Dense.Score)
	// Output:
	// b true
}

// A cascade searches a gold collection of curated answers first and falls back to the
// knowledge collections only when gold has nothing good enough. The threshold is compared
// with each result's score: here BM25's.
func ExampleWithCascade() {
	ctx := context.Background()
	m, err := memory.Open("")
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	gold := []memory.Document{
		{ID: "qa-deploy", Text: "Q: how do I deploy the service? A: run make release, then make deploy ENV=prod."},
		{ID: "qa-logs", Text: "Q: where are the logs? A: in /var/log/app, kept for 30 days."},
		{ID: "qa-oncall", Text: "Q: who is on call? A: see the rota in the team calendar."},
	}
	docs := []memory.Document{
		{ID: "runbook-db", Text: "Restoring the database: stop the writers, restore the latest snapshot, replay the WAL."},
		{ID: "runbook-deploy", Text: "Deploys go through make release; a failed deploy is rolled back with make rollback."},
		{ID: "arch", Text: "The service writes to Postgres; snapshots of the database are taken every hour."},
	}
	if err := m.Collection("gold").Add(ctx, gold...); err != nil {
		log.Fatal(err)
	}
	if err := m.Collection("docs").Add(ctx, docs...); err != nil {
		log.Fatal(err)
	}
	for _, q := range []string{"how do I deploy the service", "restore the service database from a snapshot"} {
		res, err := m.Search(ctx, q, memory.WithMode(memory.BM25), memory.TopK(3),
			memory.WithCascade(1.5, "gold", "docs"))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(q)
		for _, r := range res {
			fmt.Printf("  %s/%s (step %d) %.2f\n", r.Collection, r.ID, r.Explain.Cascade, r.Score)
		}
		notes := res[0].Explain.Notes
		fmt.Println(" ", notes[len(notes)-1])
	}
	// Output:
	// how do I deploy the service
	//   gold/qa-deploy (step 1) 2.18
	//   cascade stopped at step 1 of 2 ("gold"): best score 2.183 >= threshold 1.5
	// restore the service database from a snapshot
	//   docs/runbook-db (step 2) 2.23
	//   docs/arch (step 2) 1.96
	//   gold/qa-deploy (step 1) 0.94
	//   cascade stopped at step 2 of 2 ("docs"): best score 2.225 >= threshold 1.5
}

// De-duplication by source keeps the best result of each file, so that one long source
// does not fill the results; WithCollapse drops near-duplicates by their vectors, and the
// two compose.
func ExampleWithSourceDedup() {
	ctx := context.Background()
	m, err := memory.Open("")
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	err = m.Add(ctx,
		memory.Document{ID: "deploy-1", Source: "docs/deploy.md", Text: "Deploy with make release; the release is tagged."},
		memory.Document{ID: "deploy-2", Source: "docs/deploy.md", Text: "A failed release is rolled back with make rollback."},
		memory.Document{ID: "deploy-3", Source: "docs/deploy.md", Text: "Release notes are written before each release."},
		memory.Document{ID: "faq-1", Source: "docs/faq.md", Text: "Q: how often do we release? A: every Tuesday."},
		memory.Document{ID: "note", Text: "Remember the release party on Friday."},
	)
	if err != nil {
		log.Fatal(err)
	}
	for _, opts := range [][]memory.SearchOption{
		{memory.WithMode(memory.BM25), memory.TopK(4)},
		{memory.WithMode(memory.BM25), memory.TopK(4), memory.WithSourceDedup()},
	} {
		res, err := m.Search(ctx, "release", opts...)
		if err != nil {
			log.Fatal(err)
		}
		var line []string
		for _, r := range res {
			line = append(line, fmt.Sprintf("%s (%s)", r.ID, r.Source))
		}
		fmt.Println(strings.Join(line, ", "))
	}
	// Output:
	// deploy-3 (docs/deploy.md), deploy-1 (docs/deploy.md), note (), faq-1 (docs/faq.md)
	// deploy-3 (docs/deploy.md), note (), faq-1 (docs/faq.md)
}

// Vectors computed elsewhere (here a 3 x 4 .npy matrix, row i for passage i) are added
// with their passages under the name of the model that made them, which is not loaded:
// BM25 searches work, and a dense search says what it needs.
func Example_precomputedVectors() {
	ctx := context.Background()
	var npy bytes.Buffer // what numpy.save(f, np.asarray(vectors, dtype='<f4')) writes
	w, _ := vecfile.NewWriter(&npy, vecfile.NPY, 3, 4)
	for i := range 3 {
		v := make([]float32, 4)
		v[i] = 1
		w.Write(v)
	}
	w.Close()
	passages := []string{"otters hold hands", "walruses haul out", "seals sleep in water"}

	m, err := memory.Open("", memory.WithEmbedder(vectorstore.NewVectorsOnly("e5-base-v2", 4)))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	r, err := vecfile.NewReader(&npy, int64(npy.Len()), "vectors.npy")
	if err != nil {
		log.Fatal(err)
	}
	var docs []memory.Document
	for i, text := range passages {
		vec, err := r.Next(nil)
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatal(err) // a *vecfile.Error naming the file and row
		}
		docs = append(docs, memory.Document{ID: fmt.Sprint(i), Text: text, Embedding: vec})
	}
	if err := m.Add(ctx, docs...); err != nil {
		log.Fatal(err)
	}
	res, _ := m.Search(ctx, "walruses", memory.WithMode(memory.BM25))
	fmt.Println(res[0].ID, res[0].Text)
	_, err = m.Search(ctx, "walruses", memory.WithMode(memory.Dense))
	fmt.Println(errors.Is(err, memory.ErrEmbedderNeeded))
	d, _ := m.Get(ctx, "2")
	fmt.Println(d.Embedding)
	// Output:
	// 1 walruses haul out
	// true
	// [0 0 1 0]
}
