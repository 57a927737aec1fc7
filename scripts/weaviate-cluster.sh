#!/usr/bin/env bash
# A three-node Weaviate cluster on this machine, for the Weaviate backend's tests (issue #41).
# Each node has its own loopback address (127.0.0.2, .3, .4: Linux routes all of 127/8 to lo,
# so no alias is needed), because Weaviate's Raft resolver dials <member address>:RAFT_PORT
# with one RAFT_PORT for all nodes. See docs/weaviate.md.
#
# Usage: scripts/weaviate-cluster.sh start   DIR   start 3 nodes, wait for ready + Raft leader,
#                                                  print the endpoint line on stdout
#        scripts/weaviate-cluster.sh stop    DIR   stop all nodes of DIR (also orphans); data
#                                                  and logs stay (rm -rf DIR to drop them)
#        scripts/weaviate-cluster.sh status  DIR   per node: pid, ready, Raft state; exit 1 if
#                                                  not all 3 are up with one leader
#        scripts/weaviate-cluster.sh kill    DIR N SIGKILL node N (1..3), data stays
#        scripts/weaviate-cluster.sh restart DIR N stop node N if it runs, start it again, wait
#        scripts/weaviate-cluster.sh endpoints DIR print the endpoint line
#        scripts/weaviate-cluster.sh pause   DIR N SIGSTOP node N: it keeps its sockets but answers
#                                                  nothing (a node cut off), until resume
#        scripts/weaviate-cluster.sh resume  DIR N SIGCONT node N
#        scripts/weaviate-cluster.sh leader  DIR   print the number (1..3) of the Raft leader the
#                                                  running nodes agree on; exit 1 if none
# Endpoint line: weaviate://127.0.0.2:8080,127.0.0.3:8080,127.0.0.4:8080 grpc://127.0.0.2:25051,127.0.0.3:25052,127.0.0.4:25053
#   (also written to DIR/endpoints). The gRPC and cluster data ports are bound on all
#   addresses by Weaviate (":PORT"), so they differ per node; HTTP, gossip and Raft are bound to
#   the node's own address and are the same on every node.
# Layout: DIR/nodeN/ (PERSISTENCE_DATA_PATH), DIR/nodeN.pid, DIR/nodeN.log
# Env: WEAVIATE_BIN (default: built by scripts/weaviate.sh into .deps/weaviate/)
#      WEAVIATE_START_TIMEOUT (s, default 120)    WEAVIATE_IP_PREFIX (default 127.0.0)
#      WEAVIATE_HTTP_PORT (8080) WEAVIATE_GRPC_BASE (25050: node N gets base+N; below the ephemeral port range)
#      WEAVIATE_GOSSIP_PORT (7100) WEAVIATE_DATA_BASE (7100: node N gets base+N)
#      WEAVIATE_RAFT_PORT (8300) WEAVIATE_RAFT_RPC_PORT (8301)
#      WEAVIATE_NODE_ENV ("K=V K2=V2", extra environment for every node)
#      WEAVIATE_NODES (3; 1 starts a single node, for benchmarks: bench/threeway.sh)
#      WEAVIATE_ASYNC_FREQUENCY (default 5s: how often a class with asynchronous replication
#        on compares its replicas; Weaviate's own default is 30s)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NODES=${WEAVIATE_NODES:-3} # 1 for a single node (bench/threeway.sh)
case "$NODES" in 1|3) ;; *) echo "weaviate-cluster: WEAVIATE_NODES must be 1 or 3" >&2; exit 1 ;; esac
TIMEOUT=${WEAVIATE_START_TIMEOUT:-120}
IP_PREFIX=${WEAVIATE_IP_PREFIX:-127.0.0}
HTTP_PORT=${WEAVIATE_HTTP_PORT:-8080}
# gRPC binds :PORT on every address, so its ports stay below Linux's ephemeral range
# (32768-60999), where any outgoing connection can hold one before its node binds it.
GRPC_BASE=${WEAVIATE_GRPC_BASE:-25050}
GOSSIP_PORT=${WEAVIATE_GOSSIP_PORT:-7100}
DATA_BASE=${WEAVIATE_DATA_BASE:-7100}
RAFT_PORT=${WEAVIATE_RAFT_PORT:-8300}
RAFT_RPC_PORT=${WEAVIATE_RAFT_RPC_PORT:-8301}
log() { printf 'weaviate-cluster: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

ip_of() { echo "$IP_PREFIX.$(( $1 + 1 ))"; }
grpc_of() { echo $(( GRPC_BASE + $1 )); }
data_of() { echo $(( DATA_BASE + $1 )); }
raft_join() { local n out=(); for n in $(seq 1 "$NODES"); do out+=("node$n:$RAFT_PORT"); done; local IFS=,; echo "${out[*]}"; }
since() { local ms=$(( ($(date +%s%N) - $1) / 1000000 )); printf '%d.%03ds' $((ms / 1000)) $((ms % 1000)); }
url_of() { echo "http://$(ip_of "$1"):$HTTP_PORT"; }

endpoint_line() {
  local h=() g=() n
  for n in $(seq 1 $NODES); do h+=("$(ip_of "$n"):$HTTP_PORT"); g+=("$(ip_of "$n"):$(grpc_of "$n")"); done
  local IFS=,
  echo "weaviate://${h[*]} grpc://${g[*]}"
}

# The pid of node N of DIR if that process runs and is a weaviate-server with that data path.
node_pid() {
  local pidf="$DIR/node$1.pid" pid
  [ -f "$pidf" ] || return 1
  pid=$(cat "$pidf")
  is_node_of_dir "$pid" "$1" && echo "$pid"
}
is_node_of_dir() { # pid N
  [ -r "/proc/$1/environ" ] || return 1
  # No pipe into grep -q here: with pipefail, grep's early exit can fail the writer (SIGPIPE).
  grep -qxzF "PERSISTENCE_DATA_PATH=$DIR/node$2" "/proc/$1/environ" 2>/dev/null
}
# All weaviate-server processes whose data path is under DIR (pid files or not).
pids_of_dir() {
  local p n
  for p in $(pgrep -x weaviate-server 2>/dev/null || true); do
    for n in $(seq 1 $NODES); do is_node_of_dir "$p" "$n" && echo "$p" && break; done
  done
}

tail_log() { # N [lines]: the node's last log lines, less the build_* fields on every line
  [ -f "$DIR/node$1.log" ] || return 0
  tail -n "${2:-15}" "$DIR/node$1.log" | sed -E "s/ build_(git_commit|go_version|image_tag|wv_version)=[^ ]*//g; s/^/  node$1| /" | cut -c1-400 >&2 || true
}

start_node() { # N [join addresses]
  local n=$1 join=${2:-} ip; ip=$(ip_of "$n")
  mkdir -p "$DIR/node$n"
  local envs=(
    PATH=/usr/bin:/bin HOME="$DIR"
    PERSISTENCE_DATA_PATH="$DIR/node$n"
    CLUSTER_HOSTNAME="node$n"
    CLUSTER_BIND_ADDR="$ip"
    CLUSTER_GOSSIP_BIND_PORT="$GOSSIP_PORT"
    CLUSTER_DATA_BIND_PORT="$(data_of "$n")"
    CLUSTER_JOIN="$join"
    RAFT_PORT="$RAFT_PORT"
    RAFT_INTERNAL_RPC_PORT="$RAFT_RPC_PORT"
    RAFT_JOIN="$(raft_join)"
    RAFT_BOOTSTRAP_EXPECT="$NODES"
    GRPC_PORT="$(grpc_of "$n")"
    AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED=true
    DEFAULT_VECTORIZER_MODULE=none
    ENABLE_MODULES=
    DISABLE_TELEMETRY=true
    GO_PROFILING_DISABLE=true
    PROMETHEUS_MONITORING_ENABLED=false
    QUERY_DEFAULTS_LIMIT=25
    LOG_LEVEL="${WEAVIATE_LOG_LEVEL:-info}"
    LOG_FORMAT=text
    ASYNC_REPLICATION_FREQUENCY="${WEAVIATE_ASYNC_FREQUENCY:-5s}"
  )
  # shellcheck disable=SC2206
  [ -n "${WEAVIATE_NODE_ENV:-}" ] && envs+=($WEAVIATE_NODE_ENV)
  log "node$n: $ip http :$HTTP_PORT grpc :$(grpc_of "$n") gossip :$GOSSIP_PORT data :$(data_of "$n") raft :$RAFT_PORT/$RAFT_RPC_PORT join '${join}'"
  # setsid: the node runs in its own session, so it outlives this script and a Ctrl-C in the
  # caller's terminal; stop/kill find it again by pid file or by its data path.
  # PERSISTENCE_DATA_PATH also on setsid itself: /proc/PID/environ, by which node_pid knows the
  # node, is then right from the fork on, not only after env has exec'd the server.
  PERSISTENCE_DATA_PATH="$DIR/node$n" setsid env -i "${envs[@]}" "$BIN" --scheme http --host "$ip" --port "$HTTP_PORT" \
    --read-timeout=600s --write-timeout=600s </dev/null >>"$DIR/node$n.log" 2>&1 &
  local pid=$!
  echo "$pid" > "$DIR/node$n.pid"
  # Until setsid has exec'd, /proc/PID/environ is this script's (no PERSISTENCE_DATA_PATH), and
  # node_pid would take the node for dead: wait for the exec (or the process's end).
  for _ in $(seq 1 100); do
    is_node_of_dir "$pid" "$n" && return 0
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.05
  done
}

# Gossip addresses of running nodes other than N.
running_peers() {
  local n out=()
  for n in $(seq 1 $NODES); do
    [ "$n" = "$1" ] && continue
    node_pid "$n" >/dev/null && out+=("$(ip_of "$n"):$GOSSIP_PORT")
  done
  local IFS=,; echo "${out[*]}"
}

port_busy() { # ip|any port: is ip:port or *:port (any: port on any address) listening (TCP)?
  local a
  for a in $(ss -Hltn "sport = :$2" 2>/dev/null | awk '{print $4}'); do
    [ "$1" = any ] && return 0
    case $a in "*:$2" | "0.0.0.0:$2" | "[::]:$2" | "$1:$2") return 0 ;; esac
  done
  return 1
}

