#!/bin/bash
# macOS backend smoke test for a real Mac. NOT RUN IN CI: these machines run Linux, and every result below was
# checked only against the fake executor. Expected output is written after each step as `# expect:` lines.
#
# What it does (as your normal admin user; it asks for your sudo password once to install the helper):
#   1. `sbx service install`: the root kit (helper, Bun, shims in /usr/local/libexec/sbx; the sudoers rule, checked with
#      visudo; the reapply LaunchDaemon) and the daemon's LaunchAgent
#   2. creates sandbox "smoke" (a hidden user sbx_<you>_<id>, pf anchor com.apple/sbx_<uid>)
#   3. curl through the proxy port is allowed; `curl --noproxy '*'` is blocked by pf; DNS over UDP is blocked
#   4. the guest cannot read your home; the host can read the guest's workspace
#   4b. the blocked attempt on pflog0, parsed as the daemon's pflog audit parses it (checks the line format assumed)
#   5. `git` inside resolves to the ~/bin shim (a push through the bridge needs `sbx daemon`: see step 6)
#   6b. host → clone ref sync: a new host branch reaches the guest's refs/remotes/host/* via the mirror
#   7. deletes the sandbox and checks nothing is left (user, home, anchor, token)
#
# Usage: scripts/macos-smoke.sh            (from the repo root, with bun on PATH and `chmod 700 ~` done)
set -euo pipefail

[ "$(uname -s)" = Darwin ] || { echo "macos-smoke: this is for macOS only" >&2; exit 2; }
cd "$(dirname "$0")/.."
ME=$(id -un)
PORT=${SBX_SMOKE_PORT:-17345}
LIB=/usr/local/libexec/sbx
BUN=$(command -v bun)
REPO=$(pwd -P)
RUNTIME=/tmp/sbx-$(id -u)
STUB_PID=

cleanup() {
  [ -n "$STUB_PID" ] && kill "$STUB_PID" 2>/dev/null || true
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }

step "1. sbx service install: the root kit (helper, Bun, shims, sudoers rule, LaunchDaemon), then the daemon's LaunchAgent"
"$BUN" src/cli/main.ts service install 2>&1 | sed "s#$HOME#~#"
# expect: the sudoers rule sbx installs as /etc/sudoers.d/sbx_<you> (checked with visudo first; sudo may ask for your password):
# expect: (the rule: test/golden/macos/sudoers-alice with your name)          [sudo asks for your password here]
# expect: installed the macOS root kit in /usr/local/libexec/sbx (helper, guests' Bun and shims), /etc/sudoers.d/sbx_<you> and /Library/LaunchDaemons/dev.sbx.privileged.plist
# expect: installed launchd service ~/Library/LaunchAgents/dev.sbx.daemon.plist; the controller now starts at login
"$BUN" src/cli/main.ts service status | sed -E 's/\(.*\)/(…)/'
# expect: launchd: installed (…); active; running; root kit installed
stat -f '%Su:%Sg %Lp %N' "$LIB/bun" "$LIB/privileged.js" "$LIB/shims/git.ts" "/etc/sudoers.d/sbx_$(echo "$ME" | tr -cd 'a-z0-9')"
# expect: root:wheel 755 /usr/local/libexec/sbx/bun
# expect: root:wheel 644 /usr/local/libexec/sbx/privileged.js
# expect: root:wheel 644 /usr/local/libexec/sbx/shims/git.ts
# expect: root:wheel 440 /etc/sudoers.d/sbx_<you>
sudo launchctl print system/dev.sbx.privileged | grep -m1 -E '^\s*(state|last exit code) ='
# expect: state = not running      (it ran reapply-all at load and exited; it runs again when /etc/pf.conf changes)
# The steps below drive the backend directly with a sandbox the daemon's store does not know: the daemon would clean
# its guest up as an orphan, so its agent stays out of the way until the end.
launchctl bootout "gui/$(id -u)/dev.sbx.daemon"
stat -f %Lp "$HOME"
# expect: 700

step "2. a stand-in proxy on 127.0.0.1:$PORT (the daemon hosts the real one)"
"$BUN" -e "Bun.serve({hostname: '127.0.0.1', port: $PORT, fetch: (r) => new Response('sbx-proxy-ok ' + new URL(r.url).hostname + '\n')})" &
STUB_PID=$!
sleep 1

