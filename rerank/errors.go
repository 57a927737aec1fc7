package rerank

import (
	"errors"

	"github.com/agentmem/memory/internal/errkind"
	"github.com/agentmem/memory/internal/onnx"
)

// Errors of the LLM reranker. A refused request is an [*LLMHTTPError], which matches
// ErrLLMHTTP.
var (
	// ErrLLMConfig reports unusable LLMOptions (no model, a bad URL, an unknown mode, a
	// negative cap).
	ErrLLMConfig = errors.New("rerank: invalid LLM reranker options")
	// ErrLLMHTTP reports a request the chat server answered with an error status, after
	// the retries allowed for 408, 429 and 5xx.
	ErrLLMHTTP = errors.New("rerank: chat server refused the request")
	// ErrLLMResponse reports a 2xx answer the reranker cannot use: not a chat completion,
	// no choices, a response over MaxResponseBytes, or a reply with no score (pointwise)
	// or no passage number (listwise) in it.
	ErrLLMResponse = errors.New("rerank: unusable chat response")
	// ErrLLMTooManyPassages reports a Score call with more passages than MaxPassages.
	ErrLLMTooManyPassages = errors.New("rerank: too many passages for the LLM reranker")
)

// The cross-encoder's model errors carry this package's name in their text; each matches
// one kind of package models under errors.Is (models.ErrModelNotFound, models.ErrBadModel,
// models.ErrCUDAUnavailable, models.ErrNeedsCgo), the one public definition.
var (
	// errModelNotFound reports a model folder without a model or tokenizer file.
	errModelNotFound = errkind.New("rerank: model file not found", onnx.ErrModelNotFound)
	// errBadModel reports a model or configuration file that cannot be used: corrupt, or an
	// ONNX graph without input_ids/attention_mask inputs or a logits output.
	errBadModel = errkind.New("rerank: unusable model", onnx.ErrBadModel)
	// errCUDAUnavailable reports a CUDA device asked for where none can be used.
	errCUDAUnavailable = errkind.New("rerank: CUDA unavailable", onnx.ErrCUDAUnavailable)
	// errNeedsCgo reports a CrossEncoder asked of a binary built with CGO_ENABLED=0 (ONNX
	// Runtime is reached through cgo).
	errNeedsCgo = errkind.New("rerank: the cross-encoder needs a cgo build", onnx.ErrNeedsCgo)
)
