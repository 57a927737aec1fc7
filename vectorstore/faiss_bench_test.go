//go:build faiss

package vectorstore

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	faiss "github.com/DataIntelligenceCrew/go-faiss"

	"github.com/agentmem/memory/internal/faisslink"
	"github.com/agentmem/memory/internal/vectest"
)

// BenchmarkFaissANN measures, for each data set and index kind, build time, recall@10 against
// exact search, and single-query throughput through faissIndex.Search (and through the bare
// go-faiss call), for a sweep of efSearch / nprobe that includes our defaults. It measures two
// layouts of the same index: as grown by faissIndex.Add, and as persisted and reopened from
// its directory. bench/faiss/compare.py runs Debian's python3-faiss on that very file (and,
// with MEMORY_FAISS_BENCH_PYBUILD=on, on an index it grows by adds itself), alternating
// with the Go passes in the same run.
//
// It is long (minutes: HNSW builds are slow on 2 cores); run it alone, e.g.
//
//	MEMORY_FAISS_BENCH_N=100000 go test -tags faiss -run '^$' -bench FaissANN -benchtime 1x -timeout 60m ./vectorstore/
//
// Knobs: MEMORY_FAISS_BENCH_N (vectors, default 100000), MEMORY_FAISS_BENCH_Q (queries, 1000),
// MEMORY_FAISS_BENCH_DATA ("clustered,random"), MEMORY_FAISS_BENCH_KINDS ("HNSW32,IVF"; IVF
// gets nlist = 1024 for n >= 50k, else 4*sqrt(n) rounded down to a power of two),
// MEMORY_FAISS_BENCH_PY (python, default /usr/bin/python3; "off" skips the comparison),
// MEMORY_FAISS_BENCH_PYBUILD ("on": Python also builds its own index by adds),
// MEMORY_FAISS_BENCH_VALUES (the efSearch / nprobe values to sweep, e.g. "32,128"; the default is
// always added).
func BenchmarkFaissANN(b *testing.B) {
	const dim, k = 384, 10
	n := faissBenchEnvInt("MEMORY_FAISS_BENCH_N", 100000)
	nq := faissBenchEnvInt("MEMORY_FAISS_BENCH_Q", 1000)
	datas := strings.Split(faissBenchEnv("MEMORY_FAISS_BENCH_DATA", "clustered,random"), ",")
	kinds := strings.Split(faissBenchEnv("MEMORY_FAISS_BENCH_KINDS", "HNSW32,IVF"), ",")
	py := faissBenchEnv("MEMORY_FAISS_BENCH_PY", "/usr/bin/python3")
	for _, data := range datas {
		b.Run(fmt.Sprintf("%s-%d", data, n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(42, uint64(len(data))))
			var all [][]float32
			if data == "clustered" {
				all = faissClustered(rng, n+nq, dim, 1000, 0.5)
			} else {
				all = vectest.RandVecs(rng, n+nq, dim)
			}
			vecs, queries := all[:n], all[n:]
			ids := make([]string, n)
			for i := range ids {
				ids[i] = strconv.Itoa(i)
			}
			norm := &faissIndex{cosine: true, cfg: IndexConfig{Dim: dim}}
			qflat := make([]float32, nq*dim)
			for i, q := range queries {
				norm.prepare(qflat[i*dim:(i+1)*dim], q)
			}
			t0 := time.Now()
			gt := faissBenchTruth(b, norm, vecs, qflat, k)
			b.Logf("%s n=%d: exact ground truth for %d queries in %.1fs", data, n, nq, time.Since(t0).Seconds())
			for _, kind := range kinds {
				factory, param, values := kind, FaissParamEfSearch, []int{32, 64, 128, 256}
				if kind == "IVF" {
					nlist := 1024
					if n < 50000 {
						nlist = 1
						for nlist*2 <= 4*int(sqrtInt(n)) {
							nlist *= 2
						}
					}
					factory, param = fmt.Sprintf("IVF%d,Flat", nlist), FaissParamNprobe
					values = []int{8, 16, 32, 64, 128}
				}
				values = faissBenchEnvInts(b, "MEMORY_FAISS_BENCH_VALUES", values)
				if !slices.Contains(values, defaultFor(param, factory)) {
					values = append(values, defaultFor(param, factory))
					slices.Sort(values)
				}
				b.Run(factory, func(b *testing.B) {
					faissBenchKind(b, factory, param, values, ids, vecs, queries, qflat, gt, k, py)
				})
			}
		})
	}
}

