package vectorstore

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// HashEmbedder embeds text by feature hashing: each lower-cased word and word bigram adds
// ±1 to one of Dim buckets (the sign from a second hash), and the vector is L2-normalised.
// It needs no model, is deterministic and fast, and captures word overlap only: use it for
// tests, demos and as a baseline, not for semantic recall.
type HashEmbedder struct {
	dim   int
	recip uint64 // floor((2^64-1) / dim): bucket's Barrett reduction
}

var _ Embedder = (*HashEmbedder)(nil)

// NewHashEmbedder returns a hashing embedder with dim buckets (dim <= 0: 256).
func NewHashEmbedder(dim int) *HashEmbedder {
	if dim <= 0 {
		dim = 256
	}
	return &HashEmbedder{dim: dim, recip: math.MaxUint64 / uint64(dim)}
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
	// One allocation for the batch's vectors, each capped to its own length.
	slab := make([]float32, len(texts)*h.dim)
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = slab[i*h.dim : (i+1)*h.dim : (i+1)*h.dim]
	}
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

// embedRange embeds texts[i:j] into out[i:j] (zeroed vectors of length Dim).
func (h *HashEmbedder) embedRange(ctx context.Context, texts []string, out [][]float32, i, j int) error {
	for ; i < j; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		h.oneInto(texts[i], out[i])
	}
	return nil
}

func (h *HashEmbedder) one(text string) []float32 {
	v := make([]float32, h.dim)
	h.oneInto(text, v)
	return v
}

// oneInto embeds text into v (len h.dim, zeroed).
func (h *HashEmbedder) oneInto(text string, v []float32) {
	h.features(text, v)
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
}

// add adds weight to the bucket of feature hash x (its top bit the sign).
func (h *HashEmbedder) add(v []float32, x uint64, weight float32) {
	// The sign bit moved onto the weight's: a branch on it is a coin toss for the CPU.
	w := math.Float32frombits(math.Float32bits(weight) ^ uint32(x>>63)<<31)
	v[h.bucket(x&0x7fffffffffffffff)] += w
}

// bucket is x % Dim without a division (a 64-bit divide costs tens of cycles, and every
// word of every text takes two): Barrett reduction, the quotient estimated as the high
// word of x * floor((2^64-1)/Dim), which is the true one or one less, so one subtraction
// corrects the remainder. The same buckets as the % it replaces (TestHashBucket).
func (h *HashEmbedder) bucket(x uint64) int {
	q, _ := bits.Mul64(x, h.recip)
	r := x - q*uint64(h.dim)
	if r >= uint64(h.dim) {
		r -= uint64(h.dim)
	}
	return int(r)
}

// features adds the features of text to v in one pass over its bytes, lower-casing and
// hashing as it goes. Its words are those of strings.FieldsFunc(strings.ToLower(text),
// neither a letter nor a number): the runs of runes whose lower case (unicode.ToLower) is a
// letter or a number (unicode.IsLetter, IsNumber), hashed as the UTF-8 bytes of that lower
// case. A byte that is not valid UTF-8 separates words, as the U+FFFD that strings.ToLower
// writes for it does. Each feature's bucket is the 64-bit FNV-1a hash of its bytes: a
// word's, then the bigram's (the previous word, a space, the word), continued from the
// previous word's hash rather than hashed again from a joined string. Without the strings
// of strings.ToLower and FieldsFunc, a text that is not pure ASCII costs what one that is
// does.
func (h *HashEmbedder) features(text string, v []float32) {
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
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			i++
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
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		r = unicode.ToLower(r) // utf8.RuneError (an invalid byte) stays itself: no letter
		if !unicode.IsLetter(r) && !unicode.IsNumber(r) {
			if inWord {
				end()
			}
			continue
		}
		if !inWord {
			word, bigram, inWord = fnvOffset, (prev^' ')*fnvPrime, true
		}
		var buf [utf8.UTFMax]byte
		for _, b := range buf[:utf8.EncodeRune(buf[:], r)] {
			word = (word ^ uint64(b)) * fnvPrime
			bigram = (bigram ^ uint64(b)) * fnvPrime
		}
	}
	if inWord {
		end()
	}
}

// 64-bit FNV-1a (hash/fnv's New64a), inline: no hasher or joined string per feature.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func init() {
	RegisterEmbedder("hash:", loadHash)
	RegisterEmbedder("hash-bigram-v1/", loadHash)
}

// loadHash loads "hash" (256 buckets), "hash:DIM" or a recorded "hash-bigram-v1/DIM".
func loadHash(_ context.Context, name string, o LoadOptions) (Embedder, error) {
	if err := onlyONNXDevice(name, o.ONNX); err != nil {
		return nil, err
	}
	d, ok := strings.CutPrefix(name, "hash:")
	if !ok {
		d, ok = strings.CutPrefix(name, "hash-bigram-v1/")
	}
	if !ok {
		return NewHashEmbedder(0), nil // "hash"
	}
	n, err := strconv.Atoi(d)
	if err != nil || n <= 0 || n > 1<<16 {
		return nil, fmt.Errorf("%w: embedder %q: want hash or hash:DIM with 0 < DIM <= 65536", ErrBadConfig, name)
	}
	return NewHashEmbedder(n), nil
}
