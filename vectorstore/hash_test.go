package vectorstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// TestHashEmbedParallel holds a batch embedded on every core to the same texts embedded
// one at a time, in order, and a cancelled context to an error.
func TestHashEmbedParallel(t *testing.T) {
	h := NewHashEmbedder(64)
	for _, n := range []int{0, 1, hashParallelMin - 1, hashParallelMin, 33, 257} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			texts := make([]string, n)
			for i := range texts {
				texts[i] = fmt.Sprintf("text %d of a batch, word%d and word%d", i, i%7, i%13)
			}
			got, err := h.Embed(context.Background(), texts)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != n {
				t.Fatalf("%d vectors for %d texts", len(got), n)
			}
			for i, text := range texts {
				if want := h.one(text); !slices.Equal(got[i], want) {
					t.Fatalf("text %d: the batch's vector differs from the text's own", i)
				}
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Embed(ctx, make([]string, 100)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v, want context.Canceled", err)
	}
}
