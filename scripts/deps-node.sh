#!/usr/bin/env bash
# Installs the Node.js client the MCP interoperability test drives (mcpserver's
# TestNodeSDKClient): the official MCP SDK, @modelcontextprotocol/sdk at a pinned version,
# into .deps/node (idempotent: nothing is fetched when that version is there).
# Usage: scripts/deps-node.sh   (needs node and npm; without node there is nothing to do)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEPS=${MEMORY_DEPS:-$ROOT/.deps}
SDK_VERSION=1.32.2
log() { printf 'deps-node: %s\n' "$*" >&2; }
if ! command -v node >/dev/null; then log "node not found: skipped (the Node SDK test skips too)"; exit 0; fi
command -v npm >/dev/null || { log "node is here but npm is not: install npm"; exit 1; }
dir="$DEPS/node"
pkg="$dir/node_modules/@modelcontextprotocol/sdk/package.json"
if [ -f "$pkg" ] && [ "$(node -p "require('$pkg').version")" = "$SDK_VERSION" ]; then exit 0; fi
mkdir -p "$dir"
log "installing @modelcontextprotocol/sdk@$SDK_VERSION into $dir"
npm install --silent --no-audit --no-fund --prefix "$dir" "@modelcontextprotocol/sdk@$SDK_VERSION" >&2
log "ready: $(node -p "require('$pkg').version")"
