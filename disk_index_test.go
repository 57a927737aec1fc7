package memory

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentmem/memory/vectorstore"
)

// TestDenseIndexPersists checks the default dense index (the disk index): a store reopened
// loads its vector index from its files, with no rebuild from the store of record, and
// dense and hybrid searches, filtered or not, return what the in-memory flat index returns
// on the same store.
func TestDenseIndexPersists(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	emb := vectorstore.NewHashEmbedder(32)
	m := openT(t, dir, WithEmbedder(emb))
	var docs []Document
	for i := range 300 {
		docs = append(docs, Document{ID: fmt.Sprintf("p%03d", i), Text: fmt.Sprintf("passage %d about topic%d and theme%d words", i, i%17, i%5),
			Metadata: map[string]any{"g": float64(i % 4)}})
	}
	if err := m.Add(ctx, docs...); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(ctx, "p007", "p100"); err != nil {
		t.Fatal(err)
	}
	if err := m.Upsert(ctx, Document{ID: "p008", Text: "a replaced passage about topic3"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, vecDir, DefaultCollection, "disk.json")); err != nil {
		t.Fatalf("no persisted vector index: %v", err)
	}
	searches := func(m *Memory) []string {
		var out []string
		for _, q := range []string{"topic3 theme2", "passage 42", "words about topic11"} {
			for _, opts := range [][]SearchOption{
				{WithMode(Dense), TopK(7)},
				{WithMode(Hybrid), TopK(5)},
				{WithMode(Dense), TopK(6), WithWhere(Where{"g": float64(1)})},
			} {
				res, err := m.Search(ctx, q, opts...)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range res {
					out = append(out, fmt.Sprintf("%s %s %.6f", q, r.ID, r.Score))
				}
			}
		}
		return out
	}
	var logs strings.Builder
	m2 := openT(t, dir, WithEmbedder(emb), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	got := searches(m2)
	if strings.Contains(logs.String(), "index=vectors") {
		t.Fatalf("reopen rebuilt the vector index: %s", logs.String())
	}
	if err := m2.Close(); err != nil {
		t.Fatal(err)
	}
	flat := openT(t, dir, WithEmbedder(emb), WithIndex(vectorstore.IndexConfig{Backend: "flat"}), WithIndexRebuild())
	want := searches(flat)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("disk index results differ from the flat index's:\n got  %q\n want %q", got, want)
	}
}
