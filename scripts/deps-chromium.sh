#!/usr/bin/env bash
# Installs Debian's Chromium (and a font for it to draw text with), idempotently, for the
# headless browser test of package webui (webui/browser_test.go). It never fails the build:
# when Chromium cannot be installed (not root, no apt-get) it says why and exits 0, and the
# browser test then skips, saying so (MEMORY_REQUIRE_BROWSER=1 makes it fail instead).
# Usage: scripts/deps-chromium.sh
set -uo pipefail
log() { printf 'deps-chromium: %s\n' "$*" >&2; }

for b in chromium chromium-browser google-chrome-stable google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then
    log "$b already installed: $(command -v "$b")"
    exit 0
  fi
done
if [ "$(id -u)" != 0 ]; then
  log "not root: cannot apt-get install chromium (run this script as root, or install chromium yourself); the browser test will skip"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  log "no apt-get on this machine: install Chromium yourself; the browser test will skip"
  exit 0
fi
apt=(env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -y -qq)
log "installing Debian packages chromium fonts-dejavu-core"
if ! "${apt[@]}" update >/dev/null; then
  log "apt-get update failed: cannot install chromium; the browser test will skip"
  exit 0
fi
if ! "${apt[@]}" install --no-install-recommends chromium fonts-dejavu-core >/dev/null; then
  log "apt-get install chromium failed; the browser test will skip"
  exit 0
fi
log "Chromium ready: $(command -v chromium) ($(chromium --version 2>/dev/null || echo 'version unknown'))"
