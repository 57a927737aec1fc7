package vectorstore

import (
	"context"
	"os"
	"testing"
	"time"
)

// MEMORY_DISK_BENCH_AVX2=1 turns the AVX-512 checksum kernels off (to measure the AVX2
// ones on a machine that has both).
func init() {
	if os.Getenv("MEMORY_DISK_BENCH_AVX2") != "" {
		setDiskAVX512(false)
	}
}

// BenchmarkDiskVerify reads back and checks every block of the benchmark index
// (diskBenchConfig: MEMORY_DISK_BENCH_DIR, _N, _DIM, _QUANT), as memory check does: one
// Verify per op on an index opened once; "GB/s" is its segment files' bytes a second,
// "cpu-s" the CPU time of an op.
//
//	MEMORY_DISK_BENCH_DIR=/tmp/dbench go test -run '^$' -bench DiskVerify -benchtime 3x ./vectorstore/
func BenchmarkDiskVerify(b *testing.B) {
	cfg, _ := diskBenchConfig(b)
	cfg.ReadOnly = true
	x, err := NewDiskIndex(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	var bytes int64
	for _, s := range x.segs {
		for _, m := range s.maps {
			bytes += int64(len(m))
		}
	}
	var cpu time.Duration
	for b.Loop() {
		c0 := diskBenchCPU()
		if err := x.Verify(context.Background()); err != nil {
			b.Fatal(err)
		}
		cpu += diskBenchCPU() - c0
	}
	b.ReportMetric(float64(bytes)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s")
	b.ReportMetric(float64(bytes)/1e9, "GB")
}
