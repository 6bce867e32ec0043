#!/bin/bash
# macOS backend: the real-Mac proof (issue 26). NOT RUN IN CI: these machines run Linux, where the backend is tested
# only against a fake Mac (test/fakes/mac.ts). Run it by hand on a Mac, as your normal admin user, from the repo root:
#
#   scripts/macos-smoke.sh            every probe, in order; prints PASS or FAIL per probe, then a summary line
#   scripts/macos-smoke.sh --list     the probe names, one a line
#
# Exit status: the number of probes that FAILED (0: all passed); 125 when it cannot run at all (not a Mac, bad usage).
# It asks for your sudo password once (pfctl, tcpdump, crontab -u and the root kit need root). While it runs it will:
# open nothing on purpose, but if the `open` probe FAILS, a Terminal window and a browser tab may appear; put a marker
# on your pasteboard (your text is put back afterwards; images and files on it are not); switch pf off for a moment
# (pf-disabled; it turns pf back on if nothing else did) and reload /etc/pf.conf (pf-reload). It takes about five
# minutes (crontab-after-stop waits two). It leaves the root kit and the daemon installed (`sbx service uninstall`
# removes them), and removes its sandbox, repo, upstream and secret.
#
# It drives the REAL daemon (the LaunchAgent `sbx service install` sets up), never a stand-in proxy. The probes:
#   kit                 sbx service install: helper, Bun and shims root:wheel in /usr/local/libexec/sbx, the sudoers
#                       rule 0440, the reapply LaunchDaemon loaded, the daemon's LaunchAgent running and answering
#   create              sbx create smoke in a fresh repo: a hidden, non-admin sbx_<you>_<id> account, its pf anchor
#                       com.apple/sbx_<uid> loaded, commands inside run as that account
#   guest-files         the guest cannot list your home nor write the share dir; you can read its workspace
#   shims               git and gh inside are sbx's shims (~/bin of the guest)
#   proxy               plain HTTP from inside reaches sbx's proxy: 403 with X-Sbx-Blocked for a host not allowed
#   direct-egress       TCP around the proxy (curl --noproxy) to the Internet and to a loopback port of yours fails
#   llm-route           $ANTHROPIC_BASE_URL is the loopback /llm/anthropic route, the key inside is the placeholder,
#                       and a request through it gets the provider's answer (2xx/4xx), not sbx's refusal
#   bridge-push         git push from inside goes out through the bridge to a token-demanding upstream on 127.0.0.1
#   no-secret-inside    that upstream's token (a fresh canary, held by `sbx secret`) is in no env, file or process
#                       argv the guest can see
#   secret-trust        a secret bound to httpbin.org (sbx secret set … --host httpbin.org --header 'Authorization:
#                       Bearer {}'): inside, its variable holds a placeholder shaped like the value; $SSL_CERT_FILE
#                       and $NODE_EXTRA_CA_CERTS (files in the sandbox's socket dir, 0644 though the daemon's umask is
#                       077) are readable; sbx's CA key is not (cat as the guest fails; on your side it is 0600 in a
#                       0700 dir, no ACL entry on either); curl inside, sending no Authorization, reaches
#                       https://httpbin.org/headers through the proxy, trusting sbx's CA only through those variables,
#                       and reads the header sbx added, holding its placeholder (the value was sent and masked back)
#   secret-never-shown  that value, nor a 12-character piece of it, is in `sbx logs` (text and --json), `sbx secret
#                       list --json` or the daemon's log, where the secret's name and its use (secret.used) are
#   ref-sync            a new host branch shows up inside as refs/remotes/host/<branch>, with no fetch by the guest,
#                       and the guest reads its commit (through the mirror's inherited ACEs)
#   pflog               a blocked direct connection becomes a `blocked-raw` entry in `sbx logs` (pflog0 made, its
#                       lines parsed); the monitor's `sudo -n tcpdump` stops when its sudo pid is signalled
#   open                `open x.command` and `open https://…` from inside fail, and nothing runs in your session
#   pasteboard          pbpaste inside does not see your pasteboard, and pbcopy inside does not change it
#   dns-tunnel          lookups from inside (dscacheutil, dig, host) do not reach a resolver: their unique names never
#                       show on the wire (tcpdump on port 53/5353), while the same lookup from you does
#   ping                ICMP from inside (ping 1.1.1.1) fails while it works from you
#   tmp-socket          a unix socket of yours in /tmp, mode 0777, cannot be connected to from inside
#   ipv6                IPv6 from inside fails: a listener of yours on [::1], and the Internet when your Mac has IPv6
#   pf-disabled         after `pfctl -d`, no direct connection from inside gets out (Seatbelt holds without pf), or
#                       the daemon notices within 20 s (its watchdog stops the sandbox or turns pf back on); what got
#                       out before it noticed is said
#   pf-reload           after the anchor's rules are flushed (what a reload does to runtime rules) and /etc/pf.conf is
#                       reloaded, they are back within 30 s (reapply); what got out meanwhile is said
#   crontab-after-stop  a crontab the guest installed does not fire after `sbx stop` (or cron refuses the guest
#                       outright: cron.deny)
#   remove              sbx rm: account, home, anchor and pf token file gone
#
# Not probed: clients on macOS that ignore SSL_CERT_FILE and ask the Keychain (Go programs such as gh, Swift and
# Apple's URLSession) do not trust sbx's CA (sbx adds nothing to a guest's Keychain); another sandbox's guest reading
# this one's trust files (one sandbox here; test/e2e/host/macos-secrets-two-uids.test.ts covers it with real uids).
# Not probed (by hand, with the daemon running, in a repo of yours): `sbx run claude smoke-agent -- --version` prints
# Claude Code's version (the first run fetches @anthropic-ai/claude-code-darwin-<arch> with progress); the guest cannot
# write /private/var/sbx/<you>/agents; `sbx run gemini smoke-agent -- --version` needs the Mac's Node.js 20+.
#
# A probe that runs something inside checks first that the command ran at all (a control line), so a sandbox that
# runs nothing never passes for one that refuses everything. A probe that needs something of your Mac (IPv6, ping,
# plain DNS) and cannot have it FAILs as "inconclusive" rather than passing.

