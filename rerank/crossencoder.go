package rerank

import (
	"context"
	"fmt"
	"sort"

	"github.com/agentmem/memory/internal/onnx"
	"github.com/agentmem/memory/internal/vecmath"
	"github.com/agentmem/memory/internal/wordpiece"
)

var ceErrors = onnx.Errors{Prefix: "rerank", NotFound: errModelNotFound, BadModel: errBadModel,
	CUDAUnavailable: errCUDAUnavailable, NeedsCgo: errNeedsCgo}

// CrossEncoderOptions configures a [CrossEncoder]: LibraryPath, ModelFile, Threads,
// Device, FallbackCPU, GraphOptimization, BatchSize (pairs per inference call), MaxLength
// (tokens of a pair, special tokens included; longer pairs are truncated longest-first) and
// Logger, with the meanings vectorstore.ONNXOptions gives them. The zero value runs on the
// CPU with ONNX Runtime's default threads, batches of 32 pairs, and the folder's maximum
// length (512 for BERT).
type CrossEncoderOptions = onnx.EncoderOptions

// CrossEncoder scores (query, passage) pairs with a BERT-family sequence-classification
// ONNX model that outputs one logit per pair ("logits" [batch, 1]), such as
// cross-encoder/ms-marco-MiniLM-L-6-v2. It is safe for concurrent use.
type CrossEncoder struct {
	enc *onnx.Encoder
}

var _ Reranker = (*CrossEncoder)(nil)

// Ranked is one passage of a [CrossEncoder.Rerank] result.
type Ranked struct {
	Index int     // position in the docs given to Rerank
	Logit float32 // raw model score: higher is more relevant
	Prob  float64 // sigmoid(Logit)
}

// NewCrossEncoder loads the model in dir: model.onnx or onnx/model.onnx, and tokenizer.json
// or vocab.txt. Without cgo it fails with models.ErrNeedsCgo.
func NewCrossEncoder(ctx context.Context, dir string, opts CrossEncoderOptions) (*CrossEncoder, error) {
	enc, err := onnx.OpenEncoder(ctx, dir, opts, "logits", ceErrors)
	if err != nil {
		return nil, err
	}
	if dims := enc.Session.OutputDims(); !(len(dims) == 1 || (len(dims) == 2 && dims[1] <= 1)) {
		enc.Close()
		return nil, fmt.Errorf("%w: %s: output logits has shape %v, want [batch, 1]", errBadModel, enc.ModelPath, dims)
	}
	return &CrossEncoder{enc: enc}, nil
}

// ID is the folder name and the first 16 hex digits of the model file's sha256.
func (c *CrossEncoder) ID() string { return c.enc.ID() }

// Device is where inference runs: "cpu" or "cuda".
func (c *CrossEncoder) Device() string { return string(c.enc.Session.Device()) }

// MaxLength is the number of tokens a pair is truncated to, special tokens included.
func (c *CrossEncoder) MaxLength() int { return c.enc.Tok.MaxLength() }

// Close releases the ONNX session.
func (c *CrossEncoder) Close() error { return c.enc.Close() }

// Score returns the raw logit of each (query, passage) pair, in passage order. Pairs
// longer than MaxLength are truncated longest-first; empty queries and passages are scored
// like any other text.
func (c *CrossEncoder) Score(ctx context.Context, query string, passages []string) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	encs := make([]wordpiece.Encoding, len(passages))
	for i, p := range passages {
		encs[i] = c.enc.Tok.EncodePair(query, p)
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

// Sigmoid maps a logit to a probability, computed in float64 (vecmath.Sigmoid).
func Sigmoid(logit float32) float64 { return vecmath.Sigmoid(float64(logit)) }

// scoreEncodings runs encoded pairs in length-sorted batches and returns logits in order.
func (c *CrossEncoder) scoreEncodings(ctx context.Context, encs []wordpiece.Encoding) ([]float32, error) {
	out := make([]float32, len(encs))
	err := c.enc.RunBatches(ctx, encs, func(rows []int, b wordpiece.Batch, res onnx.Result) error {
		if len(res.Data) != b.Rows {
			return fmt.Errorf("%w: %d logits (shape %v) for %d pairs", errBadModel, len(res.Data), res.Shape, b.Rows)
		}
		for r, i := range rows {
			out[i] = res.Data[r]
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("rerank: score: %w", err)
	}
	return out, nil
}
