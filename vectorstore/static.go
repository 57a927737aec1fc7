package vectorstore

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentmem/memory/internal/errkind"
	"github.com/agentmem/memory/internal/onnx"
	"github.com/agentmem/memory/internal/wordpiece"
)

// errBadModel reports a model folder that cannot be used. For the static (Model2Vec)
// embedder: a missing or corrupt model.safetensors, tokenizer.json or config.json, or
// tensors whose type or shape do not fit the tokenizer (a missing file also matches
// fs.ErrNotExist). For the ONNX embedder: a corrupt model or configuration file, or a graph
// without input_ids/attention_mask inputs or a last_hidden_state output. It matches the
// ONNX layer's shared kind too.
var errBadModel = errkind.New("vectorstore: unusable model", onnx.ErrBadModel)

// defaultStaticMaxTokens is the number of word pieces a StaticEmbedder averages per text
// (after dropping unknown tokens), the default max_length of the Model2Vec library.
const defaultStaticMaxTokens = 512

// staticMaxHeader bounds the safetensors JSON header, so a corrupt length cannot make the
// parser allocate or scan gigabytes.
const staticMaxHeader = 100 << 20

// StaticOptions configure [NewStaticEmbedder]. The zero value is the model's own settings.
type StaticOptions struct {
	// Name is the model name in ID() (default: the folder's base name).
	Name string
	// MaxTokens is how many word pieces per text are averaged (0: 512, the Model2Vec
	// library's max_length; negative: no limit).
	MaxTokens int
	// Normalize, when set, forces L2 normalisation on or off, overriding config.json.
	Normalize *bool
}

// staticOptions are StaticOptions resolved (maxTokens 0: no limit).
type staticOptions struct {
	name      string
	maxTokens int
	normalize *bool
}

// StaticEmbedder is a Model2Vec static [Embedder] in pure Go: a text's vector is the mean
// of the embedding rows of its word pieces (no special tokens, unknown tokens dropped, at
// most MaxTokens pieces), L2-normalised when the model's config.json says "normalize": true
// (the default when the field is absent). A text without known pieces embeds to the zero
// vector. It is safe for concurrent use.
//
// The model folder holds model.safetensors (tensor "embeddings", F32, F16 or BF16, shape
// [vocab, dim]; optional "weights" [vocab] scaling each token's row and "mapping" [vocab]
// mapping token ids to rows, as written by newer Model2Vec versions), tokenizer.json and
// config.json.
type StaticEmbedder struct {
	tok       *wordpiece.Tokenizer
	emb       []float32 // rows*dim, row-major
	rows, dim int
	weights   []float32 // per token id, nil = 1
	mapping   []int32   // token id -> row, nil = identity
	normalize bool
	maxTokens int
	id        string
}

var _ Embedder = (*StaticEmbedder)(nil)

// staticConfig is the part of a Model2Vec config.json the embedder reads.
type staticConfig struct {
	Normalize *bool  `json:"normalize"`
	HiddenDim *int   `json:"hidden_dim"`
	ModelType string `json:"model_type"`
}

// NewStaticEmbedder loads a Model2Vec model folder (model.safetensors, tokenizer.json,
// config.json). Every file is validated; problems are reported as models.ErrBadModel.
func NewStaticEmbedder(dir string, opts StaticOptions) (*StaticEmbedder, error) {
	return newStaticEmbedder(dir, nil, opts)
}

