//go:build cgo

package rerank

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/agentmem/memory/internal/onnx"
	"github.com/agentmem/memory/internal/wordpiece"
)

// Errors of the cross-encoder. Model-file problems also match the runtime wrapper's own
// sentinel errors.
var (
	// ErrModelNotFound reports a model folder without a model or tokenizer file.
	ErrModelNotFound = errors.New("rerank: model file not found")
	// ErrBadModel reports a model or configuration file that cannot be used: corrupt, or an
	// ONNX graph without input_ids/attention_mask inputs or a logits output.
	ErrBadModel = errors.New("rerank: unusable model")
	// ErrCUDAUnavailable reports a CUDA device asked for where none can be used.
	ErrCUDAUnavailable = errors.New("rerank: CUDA unavailable")
)

// CrossEncoderOptions configures a [CrossEncoder]. The zero value runs on the CPU with ONNX
// Runtime's default threads, batches of 32 pairs, and the folder's maximum length.
type CrossEncoderOptions struct {
	// LibraryPath is the ONNX Runtime shared library; "" = $MEMORY_ORT_LIB, the local
	// .deps cache, then the system library.
	LibraryPath string
	// ModelFile is the ONNX file, relative to the folder; "" = model.onnx, else
	// onnx/model.onnx.
	ModelFile string
	// Threads is ONNX Runtime's intra-op thread count; 0 = one per core.
	Threads int
	// Device is "cpu" (default), "cuda" or "auto".
	Device string
	// FallbackCPU runs on the CPU, with a warning, when Device is "cuda" and CUDA is
	// unavailable, instead of failing with ErrCUDAUnavailable.
	FallbackCPU bool
	// GraphOptimization is "all" (default), "extended", "basic" or "disable".
	GraphOptimization string
	// BatchSize is the number of pairs per inference call; 0 = 32.
	BatchSize int
	// MaxLength caps the tokens of a pair, special tokens included (longer pairs are
	// truncated longest-first); 0 = the folder's configured maximum (512 for BERT).
	MaxLength int
	// Logger receives warnings; nil = slog.Default().
	Logger *slog.Logger
}

// CrossEncoder scores (query, passage) pairs with a BERT-family sequence-classification
// ONNX model that outputs one logit per pair ("logits" [batch, 1]), such as
// cross-encoder/ms-marco-MiniLM-L-6-v2. It is safe for concurrent use.
type CrossEncoder struct {
	sess  *onnx.Session
	tok   *wordpiece.Tokenizer
	id    string
	batch int
}

var _ Reranker = (*CrossEncoder)(nil)

// Ranked is one passage of a [CrossEncoder.Rerank] result.
type Ranked struct {
	Index int     // position in the docs given to Rerank
	Logit float32 // raw model score: higher is more relevant
	Prob  float64 // sigmoid(Logit)
}

// NewCrossEncoder loads the model in dir: model.onnx or onnx/model.onnx, and tokenizer.json
// or vocab.txt.
func NewCrossEncoder(ctx context.Context, dir string, opts CrossEncoderOptions) (*CrossEncoder, error) {
	modelPath, err := ceModelFile(dir, opts.ModelFile)
	if err != nil {
		return nil, err
	}
	tok, err := wordpiece.LoadDir(dir)
	if err != nil {
		if errors.Is(err, wordpiece.ErrNotFound) {
			return nil, fmt.Errorf("%w: %v", ErrModelNotFound, err)
		}
		return nil, fmt.Errorf("%w: %v", ErrBadModel, err)
	}
	var cfg struct {
		MaxPositionEmbeddings int `json:"max_position_embeddings"`
	}
	if data, err := os.ReadFile(filepath.Join(dir, "config.json")); err == nil {
		if err := json.Unmarshal(data, &cfg); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBadModel, filepath.Join(dir, "config.json"), err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %v", ErrBadModel, err)
	}
	maxLen := tok.MaxLength()
	if opts.MaxLength > 0 {
		maxLen = opts.MaxLength
	}
	if cfg.MaxPositionEmbeddings > 0 && maxLen > cfg.MaxPositionEmbeddings {
		maxLen = cfg.MaxPositionEmbeddings
	}
	tok.SetMaxLength(maxLen)

	device, err := onnx.ParseDevice(opts.Device)
	if err != nil {
		return nil, fmt.Errorf("rerank: %w", err)
	}
	sum, err := ceSHA256(modelPath)
	if err != nil {
		return nil, err
	}
	sess, err := onnx.Open(ctx, modelPath, onnx.Spec{
		Inputs:         []string{"input_ids", "attention_mask"},
		OptionalInputs: []string{"token_type_ids"},
		Outputs:        []string{"logits"},
	}, onnx.Options{
		LibraryPath: opts.LibraryPath,
		Threads:     opts.Threads,
		OptLevel:    onnx.OptLevel(opts.GraphOptimization),
		Device:      device,
		FallbackCPU: opts.FallbackCPU,
		Logger:      opts.Logger,
	})
	if err != nil {
		switch {
		case errors.Is(err, onnx.ErrModelNotFound):
			return nil, fmt.Errorf("%w: %w", ErrModelNotFound, err)
		case errors.Is(err, onnx.ErrModelCorrupt), errors.Is(err, onnx.ErrUnexpectedModel):
			return nil, fmt.Errorf("%w: %w", ErrBadModel, err)
		case errors.Is(err, onnx.ErrCUDAUnavailable):
			return nil, fmt.Errorf("%w: %w", ErrCUDAUnavailable, err)
		}
		return nil, err
	}
	dims := sess.OutputDims()
	if !(len(dims) == 1 || (len(dims) == 2 && dims[1] <= 1)) {
		sess.Close()
		return nil, fmt.Errorf("%w: %s: output logits has shape %v, want [batch, 1]", ErrBadModel, modelPath, dims)
	}
	ce := &CrossEncoder{sess: sess, tok: tok, batch: opts.BatchSize,
		id: filepath.Base(filepath.Clean(dir)) + "@sha256:" + sum[:16]}
	if ce.batch <= 0 {
		ce.batch = 32
	}
	return ce, nil
}