// defaultFor is the default of param for factory.
func defaultFor(param, factory string) int {
	if param == FaissParamEfSearch {
		return faissDefaultEfSearch
	}
	spec, _ := parseFaissFactory(factory)
	return faissDefaultNprobe(spec.nlist)
}

func sqrtInt(n int) int {
	r := 0
	for (r+1)*(r+1) <= n {
		r++
	}
	return r
}

func faissBenchEnv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// faissBenchEnvInts reads a comma-separated list of positive integers from the environment
// variable name (def when it is unset).
func faissBenchEnvInts(b *testing.B, name string, def []int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("%s: bad value %q", name, f)
		}
		out = append(out, n)
	}
	return out
}

func faissBenchEnvInt(name string, def int) int {
	v, err := strconv.Atoi(os.Getenv(name))
	if err != nil || v <= 0 {
		return def
	}
	return v
}

// faissBenchTruth is the exact top k (labels = positions) by a batched faiss Flat IP search.
func faissBenchTruth(b *testing.B, norm *faissIndex, vecs [][]float32, qflat []float32, k int) [][]int64 {
	d := norm.cfg.Dim
	flat, err := faiss.NewIndexFlatIP(d)
	if err != nil {
		b.Fatal(err)
	}
	defer flat.Delete()
	buf := make([]float32, 10000*d)
	for lo := 0; lo < len(vecs); lo += 10000 {
		hi := min(lo+10000, len(vecs))
		for i := lo; i < hi; i++ {
			norm.prepare(buf[(i-lo)*d:(i-lo+1)*d], vecs[i])
		}
		if err := flat.Add(buf[:(hi-lo)*d]); err != nil {
			b.Fatal(err)
		}
	}
	_, lab, err := flat.Search(qflat, int64(k))
	if err != nil {
		b.Fatal(err)
	}
	gt := make([][]int64, len(qflat)/d)
	for i := range gt {
		gt[i] = lab[i*k : (i+1)*k]
	}
	return gt
}

