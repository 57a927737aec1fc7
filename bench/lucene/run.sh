#!/usr/bin/env bash
# Batch throughput of Lucene 8 over an index built by ../shared/tools/lucene-bm25 (flat, fs):
#   bash bench/lucene/run.sh /tmp/lucene-bm25-index/corpus1m-flat /tmp/corpus1m/batch-queries.jsonl [threads] [k]
# Needs Debian's liblucene8-java and a JDK. Environment: JAVA_OPTS, WARMUP, ROUNDS.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
index=${1:?index dir}; queries=${2:?queries jsonl}; threads=${3:-2}; k=${4:-10}
CP=$(ls /usr/share/java/lucene-core-8*.jar | head -1):$(ls /usr/share/java/lucene-analyzers-common-8*.jar | head -1)
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
javac -Xlint:all -d "$build" -cp "$CP" "$here/LuceneBatch.java"
# shellcheck disable=SC2086
java ${JAVA_OPTS:--Xms2g -Xmx2g} -cp "$build:$CP" LuceneBatch --index "$index" --queries "$queries" \
  --threads "$threads" --k "$k" --warmup "${WARMUP:-3}" --rounds "${ROUNDS:-5}"
