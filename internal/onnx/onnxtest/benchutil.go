//go:build unix

package onnxtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/agentmem/memory/internal/atomicfile"
)

// BenchThreads is ONNX Runtime's intra-op thread count for benchmarks
// ($MEMORY_BENCH_THREADS, default 1).
func BenchThreads() int {
	if n, err := strconv.Atoi(os.Getenv("MEMORY_BENCH_THREADS")); err == nil && n > 0 {
		return n
	}
	return 1
}

// CPUTime is the CPU time (user + system, all threads) of this process so far.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// WriteExpect writes v as JSON to file in BenchDir, for a peer implementation's benchmark
// to compare its outputs with (file "" writes nothing).
func WriteExpect(tb testing.TB, file string, v any) {
	tb.Helper()
	if file == "" {
		return
	}
	data, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	if err := atomicfile.WriteFile(filepath.Join(BenchDir(tb), file), data, atomicfile.Options{}); err != nil {
		tb.Fatal(err)
	}
}
