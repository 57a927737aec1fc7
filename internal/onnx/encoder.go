package onnx

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
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentmem/memory/internal/wordpiece"
)

// DefaultBatchSize is the number of sequences per inference call when
// EncoderOptions.BatchSize is 0.
const DefaultBatchSize = 32

// EncoderOptions configures an [Encoder]. The zero value runs model.onnx (else
// onnx/model.onnx) of the folder on the CPU, with ONNX Runtime's default threads, batches
// of DefaultBatchSize and the folder's maximum length. rerank.CrossEncoderOptions is this
// type; vectorstore.ONNXOptions carries the same fields, plus its own, and converts.
type EncoderOptions struct {
	// LibraryPath is the ONNX Runtime shared library; "" = see ResolveLibrary.
	LibraryPath string
	// ModelFile is the ONNX file relative to the folder; "" = model.onnx, else
	// onnx/model.onnx.
	ModelFile string
	// Threads is the intra-op thread count; 0 = one per core.
	Threads int
	// Device is "cpu" (""), "cuda" (or "gpu") or "auto"; see ParseDevice.
	Device string
	// FallbackCPU runs on the CPU, with a warning, when Device is "cuda" and CUDA is
	// unavailable, instead of failing with ErrCUDAUnavailable.
	FallbackCPU bool
	// GraphOptimization is "all" (""), "extended", "basic" or "disable".
	GraphOptimization string
	// BatchSize is the number of sequences per inference call; 0 = DefaultBatchSize.
	BatchSize int
	// MaxLength caps the tokens of a sequence, special tokens included; 0 = the folder's
	// maximum (see wordpiece.LoadDir). config.json's max_position_embeddings caps both.
	MaxLength int
	// Logger receives warnings; nil = slog.Default().
	Logger *slog.Logger
}

// Errors are the sentinels of a package built on [Encoder]: each wraps the shared kind of
// this package (make them with [Kind]), and [Errors.Wrap] puts the matching one in front of
// an error from here, so callers test for the package's names.
type Errors struct {
	// Prefix starts messages that have no sentinel of their own ("vectorstore").
	Prefix string
	// NotFound wraps ErrModelNotFound, BadModel ErrBadModel, CUDAUnavailable
	// ErrCUDAUnavailable, NeedsCgo ErrNeedsCgo.
	NotFound, BadModel, CUDAUnavailable, NeedsCgo error
}

// Wrap returns err with the package sentinel of its kind in front; errors of no known kind
// (a cancelled context, a bad option) get the Prefix.
func (e Errors) Wrap(err error) error {
	var s error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNeedsCgo):
		s = e.NeedsCgo
	case errors.Is(err, ErrModelNotFound):
		s = e.NotFound
	case errors.Is(err, ErrBadModel):
		s = e.BadModel
	case errors.Is(err, ErrCUDAUnavailable):
		s = e.CUDAUnavailable
	}
	switch {
	case s != nil && !errors.Is(err, s):
		return fmt.Errorf("%w: %w", s, err)
	case s != nil, errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return fmt.Errorf("%s: %w", e.Prefix, err)
}

// BERTConfig is the part of a folder's config.json an encoder reads.
type BERTConfig struct {
	HiddenSize            int `json:"hidden_size"`
	MaxPositionEmbeddings int `json:"max_position_embeddings"`
}

// Encoder is a BERT-family model folder opened for inference: its WordPiece tokenizer, an
// ONNX session fed input_ids, attention_mask and (when the graph has it) token_type_ids, and
// its identity. The bi-encoder (vectorstore.ONNXEmbedder) and the cross-encoder
// (rerank.CrossEncoder) are this plus what they do with the output. Safe for concurrent
// use.
type Encoder struct {
	// Session runs the model; Tok tokenizes for it (its MaxLength already capped).
	Session *Session
	Tok     *wordpiece.Tokenizer
	// Config is the folder's config.json (zero fields when absent).
	Config BERTConfig
	// Dir is the folder and ModelPath the ONNX file in it.
	Dir, ModelPath string
	// SHA256 is the hex sha256 of the ONNX file.
	SHA256 string

	batch int
	errs  Errors
}