// newStaticEmbedder is NewStaticEmbedder with an optional already-loaded tokenizer (tests
// share one instead of parsing tokenizer.json for every model they build).
func newStaticEmbedder(dir string, tok *wordpiece.Tokenizer, opts StaticOptions) (*StaticEmbedder, error) {
	o := staticOptions{name: opts.Name, maxTokens: opts.MaxTokens, normalize: opts.Normalize}
	switch {
	case o.maxTokens == 0:
		o.maxTokens = defaultStaticMaxTokens
	case o.maxTokens < 0:
		o.maxTokens = 0 // no limit
	}
	var cfg staticConfig
	cfgPath := filepath.Join(dir, "config.json")
	if data, err := os.ReadFile(cfgPath); err == nil {
		if err := json.Unmarshal(data, &cfg); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", errBadModel, cfgPath, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s: %w", errBadModel, cfgPath, err)
	}
	if cfg.ModelType != "" && !strings.EqualFold(cfg.ModelType, "model2vec") {
		return nil, fmt.Errorf("%w: %s: model_type %q (want model2vec)", errBadModel, cfgPath, cfg.ModelType)
	}

	// The safetensors header is validated before the (slower) tokenizer load.
	stPath := filepath.Join(dir, "model.safetensors")
	data, err := os.ReadFile(stPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errBadModel, stPath, err)
	}
	tensors, body, err := parseSafetensors(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", stPath, err)
	}
	if tok == nil {
		if tok, err = wordpiece.Load(filepath.Join(dir, "tokenizer.json")); err != nil {
			return nil, fmt.Errorf("%w: %w", errBadModel, err)
		}
	}
	e, err := newStaticFromTensors(tensors, body, tok)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", stPath, err)
	}
	if cfg.HiddenDim != nil && *cfg.HiddenDim > 0 && *cfg.HiddenDim != e.dim {
		return nil, fmt.Errorf("%w: %s: hidden_dim %d but embeddings have %d columns", errBadModel, cfgPath, *cfg.HiddenDim, e.dim)
	}
	e.normalize = true
	if cfg.Normalize != nil {
		e.normalize = *cfg.Normalize
	}
	if o.normalize != nil {
		e.normalize = *o.normalize
	}
	e.maxTokens = o.maxTokens
	name := o.name
	if name == "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			abs = dir
		}
		name = filepath.Base(abs)
	}
	sum := sha256.Sum256(data)
	e.id = "model2vec:" + name + "@sha256:" + hex.EncodeToString(sum[:])[:16]
	return e, nil
}

// newStaticFromTensors builds the embedding tables from a parsed safetensors file.
func newStaticFromTensors(tensors map[string]staticTensor, body []byte, tok *wordpiece.Tokenizer) (*StaticEmbedder, error) {
	var err error
	emb, ok := tensors["embeddings"]
	if !ok {
		return nil, fmt.Errorf("%w: no \"embeddings\" tensor (have %s)", errBadModel, staticTensorNames(tensors))
	}
	if len(emb.Shape) != 2 || emb.Shape[0] <= 0 || emb.Shape[1] <= 0 {
		return nil, fmt.Errorf("%w: embeddings shape %v, want [vocab, dim]", errBadModel, emb.Shape)
	}
	e := &StaticEmbedder{tok: tok, rows: int(emb.Shape[0]), dim: int(emb.Shape[1])}
	if e.emb, err = staticFloats(emb, body); err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	vocab := tok.VocabSize()

	if m, ok := tensors["mapping"]; ok {
		if len(m.Shape) != 1 || int(m.Shape[0]) != vocab {
			return nil, fmt.Errorf("%w: mapping shape %v, want [%d] (tokenizer vocabulary)", errBadModel, m.Shape, vocab)
		}
		ids, err := staticInts(m, body)
		if err != nil {
			return nil, fmt.Errorf("mapping: %w", err)
		}
		e.mapping = make([]int32, len(ids))
		for i, r := range ids {
			if r < 0 || r >= int64(e.rows) {
				return nil, fmt.Errorf("%w: mapping[%d] = %d outside embeddings rows [0,%d)", errBadModel, i, r, e.rows)
			}
			e.mapping[i] = int32(r)
		}
	} else if e.rows < vocab {
		return nil, fmt.Errorf("%w: embeddings have %d rows, tokenizer vocabulary has %d", errBadModel, e.rows, vocab)
	}
	if w, ok := tensors["weights"]; ok {
		if len(w.Shape) != 1 || int(w.Shape[0]) != vocab {
			return nil, fmt.Errorf("%w: weights shape %v, want [%d] (tokenizer vocabulary)", errBadModel, w.Shape, vocab)
		}
		if e.weights, err = staticFloats(w, body); err != nil {
			return nil, fmt.Errorf("weights: %w", err)
		}
	}
	return e, nil
}

