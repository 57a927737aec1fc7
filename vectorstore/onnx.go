//go:build cgo

package vectorstore

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
	"strconv"

	"github.com/agentmem/memory/internal/onnx"
	"github.com/agentmem/memory/internal/wordpiece"
)

// Errors of the ONNX embedder. Model-file problems also match the sentinel errors of the
// runtime wrapper they come from; these are the ones callers test for.
var (
	// ErrONNXModelNotFound reports a model folder without a model or tokenizer file.
	ErrONNXModelNotFound = errors.New("vectorstore: model file not found")
	// ErrONNXBadModel reports a model or configuration file that cannot be used: corrupt, or an
	// ONNX graph without input_ids/attention_mask inputs or a last_hidden_state output.
	ErrONNXBadModel = errors.New("vectorstore: unusable model")
	// ErrONNXCUDAUnavailable reports a CUDA device asked for where none can be used.
	ErrONNXCUDAUnavailable = errors.New("vectorstore: CUDA unavailable")
)

// ONNXOptions configures an [ONNXEmbedder]. The zero value runs on the CPU with ONNX
// Runtime's default threads, batches of 32, and the pooling, normalisation and maximum
// length the model folder's sentence-transformers files describe.
type ONNXOptions struct {
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
	// unavailable, instead of failing with ErrONNXCUDAUnavailable.
	FallbackCPU bool
	// GraphOptimization is "all" (default), "extended", "basic" or "disable".
	GraphOptimization string
	// BatchSize is the number of texts per inference call; 0 = 32.
	BatchSize int
	// MaxLength caps tokens per text, [CLS] and [SEP] included; 0 = the folder's
	// max_seq_length (sentence_bert_config.json), else the tokenizer's model_max_length.
	MaxLength int
	// Pooling is "mean" or "cls"; "" = 1_Pooling/config.json, else mean.
	Pooling string
	// Normalize forces L2 normalisation on or off; nil = on when modules.json lists a
	// Normalize module.
	Normalize *bool
	// Logger receives warnings; nil = slog.Default().
	Logger *slog.Logger
	// QueryPrefix is prepended to search queries (EmbedQuery) by asymmetric models (E5:
	// "query: "; BGE: "Represent this sentence for searching relevant passages: "). nil = the
	// folder's config_sentence_transformers.json prompts (the "query" prompt, else
	// "search_query"), none when absent; a pointer to "" turns a configured prompt off.
	QueryPrefix *string
	// PassagePrefix is prepended to every text Embed embeds (E5: "passage: "). nil = the
	// folder's prompts ("document", "passage", "corpus", else "search_document", the names
	// sentence-transformers' encode_document looks for), none when absent. A non-empty
	// passage prefix is part of the embedder's ID, so a store built with another one reports
	// an embedder mismatch.
	PassagePrefix *string
}

// ONNXEmbedder is a bi-encoder [Embedder] over a BERT-family ONNX model that outputs
// last_hidden_state: WordPiece tokenization, inference in length-sorted batches, pooling over
// the attention mask, and optional L2 normalisation. It is safe for concurrent use.
//
// Models trained with instructions get them from the options or from the folder's
// config_sentence_transformers.json: Embed prepends the passage prefix, EmbedQuery (the
// [QueryEmbedder] ability the store uses for search queries) the query prefix.
type ONNXEmbedder struct {
	sess          *onnx.Session
	tok           *wordpiece.Tokenizer
	id            string
	dim           int
	batch         int
	cls           bool
	normalize     bool
	queryPrefix   string
	passagePrefix string
}

var (
	_ Embedder           = (*ONNXEmbedder)(nil)
	_ QueryEmbedder      = (*ONNXEmbedder)(nil)
	_ BatchQueryEmbedder = (*ONNXEmbedder)(nil)
)