func ceModelFile(dir, file string) (string, error) {
	cands := []string{filepath.Join(dir, "model.onnx"), filepath.Join(dir, "onnx", "model.onnx")}
	if file != "" {
		cands = []string{filepath.Join(dir, file)}
	}
	for _, c := range cands {
		if st, err := os.Stat(c); err == nil && !st.IsDir() {
			return c, nil
		}
	}
	if len(cands) == 1 {
		return "", fmt.Errorf("%w: no %s", ErrModelNotFound, cands[0])
	}
	return "", fmt.Errorf("%w: no %s or %s", ErrModelNotFound, cands[0], cands[1])
}

func ceSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrModelNotFound, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrBadModel, path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ID is the folder name and the first 16 hex digits of the model file's sha256.
func (c *CrossEncoder) ID() string { return c.id }

// Device is where inference runs: "cpu" or "cuda".
func (c *CrossEncoder) Device() string { return string(c.sess.Device()) }

// MaxLength is the number of tokens a pair is truncated to, special tokens included.
func (c *CrossEncoder) MaxLength() int { return c.tok.MaxLength() }

// Close releases the ONNX session.
func (c *CrossEncoder) Close() error { return c.sess.Close() }

// Score returns the raw logit of each (query, passage) pair, in passage order. Pairs
// longer than MaxLength are truncated longest-first; empty queries and passages are scored
// like any other text.
func (c *CrossEncoder) Score(ctx context.Context, query string, passages []string) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	encs := make([]wordpiece.Encoding, len(passages))
	for i, p := range passages {
		encs[i] = c.tok.EncodePair(query, p)
	}
	return c.scoreEncodings(ctx, encs)
}

// Rerank scores docs against query and returns the best topN (all when topN <= 0), highest
// logit first; ties keep the docs' order.
func (c *CrossEncoder) Rerank(ctx context.Context, query string, docs []string, topN int) ([]Ranked, error) {
	logits, err := c.Score(ctx, query, docs)
	if err != nil {
		return nil, err
	}
	out := make([]Ranked, len(logits))
	for i, l := range logits {
		out[i] = Ranked{Index: i, Logit: l, Prob: Sigmoid(l)}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Logit > out[b].Logit })
	if topN > 0 && topN < len(out) {
		out = out[:topN]
	}
	return out, nil
}

// Sigmoid maps a logit to a probability, computed in float64.
func Sigmoid(logit float32) float64 {
	x := float64(logit)
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// scoreEncodings runs encoded pairs in length-sorted batches and returns logits in order.
func (c *CrossEncoder) scoreEncodings(ctx context.Context, encs []wordpiece.Encoding) ([]float32, error) {
	out := make([]float32, len(encs))
	if len(encs) == 0 {
		return out, nil
	}
	order := make([]int, len(encs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return len(encs[order[a]].IDs) > len(encs[order[b]].IDs) })
	batch := make([]wordpiece.Encoding, 0, c.batch)
	feeds := map[string][]int64{}
	var buf []float32
	for start := 0; start < len(order); start += c.batch {
		end := min(start+c.batch, len(order))
		batch = batch[:0]
		for _, i := range order[start:end] {
			batch = append(batch, encs[i])
		}
		b := c.tok.PadBatch(batch)
		feeds["input_ids"], feeds["attention_mask"], feeds["token_type_ids"] = b.IDs, b.Mask, b.TypeIDs
		res, err := c.sess.Run(ctx, b.Rows, b.Cols, feeds, buf)
		if err != nil {
			return nil, fmt.Errorf("rerank: score: %w", err)
		}
		buf = res.Data
		if len(res.Data) != b.Rows {
			return nil, fmt.Errorf("%w: %d logits (shape %v) for %d pairs", ErrBadModel, len(res.Data), res.Shape, b.Rows)
		}
		for r, i := range order[start:end] {
			out[i] = res.Data[r]
		}
	}
	return out, nil
}