DRIVER='
import { createExec } from "./src/sys/exec";
import { MacosBackend } from "./src/drivers/macos/backend";
import { sudoRoot } from "./src/drivers/macos/privileged";
import { kitHelperArgv, kitPaths } from "./src/drivers/macos/install";
import { hostGitEnv, hostRefsArgv, parseHostRefs } from "./src/sync/git-argv";
const [verb, me, port, repo, runtime, lib] = process.argv.slice(1);
const exec = createExec({ PATH: "/usr/bin:/bin:/usr/sbin:/sbin" });
const b = new MacosBackend({ exec, root: sudoRoot(exec, kitHelperArgv(kitPaths(me))), hostUser: me, runtimeDir: runtime, runtime: lib + "/bun", shimDir: lib + "/shims" });
const id = "5m0ke0000001", dir = runtime + "/sb/" + id;
const spec = { id, name: "smoke", repo, dir: "/tmp", hostUser: { name: me, uid: process.getuid(), gid: process.getgid(), home: process.env.HOME, shell: "/bin/zsh" },
  sockets: { dir, proxy: dir + "/proxy.sock", bridge: dir + "/bridge.sock" }, env: { TERM: "xterm-256color" }, overlays: [], options: { proxyPort: Number(port) } };
if (verb === "apply") console.log(JSON.stringify(await b.apply(spec)), JSON.stringify(await b.apply(spec)));
if (verb === "inspect") console.log((await b.inspect(spec)).phase);
if (verb === "remove") console.log(JSON.stringify(await b.remove(spec)), JSON.stringify(await b.remove(spec)));
if (verb === "cleanup") console.log(JSON.stringify(await b.cleanup(new Set())));
if (verb === "refsync") {
  const refs = await exec.run(hostRefsArgv(repo), { env: hostGitEnv(), replaceEnv: true });
  const m = await b.updateMirror(spec);
  const s = await b.syncHostRefs(spec, parseHostRefs(refs.stdout));
  console.log(m.exitCode, s.exitCode, (m.stderr + s.stderr).trim());
}
'
drive() { "$BUN" -e "$DRIVER" "$1" "$ME" "$PORT" "$REPO" "$RUNTIME" "$LIB"; }
GUEST="sbx_$(echo "$ME" | tr -cd 'a-z0-9')_5m0ke0000001"
as_guest() { sudo -n -H -u "$GUEST" -i -- "$@"; }

step "3. create (apply twice: the second changes nothing)"
drive apply
# expect: {"changed":true} {"changed":false}
drive inspect
# expect: running
dscl . -read "/Users/$GUEST" IsHidden UserShell | sort
# expect: IsHidden: 1
# expect: UserShell: /bin/zsh
id "$GUEST" | tr ' ' '\n' | grep -c '(admin)' || true
# expect: 0
ls -ldO "/Users/$GUEST" | awk '{print $1, $5}'
# expect: drwx------+ hidden
UID_=$(id -u "$GUEST")
sudo pfctl -a com.apple -s Anchors | grep -x "  com.apple/sbx_$UID_" | tr -d ' '
# expect: com.apple/sbx_<uid>
sudo pfctl -a "com.apple/sbx_$UID_" -s rules | wc -l | tr -d ' '
# expect: 3

step "4. network from inside"
as_guest curl -s -m 5 http://example.org/
# expect: sbx-proxy-ok example.org          (HTTP_PROXY from ~/.zshenv → the loopback port pf allows)
as_guest curl -s -m 5 --noproxy '*' -o /dev/null -w '%{http_code}\n' https://example.org/ || echo "exit $?"
# expect: 000
# expect: exit 7          (pf drops the SYN; curl reports "Couldn't connect" or, after -m 5, exit 28)
as_guest curl -s -m 5 --noproxy '*' -o /dev/null http://127.0.0.1:22/ || echo "exit $?"
# expect: exit 7          (other loopback ports are blocked too)
as_guest /usr/bin/dig +time=2 +tries=1 @1.1.1.1 example.org >/dev/null 2>&1 || echo "dns blocked"
# expect: dns blocked     (mDNSResponder lookups are NOT blocked: it runs as another user — see DESIGN.md)

step "4b. pflog0: the blocked attempt as the daemon's monitor sees it (exact argv of the sudoers rule)"
sudo -n /usr/sbin/tcpdump -l -n -e -ttt -i pflog0 >/tmp/sbx-pflog.txt 2>/dev/null &
PFLOG_PID=$!
sleep 2
as_guest curl -s -m 3 --noproxy '*' -o /dev/null https://example.org/ || true
sleep 2
grep -m1 "sbx_$UID_" /tmp/sbx-pflog.txt | sed -E 's/^[^ ]+ //; s/ > .*//'
# expect: rule <n>.sbx_<uid>.<m>/0(match) [uid <uid>]: block out on en0: <your ip>.<port>
#         (the anchor's own name, not com.apple/sbx_<uid>, and the socket's uid: what src/drivers/macos/monitor.ts parses)
"$BUN" -e "
import { parsePflogLine } from './src/drivers/macos/monitor';
const e = (await Bun.file('/tmp/sbx-pflog.txt').text()).split('\n').map(parsePflogLine).find((x) => x && x.uid === $UID_ && x.action === 'block');
console.log(e ? ['blocked-raw', e.socketUid === e.uid ? 'uid-match' : 'uid-' + e.socketUid, e.proto, e.dstPort].join(' ') : 'no sbx block parsed');
"
# expect: blocked-raw uid-match tcp 443
kill "$PFLOG_PID"; sleep 1
kill -0 "$PFLOG_PID" 2>/dev/null && echo "tcpdump still running" || echo "tcpdump stopped"
# expect: tcpdump stopped      (the daemon stops its monitor the same way: a signal to the sudo pid it started)

