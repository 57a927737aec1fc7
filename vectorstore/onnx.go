package vectorstore

import (
	"context"
	"fmt"
	"log/slog"
	"math"

	"github.com/agentmem/memory/internal/errkind"
	"github.com/agentmem/memory/internal/onnx"
	"github.com/agentmem/memory/internal/wordpiece"
)

// The embedders' model errors carry this package's name in their text; each matches one
// kind of package models under errors.Is (models.ErrModelNotFound, models.ErrBadModel,
// models.ErrCUDAUnavailable, models.ErrNeedsCgo), the one public definition.
var (
	// errModelNotFound reports a model folder without a model or tokenizer file.
	errModelNotFound = errkind.New("vectorstore: model file not found", onnx.ErrModelNotFound)
	// errCUDAUnavailable reports a CUDA device asked for where none can be used.
	errCUDAUnavailable = errkind.New("vectorstore: CUDA unavailable", onnx.ErrCUDAUnavailable)
	// errNeedsCgo reports an ONNXEmbedder asked of a binary built with CGO_ENABLED=0 (ONNX
	// Runtime is reached through cgo).
	errNeedsCgo = errkind.New("vectorstore: the ONNX embedder needs a cgo build", onnx.ErrNeedsCgo)
)

var onnxErrors = onnx.Errors{Prefix: "vectorstore", NotFound: errModelNotFound, BadModel: errBadModel,
	CUDAUnavailable: errCUDAUnavailable, NeedsCgo: errNeedsCgo}

// ONNXOptions configures an [ONNXEmbedder]. The zero value runs on the CPU with ONNX
// Runtime's default threads, batches of 32, and the pooling, normalisation and maximum
// length the model folder's sentence-transformers files describe.
type ONNXOptions struct {
	// LibraryPath, ModelFile, Threads, Device, FallbackCPU, GraphOptimization and Logger
	// are those of every ONNX model of this module (rerank.CrossEncoderOptions has the same):
	// the ONNX Runtime library ("" = $MEMORY_ORT_LIB, the local .deps cache, the `memory
	// runtime pull` cache, then the system library); the ONNX file relative to the folder
	// ("" = model.onnx, else onnx/model.onnx); the intra-op threads (0 = one per core); "cpu"
	// (default), "cuda" or "auto"; whether "cuda" without CUDA runs on the CPU with a
	// warning instead of failing with models.ErrCUDAUnavailable; "all" (default), "extended",
	// "basic" or "disable"; where warnings go (nil = slog.Default()).
	LibraryPath       string
	ModelFile         string
	Threads           int
	Device            string
	FallbackCPU       bool
	GraphOptimization string
	// BatchSize is the number of texts per inference call; 0 = 32.
	BatchSize int
	// MaxLength caps tokens per text, [CLS] and [SEP] included; 0 = the preset's caps,
	// else the folder's max_seq_length (sentence_bert_config.json), else the tokenizer's
	// model_max_length.
	MaxLength int
	// QueryMaxLength and PassageMaxLength cap queries (EmbedQuery) and passages (Embed)
	// alone, overriding MaxLength and the preset (E5's: 256 and 180). A passage cap other
	// than the preset's (or, without a preset, MaxLength or the folder's) is part of the
	// embedder's ID.
	QueryMaxLength, PassageMaxLength int
	// Preset is the model preset ([PresetAuto] = by the folder's name, as the original
	// Search-R1 does: e5 and bge get their prefixes, pooling, normalisation and token
	// caps; see [PresetE5], [PresetBGE], [PresetNone]). Any option set here overrides the
	// preset's value. A preset other than none is part of the embedder's ID.
	Preset string
	// Pooling is "mean" or "cls"; "" = the preset's, else 1_Pooling/config.json, else mean.
	Pooling string
	// Normalize forces L2 normalisation on or off; nil = the preset's, else on when
	// modules.json lists a Normalize module.
	Normalize *bool
	Logger    *slog.Logger
	// QueryPrefix is prepended to search queries (EmbedQuery) by asymmetric models (E5:
	// "query: "; BGE: "Represent this sentence for searching relevant passages: "). nil = the
	// preset's, else the folder's config_sentence_transformers.json prompts (the "query"
	// prompt, else "search_query"), none when absent; a pointer to "" turns a prompt off.
	QueryPrefix *string
	// PassagePrefix is prepended to every text Embed embeds (E5: "passage: "). nil = the
	// preset's, else the folder's prompts ("document", "passage", "corpus", else "search_document", the names
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
	enc           *onnx.Encoder
	id            string
	dim           int
	cls           bool
	normalize     bool
	queryPrefix   string
	passagePrefix string
	settings      ONNXSettings
}

