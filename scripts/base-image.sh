#!/usr/bin/env bash
# Builds the local test base image (no container registry here): debootstrap → tarball → docker import.
# The tarball is cached so that later runs only import it; an existing image tag is left as it is.
set -euo pipefail

TAG="${SBX_BASE_IMAGE:-sbx-base:bookworm}"
CACHE_DIR="${SBX_IMAGE_CACHE:-/var/cache/sbx}"
TARBALL="$CACHE_DIR/base-bookworm-minbase.tar"
PACKAGES="git,fish,curl,ca-certificates,bash,procps,less,openssh-client"

log() { printf 'base-image: %s\n' "$*" >&2; }

if docker image inspect "$TAG" >/dev/null 2>&1; then
  log "image $TAG present; nothing to do"
  exit 0
fi

mkdir -p "$CACHE_DIR"
if [ ! -s "$TARBALL" ]; then
  command -v debootstrap >/dev/null || { log "debootstrap missing: apt-get install debootstrap"; exit 69; }
  root=$(mktemp -d "$CACHE_DIR/rootfs.XXXXXX")
  trap 'rm -rf "$root"' EXIT
  log "debootstrap --variant=minbase bookworm (about a minute)…"
  debootstrap --variant=minbase --include="$PACKAGES" bookworm "$root" >"$CACHE_DIR/debootstrap.log" 2>&1 \
    || { log "debootstrap failed; see $CACHE_DIR/debootstrap.log"; tail -20 "$CACHE_DIR/debootstrap.log" >&2; exit 1; }
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar --numeric-owner -C "$root" -cf "$TARBALL.partial" .
  mv "$TARBALL.partial" "$TARBALL"
  log "cached $TARBALL ($(du -h "$TARBALL" | cut -f1))"
fi

log "docker import $TARBALL as $TAG"
docker import --change 'CMD ["/bin/bash"]' --change 'ENV LANG=C.UTF-8' "$TARBALL" "$TAG" >/dev/null
log "image $TAG ready"
