#!/usr/bin/env bash
# Builds the local test base image (no container registry here): debootstrap → tarball → docker import.
# The tarball is cached so that later runs only import it. Both are keyed on the package list: an image (or a cached
# tarball) made from another list is made again, so a package added here reaches every machine's next run.
set -euo pipefail

TAG="${SBX_BASE_IMAGE:-sbx-base:bookworm}"
CACHE_DIR="${SBX_IMAGE_CACHE:-/var/cache/sbx}"
# python3-pip: real pip and Python inside the tests' sandboxes (what a refused client shows), as dev images have them.
# nodejs (18, whose fetch ignores proxy variables), default-jre-headless (Java's HttpClient) and dnsutils (dig): the
# clients the transparent path exists for.
PACKAGES="git,fish,curl,ca-certificates,bash,procps,less,openssh-client,python3-pip,nodejs,default-jre-headless,dnsutils"
KEY=$(printf '%s' "$PACKAGES" | sha256sum | cut -c1-12)
TARBALL="$CACHE_DIR/base-bookworm-minbase-$KEY.tar"

log() { printf 'base-image: %s\n' "$*" >&2; }

if [ "$(docker image inspect --format '{{index .Config.Labels "sbx.base.key"}}' "$TAG" 2>/dev/null)" = "$KEY" ]; then
  log "image $TAG present; nothing to do"
  exit 0
fi
if docker image inspect "$TAG" >/dev/null 2>&1; then
  log "image $TAG was made from another package list: making it again"
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
  # A tarball of another package list is not used again.
  find "$CACHE_DIR" -maxdepth 1 -name 'base-bookworm-minbase*.tar' ! -name "$(basename "$TARBALL")" -delete
  log "cached $TARBALL ($(du -h "$TARBALL" | cut -f1))"
fi

log "docker import $TARBALL as $TAG"
docker import --change 'CMD ["/bin/bash"]' --change 'ENV LANG=C.UTF-8' --change "LABEL sbx.base.key=$KEY" "$TARBALL" "$TAG" >/dev/null
log "image $TAG ready"
