#!/usr/bin/env bash
# Test-only: an sshd binary for the bridge's ssh-remote test, taken out of Debian's openssh-server package into sbx's
# cache (/var/cache/sbx/test-tools/sshd) rather than installed: installing the package would enable an ssh server on
# the machine, which sbx never does. The test starts this binary on 127.0.0.1 with its own config and stops it.
# Its shared libraries come from apt as plain libraries (no service). Safe to run again: it does only what is missing.
set -euo pipefail

CACHE_DIR="${SBX_IMAGE_CACHE:-/var/cache/sbx}/test-tools"
OUT="$CACHE_DIR/sshd"
log() { printf 'test-sshd: %s\n' "$*" >&2; }

[ -x /usr/sbin/sshd ] && { log "/usr/sbin/sshd present; nothing to do"; exit 0; }
# sshd refuses to start without its privilege-separation account: a locked system account with no home or shell, as
# the package's own postinst makes it.
privsep() { getent passwd sshd >/dev/null || useradd --system --no-create-home --home-dir /run/sshd --shell /usr/sbin/nologin sshd; }
if [ -x "$OUT" ] && ! ldd "$OUT" | grep -q 'not found'; then privsep; log "$OUT present; nothing to do"; exit 0; fi

export DEBIAN_FRONTEND=noninteractive
# The package's library dependencies (lib*), and the client side the test drives (ssh, ssh-agent, ssh-keygen).
libs=$(apt-cache depends --important openssh-server | sed -n 's/^ *P\{0,1\}r\{0,1\}e\{0,1\}Depends: \(lib[^ <>]*\)$/\1/p' | sort -u)
missing=()
for p in $libs openssh-client; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]} (apt; libraries and the ssh client only)"
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; }
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fetch() { (cd "$work" && apt-get download -q openssh-server >/dev/null 2>&1); }
fetch || { apt-get update -q >/dev/null && fetch; } || { log "apt-get download openssh-server failed"; exit 69; }
dpkg-deb -x "$work"/openssh-server_*.deb "$work/x"
mkdir -p "$CACHE_DIR"
install -m 0755 "$work/x/usr/sbin/sshd" "$OUT.partial"
mv "$OUT.partial" "$OUT"
if ldd "$OUT" | grep -q 'not found'; then log "$OUT lacks libraries: $(ldd "$OUT" | grep 'not found' | tr -s ' \n' ' ')"; exit 69; fi
privsep
log "sshd for tests at $OUT"
