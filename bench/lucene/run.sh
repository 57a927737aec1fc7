#!/usr/bin/env bash
# Batch throughput of Lucene 8 from T threads over an fs index built (once, if INDEX is empty)
# from a BEIR folder as ../shared/tools/lucene-bm25 builds its flat variant:
#   bash bench/lucene/run.sh /tmp/corpus1m /tmp/lucene-batch-index [threads] [k]
# The queries are the folder's batch-queries.jsonl (bench/corpusgen writes it).
# Needs Debian's liblucene8-java and a JDK. Environment: JAVA_OPTS, WARMUP, ROUNDS;
# INDEX_THREADS (indexing threads of the build, default 1); INDEX_ONLY=1 builds and exits:
#   INDEX_ONLY=1 INDEX_THREADS=2 bash bench/lucene/run.sh /tmp/zipf1m-report /tmp/luc-idx
# LATENCY=1 times each query on one thread (first-seen and warm rounds): WARM_QUERIES (a JSONL
# file: the tuning half, untimed, for the JIT; WARMUP rounds of it) then ROUNDS rounds of the
# folder's queries.jsonl on a fresh reader:
#   LATENCY=1 WARM_QUERIES=/tmp/z1m/queries-tune.jsonl WARMUP=3 ROUNDS=3 bash bench/lucene/run.sh /tmp/z1m-report /tmp/luc-idx
# RUN_OUT=FILE (with LATENCY=1) then writes the queries' top k as a TREC run, searched untimed
# (python3 bench/lucene/overlap.py ours.run FILE 10 compares it with querybench -run-out's).
# STORE_RAW=1 stores each corpus line in the index (pyserini's -storeRaw: a passage retriever
# reads its text back, as ours stores it); FORCE_MERGE=N merges the index to at most N segments
# after the build, or first thing when it exists (ours is compacted to one; pyserini -optimize):
#   INDEX_ONLY=1 STORE_RAW=1 FORCE_MERGE=1 bash bench/lucene/run.sh /tmp/z1m-report /tmp/luc-idx-1seg
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
data=${1:?BEIR folder}; index=${2:?index dir}; threads=${3:-2}; k=${4:-10}
CP=$(ls /usr/share/java/lucene-core-8*.jar | head -1):$(ls /usr/share/java/lucene-analyzers-common-8*.jar | head -1)
extra=()
[ -n "${STORE_RAW:-}" ] && extra+=(--store-raw)
[ -n "${FORCE_MERGE:-}" ] && extra+=(--force-merge "$FORCE_MERGE")
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
javac -Xlint:all -d "$build" -cp "$CP" "$here/LuceneBatch.java"
# shellcheck disable=SC2086
if [ -n "${INDEX_ONLY:-}" ]; then # build only: INDEX_THREADS indexing threads (ingest beside ours)
  # shellcheck disable=SC2086
  java ${JAVA_OPTS:--Xms2g -Xmx2g} -cp "$build:$CP" LuceneBatch --index "$index" --corpus "$data/corpus.jsonl" \
    --index-threads "${INDEX_THREADS:-1}" --index-only "${extra[@]}"
  exit 0
fi
if [ -n "${LATENCY:-}" ]; then
  # shellcheck disable=SC2086
  java ${JAVA_OPTS:--Xms2g -Xmx2g} -cp "$build:$CP" LuceneBatch --index "$index" --corpus "$data/corpus.jsonl" --queries "$data/queries.jsonl" \
    --latency ${WARM_QUERIES:+--warmup-queries "$WARM_QUERIES"} ${RUN_OUT:+--run-out "$RUN_OUT"} --k "$k" --warmup "${WARMUP:-3}" --rounds "${ROUNDS:-3}" "${extra[@]}"
  exit 0
fi
java ${JAVA_OPTS:--Xms2g -Xmx2g} -cp "$build:$CP" LuceneBatch --index "$index" --corpus "$data/corpus.jsonl" --queries "$data/batch-queries.jsonl" \
  --threads "$threads" --k "$k" --warmup "${WARMUP:-3}" --rounds "${ROUNDS:-5}" --index-threads "${INDEX_THREADS:-1}" "${extra[@]}"
