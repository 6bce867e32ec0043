#!/usr/bin/env bash
# Sets up sbx on a Debian/Ubuntu machine: system packages, Bun, dependencies, a Docker engine, the local
# base image, and an `sbx` on PATH; then runs the demo (or `sbx doctor` with --no-demo).
# Safe to run again: it installs only what is missing and leaves a running Docker engine alone.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"
demo=1
for a in "$@"; do
  case "$a" in
    --no-demo) demo=0 ;;
    -h|--help) echo "usage: ./install.sh [--no-demo]"; exit 0 ;;
    *) echo "install.sh: unknown option $a (try --help)" >&2; exit 64 ;;
  esac
done

# Bold only on a terminal (and never with NO_COLOR): a log file or CI gets plain text.
if [ -t 2 ] && [ -z "${NO_COLOR:-}" ]; then
  say() { printf '\033[1minstall:\033[0m %s\n' "$*" >&2; }
else
  say() { printf 'install: %s\n' "$*" >&2; }
fi
is_root() { [ "$(id -u)" = 0 ]; }

# ── system packages ─────────────────────────────────────────────────────────
# docker.io: the engine; debootstrap: the base image without a registry; acl, nftables, passwd,
# util-linux: the Linux user backend (setfacl, nft, useradd, setpriv); sudo: its no-sudo test and the macOS sequence run with real uids;
# gh: the host's gh, which the bridge runs for a sandbox's gh (with the token only it sees); fish, tmux, iproute2,
# chromium: tests (fish shells, interactive sessions, network namespaces, the approvals dashboard in a real browser);
# zsh: the macOS guests' rc files, run by a real zsh; nodejs, dnsutils: clients a Linux guest runs from the host in
# the transparent-path tests (Node's fetch, dig); shellcheck: the real-Mac smoke script is checked by it;
# dbus-daemon, gnome-keyring, libsecret-tools: the Secret Service vault's test runs a real session bus and keyring;
# python3-requests, default-jre-headless: real clients of the secrets bound to hosts (with curl, urllib and npm); Java
# reads sbx's CA from a PKCS#12 trust store, and keytool lists it (≈10 s to install beside the rest, 44 MB).
PKGS=(git ca-certificates curl docker.io debootstrap acl nftables fish zsh tmux iproute2 procps chromium sudo util-linux passwd gh nodejs dnsutils shellcheck dbus-daemon gnome-keyring libsecret-tools python3-requests default-jre-headless)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  if is_root; then
    say "installing ${missing[*]} (apt)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  else
    say "missing packages: ${missing[*]}"
    say "run: sudo apt-get install ${missing[*]}   (or run ./install.sh as root)"
    exit 69
  fi
fi

# squid: the company proxy of the parent-proxy tests (test/support/squid.ts runs its own, on loopback, with its own
# config). Its package would start a system squid on port 3128: a policy-rc.d for this one install keeps it stopped.
if ! dpkg-query -W -f='${Status}' squid 2>/dev/null | grep -q "install ok installed"; then
  if is_root; then
    say "installing squid (apt; for the parent-proxy tests, not started)"
    policy_made=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
      printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && policy_made=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends squid >/dev/null || say "squid did not install: the parent-proxy tests that need it will say so and skip"
    [ -n "$policy_made" ] && rm -f /usr/sbin/policy-rc.d
  else
    say "squid is not installed (only the parent-proxy tests need it): sudo apt-get install squid"
  fi
fi

# ── Bun (from npm) and dependencies ────────────────────────────────────────
if ! command -v bun >/dev/null; then
  say "installing Bun from npm"
  if is_root; then npm install -g bun >/dev/null 2>&1; else npm install -g --prefix "$HOME/.local" bun >/dev/null 2>&1; export PATH="$HOME/.local/bin:$PATH"; fi
fi
command -v bun >/dev/null || { say "Bun did not install; try: npm install -g bun"; exit 69; }
say "Bun $(bun --version); installing dependencies"
bun install --frozen-lockfile >/dev/null

# ── Docker engine ───────────────────────────────────────────────────────────
if ! docker info >/dev/null 2>&1; then
  if is_root; then
    if [ -d /run/systemd/system ] && systemctl start docker 2>/dev/null; then
      say "started docker with systemctl"
    else
      say "starting dockerd (log: /var/log/sbx-dockerd.log)"
      nohup dockerd >/var/log/sbx-dockerd.log 2>&1 </dev/null &
    fi
    for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
    docker info >/dev/null 2>&1 || { say "dockerd did not come up; see /var/log/sbx-dockerd.log"; tail -20 /var/log/sbx-dockerd.log >&2; exit 69; }
  else
    say "no Docker engine answers: start one (sudo systemctl start docker) and add yourself to the docker group"
    exit 69
  fi
fi

# ── base image (no registry here: built locally with debootstrap) ──────────
if is_root; then
  bash scripts/base-image.sh
  # The bridge's ssh-remote test needs an sshd: the binary alone, in sbx's cache (never an ssh service).
  bash scripts/test-sshd.sh || say "no sshd for the ssh-remote test (it will be skipped); see scripts/test-sshd.sh"
else
  docker image inspect "${SBX_BASE_IMAGE:-sbx-base:bookworm}" >/dev/null 2>&1 || say "base image missing: run sudo ./scripts/base-image.sh"
fi

# ── sbx on PATH ─────────────────────────────────────────────────────────────
bindir=/usr/local/bin
is_root || { bindir="$HOME/.local/bin"; mkdir -p "$bindir"; }
ln -sf "$here/src/cli/main.ts" "$bindir/sbx"
say "sbx linked at $bindir/sbx"

if [ "$demo" = 1 ]; then
  "$bindir/sbx" doctor
  if "$bindir/sbx" demo --help >/dev/null 2>&1 && ! grep -q 'notYet(' src/cli/commands/demo.ts; then
    exec "$bindir/sbx" demo
  fi
  say "sbx demo is not built yet (see the README's status); sbx doctor above shows this host is ready"
fi
