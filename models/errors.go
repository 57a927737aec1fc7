package models

import "errors"

// Errors returned by this package.
var (
	// ErrUnknownModel reports a name that is neither in the manifest nor a folder of
	// $MEMORY_MODELS.
	ErrUnknownModel = errors.New("models: unknown model")
	// ErrNotPulled reports a known model with no complete local copy; run Pull (or
	// `memory models pull NAME`) first.
	ErrNotPulled = errors.New("models: model not downloaded")
	// ErrChecksum reports a downloaded or cached file whose size or sha256 differs from
	// its pin. The bad file is removed.
	ErrChecksum = errors.New("models: checksum mismatch")
	// ErrNotFound reports a file the server does not have (HTTP 404/410).
	ErrNotFound = errors.New("models: file not found on server")
	// ErrDownload reports a transfer that failed after all retries, or a non-retryable
	// HTTP status.
	ErrDownload = errors.New("models: download failed")

	// The kinds of failure of loading a model for inference, one definition for every
	// package that loads one (vectorstore's embedders, rerank's cross-encoder): their
	// errors wrap these, so errors.Is(err, models.ErrBadModel) holds whichever failed.

	// ErrModelNotFound reports a model file (model.onnx, tokenizer.json,
	// model.safetensors, ...) missing from disk.
	ErrModelNotFound = errors.New("models: model file not found")
	// ErrBadModel reports a model that cannot be used: a damaged or unparsable file, an
	// unexpected graph interface, a tokenizer that does not fit.
	ErrBadModel = errors.New("models: unusable model")
	// ErrNeedsCgo reports an ONNX model loaded by a build without cgo (CGO_ENABLED=0).
	ErrNeedsCgo = errors.New("models: ONNX Runtime needs a cgo build (CGO_ENABLED=1)")
	// ErrCUDAUnavailable reports a CUDA session asked for where ONNX Runtime has no
	// usable CUDA execution provider.
	ErrCUDAUnavailable = errors.New("models: CUDA execution provider unavailable")
)