func faissBenchKind(b *testing.B, factory, param string, values []int, ids []string, vecs, queries [][]float32, qflat []float32, gt [][]int64, k int, py string) {
	ctx := context.Background()
	dim := len(vecs[0])
	cfg := IndexConfig{Dim: dim, Factory: factory, Dir: filepath.Join(b.TempDir(), "faiss")}
	x, err := newFaissIndex(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	t0 := time.Now()
	for lo := 0; lo < len(vecs); lo += 10000 {
		hi := min(lo+10000, len(vecs))
		if err := x.Add(ctx, ids[lo:hi], vecs[lo:hi]); err != nil {
			b.Fatal(err)
		}
	}
	if err := x.Train(ctx); err != nil {
		b.Fatal(err)
	}
	build := time.Since(t0)
	b.Logf("%s: built %d vectors in %.1fs", factory, len(vecs), build.Seconds())
	b.ReportMetric(build.Seconds(), "build_s")

	// The same index persisted to its directory and opened again, as a store reopened
	// from disk has it; Python reads that very file. FAISS lays out an index read from a
	// file in one allocation per inverted list, while one grown by adds keeps the lists
	// where their vectors grew, so both layouts are measured, from both languages.
	t0 = time.Now()
	if err := x.Commit(1); err != nil {
		b.Fatal(err)
	}
	re, err := newFaissIndex(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer re.Close()
	if re.Len() != len(vecs) || re.idx == nil {
		b.Fatalf("reopened index holds %d vectors, want %d", re.Len(), len(vecs))
	}
	b.Logf("%s: persisted and reopened in %.1fs", factory, time.Since(t0).Seconds())
	set := func(v int) {
		for _, ix := range []*faissIndex{x, re} {
			if param == FaissParamEfSearch {
				if err := faisslink.SetHNSWEf(ix.cp, 0, v); err != nil {
					b.Fatal(err)
				}
				continue
			}
			ps, err := faiss.NewParameterSpace()
			if err != nil {
				b.Fatal(err)
			}
			if err := ps.SetIndexParameter(ix.idx, "nprobe", float64(v)); err != nil {
				b.Fatal(err)
			}
			ps.Delete()
		}
	}
	type row struct {
		v                        int
		recall, reRecall         float64
		builtQPS, builtBareQPS   float64 // faissIndex.Search and the bare go-faiss call, index grown by adds
		reQPS, reBareQPS         float64 // the same on the index reopened from its files
		pyQPS, pyQPS1, pyRecall  float64 // Python on the file: faiss's default OpenMP threads, then 1
		pyBuiltQPS, pyBuiltRecal float64 // Python on an index it grew by adds itself (MEMORY_FAISS_BENCH_PYBUILD)
	}
	rows := make([]row, len(values))
	var pyIn io.WriteCloser
	var pyOut *bufio.Scanner
	pyBuild := py != "off" && faissBenchEnv("MEMORY_FAISS_BENCH_PYBUILD", "off") != "off"
	if py != "off" {
		pyIn, pyOut = faissBenchPython(b, py, re, vecs, qflat, gt, dim, k, factory, pyBuild)
		defer pyIn.Close()
	}
	pyPass := func(v, threads int, which string) (qps, recall float64) {
		fmt.Fprintf(pyIn, "%s %d %d %s\n", param, v, threads, which)
		if !pyOut.Scan() {
			b.Fatalf("python ended: %v", pyOut.Err())
		}
		var res struct {
			QPS       float64 `json:"qps"`
			Recall    float64 `json:"recall"`
			ThreadCPU float64 `json:"thread_cpu"`
			ProcCPU   float64 `json:"process_cpu"`
		}
		if err := json.Unmarshal(pyOut.Bytes(), &res); err != nil {
			b.Fatalf("python said %q: %v", pyOut.Text(), err)
		}
		b.Logf("pass python %s threads=%d %s=%d: %.1f QPS, thread CPU %.3f of wall, process CPU %.3f", which, threads, param, v, res.QPS, res.ThreadCPU, res.ProcCPU)
		return res.QPS, res.Recall
	}
	recallOf := func(hits [][]Hit) float64 {
		found := 0
		for i, hs := range hits {
			want := map[int64]bool{}
			for _, l := range gt[i] {
				want[l] = true
			}
			for _, h := range hs {
				l, _ := strconv.ParseInt(h.ID, 10, 64)
				if want[l] {
					found++
				}
			}
		}
		return float64(found) / float64(len(queries)*k)
	}
	// Go and Python passes alternate, rounds times; each figure is the best pass.
	const rounds = 5
	for ri, v := range values {
		set(v)
		r := row{v: v}
		hits := make([][]Hit, len(queries))
		reHits := make([][]Hit, len(queries))
		backend := func(ix *faissIndex, out [][]Hit, name string, qps *float64) func() {
			return func() { // normalisation, id mapping, over-fetch logic
				defer faissPassCPU(b, name, v)()
				t := time.Now()
				for i, q := range queries {
					if out[i], err = ix.Search(ctx, q, k, nil); err != nil {
						b.Fatal(err)
					}
				}
				*qps = max(*qps, float64(len(queries))/time.Since(t).Seconds())
			}
		}
		bare := func(ix *faissIndex, name string, qps *float64) func() {
			return func() { // the bare go-faiss call on the same (normalised) queries
				defer faissPassCPU(b, name, v)()
				t := time.Now()
				for i := range queries {
					if _, _, err := ix.idx.Search(qflat[i*dim:(i+1)*dim], int64(k)); err != nil {
						b.Fatal(err)
					}
				}
				*qps = max(*qps, float64(len(queries))/time.Since(t).Seconds())
			}
		}
		// The Go passes rotate their order every round, so that none always runs right
		// after Python's passes.
		goPasses := []func(){
			backend(re, reHits, "backend/reopened", &r.reQPS),
			bare(re, "bare/reopened", &r.reBareQPS),
			backend(x, hits, "backend/built", &r.builtQPS),
			bare(x, "bare/built", &r.builtBareQPS),
		}
		runtime.GC() // start the timed passes from a settled heap, on both sides alike
		for round := range rounds {
			for p := range goPasses {
				goPasses[(p+round)%len(goPasses)]()
			}
			if pyIn != nil {
				qps, rec := pyPass(v, 0, "read")
				r.pyQPS, r.pyRecall = max(r.pyQPS, qps), rec
				qps, _ = pyPass(v, 1, "read")
				r.pyQPS1 = max(r.pyQPS1, qps)
				if pyBuild {
					qps, rec = pyPass(v, 0, "built")
					r.pyBuiltQPS, r.pyBuiltRecal = max(r.pyBuiltQPS, qps), rec
				}
			}
		}
		r.recall, r.reRecall = recallOf(hits), recallOf(reHits)
		rows[ri] = r
	}
	ratio := func(a, b float64) string {
		if b <= 0 {
			return "—"
		}
		return fmt.Sprintf("%.3f", a/b)
	}
	var tb strings.Builder
	fmt.Fprintf(&tb, "\n| %s | %s | recall@10 Go (built / reopened) | Go QPS faissIndex.Search, reopened | bare go-faiss, reopened | Python QPS, same file | Python QPS, 1 OMP thread | Python recall | **Go/Python, same file** | Go/Python (1 thread) | Go QPS faissIndex.Search, built by adds | bare go-faiss, built | Python QPS, built by adds | Go/Python, built by adds |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n", factory, param)
	for _, r := range rows {
		def := ""
		if r.v == defaultFor(param, factory) {
			def = " (default)"
			b.ReportMetric(r.reRecall, "recall@10")
			b.ReportMetric(r.reQPS, "go_qps")
			b.ReportMetric(r.pyQPS, "py_qps")
			if r.pyQPS > 0 {
				b.ReportMetric(r.reQPS/r.pyQPS, "go/py")
			}
			b.ReportMetric(r.builtQPS, "go_built_qps")
		}
		fmt.Fprintf(&tb, "| %s | %d%s | %.4f / %.4f | %.0f | %.0f | %.0f | %.0f | %.4f | **%s** | %s | %.0f | %.0f | %.0f | %s |\n",
			factory, r.v, def, r.recall, r.reRecall, r.reQPS, r.reBareQPS, r.pyQPS, r.pyQPS1, r.pyRecall,
			ratio(r.reQPS, r.pyQPS), ratio(r.reQPS, r.pyQPS1), r.builtQPS, r.builtBareQPS, r.pyBuiltQPS, ratio(r.builtQPS, r.pyBuiltQPS))
	}
	b.Log(tb.String())
}

// faissPassCPU locks the calling goroutine to its thread for one timed pass and, when the
// returned func runs, logs the pass's wall time, the CPU time of that thread and of the
// whole process (as fractions of the wall time) and the thread's context switches: a thread
// CPU fraction below 1 means the search thread was descheduled; a process fraction above the
// thread's means other threads of the process (the GC, OpenMP workers) ran beside it.
func faissPassCPU(b *testing.B, name string, v int) func() {
	runtime.LockOSThread()
	var t0, p0 syscall.Rusage
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	th0 := faissThreadTicks()
	syscall.Getrusage(rusageThread, &t0)
	syscall.Getrusage(syscall.RUSAGE_SELF, &p0)
	start := time.Now()
	return func() {
		wall := time.Since(start).Seconds()
		var t1, p1 syscall.Rusage
		syscall.Getrusage(rusageThread, &t1)
		syscall.Getrusage(syscall.RUSAGE_SELF, &p1)
		th1 := faissThreadTicks()
		var m1 runtime.MemStats
		runtime.ReadMemStats(&m1)
		self := syscall.Gettid()
		runtime.UnlockOSThread()
		var others []string
		for tid, t := range th1 {
			if d := t - th0[tid]; d > 0 && tid != self {
				others = append(others, fmt.Sprintf("%d:%d", tid, d))
			}
		}
		slices.Sort(others)
		b.Logf("pass go %s v=%d: %d GCs, %.1f MB allocated; other threads' CPU ticks (1/100 s): %v",
			name, v, m1.NumGC-m0.NumGC, float64(m1.TotalAlloc-m0.TotalAlloc)/1e6, others)
		cpu := func(a, z syscall.Rusage) float64 {
			d := time.Duration(z.Utime.Nano()-a.Utime.Nano()) + time.Duration(z.Stime.Nano()-a.Stime.Nano())
			return d.Seconds() / wall
		}
		b.Logf("pass go %s v=%d: %.2fs wall, thread CPU %.3f of wall, process CPU %.3f, switches %d voluntary %d involuntary",
			name, v, wall, cpu(t0, t1), cpu(p0, p1), t1.Nvcsw-t0.Nvcsw, t1.Nivcsw-t0.Nivcsw)
	}
}

// faissThreadTicks reads the user+system CPU ticks of every thread of the process.
func faissThreadTicks() map[int]int {
	out := map[int]int{}
	ents, _ := os.ReadDir("/proc/self/task")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/self/task/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) < 13 {
			continue
		}
		tid, _ := strconv.Atoi(e.Name())
		u, _ := strconv.Atoi(f[11])
		st, _ := strconv.Atoi(f[12])
		out[tid] = u + st
	}
	return out
}

