// The shell line every command in a Docker sandbox starts through: sessions (`docker exec`) and the CLI's engine exec.
// Pure, and light to load (the CLI's no-terminal fast path loads it).
import { commandNotFound, EXIT_COMMAND_NOT_FOUND } from "../../../shims/exec-frames";
import { shQuote } from "../../core/sh";

/**
 * Pure: the shell line a command starts through in a Docker sandbox. It raises its own OOM score, so the command goes
 * before the sandbox's own process at the memory limit (as the exec agent raises its commands'); says a missing
 * command as sbx says it (never the shell's `exec: x: not found` or the engine's OCI runtime error), exit 127; then
 * becomes argv. `sandbox` is a validated name ([a-z0-9-]), quoted all the same.
 */
export function startLine(sandbox: string, opts: { tty?: boolean; session?: string } = {}): string {
  const notFound = shQuote(`${commandNotFound("%s", sandbox.replaceAll("%", "%%"))}\\n`);
  const pid = opts.session === undefined ? "" : `${sessionPidLine(opts.session)} `;
  return `echo 500 > /proc/self/oom_score_adj 2>/dev/null; ${pid}${opts.tty ? `${TERM_LINE} ` : ""}command -v "$1" >/dev/null 2>&1 || { printf ${notFound} "$1" >&2; exit ${EXIT_COMMAND_NOT_FOUND}; }; exec "$@"`;
}

/**
 * Where a terminal session's process (the start line's shell, which then becomes the command: `exec` keeps its pid)
 * writes its pid, one file per session id. The daemon's PTY holds only `docker exec`; when that client goes (the
 * daemon stopping or dying) the engine leaves the process inside running, unreachable, so the daemon ends it from
 * inside by this file (sessionHangupScript). Inside the container's own /tmp: the sandbox may write it, and what it writes
 * can only make a signal, sent as the sandbox's user inside, reach the sandbox's own processes.
 */
export const SESSION_PIDS = "/tmp/.sbx-sessions";

/** The variable a session's process carries its id in (the hang-up checks it, so a reused pid is never signalled). */
export const SESSION_VAR = "SBX_SESSION";

/** Pure: the start line's step that records its pid for session `id` ([a-z0-9-], quoted all the same). */
function sessionPidLine(id: string): string {
  return `mkdir -p ${SESSION_PIDS} 2>/dev/null && echo $$ > ${SESSION_PIDS}/${shQuote(id)} 2>/dev/null;`;
}

/**
 * Pure: the script that hangs up terminal sessions inside a container, as a closing terminal would (SIGHUP to the
 * session's process): `$1` is `only` (the ids after it) or `except` (every recorded session but those). A pid file is
 * used once and removed; its pid is signalled only while that process carries the session's id (SESSION_VAR), so a
 * pid the kernel gave to another process since, or one the sandbox wrote there, is left alone (and never 0 or 1, nor a
 * group). Needs only sh, cat, tr and grep. `dir` is SESSION_PIDS but in tests.
 */
export function sessionHangupScript(dir: string = SESSION_PIDS): string {
  return [
    `d=${shQuote(dir)}; [ -d "$d" ] || exit 0; mode=$1; shift`,
    'for f in "$d"/*; do',
    '  [ -f "$f" ] || continue; id=${f##*/}; hit=',
    '  for x in "$@"; do [ "$x" = "$id" ] && hit=1; done',
    '  [ "$mode" = only ] && [ -z "$hit" ] && continue',
    '  [ "$mode" = except ] && [ -n "$hit" ] && continue',
    '  p=$(cat "$f" 2>/dev/null); rm -f "$f"',
    '  case "$p" in ""|0|1|0*|*[!0-9]*) continue ;; esac',
    `  tr '\\000' '\\n' < /proc/"$p"/environ 2>/dev/null | grep -qxF "${SESSION_VAR}=$id" && kill -HUP "$p" 2>/dev/null`,
    "done",
    "exit 0",
  ].join("\n");
}

/** What a terminal session falls back to when the user's TERM has no terminfo entry in the sandbox's image. */
export const FALLBACK_TERM = "xterm-256color";

/**
 * A terminal's TERM that the image has no terminfo entry for (xterm-kitty, alacritty, wezterm on a plain Debian image)
 * leaves full-screen programs broken: such a TERM becomes FALLBACK_TERM, and the person is told (on the terminal).
 */
const TERM_LINE =
  `case "$TERM" in ""|dumb) ;; *) t=$(printf %.1s "$TERM"); k=; for d in "$HOME/.terminfo" /etc/terminfo /lib/terminfo /usr/share/terminfo /usr/lib/terminfo; do [ -e "$d/$t/$TERM" ] && k=1 && break; done; ` +
  `[ -n "$k" ] || { printf 'sbx: TERM=%s is not known in this sandbox; using ${FALLBACK_TERM} (add its terminfo to the image to keep it)\\r\\n' "$TERM" >&2; TERM=${FALLBACK_TERM}; export TERM; };; esac;`;

/** Pure: argv as it runs in a Docker sandbox: through `startLine` (`$0` is "sbx", so the shell's own errors say sbx). */
export function inSandboxArgv(sandbox: string, argv: readonly string[], opts: { tty?: boolean; session?: string } = {}): string[] {
  return ["/bin/sh", "-c", startLine(sandbox, opts), "sbx", ...argv];
}
