package memory

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// BenchmarkLookups measures the paths that key-bound checksums and checked misses touch, on
// SciFact (5,183 documents, stored whole, on disk): Get of a stored id (its record's
// checksum now covers its id), Get of an id that is not stored (a miss now reads the leaf
// page around it), and a BM25 search for k = 10 (each result's record is read and checked).
func BenchmarkLookups(b *testing.B) {
	ds := scifact(b)
	docs := scifactDocs(ds)
	ctx := context.Background()
	m, err := Open(filepath.Join(b.TempDir(), "s"), WithNoSync(), WithChunking(ChunkOptions{Disabled: true}))
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	for j := 0; j < len(docs); j += 512 {
		if err := m.Add(ctx, docs[j:min(j+512, len(docs))]...); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("get-hit", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := m.Get(ctx, docs[i%len(docs)].ID); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("get-miss", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			// Sorts right after a stored id: the lookup lands in the middle of a leaf page.
			if _, err := m.Get(ctx, docs[i%len(docs)].ID+"-x"); !errors.Is(err, ErrNotFound) {
				b.Fatal(err)
			}
		}
	})
	b.Run("search-bm25-k10", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := m.Search(ctx, ds.Queries[i%len(ds.Queries)].Text, WithMode(BM25), TopK(10)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
