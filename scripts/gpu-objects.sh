#!/usr/bin/env bash
# Prepares, on a machine with Go, what scripts/gpu-check.sh needs on a GPU machine that has
# no Go toolchain: the object files of the faissgpu builds of the vectorstore test binary and
# of the memory CLI, compiled against the headers of the faiss source that deps-gpu.sh builds
# there (.gpu/faiss-src.tar.xz), ready for the final link (g++) against that library.
#
#   .gpu/link/vectorstore.test/  go.o and the cgo objects of `go test -c -tags faiss,faissgpu ./vectorstore`
#   .gpu/link/memory/            the same for `go build -tags faiss,faissgpu ./cmd/memory`
#
# The link step here fails on purpose (no GPU faiss on this machine); the objects stay in
# the folders (-tmpdir). Usage: scripts/gpu-objects.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRC=${FAISS_SRC:-$ROOT/.gpu/faiss-src.tar.xz}
inc=$ROOT/.gpu/include
rm -rf "$inc" && mkdir -p "$inc"
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
tar -xf "$SRC" -C "$t" faiss c_api
mv "$t/faiss" "$inc/faiss" && mv "$t/c_api" "$inc/faiss/c_api"
export CGO_CFLAGS="-I$inc -O2" CGO_CXXFLAGS="-I$inc -std=c++20 -O2" CGO_LDFLAGS="-L$t/none"
build() { # name, package, go subcommand (and its flags)
  local name=$1 pkg=$2; shift 2
  local objs=$ROOT/.gpu/link/$name
  rm -rf "$objs" && mkdir -p "$objs"
  (cd "$ROOT" && go "$@" -tags faiss,faissgpu -o "$t/$name" -ldflags="-w -linkmode=external -tmpdir=$objs" "$pkg" >"$t/$name.log" 2>&1) || true
  [ -f "$objs/go.o" ] || { cat "$t/$name.log" >&2; echo "gpu-objects: no go.o for $name" >&2; exit 1; }
  rm -f "$objs"/*.ld 2>/dev/null || true
  printf 'gpu-objects: %s: %s in %s\n' "$name" "$(du -sh "$objs" | cut -f1)" "$objs" >&2
}
build vectorstore.test ./vectorstore test -c
build memory ./cmd/memory build
