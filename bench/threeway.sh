#!/usr/bin/env bash
# The same workload on (a) the embedded store, (b) one Weaviate node, (c) the three-node
# cluster, one after the other on this machine (issue #41, point 6): bench/threeway's ingest
# through Add, one-thread BM25 and hybrid rounds (first seen, warm) and a SearchBatch, with
# the client's and the servers' CPU seconds and memory after each phase.
#
# Usage: bench/threeway.sh CORPUS_DIR N [OUT_DIR]
#   CORPUS_DIR holds corpus.jsonl, queries.jsonl and batch-queries.jsonl (bench/corpusgen's
#   layout); N rows are ingested. OUT_DIR (default /tmp/threeway) gets one log per backend
#   and the stores (removed at the end unless KEEP=1).
# Env: THREEWAY_SKIP ("embedded,node,cluster": backends not run), the cluster script's
#   WEAVIATE_* variables (default here: addresses 127.0.3.x, gRPC 25151-3, data 7401-3, so a
#   test cluster on 127.0.0.x can run beside it).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:?corpus dir}; N=${2:?rows}; OUT=${3:-/tmp/threeway}
SKIP=${THREEWAY_SKIP:-}
export WEAVIATE_IP_PREFIX=${WEAVIATE_IP_PREFIX:-127.0.3} WEAVIATE_GRPC_BASE=${WEAVIATE_GRPC_BASE:-25150} WEAVIATE_DATA_BASE=${WEAVIATE_DATA_BASE:-7400}
mkdir -p "$OUT"
BIN="$OUT/threeway"
(cd "$ROOT" && go build -o "$BIN" ./bench/threeway)
ARGS=(-corpus "$DIR/corpus.jsonl" -n "$N" -queries "$DIR/queries.jsonl" -batch "$DIR/batch-queries.jsonl")
CLUSTER=""
cleanup() { [ -n "$CLUSTER" ] && WEAVIATE_NODES=$NODES bash "$ROOT/scripts/weaviate-cluster.sh" stop "$CLUSTER" >/dev/null 2>&1 || true; }
trap cleanup EXIT
NODES=3
du_mb() { du -sm "$@" 2>/dev/null | awk '{s += $1} END {print s " MB"}'; }

if [[ ",$SKIP," != *,embedded,* ]]; then
  rm -rf "$OUT/embedded"
  echo "== (a) embedded $(date -u +%T) $(uptime)"
  "$BIN" -store "$OUT/embedded" "${ARGS[@]}" 2>&1 | tee "$OUT/embedded.log"
  echo "store on disk: $(du_mb "$OUT/embedded")" | tee -a "$OUT/embedded.log"
  [ "${KEEP:-0}" = 1 ] || rm -rf "$OUT/embedded"
fi
for kind in node cluster; do
  [[ ",$SKIP," == *,$kind,* ]] && continue
  NODES=1; [ $kind = cluster ] && NODES=3
  CLUSTER="$OUT/wv-$kind"; rm -rf "$CLUSTER"
  echo "== ($kind) $NODES Weaviate node(s) $(date -u +%T) $(uptime)"
  line=$(WEAVIATE_NODES=$NODES bash "$ROOT/scripts/weaviate-cluster.sh" start "$CLUSTER" | tail -1)
  addr=${line%% *}
  pids=$(cat "$CLUSTER"/node*.pid | paste -sd, -)
  extra=(); [ $kind = cluster ] && extra=(-consistency QUORUM -replication 3)
  "$BIN" -store "$addr" "${ARGS[@]}" -pids "$pids" "${extra[@]}" 2>&1 | tee "$OUT/$kind.log"
  echo "data on disk: $(du_mb "$CLUSTER"/node*/)" | tee -a "$OUT/$kind.log"
  WEAVIATE_NODES=$NODES bash "$ROOT/scripts/weaviate-cluster.sh" stop "$CLUSTER" >/dev/null 2>&1
  [ "${KEEP:-0}" = 1 ] || rm -rf "$CLUSTER"
  CLUSTER=""
done
echo "== end $(date -u +%T) $(uptime)"
