package memory_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/vecfile"
	"github.com/agentmem/memory/vectorstore"
)

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