// NewONNXEmbedder loads the model in dir: model.onnx or onnx/model.onnx, tokenizer.json or
// vocab.txt, and the optional sentence-transformers files 1_Pooling/config.json,
// modules.json and sentence_bert_config.json.
func NewONNXEmbedder(ctx context.Context, dir string, opts ONNXOptions) (*ONNXEmbedder, error) {
	modelPath, err := onnxModelFile(dir, opts.ModelFile)
	if err != nil {
		return nil, err
	}
	tok, err := wordpiece.LoadDir(dir)
	if err != nil {
		if errors.Is(err, wordpiece.ErrNotFound) {
			return nil, fmt.Errorf("%w: %v", ErrONNXModelNotFound, err)
		}
		return nil, fmt.Errorf("%w: %v", ErrONNXBadModel, err)
	}
	var cfg onnxBERTConfig
	if err := onnxReadJSON(filepath.Join(dir, "config.json"), &cfg); err != nil {
		return nil, err
	}
	maxLen := tok.MaxLength()
	if opts.MaxLength > 0 {
		maxLen = opts.MaxLength
	}
	if cfg.MaxPositionEmbeddings > 0 && maxLen > cfg.MaxPositionEmbeddings {
		maxLen = cfg.MaxPositionEmbeddings
	}
	tok.SetMaxLength(maxLen)

	e := &ONNXEmbedder{tok: tok, batch: opts.BatchSize}
	if e.batch <= 0 {
		e.batch = 32
	}
	if err := e.configurePooling(dir, opts); err != nil {
		return nil, err
	}
	if err := e.configurePrompts(dir, opts); err != nil {
		return nil, err
	}
	device, err := onnx.ParseDevice(opts.Device)
	if err != nil {
		return nil, fmt.Errorf("vectorstore: %w", err)
	}
	sum, err := onnxFileSHA256(modelPath)
	if err != nil {
		return nil, err
	}
	sess, err := onnx.Open(ctx, modelPath, onnx.Spec{
		Inputs:         []string{"input_ids", "attention_mask"},
		OptionalInputs: []string{"token_type_ids"},
		Outputs:        []string{"last_hidden_state"},
	}, onnx.Options{
		LibraryPath: opts.LibraryPath,
		Threads:     opts.Threads,
		OptLevel:    onnx.OptLevel(opts.GraphOptimization),
		Device:      device,
		FallbackCPU: opts.FallbackCPU,
		Logger:      opts.Logger,
	})
	if err != nil {
		return nil, wrapONNXErr(err)
	}
	e.sess = sess
	e.id = filepath.Base(filepath.Clean(dir)) + "@sha256:" + sum[:16]
	if e.passagePrefix != "" {
		// Vectors of passages embedded with another prefix are not comparable; no prefix
		// keeps the ID stores created before prefixes existed recorded.
		e.id += "+passage=" + strconv.Quote(e.passagePrefix)
	}

	dims := sess.OutputDims()
	switch {
	case len(dims) != 3:
		sess.Close()
		return nil, fmt.Errorf("%w: %s: output last_hidden_state has rank %d, want 3", ErrONNXBadModel, modelPath, len(dims))
	case dims[2] > 0:
		e.dim = int(dims[2])
	case cfg.HiddenSize > 0:
		e.dim = cfg.HiddenSize
	default:
		// Neither the graph nor config.json says: ask the model.
		v, err := e.embedEncodings(ctx, []wordpiece.Encoding{tok.Encode("")})
		if err != nil {
			sess.Close()
			return nil, err
		}
		e.dim = len(v[0])
	}
	return e, nil
}

type onnxBERTConfig struct {
	HiddenSize            int `json:"hidden_size"`
	MaxPositionEmbeddings int `json:"max_position_embeddings"`
}

func (e *ONNXEmbedder) configurePooling(dir string, opts ONNXOptions) error {
	switch opts.Pooling {
	case "mean":
	case "cls":
		e.cls = true
	case "":
		var pc struct {
			CLS  bool `json:"pooling_mode_cls_token"`
			Mean bool `json:"pooling_mode_mean_tokens"`
		}
		if err := onnxReadJSON(filepath.Join(dir, "1_Pooling", "config.json"), &pc); err != nil {
			return err
		}
		e.cls = pc.CLS && !pc.Mean
	default:
		return fmt.Errorf("%w: pooling %q (want mean or cls)", ErrONNXBadModel, opts.Pooling)
	}
	if opts.Normalize != nil {
		e.normalize = *opts.Normalize
		return nil
	}
	var modules []struct {
		Type string `json:"type"`
	}
	if err := onnxReadJSON(filepath.Join(dir, "modules.json"), &modules); err != nil {
		return err
	}
	for _, m := range modules {
		if m.Type == "sentence_transformers.models.Normalize" {
			e.normalize = true
		}
	}
	return nil
}

