#!/usr/bin/env bash
# Builds weaviate-server (the Weaviate vector database) from the Go module proxy into a local
# cache, idempotently, for the Weaviate cluster backend's tests (issue #41):
#   .deps/weaviate/weaviate-server   (module github.com/weaviate/weaviate, version below)
# Skips the build when the binary is there and `go version -m` says it is that version.
# Takes ~10-20 minutes on 2 cores (and ~3 GiB of module cache); the binary is ~170 MB.
# Usage: scripts/weaviate.sh            prints the binary's path on stdout when done
# Env:   MEMORY_DEPS (default .deps), WEAVIATE_VERSION (default v1.35.2), GO (default go)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEPS=${MEMORY_DEPS:-$ROOT/.deps}
VERSION=${WEAVIATE_VERSION:-v1.35.2}
GO=${GO:-go}
MOD=github.com/weaviate/weaviate
DIR="$DEPS/weaviate"
BIN="$DIR/weaviate-server"
log() { printf 'weaviate: %s\n' "$*" >&2; }

built_version() { "$GO" version -m "$1" 2>/dev/null | awk -v m="$MOD" '$1 == "mod" && $2 == m { print $3 }'; }

if [ -x "$BIN" ] && [ "$(built_version "$BIN")" = "$VERSION" ]; then
  log "weaviate-server $VERSION already built: $BIN"
  echo "$BIN"
  exit 0
fi

command -v "$GO" >/dev/null || { log "go not found (set GO=/path/to/go)"; exit 1; }
mkdir -p "$DIR"
w=$(mktemp -d "$DIR/build.XXXXXX")
trap 'rm -rf "$w"' EXIT
log "building $MOD/cmd/weaviate-server@$VERSION with $("$GO" version) (takes ~10-20 min on 2 cores)"
start=$(date +%s)
# `go install pkg@version` ignores the repository's go.mod: the server builds with its own.
# GOFLAGS=-mod=mod guards against a -mod=vendor in the environment.
GOBIN="$w" GOFLAGS=-mod=mod "$GO" install "$MOD/cmd/weaviate-server@$VERSION"
got=$(built_version "$w/weaviate-server")
[ "$got" = "$VERSION" ] || { log "built binary reports version '$got', want $VERSION"; exit 1; }
mv "$w/weaviate-server" "$BIN"
log "built in $(( $(date +%s) - start ))s: $BIN ($(du -h "$BIN" | cut -f1))"
echo "$BIN"
