package vectorstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// hashOneRef is the hashing embedder as first written (hash/fnv over each feature's
// string): the vectors of "hash-bigram-v1" that stores hold, which one must still make.
func hashOneRef(dim int, text string) []float32 {
	v := make([]float32, dim)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r)
	})
	add := func(feature string, weight float32) {
		f := fnv.New64a()
		f.Write([]byte(feature))
		x := f.Sum64()
		sign := float32(1)
		if x>>63 == 1 {
			sign = -1
		}
		v[(x&0x7fffffffffffffff)%uint64(dim)] += sign * weight
	}
	for i, w := range words {
		add(w, 1)
		if i > 0 {
			add(words[i-1]+" "+w, 0.5)
		}
	}
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n > 0 {
		s := float32(1 / math.Sqrt(n))
		for i := range v {
			v[i] *= s
		}
	}
	return v
}

// TestHashSameVectors holds the embedder to its first version bit for bit: the id
// "hash-bigram-v1" names these vectors.
func TestHashSameVectors(t *testing.T) {
	texts := []string{"", "   ", "One", "the cat sat on the mat", "Ünïcode wörds, ÇA and İstanbul: naïve café",
		"numbers 42 and 3.14 and x2y", "日本語のテキスト 混合 text", "tab\tand\nnewlines\r\n here"}
	for i := range 200 {
		texts = append(texts, fmt.Sprintf("passage %d of topic%d: Cells GROW %d-fold, tumour%d", i, i%17, i*31, i%5))
	}
	for _, dim := range []int{7, 64, 384} {
		h := NewHashEmbedder(dim)
		for _, text := range texts {
			if got, want := h.one(text), hashOneRef(dim, text); !slices.Equal(got, want) {
				t.Fatalf("dim %d, %q: vectors differ", dim, text)
			}
		}
	}
}

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

func BenchmarkHashEmbed(b *testing.B) {
	text := "These effects are accompanied by augmented brain levels of anandamide and are prevented by CB1 receptor blockade. Finally, treatment of (32)P-labeled whole platelets with prostacyclin resulted in a 90 +/- 14% increase in phosphorylated Galpha(13) that was abolished by pretreatment with the adenylate cyclase inhibitor MDL-12."
	h := NewHashEmbedder(384)
	b.Run("now", func(b *testing.B) {
		for b.Loop() {
			h.one(text)
		}
	})
	b.Run("ref", func(b *testing.B) {
		for b.Loop() {
			hashOneRef(384, text)
		}
	})
}