// rusageThread is Linux's RUSAGE_THREAD (not exported by package syscall).
const rusageThread = 1

// faissBenchPython starts bench/faiss/compare.py on the index file of x (a faissIndex with a
// Dir), with the queries and the ground truth written to a temp dir; with build it also
// writes the normalised vectors and has the script grow its own index from them by adds.
// It returns the script's stdin and stdout.
func faissBenchPython(b *testing.B, py string, x *faissIndex, vecs [][]float32, qflat []float32, gt [][]int64, dim, k int, factory string, build bool) (io.WriteCloser, *bufio.Scanner) {
	dir := b.TempDir()
	if x.files[0] == "" {
		b.Fatal("index has no file")
	}
	index := filepath.Join(x.cfg.Dir, x.files[0])
	gtFlat := make([]int64, 0, len(gt)*k)
	for _, g := range gt {
		gtFlat = append(gtFlat, g...)
	}
	if err := writeNpy(filepath.Join(dir, "q.npy"), "<f4", []int{len(qflat) / dim, dim}, qflat); err != nil {
		b.Fatal(err)
	}
	if err := writeNpy(filepath.Join(dir, "gt.npy"), "<i8", []int{len(gt), k}, gtFlat); err != nil {
		b.Fatal(err)
	}
	script := filepath.Join("..", "bench", "faiss", "compare.py")
	args := []string{script, "--index", index, "--queries", filepath.Join(dir, "q.npy"),
		"--gt", filepath.Join(dir, "gt.npy"), "--k", strconv.Itoa(k)}
	if build {
		flat := make([]float32, len(vecs)*dim)
		for i, v := range vecs {
			x.prepare(flat[i*dim:(i+1)*dim], v)
		}
		if err := writeNpy(filepath.Join(dir, "vecs.npy"), "<f4", []int{len(vecs), dim}, flat); err != nil {
			b.Fatal(err)
		}
		args = append(args, "--build-from", filepath.Join(dir, "vecs.npy"), "--factory", factory,
			"--train", strconv.Itoa(x.trainSize))
	}
	cmd := exec.Command(py, args...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	outR, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("%s %s: %v", py, script, err)
	}
	b.Cleanup(func() { in.Close(); cmd.Wait() })
	out := bufio.NewScanner(outR)
	if !out.Scan() {
		b.Fatalf("%s %s did not start: %v", py, script, out.Err())
	}
	b.Logf("python: %s", out.Text())
	return in, out
}

// writeNpy writes a little-endian .npy (format 1.0) file.
func writeNpy(path, descr string, shape []int, data any) error {
	dims := make([]string, len(shape))
	for i, s := range shape {
		dims[i] = strconv.Itoa(s)
	}
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s,), }", descr, strings.Join(dims, ", "))
	pad := 64 - (10+len(h)+1)%64
	h += strings.Repeat(" ", pad%64) + "\n"
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	w.WriteString("\x93NUMPY\x01\x00")
	binary.Write(w, binary.LittleEndian, uint16(len(h)))
	w.WriteString(h)
	if err := binary.Write(w, binary.LittleEndian, data); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
