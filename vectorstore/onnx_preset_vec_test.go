//go:build cgo

package vectorstore

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tinyModelAs copies the tiny fixture encoder to a folder of the given name.
func tinyModelAs(t *testing.T, name string) string {
	t.Helper()
	src := tinyModelCopy(t, "")
	dst := filepath.Join(t.TempDir(), name)
	if err := os.Rename(src, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestE5NameEmbedsWithPrefixes: with default options, the tiny fixture encoder in a
// folder named like an e5 model embeds passages as "passage: " + text cut to 180 tokens
// and queries as "query: " + text cut to 256, as the original Search-R1 does: the same
// model under a plain name, given the prefixed text and the cap, gives the same vectors.
func TestE5NameEmbedsWithPrefixes(t *testing.T) {
	ctx := context.Background()
	e := newEmbedderAt(t, tinyModelAs(t, "e5-base-v2"), ONNXOptions{})
	long := strings.Repeat("otters hold hands while they sleep ", 100) // 600 word pieces
	for _, c := range []struct {
		query  bool
		prefix string
		cap    int
	}{{false, "passage: ", 180}, {true, "query: ", 256}} {
		plain := newEmbedderAt(t, tinyModelAs(t, "tiny-plain"), ONNXOptions{MaxLength: c.cap})
		for _, text := range []string{"otters", long} {
			var got, want []float32
			if c.query {
				var err error
				if got, err = e.EmbedQuery(ctx, text); err != nil {
					t.Fatal(err)
				}
				if want, err = plain.EmbedQuery(ctx, c.prefix+text); err != nil {
					t.Fatal(err)
				}
			} else {
				g, err := e.Embed(ctx, []string{text})
				if err != nil {
					t.Fatal(err)
				}
				w, err := plain.Embed(ctx, []string{c.prefix + text})
				if err != nil {
					t.Fatal(err)
				}
				got, want = g[0], w[0]
			}
			if !slices.Equal(got, want) {
				t.Errorf("query %v, %d bytes: the vector is not that of %q + text cut to %d tokens", c.query, len(text), c.prefix, c.cap)
			}
		}
	}
}
