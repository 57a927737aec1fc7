//go:build cgo

package vectorstore

import (
	"context"
	"testing"

	"github.com/agentmem/memory/internal/onnx/onnxtest"
)

// Benchmark texts: 256 SciFact passages of at most 40 words (under 128 tokens each, so no
// implementation truncates them), embedded in batches of 32.
const benchN, benchWords, benchBatch = 256, 40, 32

func benchEmbed(b *testing.B, dir, expectFile string) {
	_, texts := onnxtest.BenchTexts(b, benchN, benchWords)
	ctx := context.Background()
	e, err := NewONNXEmbedder(ctx, dir, ONNXOptions{LibraryPath: onnxtest.Library(b), Threads: onnxtest.BenchThreads(), BatchSize: benchBatch})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	maxTok, sumTok := 0, 0
	for _, t := range texts {
		n := len(e.enc.Tok.Encode(t).IDs)
		maxTok = max(maxTok, n)
		sumTok += n
	}
	vecs, err := e.Embed(ctx, texts) // warm-up, and reference vectors for the peer
	if err != nil {
		b.Fatal(err)
	}
	onnxtest.WriteExpect(b, expectFile, map[string]any{"model": e.ID(), "vectors": vecs[:8]})
	cpu0 := onnxtest.CPUTime()
	b.ResetTimer()
	for b.Loop() {
		if _, err := e.Embed(ctx, texts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(texts)*b.N)/b.Elapsed().Seconds(), "texts/s")
	b.ReportMetric(float64(sumTok)/float64(len(texts)), "tokens/text")
	b.ReportMetric(float64(maxTok), "maxtokens")
	b.ReportMetric(float64(onnxtest.BenchThreads()), "threads")
	b.ReportMetric(float64((onnxtest.CPUTime()-cpu0).Microseconds())/1000/float64(len(texts)*b.N), "cpu-ms/text")
}

// BenchmarkONNXEmbedTiny embeds the benchmark texts with the 2-layer, 32-wide fixture.
func BenchmarkONNXEmbedTiny(b *testing.B) {
	benchEmbed(b, onnxtest.Model(b, "tiny-bert-encoder"), "expect-embed-tiny.json")
}

// BenchmarkONNXEmbedMiniLM embeds them with a MiniLM-L6-shaped graph (random weights),
// the cost of all-MiniLM-L6-v2.
func BenchmarkONNXEmbedMiniLM(b *testing.B) {
	enc, _ := onnxtest.MiniLMModels(b)
	benchEmbed(b, enc, "expect-embed.json")
}