// ID is "model2vec:<name>@sha256:<first 16 hex digits of the safetensors file's sha256>".
func (e *StaticEmbedder) ID() string { return e.id }

// Dim is the embedding width.
func (e *StaticEmbedder) Dim() int { return e.dim }

// Normalized reports whether vectors are L2-normalised.
func (e *StaticEmbedder) Normalized() bool { return e.normalize }

// MaxTokens is the number of word pieces averaged per text (0 = no limit).
func (e *StaticEmbedder) MaxTokens() int { return max(e.maxTokens, 0) }

// Tokenizer returns the model's tokenizer.
func (e *StaticEmbedder) Tokenizer() *wordpiece.Tokenizer { return e.tok }

// Embed returns one vector per text, in order.
func (e *StaticEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	acc := make([]float64, e.dim)
	for i, s := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		out[i] = e.embedOne(s, acc)
	}
	return out, nil
}

// EmbedQuery embeds one text.
func (e *StaticEmbedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return e.embedOne(text, make([]float64, e.dim)), nil
}

func (e *StaticEmbedder) embedOne(text string, acc []float64) []float32 {
	clear(acc)
	unk := e.tok.UnkID()
	n := 0
	for _, id := range e.tok.Pieces(text) {
		if id == unk {
			continue
		}
		if e.maxTokens > 0 && n == e.maxTokens {
			break
		}
		row := int(id)
		if e.mapping != nil {
			row = int(e.mapping[id])
		}
		w := 1.0
		if e.weights != nil {
			w = float64(e.weights[id])
		}
		base := row * e.dim
		for j, v := range e.emb[base : base+e.dim] {
			acc[j] += w * float64(v)
		}
		n++
	}
	vec := make([]float32, e.dim)
	if n == 0 {
		return vec
	}
	var norm float64
	for j := range acc {
		acc[j] /= float64(n)
		norm += acc[j] * acc[j]
	}
	scale := 1.0
	if e.normalize && norm > 0 {
		scale = 1 / math.Sqrt(norm)
	}
	for j, v := range acc {
		vec[j] = float32(v * scale)
	}
	return vec
}