// Prompt names in config_sentence_transformers.json, in the order sentence-transformers'
// encode_query / encode_document look for them, then Nomic's names.
var (
	stQueryPrompts   = []string{"query", "search_query"}
	stPassagePrompts = []string{"document", "passage", "corpus", "search_document"}
)

// configurePrompts sets the query and passage prefixes from opts, else from the folder's
// config_sentence_transformers.json "prompts".
func (e *ONNXEmbedder) configurePrompts(dir string, opts ONNXOptions) error {
	var st struct {
		Prompts map[string]string `json:"prompts"`
	}
	if opts.QueryPrefix == nil || opts.PassagePrefix == nil {
		if err := onnxReadJSON(filepath.Join(dir, "config_sentence_transformers.json"), &st); err != nil {
			return err
		}
	}
	pick := func(opt *string, names []string) string {
		if opt != nil {
			return *opt
		}
		for _, n := range names {
			if p, ok := st.Prompts[n]; ok {
				return p
			}
		}
		return ""
	}
	e.queryPrefix = pick(opts.QueryPrefix, stQueryPrompts)
	e.passagePrefix = pick(opts.PassagePrefix, stPassagePrompts)
	return nil
}

// onnxModelFile returns dir/file, or the first of dir/model.onnx and dir/onnx/model.onnx.
func onnxModelFile(dir, file string) (string, error) {
	cands := []string{filepath.Join(dir, "model.onnx"), filepath.Join(dir, "onnx", "model.onnx")}
	if file != "" {
		cands = []string{filepath.Join(dir, file)}
	}
	for _, c := range cands {
		if st, err := os.Stat(c); err == nil && !st.IsDir() {
			return c, nil
		}
	}
	return "", fmt.Errorf("%w: no %s", ErrONNXModelNotFound, onnxJoinOr(cands))
}

func onnxJoinOr(s []string) string {
	out := s[0]
	for _, x := range s[1:] {
		out += " or " + x
	}
	return out
}

func onnxReadJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrONNXBadModel, path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrONNXBadModel, path, err)
	}
	return nil
}

func onnxFileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrONNXModelNotFound, path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrONNXBadModel, path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// wrapONNXErr adds this package's sentinel to a runtime error, keeping the original.
func wrapONNXErr(err error) error {
	switch {
	case errors.Is(err, onnx.ErrModelNotFound):
		return fmt.Errorf("%w: %w", ErrONNXModelNotFound, err)
	case errors.Is(err, onnx.ErrModelCorrupt), errors.Is(err, onnx.ErrUnexpectedModel):
		return fmt.Errorf("%w: %w", ErrONNXBadModel, err)
	case errors.Is(err, onnx.ErrCUDAUnavailable):
		return fmt.Errorf("%w: %w", ErrONNXCUDAUnavailable, err)
	}
	return err
}

// ID is the folder name and the first 16 hex digits of the model file's sha256.
func (e *ONNXEmbedder) ID() string { return e.id }

// Dim is the embedding length (the model's hidden size).
func (e *ONNXEmbedder) Dim() int { return e.dim }

// Device is where inference runs: "cpu" or "cuda".
func (e *ONNXEmbedder) Device() string { return string(e.sess.Device()) }

// MaxLength is the number of tokens a text is truncated to, [CLS] and [SEP] included.
func (e *ONNXEmbedder) MaxLength() int { return e.tok.MaxLength() }

// Close releases the ONNX session.
func (e *ONNXEmbedder) Close() error { return e.sess.Close() }

// QueryPrefix is the text EmbedQuery prepends to a query ("" for none).
func (e *ONNXEmbedder) QueryPrefix() string { return e.queryPrefix }

// PassagePrefix is the text Embed prepends to every text ("" for none).
func (e *ONNXEmbedder) PassagePrefix() string { return e.passagePrefix }

