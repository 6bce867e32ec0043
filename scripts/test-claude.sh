#!/usr/bin/env bash
# Test-only: Claude Code's package for this CPU, as npm's registry serves it, kept in sbx's cache
# (/var/cache/sbx/test-tools) so the MCP test (test/e2e/integration/mcp-claude-docker.test.ts) downloads nothing: it
# serves this file to `sbx run claude` from a mirror on loopback. One pinned version (the test reads the same one from
# this file's VERSION line), ≈190 MB, ≈15 s here. Safe to run again: it does only what is missing.
set -euo pipefail

VERSION=2.1.332
case "$(uname -m)" in
  x86_64|amd64) arch=x64 ;;
  aarch64|arm64) arch=arm64 ;;
  *) printf 'test-claude: no Claude Code package for %s\n' "$(uname -m)" >&2; exit 69 ;;
esac
CACHE_DIR="${SBX_IMAGE_CACHE:-/var/cache/sbx}/test-tools"
OUT="$CACHE_DIR/anthropic-ai-claude-code-linux-$arch-$VERSION.tgz"
log() { printf 'test-claude: %s\n' "$*" >&2; }

[ -s "$OUT" ] && { log "$OUT present; nothing to do"; exit 0; }
command -v npm >/dev/null || { log "no npm"; exit 69; }
mkdir -p "$CACHE_DIR"
work=$(mktemp -d "$CACHE_DIR/.claude.XXXXXX")
trap 'rm -rf "$work"' EXIT
# npm pack checks the registry's integrity before it writes the file.
(cd "$work" && npm pack --silent "@anthropic-ai/claude-code-linux-$arch@$VERSION" >/dev/null) || { log "npm pack @anthropic-ai/claude-code-linux-$arch@$VERSION failed"; exit 69; }
mv "$work/anthropic-ai-claude-code-linux-$arch-$VERSION.tgz" "$OUT"
log "Claude Code $VERSION for tests at $OUT"