step "5. files"
as_guest ls "$HOME" 2>&1 | sed "s#$HOME#~#"
# expect: ls: ~: Permission denied
as_guest cat "$HOME/.zshrc" 2>&1 | sed "s#$HOME#~#" | head -1
# expect: cat: ~/.zshrc: Permission denied
ls "/Users/$GUEST/$(basename "$REPO")/.git/objects/info/alternates" >/dev/null && echo "host reads workspace"
# expect: host reads workspace
as_guest git -C "$(basename "$REPO")" log --oneline -1 >/dev/null && echo "guest reads objects via the mirror"
# expect: guest reads objects via the mirror
as_guest touch "/private/var/sbx/$(echo "$ME" | tr -cd 'a-z0-9')/x" 2>&1 | grep -c 'Permission denied'
# expect: 1

step "6. shims"
as_guest sh -c 'command -v git; command -v gh' | sed "s#/Users/$GUEST#~#"
# expect: ~/bin/git
# expect: ~/bin/gh
# With `sbx daemon` running (it hosts the bridge at $RUNTIME/sb/5m0ke0000001/bridge.sock), push a branch:
#   as_guest git -C <repo> push origin HEAD:refs/heads/sbx-smoke
# expect (bridge): the push succeeds with your GitHub token, and `as_guest env | grep -c GH_TOKEN` prints 0.

step "6b. host → clone ref sync (what the daemon's ref-sync guard runs when host refs change)"
NEW=$(git -C "$REPO" commit-tree "HEAD^{tree}" -p HEAD -m "sbx smoke: ref sync")
git -C "$REPO" branch -f sbx-smoke-sync "$NEW"
drive refsync
# expect: 0 0
[ "$(as_guest git -C "$(basename "$REPO")" rev-parse refs/remotes/host/sbx-smoke-sync)" = "$NEW" ] && echo "host branch visible inside"
# expect: host branch visible inside      (its commit reached through the mirror, no fetch by the guest)
as_guest git -C "$(basename "$REPO")" cat-file -t "$NEW"
# expect: commit
git -C "$REPO" branch -D sbx-smoke-sync >/dev/null
drive refsync
# expect: 0 0
as_guest git -C "$(basename "$REPO")" for-each-ref refs/remotes/host/sbx-smoke-sync | wc -l | tr -d ' '
# expect: 0

step "6c. agents (sbx run AGENT): the cache in the share dir, read-only to the guest"
# With `sbx daemon` running, in a repo of yours (its home 700), not driven by this script:
#   sbx run claude smoke-agent -- --version
# expect: "Claude Code" and a version; the first run fetches @anthropic-ai/claude-code-darwin-<arch> with progress.
#   G=$(dscl . -list /Users | grep "^sbx_$(id -un)_" | head -1)
#   sudo -n -H -u "$G" touch "/private/var/sbx/$(id -un)/agents/bin/x"
# expect: Permission denied (the guest reads the cache, never writes it)
#   sudo -n -H -u "$G" zsh -lc 'echo $PATH' | tr : '\n' | tail -1
# expect: /private/var/sbx/<you>/agents/bin (the launchers last on PATH)
#   sbx run gemini smoke-agent -- --version
# expect: a version when the Mac has Node.js 20+ (Homebrew's or on PATH); else "needs Node.js 20 or newer" and 127.

step "7. delete, then nothing is left"
drive remove
# expect: {"changed":true} {"changed":false}
dscl . -read "/Users/$GUEST" UniqueID 2>&1 | grep -c eDSRecordNotFound
# expect: 1
[ -e "/Users/$GUEST" ] && echo "home left" || echo "home gone"
# expect: home gone
sudo pfctl -a com.apple -s Anchors | grep -c "sbx_$UID_" || true
# expect: 0
sudo ls /private/var/db/sbx/pf | grep -c "sbx_$UID_" || true
# expect: 0
drive cleanup
# expect: {"removed":[]}
launchctl bootstrap "gui/$(id -u)" "$HOME/Library/LaunchAgents/dev.sbx.daemon.plist"
echo "macos-smoke: done (the root kit and the daemon stay installed; \`sbx service uninstall\` removes them)"