// Embed returns one vector per text, each embedded with the passage prefix. Texts longer
// than MaxLength tokens (prefix included) are truncated; empty texts embed the [CLS] [SEP]
// sequence (or the prefix alone).
func (e *ONNXEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return e.embedWith(ctx, e.passagePrefix, texts)
}

// EmbedQuery embeds a search query with the query prefix.
func (e *ONNXEmbedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	v, err := e.embedWith(ctx, e.queryPrefix, []string{text})
	if err != nil {
		return nil, err
	}
	return v[0], nil
}

// EmbedQueries embeds search queries with the query prefix, in length-sorted batches like
// Embed.
func (e *ONNXEmbedder) EmbedQueries(ctx context.Context, texts []string) ([][]float32, error) {
	return e.embedWith(ctx, e.queryPrefix, texts)
}

func (e *ONNXEmbedder) embedWith(ctx context.Context, prefix string, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	encs := make([]wordpiece.Encoding, len(texts))
	for i, t := range texts {
		encs[i] = e.tok.Encode(prefix + t)
	}
	return e.embedEncodings(ctx, encs)
}

// embedEncodings runs tokenized texts in length-sorted batches and pools them, in order.
func (e *ONNXEmbedder) embedEncodings(ctx context.Context, encs []wordpiece.Encoding) ([][]float32, error) {
	out := make([][]float32, len(encs))
	if len(encs) == 0 {
		return out, nil
	}
	order := make([]int, len(encs))
	for i := range order {
		order[i] = i
	}
	// Longest first, so padding inside a batch is minimal and the first (largest) batch
	// sizes the reusable output buffer.
	sort.SliceStable(order, func(a, b int) bool { return len(encs[order[a]].IDs) > len(encs[order[b]].IDs) })
	var buf []float32
	batch := make([]wordpiece.Encoding, 0, e.batch)
	feeds := map[string][]int64{}
	for start := 0; start < len(order); start += e.batch {
		end := min(start+e.batch, len(order))
		batch = batch[:0]
		for _, i := range order[start:end] {
			batch = append(batch, encs[i])
		}
		b := e.tok.PadBatch(batch)
		feeds["input_ids"], feeds["attention_mask"], feeds["token_type_ids"] = b.IDs, b.Mask, b.TypeIDs
		res, err := e.sess.Run(ctx, b.Rows, b.Cols, feeds, buf)
		if err != nil {
			return nil, fmt.Errorf("vectorstore: embed: %w", err)
		}
		buf = res.Data
		if len(res.Shape) != 3 || res.Shape[0] != int64(b.Rows) || res.Shape[1] != int64(b.Cols) {
			return nil, fmt.Errorf("%w: output shape %v for a %d×%d batch", ErrONNXBadModel, res.Shape, b.Rows, b.Cols)
		}
		hidden := int(res.Shape[2])
		if e.dim != 0 && hidden != e.dim {
			return nil, fmt.Errorf("%w: output width %d, want %d", ErrONNXBadModel, hidden, e.dim)
		}
		for r, i := range order[start:end] {
			rowMask := b.Mask[r*b.Cols : (r+1)*b.Cols]
			rowData := res.Data[r*b.Cols*hidden : (r+1)*b.Cols*hidden]
			out[i] = e.pool(rowData, rowMask, hidden)
		}
	}
	return out, nil
}

// pool reduces one row [cols, hidden] to a vector.
func (e *ONNXEmbedder) pool(row []float32, mask []int64, hidden int) []float32 {
	acc := make([]float64, hidden)
	if e.cls {
		for j := range acc {
			acc[j] = float64(row[j])
		}
	} else {
		var n float64
		for t, m := range mask {
			if m == 0 {
				continue
			}
			n++
			tok := row[t*hidden : (t+1)*hidden]
			for j, v := range tok {
				acc[j] += float64(v)
			}
		}
		if n > 0 {
			for j := range acc {
				acc[j] /= n
			}
		}
	}
	if e.normalize {
		var ss float64
		for _, v := range acc {
			ss += v * v
		}
		if norm := math.Sqrt(ss); norm > 1e-12 {
			for j := range acc {
				acc[j] /= norm
			}
		}
	}
	v := make([]float32, hidden)
	for j, x := range acc {
		v[j] = float32(x)
	}
	return v
}
