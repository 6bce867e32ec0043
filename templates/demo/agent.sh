#!/usr/bin/env bash
# The sbx demo's scripted agent: runs inside the sandbox, one phase per call, and reports what it saw as `key=value` lines.
# It uses only what any agent has: curl, git (sbx's shim), bash; the proxy comes from HTTPS_PROXY, as sbx sets it.
set -u
phase="${1:-}"
shift || true

say() { printf '%s=%s\n' "$1" "$(printf '%s' "$2" | tr '\n\r' '  ' | cut -c1-400)"; }

# curl through the proxy sbx configured, trusting only the demo site's own certificate (made on the host for this run).
fetch() {
  local url="$1" out err code
  out=$(mktemp) err=$(mktemp)
  code=$(curl -sS --max-time 15 --cacert demo-site.pem -o "$out" -w '%{http_code}' "$url" 2>"$err")
  say curl_exit "$?"
  say http_code "$code"
  say body "$(head -c 300 "$out")"
  say curl_error "$(cat "$err")"
  rm -f "$out" "$err"
}

# A raw CONNECT to the proxy, as curl sends it, so the 403's status, X-Sbx-Blocked header and text can be shown.
raw_connect() {
  local target="$1" proxy="${HTTPS_PROXY:-${https_proxy:-}}" hp host port resp
  hp="${proxy#*://}"; hp="${hp%%/*}"; host="${hp%:*}"; port="${hp##*:}"
  if [ -z "$proxy" ]; then say raw "no HTTPS_PROXY in the sandbox's environment"; return; fi
  if ! exec 3<>"/dev/tcp/$host/$port"; then say raw "cannot connect to the proxy at $hp"; return; fi
  printf 'CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n' "$target" "$target" >&3
  resp=$(timeout 10 cat <&3 | tr -d '\r')
  exec 3<&- 3>&-
  say status "$(printf '%s\n' "$resp" | head -n1)"
  say header "$(printf '%s\n' "$resp" | grep -i '^x-sbx-blocked:' | head -n1)"
  say text "$(printf '%s\n' "$resp" | sed -n '/^$/,$p' | sed '/^$/d' | head -n3)"
}

case "$phase" in
  fetch)
    say proxy "${HTTPS_PROXY:-<unset>}"
    fetch "$1"
    ;;
  blocked)
    fetch "$1"
    raw_connect "$2"
    ;;
  direct)
    # Straight to the demo site, not through the proxy: the sandbox's network is its own, with no route out.
    curl -sS --noproxy '*' --max-time 5 --cacert demo-site.pem -o /dev/null "$1" 2>/dev/null
    say direct_exit "$?"
    say interfaces "$(ls /sys/class/net | tr '\n' ' ')"
    say routes "$(( $(tail -n +2 /proc/net/route | wc -l) + $(grep -cv ' lo$' /proc/net/ipv6_route) ))"
    ;;
  dns)
    # The only nameserver is sbx's stub inside the sandbox: a name gets a sandbox-local address that stands for it
    # (its connections go to the proxy, by that name), and no query is ever sent anywhere. A reserved .invalid name
    # does not resolve at all.
    say nameservers "$(awk '$1 == "nameserver" { printf "%s ", $2 }' /etc/resolv.conf 2>/dev/null)"
    say answer "$(getent hosts sbx-demo-probe.example.com 2>/dev/null | awk '{ print $1 }')"
    getent hosts sbx-demo-probe.invalid >/dev/null 2>&1
    say getent_exit "$?"
    ;;
  push)
    git config user.email agent@sandbox.invalid
    git config user.name "demo agent"
    git checkout -q -B agent-work
    printf 'written by the agent inside the sandbox at %s\n' "$(date -u +%FT%TZ)" > agent-note.txt
    git add agent-note.txt
    git commit -q -m "agent: a note from inside the sandbox"
    say sha "$(git rev-parse HEAD)"
    # A sandbox's own branches go under sbx/<name>/ on the remote: those need no approval.
    out=$(git push origin "agent-work:sbx/${SANDBOX}/agent-work" 2>&1)
    say push_exit "$?"
    say push_output "$(printf '%s\n' "$out" | tail -n 3)"
    ;;
  npm)
    # A real npm install from a private registry on the host, as the agent of a project with one would: its token is
    # bound on the host (sbx secret set NPM_TOKEN --host host.sbx.internal --npmrc); npm's config here holds a
    # placeholder, which the proxy swaps on the way to the published registry and never hands back.
    reg="$1"
    if ! command -v npm >/dev/null; then say npm_exit "no npm in the image"; exit 0; fi
    say npmrc "$(cat "${NPM_CONFIG_GLOBALCONFIG:-/dev/null}" 2>/dev/null)"
    app=$(mktemp -d)
    say app "$app"
    cd "$app" && printf '{"name":"demo-app","version":"1.0.0","private":true}\n' > package.json
    out=$(npm install --no-audit --no-fund --no-update-notifier --loglevel=error --registry "$reg" "$2" 2>&1)
    say npm_exit "$?"
    say npm_output "$(printf '%s\n' "$out" | grep -v 'does not support Node.js' | tail -n 3)"
    say installed "$(node -e "console.log(require('$2'))" 2>&1)"
    echo "----- env"
    env
    ;;
  evidence)
    # Everything a process inside could read to find a credential: its environment and every process's argv and env.
    echo "----- env"
    env
    echo "----- cmdlines"
    for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' <"$f" 2>/dev/null; echo; done
    echo "----- environs"
    for f in /proc/[0-9]*/environ; do tr '\0' '\n' <"$f" 2>/dev/null; done
    echo "----- end"
    ;;
  leak)
    # A commit holding a key-shaped string (random, made here): the bridge's scan must refuse to let it out.
    git checkout -q -B leaky
    key="AKIA$(head -c 4000 /dev/urandom | tr -dc 'A-Z0-9' | head -c 16)"
    printf 'aws_access_key_id = %s\n' "$key" > leaked-config.ini
    git add leaked-config.ini
    git commit -q -m "agent: oops, a key"
    out=$(git push origin "leaky:sbx/${SANDBOX}/leaky" 2>&1)
    say push_exit "$?"
    say push_output "$(printf '%s\n' "$out" | grep -v '^\s*$' | tail -n 3)"
    git checkout -q agent-work
    ;;
  *)
    echo "usage: agent.sh fetch|blocked|direct|dns|push|evidence|leak …" >&2
    exit 64
    ;;
esac
