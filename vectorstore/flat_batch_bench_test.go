package vectorstore

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/agentmem/memory/internal/vecmath"
)

// BenchmarkFlatSearchBatch times one batch of queries through flatIndex.SearchBatch (issue
// 13: a 2,560-query dense batch over 1M x 384, exact) beside python3-faiss's
// IndexFlatIP.search (BLAS sgemm plus heaps) on the very same normalised vectors and queries,
// with the same thread count (GOMAXPROCS; faiss.omp_set_num_threads and
// OPENBLAS_NUM_THREADS), alternating which side goes first each round. It reports the best
// seconds per batch of each side for k=3 and k=10, and how many of FAISS's top-k ids the Go
// side also returned (ties and float rounding may swap the last places). For scale it also
// times the old way, one Search per query, on the first 64 queries and extrapolates.
//
//	MEMORY_BATCH_BENCH_N=1000000 GOMAXPROCS=2 flock /tmp/bench.lock \
//	  go test -run '^$' -bench FlatSearchBatch -benchtime 1x -timeout 60m ./vectorstore/
//
// Knobs: MEMORY_BATCH_BENCH_N (vectors, default 100000), MEMORY_BATCH_BENCH_Q (queries,
// 2560), MEMORY_BATCH_BENCH_ROUNDS (2), MEMORY_BATCH_BENCH_PY (python with faiss and numpy,
// default /usr/bin/python3; "off" skips the FAISS side, which is also skipped, with a log
// line, when that python cannot import faiss), MEMORY_BATCH_BENCH_BLOCK (bytes of
// the vector block, default flatBatchBlockBytes).
func BenchmarkFlatSearchBatch(b *testing.B) {
	const dim = 384
	n := batchBenchEnvInt("MEMORY_BATCH_BENCH_N", 100_000)
	nq := batchBenchEnvInt("MEMORY_BATCH_BENCH_Q", 2560)
	rounds := batchBenchEnvInt("MEMORY_BATCH_BENCH_ROUNDS", 2)
	py := os.Getenv("MEMORY_BATCH_BENCH_PY")
	if py == "" {
		py = "/usr/bin/python3"
	}
	if blk := batchBenchEnvInt("MEMORY_BATCH_BENCH_BLOCK", 0); blk > 0 {
		old := flatBatchBlockBytes
		flatBatchBlockBytes = blk
		defer func() { flatBatchBlockBytes = old }()
	}
	threads := runtime.GOMAXPROCS(0)
	ctx := context.Background()

	rng := rand.New(rand.NewPCG(42, 1))
	slab := make([]float32, n*dim)
	for i := range slab {
		slab[i] = float32(rng.NormFloat64())
	}
	idx, err := newFlatIndex(IndexConfig{Dim: dim, Metric: Cosine})
	if err != nil {
		b.Fatal(err)
	}
	const chunk = 10_000
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		ids := make([]string, hi-lo)
		vecs := make([][]float32, hi-lo)
		for i := range ids {
			ids[i] = strconv.Itoa(lo + i)
			vecs[i] = slab[(lo+i)*dim : (lo+i+1)*dim]
		}
		if err := idx.Add(ctx, ids, vecs); err != nil {
			b.Fatal(err)
		}
	}
	slab = nil
	qs := make([][]float32, nq)
	qnorm := make([]float32, nq*dim)
	for i := range qs {
		q := make([]float32, dim)
		for j := range q {
			q[j] = float32(rng.NormFloat64())
		}
		qs[i] = q
		vecmath.NormalizeInto(qnorm[i*dim:(i+1)*dim], q)
	}
	runtime.GC()

	var pySide *faissFlatProc
	if py != "off" {
		dir := b.TempDir()
		xb, xq := filepath.Join(dir, "xb.f32"), filepath.Join(dir, "xq.f32")
		if err := writeF32(xb, idx.data); err != nil { // normalised, in slot order = id order
			b.Fatal(err)
		}
		if err := writeF32(xq, qnorm); err != nil {
			b.Fatal(err)
		}
		pySide, err = startFaissFlat(py, xb, xq, dim, threads, dir)
		if err != nil {
			b.Logf("no FAISS side (%s with faiss and numpy is needed): %v", py, err)
		} else {
			defer pySide.close()
			b.Logf("python: %s", pySide.banner)
		}
		os.Remove(xb) // Python holds its copy now
	}
	b.Logf("n=%d nq=%d dim=%d GOMAXPROCS=%d block=%d B, AVX2=%v", n, nq, dim, threads, flatBatchBlockBytes, flatAVX2)

	for b.Loop() {
		// The old way, for scale: one Search per query on a few queries.
		few := min(64, nq)
		t0 := time.Now()
		for _, q := range qs[:few] {
			if _, err := idx.Search(ctx, q, 10, nil); err != nil {
				b.Fatal(err)
			}
		}
		loop := time.Since(t0).Seconds() / float64(few) * float64(nq)
		b.Logf("one Search per query (first %d, extrapolated to %d): %.2f s", few, nq, loop)
		b.ReportMetric(loop, "search-loop-s")

		for _, k := range []int{3, 10} {
			goBest, pyBest := math.Inf(1), math.Inf(1)
			var goRes [][]Hit
			var pyIDs []int64
			for r := range rounds {
				runGo := func() {
					runtime.GC()
					t0 := time.Now()
					res, err := idx.SearchBatch(ctx, qs, k, nil)
					sec := time.Since(t0).Seconds()
					if err != nil {
						b.Fatal(err)
					}
					goRes = res
					goBest = min(goBest, sec)
					b.Logf("k=%d round %d: go SearchBatch %.3f s", k, r, sec)
				}
				runPy := func() {
					if pySide == nil {
						return
					}
					sec, ids, err := pySide.search(k, nq)
					if err != nil {
						b.Fatal(err)
					}
					pyIDs = ids
					pyBest = min(pyBest, sec)
					b.Logf("k=%d round %d: faiss IndexFlatIP.search %.3f s", k, r, sec)
				}
				if r%2 == 0 {
					runGo()
					runPy()
				} else {
					runPy()
					runGo()
				}
			}
			b.ReportMetric(goBest, fmt.Sprintf("go-s/batch-k%d", k))
			if pySide != nil {
				b.ReportMetric(pyBest, fmt.Sprintf("faiss-s/batch-k%d", k))
				b.ReportMetric(goBest/pyBest, fmt.Sprintf("go/faiss-k%d", k))
				same, total := 0, 0
				for i, hits := range goRes {
					want := map[int64]bool{}
					for _, id := range pyIDs[i*k : (i+1)*k] {
						want[id] = true
					}
					for _, h := range hits {
						id, _ := strconv.ParseInt(h.ID, 10, 64)
						if want[id] {
							same++
						}
					}
					total += k
				}
				b.ReportMetric(float64(same)/float64(total), fmt.Sprintf("agree-k%d", k))
			}
		}
	}
}

func batchBenchEnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// writeF32 writes x as raw little-endian float32.
func writeF32(path string, x []float32) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if len(x) > 0 {
		// amd64 and arm64 are little-endian; binary.Write would copy 1.5 GB.
		if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
			f.Close()
			return fmt.Errorf("writeF32: big-endian host")
		}
		if _, err := w.Write(unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), len(x)*4)); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// faissFlatProc is the running bench/flatbatch/faiss_flat.py.
type faissFlatProc struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	dir    string
	banner string
}

func startFaissFlat(py, xb, xq string, dim, threads int, dir string) (*faissFlatProc, error) {
	script, err := filepath.Abs("../bench/flatbatch/faiss_flat.py")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(py, script, xb, xq, strconv.Itoa(dim), strconv.Itoa(threads))
	cmd.Env = append(os.Environ(), "OPENBLAS_NUM_THREADS="+strconv.Itoa(threads), "OMP_NUM_THREADS="+strconv.Itoa(threads))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &faissFlatProc{cmd: cmd, in: in, out: bufio.NewReader(outPipe), dir: dir}
	line, err := p.out.ReadString('\n')
	if err != nil {
		p.close()
		return nil, fmt.Errorf("faiss_flat.py did not start: %v", err)
	}
	p.banner = strings.TrimSpace(line)
	return p, nil
}

// search runs one batch on the Python side: its seconds and its ids (nq*k, row-major).
func (p *faissFlatProc) search(k, nq int) (float64, []int64, error) {
	path := filepath.Join(p.dir, "ids.i64")
	if _, err := fmt.Fprintf(p.in, "search %d %s\n", k, path); err != nil {
		return 0, nil, err
	}
	line, err := p.out.ReadString('\n')
	if err != nil {
		return 0, nil, err
	}
	sec, err := strconv.ParseFloat(strings.TrimSpace(line), 64)
	if err != nil {
		return 0, nil, fmt.Errorf("faiss_flat.py said %q", line)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, nil, err
	}
	if len(raw) != nq*k*8 {
		return 0, nil, fmt.Errorf("faiss_flat.py wrote %d bytes, want %d", len(raw), nq*k*8)
	}
	ids := make([]int64, nq*k)
	for i := range ids {
		ids[i] = int64(binary.LittleEndian.Uint64(raw[i*8:]))
	}
	return sec, ids, nil
}

func (p *faissFlatProc) close() {
	fmt.Fprintln(p.in, "quit")
	p.in.Close()
	p.cmd.Wait()
}
