package main

import (
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/onnx/onnxtest"
)

// TestDeviceFlag: --device takes cpu, cuda or auto on index, search, eval and serve; a bad
// value is an error naming it; cuda asks ONNX Runtime for its CUDA provider, so on a build of
// ONNX Runtime without one (the shipped npm library) a cross-encoder load fails and says so,
// while auto falls back to the CPU; a GPU request with a non-FAISS index warns.
func TestDeviceFlag(t *testing.T) {
	store := seedStore(t)
	for _, cmd := range []string{"index", "search", "eval", "serve"} {
		code, _, errs := cli(t, cmd, "--device", "tpu", "--store", store)
		if code == 0 || !strings.Contains(errs, `"tpu": want cpu, cuda or auto`) {
			t.Fatalf("%s --device tpu: exit %d, stderr %q", cmd, code, errs)
		}
	}
	_, errs := mustCLI(t, 0, "search", "--store", store, "--device", "auto", "--mode", "bm25", "capital")
	if !strings.Contains(errs, "runs on a GPU only with --index faiss") {
		t.Fatalf("--device auto on the flat index: no warning in %q", errs)
	}

	dir := onnxtest.Model(t, "tiny-bert-cross-encoder")
	onnxtest.Library(t)
	mustCLI(t, 0, "search", "--store", store, "--reranker", dir, "--rerank", "2", "--device", "auto", "--mode", "bm25", "capital")
	code, _, errs := cli(t, "search", "--store", store, "--reranker", dir, "--rerank", "2", "--device", "cuda", "--mode", "bm25", "capital")
	if hasCUDA := code == 0; !hasCUDA && !strings.Contains(strings.ToLower(errs), "cuda") {
		t.Fatalf("--device cuda without a CUDA provider: exit %d, stderr %q (want an error naming CUDA)", code, errs)
	}
}
