#!/usr/bin/env bash
# Hand check of a cluster started by scripts/weaviate-cluster.sh (issue #41), with curl only:
# a collection with replication factor 3 and no vectorizer, QUORUM writes with vectors, a hybrid
# query, then SIGKILL of one node, QUORUM writes and reads on the two left, and a restart.
# Usage: scripts/weaviate-smoke.sh DIR [NODE_TO_KILL: 1..3 or "leader" (default 3)]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=$1; VICTIM=${2:-3}
CL="$ROOT/scripts/weaviate-cluster.sh"
line=$("$CL" endpoints "$DIR")
if [ "$VICTIM" = leader ]; then VICTIM=$("$CL" status "$DIR" | sed -n 's/^leader=node//p'); fi
[[ "$VICTIM" =~ ^[1-3]$ ]] || { echo "no node to kill (leader unknown?)" >&2; exit 1; }
http=${line#weaviate://}; http=${http%% *}
IFS=, read -r -a nodes <<< "$http"
# Ask a node that is not the victim.
A="http://${nodes[$(( VICTIM % 3 ))]}"
C=SmokeDoc
step() { printf '\n== %s\n' "$*"; }
j() { curl -sS -m 30 -H 'Content-Type: application/json' "$@"; }
must() { local out; out=$("$@"); echo "$out"; ! grep -q '"error"' <<< "$out" || { echo "FAILED" >&2; exit 1; }; }

step "create collection $C (replicationConfig.factor=3, vectorizer none) on $A"
j -X DELETE "$A/v1/schema/$C" -o /dev/null || true
must j -X POST "$A/v1/schema" -d '{"class":"'$C'","vectorizer":"none",
  "replicationConfig":{"factor":3},
  "properties":[{"name":"text","dataType":["text"]}]}' | jq -c '{class, replicationConfig, vectorizer}'

step "insert 4 objects at consistency QUORUM (batch)"
objs='[
 {"class":"'$C'","id":"00000000-0000-0000-0000-000000000001","properties":{"text":"red apple pie recipe"},"vector":[1,0,0,0]},
 {"class":"'$C'","id":"00000000-0000-0000-0000-000000000002","properties":{"text":"green apple orchard"},"vector":[0.9,0.1,0,0]},
 {"class":"'$C'","id":"00000000-0000-0000-0000-000000000003","properties":{"text":"blue sky weather"},"vector":[0,1,0,0]},
 {"class":"'$C'","id":"00000000-0000-0000-0000-000000000004","properties":{"text":"deep sea fish"},"vector":[0,0,1,0]}]'
out=$(j -X POST "$A/v1/batch/objects?consistency_level=QUORUM" -d '{"objects":'"$objs"'}' | jq -c '[.[] | {id, status: (.result.errors // "SUCCESS")}]')
echo "$out"; ! grep -q '"error' <<< "$out" || { echo FAILED >&2; exit 1; }

hybrid() { # node-url [curl args]
  j -X POST "$1/v1/graphql" -d '{"query":"{ Get { '$C'(consistencyLevel: QUORUM, hybrid: {query: \"apple\", vector: [1,0,0,0], alpha: 0.5}, limit: 3) { text _additional { id score } } } }"}' "${@:2}"
}
own() { # node-url node-name id: the object as stored on that node (HTTP code + text)
  local body code; body=$(curl -sS -m 30 -w '\n%{http_code}' "$1/v1/objects/$C/$3?node_name=$2")
  code=${body##*$'\n'}; body=${body%$'\n'*}
  echo "HTTP $code $(jq -c '.properties.text // .error' <<< "$body" 2>/dev/null)"
}
step "hybrid query (GraphQL, alpha 0.5, consistencyLevel QUORUM) on every node"
for n in "${nodes[@]}"; do echo "$n: $(hybrid "http://$n" | jq -c '[.data.Get.'$C'[] | .text]')"; done
step "every node holds a replica: object 1 read from each node's own copy (node_name=...)"
for i in 1 2 3; do echo "node$i: $(own "$A" node$i 00000000-0000-0000-0000-000000000001)"; done

leader=$("$CL" status "$DIR" | sed -n 's/^leader=//p') || true
step "SIGKILL node$VICTIM (Raft leader: $leader)"
"$CL" kill "$DIR" "$VICTIM"
t0=$(date +%s%N)
# A request that reaches a follower while it still holds a gRPC connection to a dead Raft leader
# waits (waitForReady, no deadline) until the client gives up or another request makes the
# follower switch to the new leader: clients must use a timeout and retry (docs/weaviate.md).
retry() { # cmd...: up to 6 tries of 15 s
  local i out
  for i in 1 2 3 4 5 6; do
    if out=$("$@" -m 15) && ! grep -q '"error"' <<< "$out"; then echo "$out"; echo "  (try $i, $(( ($(date +%s%N) - t0) / 1000000 )) ms after the kill)" >&2; return 0; fi
    echo "  try $i failed: $(head -c 200 <<< "$out")" >&2
  done
  return 1
}
step "QUORUM write + read with node$VICTIM down (2 of 3 replicas), 15 s timeout, retried"
retry curl -sS -H 'Content-Type: application/json' -X POST "$A/v1/objects?consistency_level=QUORUM" -d '{"class":"'$C'","id":"00000000-0000-0000-0000-000000000005",
  "properties":{"text":"apple written while a node is down"},"vector":[0.8,0,0,0.2]}' | jq -c '{id, text: .properties.text}'
retry curl -sS "$A/v1/objects/$C/00000000-0000-0000-0000-000000000005?consistency_level=QUORUM" | jq -c '{id, text: .properties.text}'
echo "hybrid: $(retry hybrid "$A" | jq -c '[.data.Get.'$C'[]? | .text] // .errors')"
echo "ALL write with a node down (fails only while the dead node is still a gossip member): $(j -X PUT "$A/v1/objects/$C/00000000-0000-0000-0000-000000000005?consistency_level=ALL" -d '{"class":"'$C'","id":"00000000-0000-0000-0000-000000000005","properties":{"text":"apple written while a node is down"},"vector":[0.8,0,0,0.2]}' | jq -c '.error // .id')"

step "restart node$VICTIM"
"$CL" restart "$DIR" "$VICTIM"
victim="http://${nodes[$(( VICTIM - 1 ))]}"
step "after the restart"
echo "node$VICTIM's own copy of object 5 (written while it was down): $(own "$victim" node$VICTIM 00000000-0000-0000-0000-000000000005)"
echo "read at ALL on node$VICTIM (read repair): $(j "$victim/v1/objects/$C/00000000-0000-0000-0000-000000000005?consistency_level=ALL" | jq -c '.properties.text // .error')"
echo "node$VICTIM's own copy after the ALL read: $(own "$victim" node$VICTIM 00000000-0000-0000-0000-000000000005)"
echo "hybrid on node$VICTIM: $(hybrid "$victim" | jq -c '[.data.Get.'$C'[] | .text]')"
"$CL" status "$DIR"
