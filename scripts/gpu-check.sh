#!/usr/bin/env bash
# The GPU check, run on a machine with an NVIDIA GPU and the CUDA toolkit but no Go: builds
# faiss with GPU support (scripts/deps-gpu.sh), links the objects scripts/gpu-objects.sh
# prepared (.gpu/link.tar.xz), then runs, each within the time left:
#   1. the faiss tests of the vectorstore package with -tags faiss,faissgpu and
#      MEMORY_REQUIRE_GPU=1 (a GPU test that does not reach the GPU fails);
#   2. BenchmarkFaissGPU at 1M x 384 (CPU and GPU in the same run), then 10M on the GPU alone
#      if time is left;
#   3. the CLI with --device cuda (index, search, eval on a small generated BEIR folder);
#   4. a probe of the ONNX Runtime in the machine's Python (its execution providers).
# Logs and results go to $OUT (default /tmp/gpu-check). DEADLINE_S (default 570) bounds the
# whole run; a build that does not finish in time exits 3 (run it again: ninja resumes).
# Knobs: TESTS_RE (test names to run, default Faiss; empty skips them), TESTS_S (default
# 150), BENCH_PLAN (default "1000000:both 10000000:gpu"): runs of BenchmarkFaissGPU in order,
# each SIZE:MODE[:BATCHES512] with MODE both (CPU then GPU), after (GPU then CPU) or gpu,
# CLI (default 1; 0 skips step 3).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
T0=$(date +%s)
DEADLINE=${DEADLINE_S:-570}
left() { echo $((DEADLINE - ($(date +%s) - T0))); }
say() { printf '[%4ds] %s\n' "$(($(date +%s) - T0))" "$*" | tee -a "$OUT/summary.txt" >&2; }

say "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -1)"
say "compilers: $(g++ --version | head -1); $(nvcc --version 2>/dev/null | tail -1)"

# 4 first (seconds): what ONNX Runtime the machine's Python has.
python3 - >"$OUT/ort-probe.txt" 2>&1 <<'PY'
import glob, os
try:
    import onnxruntime as o
    print("onnxruntime", o.__version__, "providers:", o.get_available_providers())
    d = os.path.dirname(o.__file__)
    print("capi:", sorted(os.path.basename(p) for p in glob.glob(os.path.join(d, "capi", "*"))))
except Exception as e:
    print("no onnxruntime in python:", e)
libs = sorted(set(os.path.basename(p) for p in glob.glob("/usr/**/libonnxruntime*.so*", recursive=True)))
print("system libonnxruntime*:", libs)
PY
say "ORT probe: $(head -1 "$OUT/ort-probe.txt")"

# Build faiss (GPU) and link.
FAISS_GPU_CODECS=${FAISS_GPU_CODECS:-float} timeout "$(left)" "$ROOT/scripts/deps-gpu.sh" >"$OUT/build.log" 2>&1
rc=$?
say "deps-gpu.sh: exit $rc ($(grep -c '^\[' "$OUT/build.log") build steps logged)"
if [ $rc -ne 0 ]; then tail -30 "$OUT/build.log" >&2; exit 3; fi
LIB=$ROOT/.deps/faiss-gpu/lib
export LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p /tmp/link && tar -xJf "$ROOT/.gpu/link.tar.xz" -C /tmp
for name in vectorstore.test memory; do
  objs=/tmp/link/$name
  g++ -m64 -o "/tmp/$name" -Wl,--export-dynamic-symbol=_cgo_panic -Wl,--export-dynamic-symbol=_cgo_topofstack \
    -Wl,--export-dynamic-symbol=crosscall2 "$objs/go.o" $(ls "$objs"/0*.o | sort) -L"$LIB" -lfaiss_c -lfaiss \
    -fopenmp -lopenblas -lstdc++ -lm -lpthread -ldl -lresolv -no-pie -Wl,-rpath,"$LIB" -Wl,-rpath-link,"$LIB" >>"$OUT/build.log" 2>&1 ||
    { say "link $name failed"; tail -20 "$OUT/build.log" >&2; exit 4; }
done
say "linked /tmp/vectorstore.test and /tmp/memory"