// OpenEncoder opens the model folder dir for a graph whose float32 output is named output.
// Problems are reported under errs' sentinels: a missing folder, model or tokenizer file as
// NotFound; a corrupt file, a graph without the inputs or the output, or a config file that
// does not parse as BadModel; CUDA asked for where there is none as CUDAUnavailable; a build
// without cgo as NeedsCgo.
func OpenEncoder(ctx context.Context, dir string, opts EncoderOptions, output string, errs Errors) (*Encoder, error) {
	if !Enabled {
		return nil, fmt.Errorf("%w: %w", errs.NeedsCgo, ErrNeedsCgo)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e := &Encoder{Dir: dir, batch: opts.BatchSize, errs: errs}
	if e.batch <= 0 {
		e.batch = DefaultBatchSize
	}
	var err error
	if e.ModelPath, err = ModelFile(dir, opts.ModelFile); err != nil {
		return nil, errs.Wrap(err)
	}
	if e.Tok, err = wordpiece.LoadDir(dir); err != nil {
		if errors.Is(err, wordpiece.ErrNotFound) {
			return nil, fmt.Errorf("%w: %w", errs.NotFound, err)
		}
		return nil, fmt.Errorf("%w: %w", errs.BadModel, err)
	}
	if err := e.ReadJSON("config.json", &e.Config); err != nil {
		return nil, err
	}
	maxLen := e.Tok.MaxLength()
	if opts.MaxLength > 0 {
		maxLen = opts.MaxLength
	}
	if m := e.Config.MaxPositionEmbeddings; m > 0 && maxLen > m {
		maxLen = m
	}
	e.Tok.SetMaxLength(maxLen)
	device, err := ParseDevice(opts.Device)
	if err != nil {
		return nil, errs.Wrap(err)
	}
	if err := OptLevel(opts.GraphOptimization).check(); err != nil {
		return nil, errs.Wrap(err)
	}
	if e.SHA256, err = FileSHA256(e.ModelPath); err != nil {
		return nil, errs.Wrap(err)
	}
	e.Session, err = Open(ctx, e.ModelPath, Spec{
		Inputs:         []string{"input_ids", "attention_mask"},
		OptionalInputs: []string{"token_type_ids"},
		Outputs:        []string{output},
	}, Options{
		LibraryPath: opts.LibraryPath,
		Threads:     opts.Threads,
		OptLevel:    OptLevel(opts.GraphOptimization),
		Device:      device,
		FallbackCPU: opts.FallbackCPU,
		Logger:      opts.Logger,
	})
	if err != nil {
		return nil, errs.Wrap(err)
	}
	return e, nil
}

// ID is the folder's base name and the first 16 hex digits of the model file's sha256.
func (e *Encoder) ID() string {
	return filepath.Base(filepath.Clean(e.Dir)) + "@sha256:" + e.SHA256[:16]
}

// Close releases the session.
func (e *Encoder) Close() error { return e.Session.Close() }

// ReadJSON decodes the folder's file name (a path relative to the folder) into v; a missing
// file leaves v as it is, an unreadable or malformed one is BadModel naming the file.
func (e *Encoder) ReadJSON(name string, v any) error {
	return ReadJSON(filepath.Join(e.Dir, name), v, e.errs.BadModel)
}

// ReadJSON decodes the file at path into v; a missing file leaves v as it is, an unreadable
// or malformed one is reported as bad (with the path and the cause).
func ReadJSON(path string, v any, bad error) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %v", bad, path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %s: %v", bad, path, err)
	}
	return nil
}

// ModelFile returns dir/file, or for file "" the first of dir/model.onnx and
// dir/onnx/model.onnx that is a file; ErrModelNotFound names the paths tried.
func ModelFile(dir, file string) (string, error) {
	cands := []string{filepath.Join(dir, "model.onnx"), filepath.Join(dir, "onnx", "model.onnx")}
	if file != "" {
		cands = []string{filepath.Join(dir, file)}
	}
	for _, c := range cands {
		if st, err := os.Stat(c); err == nil && !st.IsDir() {
			return c, nil
		}
	}
	return "", fmt.Errorf("%w: no %s", ErrModelNotFound, strings.Join(cands, " or "))
}

// FileSHA256 is the hex sha256 of the file at path (ErrModelNotFound when it cannot be
// opened, ErrBadModel when it cannot be read).
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrModelNotFound, path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrBadModel, path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// RunBatches runs encs through the model in batches of the configured size, longest first
// (so padding inside a batch is minimal and the first, widest batch sizes the output buffer
// the later ones reuse). For each batch fn gets the positions in encs of its rows, the
// padded batch (fed as input_ids, attention_mask, token_type_ids) and the output, valid
// only during the call. An error from the session or from fn stops the run.
func (e *Encoder) RunBatches(ctx context.Context, encs []wordpiece.Encoding, fn func(rows []int, b wordpiece.Batch, out Result) error) error {
	if len(encs) == 0 {
		return ctx.Err()
	}
	order := make([]int, len(encs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return len(encs[order[a]].IDs) > len(encs[order[b]].IDs) })
	batch := make([]wordpiece.Encoding, 0, min(e.batch, len(encs)))
	feeds := map[string][]int64{}
	var buf []float32
	for start := 0; start < len(order); start += e.batch {
		rows := order[start:min(start+e.batch, len(order))]
		batch = batch[:0]
		for _, i := range rows {
			batch = append(batch, encs[i])
		}
		b := e.Tok.PadBatch(batch)
		feeds["input_ids"], feeds["attention_mask"], feeds["token_type_ids"] = b.IDs, b.Mask, b.TypeIDs
		res, err := e.Session.Run(ctx, b.Rows, b.Cols, feeds, buf)
		if err != nil {
			return err
		}
		buf = res.Data
		if err := fn(rows, b, res); err != nil {
			return err
		}
	}
	return nil
}