check_ports() { # N: HTTP, gossip and Raft bind the node's address; gRPC and data bind all
  local n=$1 ip p; ip=$(ip_of "$n")
  for p in "$ip:$HTTP_PORT" "$ip:$GOSSIP_PORT" "$ip:$RAFT_PORT" "$ip:$RAFT_RPC_PORT" "any:$(grpc_of "$n")" "any:$(data_of "$n")"; do
    port_busy "${p%:*}" "${p##*:}" && die "node$n: port ${p##*:} is already in use ($p): $(ss -Hltnp "sport = :${p##*:}" | head -1)"
  done
  return 0
}

wait_listen() { # N port deadline
  while ! port_busy "$(ip_of "$1")" "$2"; do
    node_pid "$1" >/dev/null || { log "node$1 exited during startup; last log lines:"; tail_log "$1" 30; return 1; }
    [ "$(date +%s)" -lt "$3" ] || { log "node$1: gossip port $2 not listening in time"; tail_log "$1"; return 1; }
    sleep 0.2
  done
}

ready() { curl -sf -m 2 -o /dev/null "$(url_of "$1")/v1/.well-known/ready"; }

# Raft leader check: GET /v1/cluster/statistics on node N lists every node's Raft view; we want
# all NODES entries, one common non-empty leaderId, and synchronized=true.
leader_of() { # N -> prints leader id if the cluster agrees on one
  curl -sf -m 3 "$(url_of "$1")/v1/cluster/statistics" 2>/dev/null | jq -er --argjson n "$NODES" '
    [.statistics[] | select(.ready == true) | .leaderId // ""] as $l
    | select(.synchronized == true and ($l | length) == $n and ($l | unique | length) == 1 and $l[0] != "")
    | $l[0]' 2>/dev/null
}

wait_nodes() { # deadline nodes...
  local deadline=$1; shift
  local n pending=("$@")
  while [ ${#pending[@]} -gt 0 ]; do
    local still=()
    for n in "${pending[@]}"; do
      node_pid "$n" >/dev/null || { log "node$n ($(ip_of "$n")) exited; last log lines of $DIR/node$n.log:"; tail_log "$n" 30; return 1; }
      ready "$n" || still+=("$n")
    done
    pending=(${still[@]+"${still[@]}"})
    [ ${#pending[@]} -eq 0 ] && break
    if [ "$(date +%s)" -ge "$deadline" ]; then
      for n in "${pending[@]}"; do log "node$n ($(url_of "$n")) not ready after ${TIMEOUT}s; last log lines:"; tail_log "$n"; done
      return 1
    fi
    sleep 0.5
  done
  local leader
  until leader=$(leader_of "$1"); do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      log "no Raft leader agreed by all $NODES nodes after ${TIMEOUT}s; /v1/cluster/statistics on node$1:"
      curl -s -m 3 "$(url_of "$1")/v1/cluster/statistics" | jq -c '.synchronized, [.statistics[]? | {name, ready, leaderId, state: .raft.state}]' >&2 || true
      for n in $(seq 1 $NODES); do tail_log "$n" 8; done
      return 1
    fi
    sleep 0.5
  done
  log "all nodes ready; Raft leader: $leader"
}

need_bin() {
  BIN=${WEAVIATE_BIN:-$ROOT/.deps/weaviate/weaviate-server}
  if [ ! -x "$BIN" ]; then
    [ -z "${WEAVIATE_BIN:-}" ] || die "WEAVIATE_BIN=$BIN is not executable"
    log "$BIN missing: running scripts/weaviate.sh"
    BIN=$("$ROOT/scripts/weaviate.sh" | tail -1)
  fi
  for t in curl jq ss pgrep setsid; do command -v $t >/dev/null || die "$t is needed (Debian: curl jq iproute2 procps util-linux)"; done
}

stop_pids() { # signal-then-kill the given pids, waiting up to 20 s
  [ $# -gt 0 ] || return 0
  kill -TERM "$@" 2>/dev/null || true
  for _ in $(seq 1 100); do
    local alive=0 p
    for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && return 0
    sleep 0.2
  done
  log "still running after 20s, SIGKILL: $*"
  kill -KILL "$@" 2>/dev/null || true
}

cmd_stop() {
  local pids=() n p
  for n in $(seq 1 $NODES); do p=$(node_pid "$n" || true); [ -n "$p" ] && pids+=("$p"); done
  for p in $(pids_of_dir); do [[ " ${pids[*]-} " == *" $p "* ]] || { log "orphan node pid $p"; pids+=("$p"); }; done
  [ ${#pids[@]} -gt 0 ] && log "stopping pids ${pids[*]}" || log "no node of $DIR running"
  stop_pids ${pids[@]+"${pids[@]}"}
  rm -f "$DIR"/node*.pid "$DIR/endpoints"
}

all_running() { local n; for n in $(seq 1 $NODES); do node_pid "$n" >/dev/null || return 1; done; }

cmd_start() {
  need_bin
  mkdir -p "$DIR"
  if all_running && leader_of 1 >/dev/null; then
    log "already running"; endpoint_line | tee "$DIR/endpoints"; return 0
  fi
  [ -z "$(pids_of_dir)" ] || die "some nodes of $DIR already run (status: $0 status $DIR); stop them first"
  local n; for n in $(seq 1 $NODES); do check_ports "$n"; done
  local t0; t0=$(date +%s%N)
  trap 'log "start failed: stopping nodes"; cmd_stop' EXIT
  local deadline=$(( $(date +%s) + TIMEOUT ))
  log "starting $NODES nodes from $BIN, data under $DIR"
  start_node 1 ""
  # Weaviate joins gossip once at startup and exits if the join fails, so the seed's gossip
  # port must listen before the others start.
  wait_listen 1 "$GOSSIP_PORT" "$deadline"
  for n in $(seq 2 $NODES); do start_node "$n" "$(ip_of 1):$GOSSIP_PORT"; done
  wait_nodes "$deadline" $(seq 1 $NODES)
  trap - EXIT
  log "cluster up in $(since "$t0")"
  endpoint_line | tee "$DIR/endpoints"
}

cmd_status() {
  local n ok=0 p
  for n in $(seq 1 $NODES); do
    p=$(node_pid "$n" || true)
    local st; st=$(curl -sf -m 3 "$(url_of "$n")/v1/cluster/statistics" 2>/dev/null \
      | jq -r --arg me "node$n" '.statistics[] | select(.name == $me) | "\(.raft.state // "?") leader=\(.leaderId // "")"' 2>/dev/null || true)
    local r=no; ready "$n" && r=yes
    local rss=-; [ -n "$p" ] && rss="$(( $(ps -o rss= -p "$p") / 1024 ))MiB"
    printf 'node%s %s pid=%s rss=%s ready=%s raft=%s\n' "$n" "$(url_of "$n")" "${p:-none}" "$rss" "$r" "${st:-?}"
    [ -n "$p" ] && [ $r = yes ] || ok=1
  done
  local l=""; for n in $(seq 1 $NODES); do l=$(leader_of "$n" || true); [ -n "$l" ] && break; done
  [ -n "$l" ] && echo "leader=$l" || { echo "leader=none"; ok=1; }
  [ $ok = 0 ] && endpoint_line
  return $ok
}

cmd_kill() { # N
  local p; p=$(node_pid "$1") || die "node$1 is not running"
  log "SIGKILL node$1 (pid $p)"
  kill -KILL "$p"
  while kill -0 "$p" 2>/dev/null; do sleep 0.1; done
  rm -f "$DIR/node$1.pid"
}

cmd_restart() { # N
  need_bin
  local n=$1 p
  if p=$(node_pid "$n"); then log "stopping node$n (pid $p)"; stop_pids "$p"; fi
  check_ports "$n"
  local join; join=$(running_peers "$n")
  local t0; t0=$(date +%s%N)
  start_node "$n" "$join"
  wait_nodes "$(( $(date +%s) + TIMEOUT ))" "$n" || die "node$n did not come back (it is left running for inspection: $0 kill $DIR $n)"
  log "node$n back in $(since "$t0")"
}

cmd_signal() { # N SIG what
  local p; p=$(node_pid "$1") || die "node$1 is not running"
  log "$3 node$1 (pid $p)"
  kill -"$2" "$p"
}

# The Raft leader the running nodes agree on, as a node number: asked of each running node in
# turn (a stopped or paused node does not answer); every node that answers must name the same.
cmd_leader() {
  local n id="" got
  for n in $(seq 1 $NODES); do
    node_pid "$n" >/dev/null || continue
    got=$(curl -sf -m 3 "$(url_of "$n")/v1/cluster/statistics" 2>/dev/null \
      | jq -r --arg me "node$n" '.statistics[] | select(.name == $me) | .leaderId // ""' 2>/dev/null || true)
    [ -n "$got" ] || continue
    [ -z "$id" ] || [ "$id" = "$got" ] || die "nodes disagree on the Raft leader ($id, $got)"
    id=$got
  done
  [[ "$id" =~ ^node([1-9])$ ]] || die "no Raft leader known to the running nodes"
  echo "${BASH_REMATCH[1]}"
}

[ $# -ge 2 ] || { sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
cmd=$1
mkdir -p "$2"
DIR=$(cd "$2" && pwd)
node_arg() { [[ "${1:-}" =~ ^[1-3]$ ]] || die "$cmd needs a node number 1..$NODES"; echo "$1"; }
case $cmd in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  kill) cmd_kill "$(node_arg "${3:-}")" ;;
  restart) cmd_restart "$(node_arg "${3:-}")" ;;
  endpoints) endpoint_line ;;
  pause) cmd_signal "$(node_arg "${3:-}")" STOP SIGSTOP ;;
  resume) cmd_signal "$(node_arg "${3:-}")" CONT SIGCONT ;;
  leader) cmd_leader ;;
  *) die "unknown command $cmd (start|stop|status|kill|restart|endpoints|pause|resume|leader)" ;;
esac
