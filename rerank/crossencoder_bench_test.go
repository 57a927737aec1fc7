//go:build cgo

package rerank

import (
	"context"
	"testing"

	"github.com/agentmem/memory/internal/onnx/onnxtest"
)

// Benchmark pairs: one query against 256 SciFact passages of at most 40 words, in
// batches of 32.
const benchN, benchWords, benchBatch = 256, 40, 32

func benchRerank(b *testing.B, dir, expectFile string) {
	query, texts := onnxtest.BenchTexts(b, benchN, benchWords)
	ctx := context.Background()
	ce, err := NewCrossEncoder(ctx, dir, CrossEncoderOptions{LibraryPath: onnxtest.Library(b), Threads: onnxtest.BenchThreads(), BatchSize: benchBatch})
	if err != nil {
		b.Fatal(err)
	}
	defer ce.Close()
	sumTok := 0
	for _, t := range texts {
		sumTok += len(ce.enc.Tok.EncodePair(query, t).IDs)
	}
	logits, err := ce.Score(ctx, query, texts)
	if err != nil {
		b.Fatal(err)
	}
	onnxtest.WriteExpect(b, expectFile, map[string]any{"model": ce.ID(), "logits": logits[:16]})
	cpu0 := onnxtest.CPUTime()
	b.ResetTimer()
	for b.Loop() {
		if _, err := ce.Score(ctx, query, texts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(texts)*b.N)/b.Elapsed().Seconds(), "pairs/s")
	b.ReportMetric(float64(sumTok)/float64(len(texts)), "tokens/pair")
	b.ReportMetric(float64(onnxtest.BenchThreads()), "threads")
	b.ReportMetric(float64((onnxtest.CPUTime()-cpu0).Microseconds())/1000/float64(len(texts)*b.N), "cpu-ms/pair")
}

// BenchmarkCrossEncoderTiny reranks with the 2-layer, 32-wide fixture.
func BenchmarkCrossEncoderTiny(b *testing.B) {
	benchRerank(b, onnxtest.Model(b, "tiny-bert-cross-encoder"), "expect-rerank-tiny.json")
}

// BenchmarkCrossEncoderMiniLM reranks with an ms-marco-MiniLM-L-6-shaped graph (random
// weights).
func BenchmarkCrossEncoderMiniLM(b *testing.B) {
	_, ce := onnxtest.MiniLMModels(b)
	benchRerank(b, ce, "expect-rerank.json")
}
