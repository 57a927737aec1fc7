#!/usr/bin/env bash
# Runs the Go ONNX benchmarks (vectorstore.ONNXEmbedder, rerank.CrossEncoder) and the
# transformers.js peer (bench.mjs) on the same graphs, texts and thread count, alternating
# Go and Node for ROUNDS rounds, and prints every result line.
#
#   bench/transformersjs/run.sh            # THREADS=1 ROUNDS=3 RUNS=3
#   THREADS=2 ROUNDS=2 bench/transformersjs/run.sh
#
# Needs go, node >= 18 and npm. The npm packages are installed (without install scripts)
# into NODE_DEPS (default <repo>/.deps/node, git-ignored); models and texts are written to
# MEMORY_BENCH_DIR (default <repo>/.deps/bench): two MiniLM-L6-shaped graphs with random
# weights (about 90 MB each), built by the Go benchmarks at their first run.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE="$ROOT/bench/transformersjs"
NODE_DEPS=${NODE_DEPS:-$ROOT/.deps/node}
THREADS=${THREADS:-1}
ROUNDS=${ROUNDS:-3}
RUNS=${RUNS:-3}
export MEMORY_BENCH_DIR=${MEMORY_BENCH_DIR:-$ROOT/.deps/bench}
export MEMORY_BENCH_THREADS=$THREADS
export MEMORY_ORT_LIB=${MEMORY_ORT_LIB:-$ROOT/.deps/onnxruntime/libonnxruntime.so.1}
mkdir -p "$MEMORY_BENCH_DIR" "$NODE_DEPS"

if [ ! -f "$NODE_DEPS/node_modules/@huggingface/transformers/package.json" ]; then
  echo "run.sh: installing @huggingface/transformers@4.3.1 into $NODE_DEPS" >&2
  [ -f "$NODE_DEPS/package.json" ] || echo '{"private":true}' > "$NODE_DEPS/package.json"
  (cd "$NODE_DEPS" && npm install --ignore-scripts --no-audit --no-fund @huggingface/transformers@4.3.1 >&2)
fi
[ -f "$MEMORY_ORT_LIB" ] || "$ROOT/scripts/deps.sh" ort

BIN="$MEMORY_BENCH_DIR/bin"
mkdir -p "$BIN"
(cd "$ROOT" && go test -c -o "$BIN/vectorstore.test" ./vectorstore && go test -c -o "$BIN/rerank.test" ./rerank)

echo "# $(date -u +%FT%TZ) $(uname -m) $(nproc) cpus, load: $(cut -d' ' -f1-3 /proc/loadavg); threads=$THREADS runs=$RUNS"
echo "# go $(go env GOVERSION), node $(node --version), ORT $MEMORY_ORT_LIB"
for r in $(seq 1 "$ROUNDS"); do
  echo "## round $r"
  (cd "$ROOT/vectorstore" && "$BIN/vectorstore.test" -test.run '^$' -test.bench 'ONNXEmbed(MiniLM|Tiny)$' -test.benchtime "${RUNS}x") | grep '^Benchmark'
  (cd "$ROOT/rerank" && "$BIN/rerank.test" -test.run '^$' -test.bench 'CrossEncoder(MiniLM|Tiny)$' -test.benchtime "${RUNS}x") | grep '^Benchmark'
  node "$HERE/bench.mjs" --dir "$MEMORY_BENCH_DIR" --deps "$NODE_DEPS" --models "${MEMORY_MODELS:-$ROOT/../shared/models}" \
    --threads "$THREADS" --runs "$RUNS" --tasks embed,rerank,embed-tiny,rerank-tiny
done