var (
	_ Embedder           = (*ONNXEmbedder)(nil)
	_ QueryEmbedder      = (*ONNXEmbedder)(nil)
	_ BatchQueryEmbedder = (*ONNXEmbedder)(nil)
)

// NewONNXEmbedder loads the model in dir: model.onnx or onnx/model.onnx, tokenizer.json or
// vocab.txt, and the optional sentence-transformers files 1_Pooling/config.json,
// modules.json and sentence_bert_config.json.
//
// The text handling (prefixes, pooling, normalisation, token caps) is
// [ResolveONNXSettings]'s: the options, else the model preset (by default chosen by the
// folder's name: a folder named like an e5 or bge model gets the original Search-R1's
// settings for it), else the folder's files.
func NewONNXEmbedder(ctx context.Context, dir string, opts ONNXOptions) (*ONNXEmbedder, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s, err := ResolveONNXSettings(dir, opts)
	if err != nil {
		return nil, err
	}
	eo := opts.encoder()
	// The tokenizer keeps the model's window (MaxLength, else the folder's), at least the
	// caps; each side is cut to its own cap when encoded.
	window := s.window
	if opts.MaxLength > 0 {
		window = opts.MaxLength
	}
	eo.MaxLength = max(s.QueryMaxLength, s.PassageMaxLength, window)
	enc, err := onnx.OpenEncoder(ctx, dir, eo, "last_hidden_state", onnxErrors)
	if err != nil {
		return nil, err
	}
	e := &ONNXEmbedder{enc: enc, id: enc.ID() + s.IDSuffix, settings: s, cls: s.Pooling == "cls", normalize: s.Normalize,
		queryPrefix: s.QueryPrefix, passagePrefix: s.PassagePrefix}
	if err := e.configure(ctx); err != nil {
		enc.Close()
		return nil, err
	}
	return e, nil
}

// encoder is the part of opts the shared ONNX layer takes.
func (o ONNXOptions) encoder() onnx.EncoderOptions {
	return onnx.EncoderOptions{LibraryPath: o.LibraryPath, ModelFile: o.ModelFile, Threads: o.Threads,
		Device: o.Device, FallbackCPU: o.FallbackCPU, GraphOptimization: o.GraphOptimization,
		BatchSize: o.BatchSize, MaxLength: o.MaxLength, Logger: o.Logger}
}

// configure sets the width from the graph, config.json or the model itself.
func (e *ONNXEmbedder) configure(ctx context.Context) error {
	dims := e.enc.Session.OutputDims()
	switch {
	case len(dims) != 3:
		return fmt.Errorf("%w: %s: output last_hidden_state has rank %d, want 3", errBadModel, e.enc.ModelPath, len(dims))
	case dims[2] > 0:
		e.dim = int(dims[2])
	case e.enc.Config.HiddenSize > 0:
		e.dim = e.enc.Config.HiddenSize
	default:
		// Neither the graph nor config.json says: ask the model.
		v, err := e.embedEncodings(ctx, []wordpiece.Encoding{e.enc.Tok.Encode("")})
		if err != nil {
			return err
		}
		e.dim = len(v[0])
	}
	return nil
}

// Prompt names in config_sentence_transformers.json, in the order sentence-transformers'
// encode_query / encode_document look for them, then Nomic's names.
var (
	stQueryPrompts   = []string{"query", "search_query"}
	stPassagePrompts = []string{"document", "passage", "corpus", "search_document"}
)

// ID is the folder name and the first 16 hex digits of the model file's sha256, then what
// stored vectors depend on beyond the model (see [ONNXSettings].IDSuffix and
// [ParseONNXIdentity]).
func (e *ONNXEmbedder) ID() string { return e.id }

// Dim is the embedding length (the model's hidden size).
func (e *ONNXEmbedder) Dim() int { return e.dim }

// Device is where inference runs: "cpu" or "cuda".
func (e *ONNXEmbedder) Device() string { return string(e.enc.Session.Device()) }

