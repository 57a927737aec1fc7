// Package onnx wraps ONNX Runtime (through github.com/yalue/onnxruntime_go) for the
// transformer models of this module: it finds and loads the shared library once per
// process, opens sessions on CPU or CUDA, checks that a model has the inputs and outputs a
// caller needs, and runs int64 token batches into float32 outputs. [Encoder] is the layer
// the module's BERT-family models share on top of a [Session]: the model folder (model
// file, tokenizer, config.json), the identity (folder@sha256), the options
// ([EncoderOptions]) and length-sorted batching; vectorstore.ONNXEmbedder pools its output
// and rerank.CrossEncoder reads its logits. Packages built on it declare their sentinels
// with internal/errkind so that each matches a shared kind here (ErrModelNotFound, ErrBadModel,
// ErrCUDAUnavailable, ErrNeedsCgo), which match package models' definitions.
//
// Sessions need cgo. Without it (CGO_ENABLED=0) everything here still builds, and Init,
// Open and OpenEncoder fail with [ErrNeedsCgo].
//
// The library is loaded from, in order: [Options.LibraryPath], $MEMORY_ORT_LIB,
// <repo>/.deps/onnxruntime/libonnxruntime.so.1 (the local cache scripts/deps.sh fills, found
// by walking up from the executable and from the working directory), the user cache that
// `memory runtime pull` fills ([PullRuntime], [RuntimeDir]), and finally the system library
// "libonnxruntime.so.1" through the dynamic loader's search path. When none loads, the
// error ([ErrLibrary]) names $MEMORY_ORT_LIB and `memory runtime pull`.
package onnx
