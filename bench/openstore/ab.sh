#!/usr/bin/env bash
# Open + first query, two builds of bench/openstore alternating, each on its own store (a
# store is read by the build that wrote it: an older build may not read a newer dense
# index), in one run: ROUNDS rounds of BM25 (read-only, writable), then ROUNDS/2 of hybrid,
# each mode in its own loop (a hybrid run maps 1.5 GB of vectors at 1M and would evict the
# BM25 runs' pages). Prints one line per run and the medians.
#   bash bench/openstore/ab.sh BASE_BIN NEW_BIN BASE_STORE NEW_STORE [ROUNDS] [HASH_DIM]
set -euo pipefail
base=${1:?base openstore binary}; new=${2:?new openstore binary}
bstore=${3:?base store}; nstore=${4:?new store}; rounds=${5:-20}; dim=${6:-384}
out=$(mktemp)
run() { # label bin store args...
  local label=$1 bin=$2 st=$3; shift 3
  echo "$label $("$bin" "$@" "$st" 2>&1 | tail -1)" | tee -a "$out"
}
for _ in $(seq 1 "$rounds"); do
  for ro in -read-only ""; do
    m=${ro:+ro}; m=${m:-rw}
    run "$m bm25 base" "$base" "$bstore" $ro -mode bm25
    run "$m bm25 new" "$new" "$nstore" $ro -mode bm25
  done
done
for _ in $(seq 1 $((rounds / 2))); do
  for ro in -read-only ""; do
    m=${ro:+ro}; m=${m:-rw}
    run "$m hybrid base" "$base" "$bstore" $ro -hash "$dim" -mode hybrid
    run "$m hybrid new" "$new" "$nstore" $ro -hash "$dim" -mode hybrid
  done
done
python3 - "$out" <<'PY'
import collections, re, statistics, sys
q, rss, anon = (collections.defaultdict(list) for _ in range(3))
for line in open(sys.argv[1]):
    m = re.match(r'(\w+) (\w+) (\w+) open .*query ([\d.]+)(ms|s|µs), RSS after it (\d+) kB \(RssAnon (\d+)', line)
    if not m:
        continue
    k = m[1:4]
    q[k].append(float(m[4]) * {'ms': 1, 's': 1000, 'µs': 0.001}[m[5]])
    rss[k].append(int(m[6]) / 1024)
    anon[k].append(int(m[7]) / 1024)
for k in sorted(q):
    print(*k, f"n {len(q[k])} first query median {statistics.median(q[k]):.1f} ms, RSS {statistics.median(rss[k]):.0f} MB, RssAnon {statistics.median(anon[k]):.0f} MB")
PY
rm -f "$out"
