#!/usr/bin/env bash
# Test-only: the images of the services end-to-end test (test/e2e/docker/service-postgres.test.ts), built from sbx's
# base image with Debian's PostgreSQL 15: sbxt-pgbase:15 (the server and psql installed; the sandbox's image is FROM it)
# and sbxt-postgres:15 (a cluster made at build, run as postgres: the service). Kept by tag: a second run does nothing.
# Needs Debian's apt reachable from a container build once. Not in install.sh: a person's install does not need it.
set -euo pipefail
BASE="${SBX_BASE_IMAGE:-sbx-base:bookworm}"
log() { printf 'test-postgres: %s\n' "$*" >&2; }
have() { docker image inspect "$1" >/dev/null 2>&1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! have sbxt-pgbase:15; then
  log "building sbxt-pgbase:15 (apt-get install postgresql-15)…"
  cat >"$work/Dockerfile.base" <<EOD
FROM $BASE
USER root
RUN apt-get update && apt-get install -y --no-install-recommends postgresql-15 && rm -rf /var/lib/apt/lists/* \\
 && install -d -o postgres -g postgres -m 0700 /var/lib/postgresql/data && install -d -o postgres -g postgres /var/run/postgresql
EOD
  docker build -q -t sbxt-pgbase:15 -f "$work/Dockerfile.base" "$work" >/dev/null
fi
if ! have sbxt-postgres:15; then
  log "building sbxt-postgres:15…"
  cat >"$work/Dockerfile.server" <<'EOD'
FROM sbxt-pgbase:15
USER postgres
RUN /usr/lib/postgresql/15/bin/initdb -D /var/lib/postgresql/data -A trust -U postgres >/dev/null
VOLUME /var/lib/postgresql/data
HEALTHCHECK --interval=1s --timeout=3s --retries=60 CMD ["/usr/lib/postgresql/15/bin/pg_isready", "-q", "-h", "127.0.0.1", "-U", "postgres"]
CMD ["/usr/lib/postgresql/15/bin/postgres", "-D", "/var/lib/postgresql/data", "-c", "listen_addresses=127.0.0.1"]
EOD
  docker build -q -t sbxt-postgres:15 -f "$work/Dockerfile.server" "$work" >/dev/null
fi
log "sbxt-pgbase:15 and sbxt-postgres:15 present"