# The scripts passed to `sh -c` run inside the sandbox and expand there, with their values as arguments: single quotes.
# shellcheck disable=SC2016
set -uo pipefail

PROBES=(kit create guest-files shims proxy direct-egress llm-route bridge-push no-secret-inside secret-trust secret-never-shown ref-sync pflog
  open pasteboard dns-tunnel ping tmp-socket ipv6 pf-disabled pf-reload crontab-after-stop remove)

NAME=smoke
RAN=sbx-smoke-ran
WHY=""
PASSED=0
FAILED=0
FAILED_NAMES=""
BG_PIDS=""
GUEST=""
GUEST_UID=""
GHOME=""
REPO=""
WORK=""
UPSTREAM_URL=""
SECRET_NAME=""
CANARY=""
SECRET_SET=""
BOUND_NAME=SBX_SMOKE_BOUND
BOUND_VALUE=""
BOUND_SET=""

# ── helpers ─────────────────────────────────────────────────────────────────────────────────────────────────────────

usage() {
  sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

# The last line a command logged, for a FAIL's reason.
last_line() { local l; l=$(grep -v '^[[:space:]]*$' "$1" 2>/dev/null | tail -1); echo "${l:-no output}"; }

rand() { LC_ALL=C tr -dc 'a-z0-9' </dev/urandom 2>/dev/null | head -c "${1:-12}"; }

# sbx from this checkout, in the smoke repo (sandbox names are per repo).
sbx_() { (cd "${REPO:-/}" && "$BUN" --no-env-file --config=/dev/null "$ROOT/src/cli/main.ts" "$@"); }

# A command inside the sandbox, through the daemon (`sbx exec` starts it when it is stopped).
inside() { sbx_ exec "$NAME" -- "$@"; }

# Whether a command inside ran at all (its output holds the control line).
ran() { printf '%s\n' "$1" | grep -qx "$RAN"; }

# The value of `key=value` in an inside command's output.
field() { printf '%s\n' "$1" | sed -n "s/^$2=//p" | head -1; }

need_sandbox() {
  [ -n "$GUEST" ] && return 0
  WHY="no sandbox to probe (the create probe failed)"
  return 1
}

# Starts a background process and remembers it for cleanup.
bg() { "$@" & BG_PIDS="$BG_PIDS $!"; LAST_PID=$!; }

stop_bg() { kill "$1" 2>/dev/null || sudo -n kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# A TCP or unix listener of yours that writes a line per connection to $2 (bun: no nc flavour differences).
listen_tcp() {
  bg "$BUN" -e 'const [h, p, f] = process.argv.slice(1); const fs = require("fs");
    Bun.listen({ hostname: h, port: Number(p), socket: { open(s) { fs.appendFileSync(f, "connected\n"); s.end(); }, data() {} } });
    setInterval(() => {}, 1 << 30);' "$1" "$2" "$3"
}
listen_unix() {
  bg "$BUN" -e 'const [path, f] = process.argv.slice(1); const fs = require("fs");
    Bun.listen({ unix: path, socket: { open(s) { fs.appendFileSync(f, "connected\n"); s.end(); }, data() {} } });
    setInterval(() => {}, 1 << 30);' "$1" "$2"
}

free_port() { echo $((20000 + RANDOM % 9000)); }

guests() { dscl . -list /Users 2>/dev/null | grep "^sbx_${TAG}_" | sort; }

pf_enabled() { sudo -n pfctl -s info 2>/dev/null | grep -q 'Status: Enabled'; }

anchor_rules() { sudo -n pfctl -a "com.apple/sbx_$GUEST_UID" -s rules 2>/dev/null | grep -c .; }

sandbox_state() {
  sbx_ list --json 2>/dev/null | "$BUN" -e 'const a = JSON.parse((await Bun.stdin.text()) || "[]"); const [n, r] = process.argv.slice(1);
    const s = a.find((x) => x.name === n && x.repo === r); console.log(s ? s.state : "absent");' "$NAME" "$REPO" 2>/dev/null || echo unknown
}

# A loop inside that tries a direct connection every second for $1 seconds, printing each HTTP code (000: blocked).
egress_loop() {
  bg inside sh -c 'echo "$1"; i=0; while [ "$i" -lt "$0" ]; do curl --noproxy "*" -s -m 2 -o /dev/null -w "%{http_code}\n" https://example.org/; i=$((i + 1)); sleep 1; done' "$1" "$RAN"
}

# Waits up to $2 seconds for a background job to end by itself, then stops it.
wait_bg() {
  local i
  for i in $(seq "$2"); do kill -0 "$1" 2>/dev/null || break; sleep 1; done
  stop_bg "$1"
}
egress_leaks() { grep -cE '^[1-5][0-9][0-9]$' "$1" 2>/dev/null || true; }

git_as_host() {
  SBX_SMOKE_TOKEN="$CANARY" git -c "credential.helper=!f() { echo username=smoke; echo \"password=\$SBX_SMOKE_TOKEN\"; }; f" "$@"
}

# ── probes: each returns 0 for PASS, else sets WHY ──────────────────────────────────────────────────────────────────

probe_kit() {
  if ! sbx_ service install >"$WORK/kit.log" 2>&1; then WHY="sbx service install failed ($(last_line "$WORK/kit.log"))"; return 1; fi
  local lib=/usr/local/libexec/sbx want got entry
  for entry in "$lib/bun 755" "$lib/privileged.js 644" "$lib/shims/git.ts 644" "/etc/sudoers.d/sbx_$TAG 440"; do
    want="root:wheel ${entry##* }"
    got=$(stat -f '%Su:%Sg %Lp' "${entry% *}" 2>/dev/null)
    if [ "$got" != "$want" ]; then WHY="${entry% *} is '${got:-missing}', not '$want'"; return 1; fi
  done
  if ! sudo -n launchctl print system/dev.sbx.privileged >/dev/null 2>&1; then WHY="the reapply LaunchDaemon dev.sbx.privileged is not loaded"; return 1; fi
  if ! launchctl print "gui/$MYUID/dev.sbx.daemon" 2>/dev/null | grep -q 'state = running'; then WHY="the daemon's LaunchAgent is not running"; return 1; fi
  if ! sbx_ status >/dev/null 2>&1; then WHY="sbx status: the daemon does not answer"; return 1; fi
}

probe_create() {
  [ -n "$REPO" ] || { WHY="no smoke repo"; return 1; }
  local before out
  before=$(guests)
  if ! sbx_ create "$NAME" >"$WORK/create.log" 2>&1; then WHY="sbx create failed ($(last_line "$WORK/create.log"))"; return 1; fi
  GUEST=$(comm -13 <(printf '%s\n' "$before") <(guests) | head -1)
  [ -n "$GUEST" ] || { WHY="no new sbx_${TAG}_* account after create"; return 1; }
  GUEST_UID=$(dscl . -read "/Users/$GUEST" UniqueID 2>/dev/null | awk '{print $2}')
  GHOME=/Users/$GUEST
  [ "$(dscl . -read "/Users/$GUEST" IsHidden 2>/dev/null | awk '{print $2}')" = 1 ] || { WHY="$GUEST is not hidden"; return 1; }
  if id -Gn "$GUEST" 2>/dev/null | tr ' ' '\n' | grep -qx admin; then WHY="$GUEST is an admin"; return 1; fi
  [ "$(anchor_rules)" -gt 0 ] || { WHY="anchor com.apple/sbx_$GUEST_UID has no rules"; return 1; }
  out=$(inside sh -c 'echo "$0"; echo "me=$(id -un)"' "$RAN" 2>&1)
  ran "$out" || { WHY="nothing ran inside: $out"; return 1; }
  [ "$(field "$out" me)" = "$GUEST" ] || { WHY="commands inside run as '$(field "$out" me)', not $GUEST"; return 1; }
}

probe_guest_files() {
  need_sandbox || return 1
  local out
  out=$(inside sh -c 'echo "$0"; ls "$1" >/dev/null 2>&1 && echo "home=read"; touch "$2/sbx-smoke" 2>/dev/null && echo "share=written"; true' \
    "$RAN" "$HOME" "/private/var/sbx/$TAG" 2>&1)
  ran "$out" || { WHY="nothing ran inside"; return 1; }
  [ -z "$(field "$out" home)" ] || { WHY="the guest lists your home"; return 1; }
  [ -z "$(field "$out" share)" ] || { WHY="the guest writes the share dir"; return 1; }
  ls "$GHOME/$(basename "$REPO")/.git" >/dev/null 2>&1 || { WHY="you cannot read the guest's workspace"; return 1; }
}

probe_shims() {
  need_sandbox || return 1
  local out
  out=$(inside sh -c 'echo "$0"; echo "git=$(command -v git)"; echo "gh=$(command -v gh)"' "$RAN" 2>&1)
  ran "$out" || { WHY="nothing ran inside"; return 1; }
  [ "$(field "$out" git)" = "$GHOME/bin/git" ] || { WHY="git inside is '$(field "$out" git)'"; return 1; }
  [ "$(field "$out" gh)" = "$GHOME/bin/gh" ] || { WHY="gh inside is '$(field "$out" gh)'"; return 1; }
}

probe_proxy() {
  need_sandbox || return 1
  local out
  out=$(inside sh -c 'echo "$0"; curl -s -m 15 -o /dev/null -D - http://example.org/' "$RAN" 2>&1)
  ran "$out" || { WHY="nothing ran inside"; return 1; }
  printf '%s\n' "$out" | grep -q '^HTTP/[0-9.]* 403' || { WHY="no 403 from the proxy: $(printf '%s\n' "$out" | grep -m1 '^HTTP')"; return 1; }
  printf '%s\n' "$out" | grep -qi '^x-sbx-blocked' || { WHY="the 403 has no X-Sbx-Blocked header"; return 1; }
}

probe_direct_egress() {
  need_sandbox || return 1
  local port out
  port=$(free_port)
  : >"$WORK/lo.txt"
  listen_tcp 127.0.0.1 "$port" "$WORK/lo.txt"
  sleep 1
  out=$(inside sh -c 'echo "$0"; curl --noproxy "*" -s -m 5 -o /dev/null https://example.org/; echo "net=$?"; curl --noproxy "*" -s -m 3 -o /dev/null "http://127.0.0.1:$1/"; echo "lo=$?"' "$RAN" "$port" 2>&1)
  sleep 1
  stop_bg "$LAST_PID"
  ran "$out" || { WHY="nothing ran inside"; return 1; }
  [ "$(field "$out" net)" != 0 ] || { WHY="curl --noproxy reached example.org"; return 1; }
  [ ! -s "$WORK/lo.txt" ] || { WHY="the guest connected to your 127.0.0.1:$port"; return 1; }
}

probe_llm_route() {
  need_sandbox || return 1
  local out base status
  out=$(inside sh -c 'echo "$0"; echo "base=$ANTHROPIC_BASE_URL"; echo "token=${ANTHROPIC_AUTH_TOKEN:-}"; echo "apikey=${ANTHROPIC_API_KEY:-}"
    curl -s -m 30 -o /dev/null -D - "$ANTHROPIC_BASE_URL/v1/models"' "$RAN" 2>&1)
  ran "$out" || { WHY="nothing ran inside"; return 1; }
  base=$(field "$out" base)
  [[ "$base" =~ ^http://127\.0\.0\.1:[0-9]+/llm/anthropic$ ]] || { WHY="ANTHROPIC_BASE_URL is '$base'"; return 1; }
  local k keys=""
  for k in "$(field "$out" token)" "$(field "$out" apikey)"; do
    [ -z "$k" ] && continue
    [ "$k" = sbx-placeholder ] || { WHY="an Anthropic key inside is not the placeholder"; return 1; }
    keys=yes
  done
  [ -n "$keys" ] || { WHY="no placeholder key inside (ANTHROPIC_AUTH_TOKEN / ANTHROPIC_API_KEY)"; return 1; }
  status=$(printf '%s\n' "$out" | grep -m1 '^HTTP/' | awk '{print $2}')
  [[ "$status" =~ ^[24][0-9][0-9]$ ]] || { WHY="the LLM route answered '${status:-nothing}'"; return 1; }
  if printf '%s\n' "$out" | grep -qi '^x-sbx-blocked'; then WHY="the LLM route was refused by the proxy"; return 1; fi
  WHY="the provider answered $status"
}

probe_bridge_push() {
  need_sandbox || return 1
  [ -n "$UPSTREAM_URL" ] || { WHY="the loopback upstream did not start (see $WORK/upstream.log)"; return 1; }
  local out sha remote
  out=$(inside sh -c 'echo "$0"; git checkout -q -b smoke-push && echo smoke >smoke.txt && git add smoke.txt &&
    git -c user.email=agent@example.invalid -c user.name=agent commit -qm "sbx smoke" && echo "sha=$(git rev-parse HEAD)";
    git push -q origin HEAD:refs/heads/sbx/smoke/push 2>&1; echo "push=$?"' "$RAN" 2>&1)
  ran "$out" || { WHY="nothing ran inside"; return 1; }
  sha=$(field "$out" sha)
  [ "$(field "$out" push)" = 0 ] || { WHY="git push inside failed: $(printf '%s\n' "$out" | grep -v "^$RAN" | head -2 | tr '\n' ' ')"; return 1; }
  remote=$(git_as_host ls-remote "$UPSTREAM_URL" refs/heads/sbx/smoke/push 2>/dev/null | awk '{print $1}')
  if [ -z "$sha" ] || [ "$remote" != "$sha" ]; then WHY="the upstream has '${remote:-nothing}', the guest pushed '${sha:-nothing}'"; return 1; fi
}

probe_no_secret_inside() {
  need_sandbox || return 1
  [ -n "$SECRET_SET" ] || { WHY="the canary token was never stored with sbx secret (see the setup lines above)"; return 1; }
  local out
  # The canary goes in as two halves (joined only inside, never in any argv), and is looked for by awk, whose argv
  # does not hold it either.
  out=$(inside sh -c 'x="$1$2"; echo "$0"
    echo "env=$(env | X="$x" awk "index(\$0, ENVIRON[\"X\"]) {n++} END {print n + 0}")"
    echo "ps=$(ps -axww -o command= | X="$x" awk "index(\$0, ENVIRON[\"X\"]) {n++} END {print n + 0}")"
    echo "files=$(grep -rlsF -- "$x" "$HOME" /tmp/ /private/tmp/ "${TMPDIR:-/tmp}" 2>/dev/null | head -3 | tr "\n" " ")"' \
    "$RAN" "${CANARY:0:12}" "${CANARY:12}" 2>&1)
  ran "$out" || { WHY="nothing ran inside"; return 1; }
  [ "$(field "$out" env)" = 0 ] || { WHY="the token is in the guest's environment"; return 1; }
  [ "$(field "$out" ps)" = 0 ] || { WHY="the token is in a process argv the guest sees"; return 1; }
  [ -z "$(field "$out" files | tr -d ' ')" ] || { WHY="the token is in files the guest reads: $(field "$out" files)"; return 1; }
}

# sbx's state dir as the CLI and the daemon find it (XDG_STATE_HOME, else ~/.local/state).
state_dir() { echo "${XDG_STATE_HOME:-$HOME/.local/state}/sbx"; }

# The ACL entries `ls -le` lists for a path (none: empty): the lines after the first.
aces() { local l; l=$(ls -lde "$1" 2>/dev/null) || return 0; printf '%s\n' "$l" | sed 1d; }

probe_secret_trust() {
  need_sandbox || return 1
  [ -n "$BOUND_SET" ] || { WHY="the bound secret was never set (sbx secret set $BOUND_NAME --host httpbin.org failed)"; return 1; }
  sbx_ allow httpbin.org --sandbox "$NAME" >/dev/null 2>&1 || { WHY="sbx allow httpbin.org --sandbox $NAME failed"; return 1; }
  local key out v bundle dir f mode
  key="$(state_dir)/tls/ca.key"
  [ -f "$key" ] || { WHY="no CA key at $key (the daemon makes it for the first bound secret)"; return 1; }
  # Its variable is named by $1 (the guest expands it); no Authorization is sent: the proxy adds it.
  out=$(inside sh -c 'echo "$0"; eval "v=\${$1:-}"; echo "var=$v"; echo "bundle=${SSL_CERT_FILE:-}"
    echo "cert=$(head -c 27 "${SSL_CERT_FILE:-/nonexistent}" 2>/dev/null)"; echo "node=$(head -c 27 "${NODE_EXTRA_CA_CERTS:-/nonexistent}" 2>/dev/null)"
    cat "$2" >/dev/null 2>&1 && echo "key=read"
    echo "auth=$(curl -s -m 30 https://httpbin.org/headers | sed -n "s/.*\"Authorization\": *\"Bearer \([^\"]*\)\".*/\1/p" | head -1)"' \
    "$RAN" "$BOUND_NAME" "$key" 2>&1)
  ran "$out" || { WHY="nothing ran inside"; return 1; }
  v=$(field "$out" var)
  [ -n "$v" ] || { WHY="\$$BOUND_NAME is not set inside"; return 1; }
  [ "$v" != "$BOUND_VALUE" ] || { WHY="\$$BOUND_NAME inside is the value itself"; return 1; }
  [ "${#v}" = "${#BOUND_VALUE}" ] || { WHY="the placeholder is ${#v} characters, the value ${#BOUND_VALUE}"; return 1; }
  bundle=$(field "$out" bundle)
  [ -n "$bundle" ] || { WHY="SSL_CERT_FILE is not set inside"; return 1; }
  [ "$(field "$out" cert)" = "-----BEGIN CERTIFICATE-----" ] || { WHY="the guest cannot read \$SSL_CERT_FILE ($bundle)"; return 1; }
  [ "$(field "$out" node)" = "-----BEGIN CERTIFICATE-----" ] || { WHY="the guest cannot read \$NODE_EXTRA_CA_CERTS"; return 1; }
  [ -z "$(field "$out" key)" ] || { WHY="the guest read sbx's CA key $key"; return 1; }
  dir=$(dirname "$bundle")
  for f in ca.pem ca-bundle.pem; do
    mode=$(stat -f %Lp "$dir/$f" 2>/dev/null)
    [ "$mode" = 644 ] || { WHY="$dir/$f has mode '${mode:-missing}', not 644"; return 1; }
  done
  [ "$(stat -f %Lp "$key" 2>/dev/null)" = 600 ] || { WHY="$key is not 0600"; return 1; }
  [ "$(stat -f %Lp "$(dirname "$key")" 2>/dev/null)" = 700 ] || { WHY="$(dirname "$key") is not 0700"; return 1; }
  [ -z "$(aces "$key")$(aces "$(dirname "$key")")" ] || { WHY="sbx's CA key or its dir has an ACL entry: $(aces "$key") $(aces "$(dirname "$key")")"; return 1; }
  case "$(field "$out" auth)" in
    "") WHY="curl inside got no Authorization back from httpbin.org/headers (TLS to sbx's proxy not trusted, or not terminated)"; return 1 ;;
    "$v") ;;
    "$BOUND_VALUE") WHY="the value came back to the guest unmasked"; return 1 ;;
    *) WHY="httpbin.org saw an Authorization that is neither the value nor the placeholder"; return 1 ;;
  esac
}

probe_secret_never_shown() {
  need_sandbox || return 1
  [ -n "$BOUND_SET" ] || { WHY="the bound secret was never set"; return 1; }
  local piece=${BOUND_VALUE:10:12} what text
  sbx_ logs --json --since 30m >"$WORK/logs.json" 2>&1
  sbx_ logs --since 30m >"$WORK/logs.txt" 2>&1
  sbx_ secret list --json >"$WORK/secrets.json" 2>&1
  if ! grep -q '"secret.used"' "$WORK/logs.json" || ! grep -q "\"secret\":\"$BOUND_NAME\"" "$WORK/logs.json"; then
    WHY="sbx logs --json has no secret.used entry naming $BOUND_NAME (run secret-trust first)"
    return 1
  fi
  grep -q "\"$BOUND_NAME\"" "$WORK/secrets.json" || { WHY="sbx secret list --json does not name $BOUND_NAME"; return 1; }
  for what in logs.json logs.txt secrets.json "$(state_dir)/daemon.log"; do
    text="$what"
    case "$what" in /*) ;; *) what="$WORK/$what" ;; esac
    if grep -qF -- "$piece" "$what" 2>/dev/null; then WHY="the value (a piece of it) is in $text"; return 1; fi
  done
}

probe_ref_sync() {
  need_sandbox || return 1
  local sha i got=""
  sha=$(git -C "$REPO" -c user.email=smoke@example.invalid -c user.name=smoke commit-tree "HEAD^{tree}" -p HEAD -m "sbx smoke: ref sync")
  if [ -z "$sha" ] || ! git -C "$REPO" branch -f sbx-smoke-sync "$sha"; then WHY="could not make a host branch"; return 1; fi
  for i in $(seq 15); do
    got=$(inside git rev-parse -q --verify refs/remotes/host/sbx-smoke-sync 2>/dev/null | tail -1)
    [ "$got" = "$sha" ] && { WHY="after about $((i * 2)) s"; break; }
    sleep 2
  done
  git -C "$REPO" branch -D sbx-smoke-sync >/dev/null 2>&1
  [ "$got" = "$sha" ] || { WHY="refs/remotes/host/sbx-smoke-sync inside is '${got:-absent}' after 30 s"; return 1; }
  # Its object came through the mirror (whose inherited ACEs let the guest read what the fetch wrote).
  [ "$(inside git cat-file -t "$sha" 2>/dev/null | tail -1)" = commit ] || { WHY="the ref is there but the guest cannot read its commit"; return 1; }
}

probe_pflog() {
  need_sandbox || return 1
  local i found="" mon
  inside sh -c 'curl --noproxy "*" -s -m 3 -o /dev/null https://example.org/' >/dev/null 2>&1
  for i in $(seq 10); do
    if sbx_ logs --sandbox "$NAME" --kind egress --since 2m 2>/dev/null | grep -q 'blocked-raw'; then found=yes; break; fi
    sleep 1
  done
  [ -n "$found" ] || { WHY="no blocked-raw entry in sbx logs within 10 s (is tcpdump on pflog0 running? sbx logs --kind daemon)"; return 1; }
  # The daemon's monitor, as the sudoers rule allows it (no password), stops when its sudo pid is signalled.
  bg sudo -n /usr/sbin/tcpdump -l -n -e -ttt -i pflog0 >/dev/null 2>&1
  mon=$LAST_PID
  sleep 2
  kill -0 "$mon" 2>/dev/null || { WHY="sudo -n tcpdump … -i pflog0 did not start (the sudoers rule?)"; return 1; }
  kill "$mon" 2>/dev/null
  sleep 1
  if kill -0 "$mon" 2>/dev/null; then WHY="the sudo tcpdump did not stop when you signalled it"; sudo -n kill "$mon" 2>/dev/null; return 1; fi
}

probe_open() {
  need_sandbox || return 1
  local marker out
  marker=/tmp/sbx-smoke-opened-$(rand)
  out=$(inside sh -c 'echo "$0"; f="$HOME/sbx-smoke.command"; printf "#!/bin/sh\ntouch %s\n" "$1" >"$f"; chmod +x "$f"
    open "$f" >/dev/null 2>&1; echo "command=$?"; open -g "https://sbx-smoke.invalid/" >/dev/null 2>&1; echo "url=$?"' "$RAN" "$marker" 2>&1)
  sleep 5
  ran "$out" || { WHY="nothing ran inside"; return 1; }
  if [ -e "$marker" ]; then WHY="x.command opened from inside ran as $(stat -f %Su "$marker"), in your session"; rm -f "$marker"; return 1; fi
  [ "$(field "$out" command)" != 0 ] || { WHY="open x.command succeeded inside"; return 1; }
  [ "$(field "$out" url)" != 0 ] || { WHY="open https://… succeeded inside"; return 1; }
}

probe_pasteboard() {
  need_sandbox || return 1
  local saved marker out now
  saved=$(pbpaste 2>/dev/null)
  marker=sbx-smoke-clip-$(rand)
  printf %s "$marker" | pbcopy
  out=$(inside sh -c 'echo "$0"; echo "paste=$(pbpaste 2>/dev/null)"; echo guest-wrote | pbcopy 2>/dev/null; echo "copy=$?"' "$RAN" 2>&1)
  now=$(pbpaste 2>/dev/null)
  printf %s "$saved" | pbcopy
  ran "$out" || { WHY="nothing ran inside"; return 1; }
  [ "$(field "$out" paste)" != "$marker" ] || { WHY="pbpaste inside read your pasteboard"; return 1; }
  [ "$now" = "$marker" ] || { WHY="pbcopy inside changed your pasteboard"; return 1; }
}

probe_dns_tunnel() {
  need_sandbox || return 1
  local ifc label out
  ifc=$(route -n get default 2>/dev/null | awk '/interface:/{print $2}')
  [ -n "$ifc" ] || { WHY="inconclusive: no default route to watch"; return 1; }
  label=sbx-smoke-$(rand)
  bg sudo -n tcpdump -l -n -i "$ifc" 'port 53 or port 5353' >"$WORK/dns.txt" 2>/dev/null
  local cap=$LAST_PID
  sleep 2
  out=$(inside sh -c 'echo "$0"; dscacheutil -q host -a name "$1.example.com"; dig +time=2 +tries=1 "$1.example.net" >/dev/null 2>&1
    dig +time=2 +tries=1 @1.1.1.1 "$1.example.org" >/dev/null 2>&1; host -W 2 "$1.example.edu" >/dev/null 2>&1; true' "$RAN" "$label" 2>&1)
  dscacheutil -q host -a name "$label-host.example.com" >/dev/null 2>&1
  sleep 3
  stop_bg "$cap"
  ran "$out" || { WHY="nothing ran inside"; return 1; }
  grep -q "$label-host" "$WORK/dns.txt" || { WHY="inconclusive: your own lookup did not show on port 53 of $ifc (encrypted DNS?)"; return 1; }
  if grep -v "$label-host" "$WORK/dns.txt" | grep -q "$label"; then WHY="a name looked up inside went out: $(grep -v "$label-host" "$WORK/dns.txt" | grep -m1 "$label")"; return 1; fi
  if printf '%s\n' "$out" | grep -q 'ip_address'; then WHY="dscacheutil inside got an address"; return 1; fi
}

probe_ping() {
  need_sandbox || return 1
  local out
  ping -c 1 -t 3 1.1.1.1 >/dev/null 2>&1 || { WHY="inconclusive: you cannot ping 1.1.1.1 from this Mac either"; return 1; }
  out=$(inside sh -c 'echo "$0"; ping -c 1 -t 3 1.1.1.1 >/dev/null 2>&1; echo "ping=$?"' "$RAN" 2>&1)
  ran "$out" || { WHY="nothing ran inside"; return 1; }
  [ "$(field "$out" ping)" != 0 ] || { WHY="ping 1.1.1.1 got a reply from inside"; return 1; }
}

probe_tmp_socket() {
  need_sandbox || return 1
  local sock out i
  sock=/tmp/sbx-smoke-$(rand 8).sock
  : >"$WORK/sock.txt"
  listen_unix "$sock" "$WORK/sock.txt"
  for i in 1 2 3 4 5; do [ -S "$sock" ] && break; sleep 1; done
  [ -S "$sock" ] || { WHY="could not make $sock"; stop_bg "$LAST_PID"; return 1; }
  chmod 777 "$sock"
  out=$(inside sh -c 'echo "$0"; echo hi | nc -U -w 2 "$1" >/dev/null 2>&1; echo "nc=$?"' "$RAN" "$sock" 2>&1)
  sleep 1
  stop_bg "$LAST_PID"
  rm -f "$sock"
  ran "$out" || { WHY="nothing ran inside"; return 1; }
  [ ! -s "$WORK/sock.txt" ] || { WHY="the guest connected to your socket $sock (mode 0777)"; return 1; }
}

probe_ipv6() {
  need_sandbox || return 1
  local port out global=no
  port=$(free_port)
  : >"$WORK/lo6.txt"
  listen_tcp ::1 "$port" "$WORK/lo6.txt"
  sleep 1
  curl -6 -s -m 5 -o /dev/null "https://[2606:4700:4700::1111]/" 2>/dev/null && global=yes
  out=$(inside sh -c 'echo "$0"; curl --noproxy "*" -s -m 3 -o /dev/null "http://[::1]:$1/"; echo "lo6=$?"
    curl -6 --noproxy "*" -s -m 5 -o /dev/null "https://[2606:4700:4700::1111]/"; echo "net6=$?"' "$RAN" "$port" 2>&1)
  sleep 1
  stop_bg "$LAST_PID"
  ran "$out" || { WHY="nothing ran inside"; return 1; }
  [ ! -s "$WORK/lo6.txt" ] || { WHY="the guest connected to your [::1]:$port"; return 1; }
  if [ "$global" = yes ]; then
    [ "$(field "$out" net6)" != 0 ] || { WHY="IPv6 to the Internet got out from inside"; return 1; }
  else
    WHY="[::1] only: this Mac has no IPv6 to the Internet"
  fi
}

probe_pf_disabled() {
  need_sandbox || return 1
  local i noticed="" state leaks loop
  inside true >/dev/null 2>&1
  egress_loop 25 >"$WORK/pfd.txt" 2>&1
  loop=$LAST_PID
  sleep 3
  sudo -n pfctl -d >/dev/null 2>&1 || { WHY="sudo pfctl -d failed"; stop_bg "$loop"; return 1; }
  for i in $(seq 20); do
    sleep 1
    state=$(sandbox_state)
    if [ "$state" != running ]; then noticed="the daemon noticed: the sandbox was $state after ${i} s"; break; fi
    if pf_enabled && [ "$(anchor_rules)" -gt 0 ]; then noticed="the daemon noticed: pf was on again after ${i} s"; break; fi
  done
  wait_bg "$loop" 30
  pf_enabled || sudo -n pfctl -E >/dev/null 2>&1
  grep -qx "$RAN" "$WORK/pfd.txt" || { WHY="nothing ran inside"; return 1; }
  leaks=$(egress_leaks "$WORK/pfd.txt")
  # Blocked (nothing got out: Seatbelt holds without pf) or noticed (the watchdog stopped it or put pf back).
  if [ "$leaks" = 0 ]; then WHY="blocked with pf off${noticed:+; $noticed}"; return 0; fi
  [ -n "$noticed" ] || { WHY="$leaks direct connections got out with pf off, and the daemon did not notice within 20 s"; return 1; }
  WHY="$noticed; $leaks direct connections got out before that"
}

probe_pf_reload() {
  need_sandbox || return 1
  local i back="" leaks loop
  inside true >/dev/null 2>&1
  egress_loop 35 >"$WORK/pfr.txt" 2>&1
  loop=$LAST_PID
  sleep 3
  # What a reload does to runtime rules (they vanish), then the reload itself, which the reapply LaunchDaemon watches.
  sudo -n pfctl -a "com.apple/sbx_$GUEST_UID" -F rules >/dev/null 2>&1
  sudo -n pfctl -f /etc/pf.conf >/dev/null 2>&1
  sudo -n touch /etc/pf.conf
  for i in $(seq 30); do
    sleep 1
    if pf_enabled && [ "$(anchor_rules)" -gt 0 ]; then back="rules back after ${i} s"; break; fi
  done
  wait_bg "$loop" 40
  grep -qx "$RAN" "$WORK/pfr.txt" || { WHY="nothing ran inside"; return 1; }
  [ -n "$back" ] || { WHY="anchor com.apple/sbx_$GUEST_UID still empty (or pf off) 30 s after the reload"; return 1; }
  leaks=$(egress_leaks "$WORK/pfr.txt")
  WHY="$back${leaks:+; $leaks direct connections got out meanwhile}"
  [ "$leaks" = 0 ] && WHY=$back
  return 0
}

probe_crontab_after_stop() {
  need_sandbox || return 1
  local out before after left
  out=$(inside sh -c 'echo "$0"; printf "* * * * * /bin/date >>%s/cron-fired\n" "$HOME" | crontab - 2>/dev/null; echo "crontab=$?"' "$RAN" 2>&1)
  ran "$out" || { WHY="nothing ran inside"; return 1; }
  if [ "$(field "$out" crontab)" != 0 ]; then WHY="a guest cannot install a crontab at all"; return 0; fi
  sbx_ stop "$NAME" >/dev/null 2>&1 || { WHY="sbx stop failed"; return 1; }
  before=$(sudo -n cat "$GHOME/cron-fired" 2>/dev/null | wc -l | tr -d ' ')
  sleep 125
  after=$(sudo -n cat "$GHOME/cron-fired" 2>/dev/null | wc -l | tr -d ' ')
  left=$(sudo -n crontab -u "$GUEST" -l 2>/dev/null | grep -c cron-fired)
  [ "$after" = "$before" ] || { WHY="the guest's crontab fired $((after - before)) times after stop"; return 1; }
  [ "$left" = 0 ] || WHY="did not fire, but the crontab is still installed"
}

probe_remove() {
  need_sandbox || return 1
  sbx_ rm --force "$NAME" >"$WORK/rm.log" 2>&1 || { WHY="sbx rm failed ($(last_line "$WORK/rm.log"))"; return 1; }
  if dscl . -read "/Users/$GUEST" UniqueID >/dev/null 2>&1; then WHY="account $GUEST left"; return 1; fi
  [ ! -e "$GHOME" ] || { WHY="home $GHOME left"; return 1; }
  if sudo -n pfctl -a com.apple -s Anchors 2>/dev/null | grep -q "sbx_$GUEST_UID\$"; then WHY="anchor com.apple/sbx_$GUEST_UID left"; return 1; fi
  if sudo -n ls /private/var/db/sbx/pf 2>/dev/null | grep -q "^sbx_$GUEST_UID\."; then WHY="pf records of uid $GUEST_UID left"; return 1; fi
  GUEST=""
}

# ── setup, the run, cleanup ─────────────────────────────────────────────────────────────────────────────────────────

setup() {
  ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
  BUN=${SBX_SMOKE_BUN:-$(command -v bun || echo bun)}
  MYUID=$(id -u)
  TAG=$(id -un | tr '[:upper:]' '[:lower:]' | tr -cd 'a-z0-9' | cut -c1-16)
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/sbx-smoke.XXXXXX") || return 1
  echo "macos-smoke: sudo asks for your password once (pf, tcpdump, the root kit)"
  sudo -v || echo "macos-smoke: no sudo: the probes that need root will fail"
  # The upstream: bare repos over git smart HTTP on 127.0.0.1, answering only the canary token (given in its
  # environment, never its argv: a guest may list every process's argv).
  CANARY=sbxsmoke$(rand 24)
  SBX_SMOKE_TOKEN=$CANARY bg "$BUN" -e '
    const [root, lib, out] = process.argv.slice(1);
    const { startUpstream } = await import(lib + "/src/demo/upstream.ts");
    const { createExec } = await import(lib + "/src/sys/exec.ts");
    const u = startUpstream(createExec({ PATH: process.env.PATH }), root, process.env.SBX_SMOKE_TOKEN, process.env.PATH);
    await u.createRepo("smoke");
    await Bun.write(out, u.repoUrl("smoke") + "\n" + u.secretName + "\n");
    setInterval(() => {}, 1 << 30);' "$WORK/upstream" "$ROOT" "$WORK/upstream.txt" >"$WORK/upstream.log" 2>&1
  local up=$LAST_PID i
  for i in $(seq 20); do
    [ -s "$WORK/upstream.txt" ] && break
    kill -0 "$up" 2>/dev/null || break
    sleep 0.5
  done
  if [ -s "$WORK/upstream.txt" ]; then
    UPSTREAM_URL=$(sed -n 1p "$WORK/upstream.txt")
    SECRET_NAME=$(sed -n 2p "$WORK/upstream.txt")
  fi
  # A fresh repo outside ~/Desktop, ~/Documents and ~/Downloads (TCC), whose origin is that upstream.
  mkdir -p "$WORK/repo" && REPO=$(cd "$WORK/repo" && pwd -P)
  git -C "$REPO" init -q -b main &&
    git -C "$REPO" -c user.email=smoke@example.invalid -c user.name=smoke commit -q --allow-empty -m "sbx smoke" || REPO=""
  if [ -n "$REPO" ] && [ -n "$UPSTREAM_URL" ]; then
    git -C "$REPO" remote add origin "$UPSTREAM_URL"
    git_as_host -C "$REPO" push -q origin main >/dev/null 2>&1 || echo "macos-smoke: could not push main to the upstream"
    if printf %s "$CANARY" | sbx_ secret set "$SECRET_NAME" >/dev/null 2>&1; then SECRET_SET=yes; else echo "macos-smoke: sbx secret set failed"; fi
    # A secret bound to httpbin.org, its header added by the proxy (its value: random, read from stdin, never an argv).
    BOUND_VALUE=sbxbound$(rand 32)
    if printf %s "$BOUND_VALUE" | sbx_ secret set "$BOUND_NAME" --host httpbin.org --header 'Authorization: Bearer {}' >/dev/null 2>&1; then
      BOUND_SET=yes
    else
      echo "macos-smoke: sbx secret set $BOUND_NAME --host httpbin.org failed"
    fi
  fi
}

cleanup() {
  local p
  [ -n "$GUEST" ] && sbx_ rm --force "$NAME" >/dev/null 2>&1
  [ -n "$SECRET_NAME" ] && sbx_ secret rm "$SECRET_NAME" >/dev/null 2>&1
  [ -n "$BOUND_SET" ] && sbx_ secret rm "$BOUND_NAME" >/dev/null 2>&1
  for p in $BG_PIDS; do kill "$p" 2>/dev/null; done
  [ -n "$WORK" ] && rm -rf "$WORK"
  return 0
}

run_probe() {
  local name=$1
  WHY=""
  sudo -n -v 2>/dev/null
  if "probe_${name//-/_}"; then
    echo "PASS $name${WHY:+ ($WHY)}"
    PASSED=$((PASSED + 1))
  else
    echo "FAIL $name${WHY:+: $WHY}"
    FAILED=$((FAILED + 1))
    FAILED_NAMES="$FAILED_NAMES $name"
  fi
}

# Runs every probe; returns the number that failed.
run_probes() {
  local p
  for p in "${PROBES[@]}"; do run_probe "$p"; done
  echo "macos-smoke: $PASSED passed, $FAILED failed${FAILED_NAMES:+ (${FAILED_NAMES# })}"
  return "$FAILED"
}

main() {
  case "${1:-}" in
    --list) printf '%s\n' "${PROBES[@]}"; return 0 ;;
    -h | --help) usage; return 0 ;;
    "") ;;
    *) usage >&2; return 125 ;;
  esac
  [ "$(uname -s)" = Darwin ] || { echo "macos-smoke: this is for macOS only" >&2; return 125; }
  trap cleanup EXIT
  setup
  run_probes
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  main "$@"
  exit $?
fi
