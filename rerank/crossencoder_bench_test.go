//go:build cgo

package rerank

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/agentmem/memory/internal/onnx/onnxtest"
)

func benchThreads() int {
	if n, err := strconv.Atoi(os.Getenv("MEMORY_BENCH_THREADS")); err == nil && n > 0 {
		return n
	}
	return 1
}

// Benchmark pairs: one query against 256 SciFact passages of at most 40 words, in
// batches of 32.
const benchN, benchWords, benchBatch = 256, 40, 32

func benchRerank(b *testing.B, dir, expectFile string) {
	query, texts := onnxtest.BenchTexts(b, benchN, benchWords)
	ctx := context.Background()
	ce, err := NewCrossEncoder(ctx, dir, CrossEncoderOptions{LibraryPath: onnxtest.Library(b), Threads: benchThreads(), BatchSize: benchBatch})
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
	if expectFile != "" {
		data, _ := json.Marshal(map[string]any{"model": ce.ID(), "logits": logits[:16]})
		if err := os.WriteFile(filepath.Join(onnxtest.BenchDir(b), expectFile), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		if _, err := ce.Score(ctx, query, texts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(texts)*b.N)/b.Elapsed().Seconds(), "pairs/s")
	b.ReportMetric(float64(sumTok)/float64(len(texts)), "tokens/pair")
	b.ReportMetric(float64(benchThreads()), "threads")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(len(texts)*b.N), "cpu-ms/pair")
}

// cpuTime is the CPU time (user + system, all threads) of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
