package vectorstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
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

// TestHashSameVectorsRunes holds the embedder's one pass over the bytes to the reference on
// texts built from runes that test its lower-casing and word splitting: upper-case letters
// whose lower case is ASCII (the Kelvin sign, a dotted capital I), letters that change their
// UTF-8 length when lower-cased, digits and marks of other scripts, U+FFFD and bytes that are
// not valid UTF-8, mixed with ASCII words and separators.
func TestHashSameVectorsRunes(t *testing.T) {
	pieces := []string{"a", "Z", "q9", " ", ",", "-", "\n", "\u212a", "\u0130", "\u023a", "\u2c65", "\u1e9e", "\u03a3",
		"\u00c9t\u00c9", "\u0663", "\u2167", "\u0301", "\u00ad", "\ufffd", "\xff", "\xe2\x82", "\xc0\xaf", "\U0001d400",
		"\u65e5\u672c", "\u3002", "_", "\u00a0", "\u2028", "Stra\u00dfe", "\u0391\u0392\u0393"}
	seed := uint64(1)
	next := func() int {
		seed = seed*6364136223846793005 + 1442695040888963407
		return int(seed >> 33)
	}
	for _, dim := range []int{7, 384} {
		h := NewHashEmbedder(dim)
		for range 3000 {
			var b strings.Builder
			for range next() % 24 {
				b.WriteString(pieces[next()%len(pieces)])
			}
			text := b.String()
			if got, want := h.one(text), hashOneRef(dim, text); !slices.Equal(got, want) {
				t.Fatalf("dim %d, %q: vectors differ", dim, text)
			}
		}
	}
}

// FuzzHashSameVectors holds the embedder to the reference on any text.
func FuzzHashSameVectors(f *testing.F) {
	for _, s := range []string{"", "The Cat", "\u212a\u0130 caf\u00e9", "\xff\xfe abc", "\u65e5\u672c\u8a9e 42"} {
		f.Add(s)
	}
	h := NewHashEmbedder(64)
	f.Fuzz(func(t *testing.T, text string) {
		if got, want := h.one(text), hashOneRef(64, text); !slices.Equal(got, want) {
			t.Fatalf("%q: vectors differ", text)
		}
	})
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
	// A passage with a few letters past ASCII, as many of a corpus are.
	text = strings.Replace(text, "effects", "effécts", 1)
	b.Run("unicode", func(b *testing.B) {
		for b.Loop() {
			h.one(text)
		}
	})
}

// TestHashBucket holds the division-free bucket to x % Dim, over the hashes at the ends of
// the range (where the quotient estimate is furthest off) and random ones.
func TestHashBucket(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dim := range []int{1, 2, 3, 7, 64, 256, 384, 768, 1000, 1536, 4095, 65537, 1<<31 - 1, 1<<40 + 3} {
		h := NewHashEmbedder(dim)
		d := uint64(dim)
		xs := []uint64{0, 1, d - 1, d, d + 1, 1<<63 - 1, 1<<63 - 2, (1<<63 - 1) / d * d, (1<<63-1)/d*d - 1}
		for range 20000 {
			xs = append(xs, rng.Uint64()>>1)
		}
		for _, x := range xs {
			if got, want := h.bucket(x), int(x%d); got != want {
				t.Fatalf("dim %d: bucket(%d) = %d, want %d", dim, x, got, want)
			}
		}
	}
}