// MaxLength is the model's window in tokens, [CLS] and [SEP] included: the MaxLength
// option, else the folder's maximum length (at least the query and passage caps). A store
// sizes prose chunks to it; passages are cut to PassageMaxLength for the embedding, as the
// original Search-R1 cuts its corpus passages (E5: 180 tokens) without splitting them.
func (e *ONNXEmbedder) MaxLength() int { return e.enc.Tok.MaxLength() }

// PassageMaxLength is the number of tokens a passage (Embed) is truncated to, [CLS] and
// [SEP] included.
func (e *ONNXEmbedder) PassageMaxLength() int { return e.settings.PassageMaxLength }

// QueryMaxLength is the number of tokens a query (EmbedQuery) is truncated to, [CLS] and
// [SEP] included.
func (e *ONNXEmbedder) QueryMaxLength() int { return e.settings.QueryMaxLength }

// TokenIDs are the token ids the model is fed for text as a query (EmbedQuery, query
// true) or as a passage (Embed): [CLS], the word pieces of the prefix and text cut to the
// query or passage cap, [SEP].
func (e *ONNXEmbedder) TokenIDs(text string, query bool) []int64 {
	if query {
		return e.enc.Tok.EncodeMax(e.queryPrefix+text, e.settings.QueryMaxLength).IDs
	}
	return e.enc.Tok.EncodeMax(e.passagePrefix+text, e.settings.PassageMaxLength).IDs
}

// Settings is how the embedder handles text: its preset, prefixes, pooling,
// normalisation and token caps.
func (e *ONNXEmbedder) Settings() ONNXSettings { return e.settings }

// Close releases the ONNX session.
func (e *ONNXEmbedder) Close() error { return e.enc.Close() }

// QueryPrefix is the text EmbedQuery prepends to a query ("" for none).
func (e *ONNXEmbedder) QueryPrefix() string { return e.queryPrefix }

// PassagePrefix is the text Embed prepends to every text ("" for none).
func (e *ONNXEmbedder) PassagePrefix() string { return e.passagePrefix }

// Embed returns one vector per text, each embedded with the passage prefix. Texts longer
// than MaxLength tokens (prefix included) are truncated; empty texts embed the [CLS] [SEP]
// sequence (or the prefix alone).
func (e *ONNXEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return e.embedWith(ctx, e.passagePrefix, e.settings.PassageMaxLength, texts)
}

// EmbedQuery embeds a search query with the query prefix.
func (e *ONNXEmbedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	v, err := e.embedWith(ctx, e.queryPrefix, e.settings.QueryMaxLength, []string{text})
	if err != nil {
		return nil, err
	}
	return v[0], nil
}

// EmbedQueries embeds search queries with the query prefix, in length-sorted batches like
// Embed.
func (e *ONNXEmbedder) EmbedQueries(ctx context.Context, texts []string) ([][]float32, error) {
	return e.embedWith(ctx, e.queryPrefix, e.settings.QueryMaxLength, texts)
}

// embedWith embeds texts with prefix before each, cut to maxLen tokens.
func (e *ONNXEmbedder) embedWith(ctx context.Context, prefix string, maxLen int, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	encs := make([]wordpiece.Encoding, len(texts))
	for i, t := range texts {
		encs[i] = e.enc.Tok.EncodeMax(prefix+t, maxLen)
	}
	return e.embedEncodings(ctx, encs)
}

// embedEncodings runs tokenized texts in length-sorted batches and pools them, in order.
func (e *ONNXEmbedder) embedEncodings(ctx context.Context, encs []wordpiece.Encoding) ([][]float32, error) {
	out := make([][]float32, len(encs))
	err := e.enc.RunBatches(ctx, encs, func(rows []int, b wordpiece.Batch, res onnx.Result) error {
		if len(res.Shape) != 3 || res.Shape[0] != int64(b.Rows) || res.Shape[1] != int64(b.Cols) {
			return fmt.Errorf("%w: output shape %v for a %d×%d batch", errBadModel, res.Shape, b.Rows, b.Cols)
		}
		hidden := int(res.Shape[2])
		if e.dim != 0 && hidden != e.dim {
			return fmt.Errorf("%w: output width %d, want %d", errBadModel, hidden, e.dim)
		}
		for r, i := range rows {
			rowMask := b.Mask[r*b.Cols : (r+1)*b.Cols]
			rowData := res.Data[r*b.Cols*hidden : (r+1)*b.Cols*hidden]
			out[i] = e.pool(rowData, rowMask, hidden)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("vectorstore: embed: %w", err)
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
