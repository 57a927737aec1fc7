#!/usr/bin/env bash
# Installs the native dependencies of memory into a local cache (default .deps/), idempotently:
#   - ONNX Runtime 1.30.0 (libonnxruntime.so.1 from the npm package onnxruntime-node@1.30.0)
#   - libfaiss_c.a: faiss 1.7.3's C API (from Debian's faiss source package) merged with
#     Debian's static libfaiss.a, so `go build -tags faiss` links with no system install of ours.
# Usage: scripts/deps.sh [ort] [faiss]   (no argument = both)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEPS=${MEMORY_DEPS:-$ROOT/.deps}
mkdir -p "$DEPS"
want=${*:-ort faiss}
log() { printf 'deps: %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else "$@"; fi; }

ORT_SHA=ffb75a925ba05e47b235bb66e3e3911714a80b328a9c9425539feb204aa32a23
install_ort() {
  local lib="$DEPS/onnxruntime/libonnxruntime.so.1"
  if [ -f "$lib" ] && echo "$ORT_SHA  $lib" | sha256sum -c --quiet - 2>/dev/null; then return; fi
  command -v npm >/dev/null || { log "npm missing: installing"; as_root apt-get update -qq; as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null; }
  local w; w=$(mktemp -d)
  log "fetching onnxruntime-node@1.30.0 (npm pack, no install scripts)"
  (cd "$w" && npm pack --silent onnxruntime-node@1.30.0 >/dev/null && tar xzf onnxruntime-node-1.30.0.tgz package/bin/napi-v6/linux/x64/libonnxruntime.so.1)
  mkdir -p "$DEPS/onnxruntime"
  install -m 0755 "$w/package/bin/napi-v6/linux/x64/libonnxruntime.so.1" "$lib.tmp"
  echo "$ORT_SHA  $lib.tmp" | sha256sum -c --quiet - || { log "libonnxruntime sha256 mismatch"; exit 1; }
  mv "$lib.tmp" "$lib"; rm -rf "$w"
  log "ONNX Runtime ready: $lib"
}

install_faiss() {
  local out="$DEPS/faiss/lib/libfaiss_c.a"
  [ -f "$out" ] && dpkg -s libfaiss-dev >/dev/null 2>&1 && dpkg -s libopenblas-dev >/dev/null 2>&1 && return
  if ! dpkg -s libfaiss-dev libopenblas-dev g++ >/dev/null 2>&1; then
    log "installing Debian packages libfaiss-dev libopenblas-dev g++"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends g++ libfaiss-dev libopenblas-dev >/dev/null
  fi
  local w; w=$(mktemp -d); trap 'rm -rf "$w"' RETURN
  mkdir -p "$w/apt/lists/partial"
  local mirror suite
  mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)
  suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
  printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$mirror" "$suite" > "$w/apt/faiss-src.sources"
  local apto=(-o APT::Sandbox::User=root -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$w/apt" -o Dir::State::Lists="$w/apt/lists")
  log "fetching Debian's faiss source package (C API only is compiled)"
  apt-get -qq "${apto[@]}" update
  (cd "$w" && apt-get -qq "${apto[@]}" source --download-only faiss >/dev/null)
  local ver up; ver=$(dpkg-query -W -f='${Version}' libfaiss-dev); up=${ver%%-*}; up=${up#*:}
  tar xzf "$w"/faiss_"${up}".orig.tar.gz -C "$w" "faiss-${up}/c_api"
  mkdir -p "$w/obj" "$w/faissobj"
  ( cd "$w/faiss-${up}/c_api"; pids=()
    for f in *.cpp impl/*.cpp utils/*.cpp; do
      g++ -std=c++11 -O2 -fPIC -fopenmp -c "$f" -o "$w/obj/$(echo "$f" | tr / _).o" & pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done )
  (cd "$w/faissobj" && ar x "$(dpkg -L libfaiss-dev | grep '/libfaiss\.a$')")
  mkdir -p "$DEPS/faiss/lib"
  ar rcs "$out.tmp" "$w"/obj/*.o "$w"/faissobj/*.o && mv "$out.tmp" "$out"
  log "FAISS C API ready: $out"
}

for w in $want; do
  case $w in
    ort) install_ort ;;
    faiss) install_faiss ;;
    *) log "unknown component $w"; exit 2 ;;
  esac
done