# 1. Tests.
cd "$ROOT/vectorstore"
TESTS_RE=${TESTS_RE-Faiss}
if [ -n "$TESTS_RE" ]; then
  MEMORY_REQUIRE_GPU=1 timeout "${TESTS_S:-150}" /tmp/vectorstore.test -test.run "$TESTS_RE" -test.v -test.count 1 >"$OUT/tests.log" 2>&1
  rc=$?
  say "tests (-run $TESTS_RE, MEMORY_REQUIRE_GPU=1): exit $rc; $(grep -c '^--- PASS' "$OUT/tests.log") passed, $(grep -c '^--- FAIL' "$OUT/tests.log") failed, $(grep -c '^--- SKIP' "$OUT/tests.log") skipped"
  grep -E '^(--- FAIL|--- SKIP|FAIL|panic)|recall@10:' "$OUT/tests.log" | head -20 | tee -a "$OUT/summary.txt" >&2
fi

# 2. Benchmarks.
bench() { # size kinds seconds cpu-mode batches512
  MEMORY_FAISS_GPU_N=$1 MEMORY_FAISS_GPU_KINDS=$2 MEMORY_FAISS_GPU_OUT="$OUT/bench.jsonl" MEMORY_FAISS_GPU_SINGLE_S=${SINGLE_S:-2} \
    MEMORY_FAISS_GPU_CPU=$4 MEMORY_FAISS_GPU_BATCHES512=${5:-5} \
    timeout "$3" /tmp/vectorstore.test -test.run '^$' -test.bench FaissGPU -test.benchtime 1x -test.timeout 0 >>"$OUT/bench.log" 2>&1
  say "bench n=$1 kinds=$2 cpu=$4: exit $?"
}
# 10M on the GPU alone by default (the CPU's Flat batches over 10M vectors take minutes).
for step in ${BENCH_PLAN:-1000000:both 10000000:gpu}; do
  IFS=: read -r n mode b512 <<<"$step"
  case $mode in both) cpu=on ;; after) cpu=after ;; *) cpu=off ;; esac
  if [ "$(left)" -gt 120 ]; then bench "$n" 'Flat;IVF1024,Flat' "$(( $(left) - 20 ))" "$cpu" "$b512"; fi
done
cat "$OUT/bench.jsonl" >&2 2>/dev/null

# 3. The CLI on the GPU (a small BEIR folder of generated passages).
if [ "${CLI:-1}" = 0 ] || [ "$(left)" -lt 40 ]; then say "done (CLI skipped), $(left) s left"; exit 0; fi
d=/tmp/beir && rm -rf "$d" /tmp/clistore && mkdir -p "$d/qrels"
python3 - "$d" <<'PY'
import json, random, sys
d = sys.argv[1]; r = random.Random(1)
words = ["gpu", "faiss", "vector", "memory", "agent", "index", "query", "passage", "dense", "cosine", "batch", "cuda"]
with open(d + "/corpus.jsonl", "w") as f:
    for i in range(2000):
        f.write(json.dumps({"_id": f"d{i}", "title": f"doc {i}", "text": " ".join(r.choice(words) for _ in range(30))}) + "\n")
with open(d + "/queries.jsonl", "w") as q, open(d + "/qrels/test.tsv", "w") as t:
    t.write("query-id\tcorpus-id\tscore\n")
    for i in range(50):
        q.write(json.dumps({"_id": f"q{i}", "text": " ".join(r.choice(words) for _ in range(4))}) + "\n")
        t.write(f"q{i}\td{i}\t1\n")
PY
flags=(--embedder hash:384 --index faiss --faiss-factory Flat --device cuda -v)
/tmp/memory index --store /tmp/clistore "${flags[@]}" "$d/corpus.jsonl" >"$OUT/cli.log" 2>&1; say "cli index --device cuda: exit $?"
/tmp/memory search --store /tmp/clistore "${flags[@]}" --mode dense -k 3 gpu faiss >>"$OUT/cli.log" 2>&1; say "cli search --device cuda: exit $?"
/tmp/memory eval --data "$d" --store /tmp/clistore "${flags[@]}" --mode dense >>"$OUT/cli.log" 2>&1; say "cli eval --device cuda: exit $?"
say "cli GPU log lines: $(grep -c 'searching on the GPU' "$OUT/cli.log")"
say "done, $(left) s left"
