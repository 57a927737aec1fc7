package vectorstore

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"unicode"
)

// HashEmbedder embeds text by feature hashing: each lower-cased word and word bigram adds
// ±1 to one of Dim buckets (the sign from a second hash), and the vector is L2-normalised.
// It needs no model, is deterministic and fast, and captures word overlap only: use it for
// tests, demos and as a baseline, not for semantic recall.
type HashEmbedder struct {
	dim int
}

var _ Embedder = (*HashEmbedder)(nil)

// NewHashEmbedder returns a hashing embedder with dim buckets (dim <= 0: 256).
func NewHashEmbedder(dim int) *HashEmbedder {
	if dim <= 0 {
		dim = 256
	}
	return &HashEmbedder{dim: dim}
}

// ID identifies the embedder and its dimension.
func (h *HashEmbedder) ID() string { return fmt.Sprintf("hash-bigram-v1/%d", h.dim) }

// Dim is the vector length.
func (h *HashEmbedder) Dim() int { return h.dim }

// hashParallelMin is the number of texts from which Embed embeds on every core.
const hashParallelMin = 16

// Embed returns one normalised vector per text (all zeros for a text without words). A
// batch of hashParallelMin texts or more is embedded on every core (GOMAXPROCS): the
// embedder holds no state, and a bulk ingest would otherwise embed on one core while the
// others wait for it.
func (h *HashEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	parts := min(runtime.GOMAXPROCS(0), len(texts)/(hashParallelMin/2))
	if len(texts) < hashParallelMin || parts <= 1 {
		return out, h.embedRange(ctx, texts, out, 0, len(texts))
	}
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for n := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[n] = h.embedRange(ctx, texts, out, n*len(texts)/parts, (n+1)*len(texts)/parts)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// embedRange embeds texts[i:j] into out[i:j].
func (h *HashEmbedder) embedRange(ctx context.Context, texts []string, out [][]float32, i, j int) error {
	for ; i < j; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		out[i] = h.one(texts[i])
	}
	return nil
}

func (h *HashEmbedder) one(text string) []float32 {
	v := make([]float32, h.dim)
	if !h.oneASCII(text, v) {
		h.oneUnicode(text, v)
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

// add adds weight to the bucket of feature hash x (its top bit the sign).
func (h *HashEmbedder) add(v []float32, x uint64, weight float32) {
	sign := float32(1)
	if x>>63 == 1 {
		sign = -1
	}
	v[(x&0x7fffffffffffffff)%uint64(h.dim)] += sign * weight
}

// oneASCII adds the features of an ASCII text to v in one pass over its bytes, lower-casing
// and hashing as it goes (the words of oneUnicode, the same hashes in the same order, without
// its strings); false, v untouched, when text holds a byte past ASCII.
func (h *HashEmbedder) oneASCII(text string, v []float32) bool {
	for i := 0; i < len(text); i++ {
		if text[i] >= 0x80 {
			return false
		}
	}
	var prev, word, bigram uint64 // the previous word's hash; the current word's and bigram's so far
	inWord, words := false, 0
	end := func() {
		h.add(v, word, 1)
		if words > 0 {
			h.add(v, bigram, 0.5)
		}
		prev, inWord = word, false
		words++
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		default:
			if inWord {
				end()
			}
			continue
		}
		if !inWord {
			word, bigram, inWord = fnvOffset, (prev^' ')*fnvPrime, true
		}
		word = (word ^ uint64(c)) * fnvPrime
		bigram = (bigram ^ uint64(c)) * fnvPrime
	}
	if inWord {
		end()
	}
	return true
}

// oneUnicode adds the features of text to v: its words are the runs of letters and digits
// of its lower-cased form (strings.ToLower, unicode.IsLetter and IsNumber).
func (h *HashEmbedder) oneUnicode(text string, v []float32) {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r)
	})
	// Each feature's bucket is the 64-bit FNV-1a hash of its bytes: a word's, then the
	// bigram's (the previous word, a space, the word), continued from the previous word's
	// hash rather than hashed again from a joined string.
	var prev uint64
	for i, w := range words {
		x := fnv1a(fnvOffset, w)
		h.add(v, x, 1)
		if i > 0 {
			h.add(v, fnv1a((prev^' ')*fnvPrime, w), 0.5)
		}
		prev = x
	}
}

// 64-bit FNV-1a (hash/fnv's New64a), inline: no hasher or joined string per feature.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// fnv1a continues FNV-1a hash h over the bytes of s.
func fnv1a(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}