// staticTensor is one entry of a safetensors header.
type staticTensor struct {
	DType       string  `json:"dtype"`
	Shape       []int64 `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// staticDTypeSize is the byte width of the safetensors dtypes this package understands.
var staticDTypeSize = map[string]int64{
	"F64": 8, "F32": 4, "F16": 2, "BF16": 2,
	"I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1,
	"U16": 2, "U32": 4, "U64": 8,
}

// parseSafetensors validates a safetensors file (8-byte little-endian header length, JSON
// header, data buffer) and returns its tensors and the data buffer. Every tensor's dtype,
// shape and data offsets are checked against each other and the buffer, so the returned
// entries can be sliced without further bounds checks.
func parseSafetensors(data []byte) (map[string]staticTensor, []byte, error) {
	if len(data) < 8 {
		return nil, nil, fmt.Errorf("%w: safetensors file of %d bytes is too short", errBadModel, len(data))
	}
	n := binary.LittleEndian.Uint64(data[:8])
	if n < 2 || n > staticMaxHeader || n > uint64(len(data)-8) {
		return nil, nil, fmt.Errorf("%w: safetensors header length %d (file has %d bytes)", errBadModel, n, len(data))
	}
	header := data[8 : 8+n]
	body := data[8+n:]
	if header[0] != '{' {
		return nil, nil, fmt.Errorf("%w: safetensors header is not a JSON object", errBadModel)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(header, &raw); err != nil {
		return nil, nil, fmt.Errorf("%w: safetensors header: %v", errBadModel, err)
	}
	tensors := make(map[string]staticTensor, len(raw))
	for name, msg := range raw {
		if name == "__metadata__" {
			continue
		}
		var t staticTensor
		if err := json.Unmarshal(msg, &t); err != nil {
			return nil, nil, fmt.Errorf("%w: tensor %q: %v", errBadModel, name, err)
		}
		size, ok := staticDTypeSize[t.DType]
		if !ok {
			return nil, nil, fmt.Errorf("%w: tensor %q has unknown dtype %q", errBadModel, name, t.DType)
		}
		count := int64(1)
		for _, d := range t.Shape {
			if d < 0 || (d > 0 && count > math.MaxInt64/d) {
				return nil, nil, fmt.Errorf("%w: tensor %q has invalid shape %v", errBadModel, name, t.Shape)
			}
			count *= d
		}
		if count > math.MaxInt64/size {
			return nil, nil, fmt.Errorf("%w: tensor %q has invalid shape %v", errBadModel, name, t.Shape)
		}
		if len(t.DataOffsets) != 2 {
			return nil, nil, fmt.Errorf("%w: tensor %q data_offsets %v, want [begin, end]", errBadModel, name, t.DataOffsets)
		}
		begin, end := t.DataOffsets[0], t.DataOffsets[1]
		if begin < 0 || end < begin || end > int64(len(body)) {
			return nil, nil, fmt.Errorf("%w: tensor %q data_offsets [%d, %d] outside the %d-byte data buffer", errBadModel, name, begin, end, len(body))
		}
		if end-begin != count*size {
			return nil, nil, fmt.Errorf("%w: tensor %q holds %d bytes, but %s%v needs %d", errBadModel, name, end-begin, t.DType, t.Shape, count*size)
		}
		tensors[name] = t
	}
	return tensors, body, nil
}

func staticTensorNames(m map[string]staticTensor) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// staticFloats decodes a validated floating-point tensor to float32.
func staticFloats(t staticTensor, body []byte) ([]float32, error) {
	b := body[t.DataOffsets[0]:t.DataOffsets[1]]
	var out []float32
	switch t.DType {
	case "F32":
		out = make([]float32, len(b)/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	case "F16":
		out = make([]float32, len(b)/2)
		for i := range out {
			out[i] = staticHalfToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
		}
	case "BF16":
		out = make([]float32, len(b)/2)
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
		}
	case "F64":
		out = make([]float32, len(b)/8)
		for i := range out {
			out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:])))
		}
	default:
		return nil, fmt.Errorf("%w: dtype %s, want F32, F16, BF16 or F64", errBadModel, t.DType)
	}
	for i, v := range out {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("%w: non-finite value %v at element %d", errBadModel, v, i)
		}
	}
	return out, nil
}

// staticInts decodes a validated integer tensor.
func staticInts(t staticTensor, body []byte) ([]int64, error) {
	b := body[t.DataOffsets[0]:t.DataOffsets[1]]
	var out []int64
	switch t.DType {
	case "I32":
		out = make([]int64, len(b)/4)
		for i := range out {
			out[i] = int64(int32(binary.LittleEndian.Uint32(b[4*i:])))
		}
	case "I64":
		out = make([]int64, len(b)/8)
		for i := range out {
			out[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
		}
	default:
		return nil, fmt.Errorf("%w: dtype %s, want I32 or I64", errBadModel, t.DType)
	}
	return out, nil
}

// staticHalfToFloat32 converts an IEEE 754 binary16 value (subnormals, infinities and NaN
// included) to float32.
func staticHalfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | frac<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
	case frac == 0: // ±0
		return math.Float32frombits(sign)
	}
	// Subnormal: value = frac * 2^-24.
	v := float32(frac) * (1.0 / (1 << 24))
	if sign != 0 {
		v = -v
	}
	return v
}

func init() { RegisterEmbedder("model2vec:", loadStatic) }

// loadStatic loads a recorded "model2vec:NAME@sha256:..." (or "model2vec:NAME") by its
// model name; the store compares the digest.
func loadStatic(_ context.Context, name string, o LoadOptions) (Embedder, error) {
	if err := onlyONNXDevice(name, o.ONNX); err != nil {
		return nil, err
	}
	model, _, _ := strings.Cut(strings.TrimPrefix(name, "model2vec:"), "@")
	dir, err := modelFolder(model, o.Recorded)
	if err != nil {
		return nil, err
	}
	return NewStaticEmbedder(dir, StaticOptions{Name: model})
}
