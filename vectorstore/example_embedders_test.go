package vectorstore_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentmem/memory/vectorstore"
)

// ExampleRegisterEmbedder registers a kind of embedder under the prefix of its names; from
// then on LoadEmbedder (the CLI's --embedder) and ResolveEmbedder (a store's recorded
// identity, through memory.WithEmbedderResolver) load it.
func ExampleRegisterEmbedder() {
	vectorstore.RegisterEmbedder("tiny:", func(ctx context.Context, name string, o vectorstore.LoadOptions) (vectorstore.Embedder, error) {
		dim, err := strconv.Atoi(strings.TrimPrefix(name, "tiny:"))
		if err != nil {
			return nil, fmt.Errorf("%w: %q: want tiny:DIM", vectorstore.ErrBadConfig, name)
		}
		return vectorstore.NewHashEmbedder(dim), nil // a real kind returns its own type
	})
	e, err := vectorstore.LoadEmbedder(context.Background(), "tiny:16", vectorstore.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(e.Dim())

	// A store records the identity its embedder reports; the registry loads it back.
	e, err = vectorstore.ResolveEmbedder(context.Background(), "hash-bigram-v1/64", 64)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(e.ID())
	// Output:
	// 16
	// hash-bigram-v1/64
}
