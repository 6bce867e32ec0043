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
export function startLine(sandbox: string, opts: { tty?: boolean } = {}): string {
  const notFound = shQuote(`${commandNotFound("%s", sandbox.replaceAll("%", "%%"))}\\n`);
  return `echo 500 > /proc/self/oom_score_adj 2>/dev/null; ${opts.tty ? `${TERM_LINE} ` : ""}command -v "$1" >/dev/null 2>&1 || { printf ${notFound} "$1" >&2; exit ${EXIT_COMMAND_NOT_FOUND}; }; exec "$@"`;
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
export function inSandboxArgv(sandbox: string, argv: readonly string[], opts: { tty?: boolean } = {}): string[] {
  return ["/bin/sh", "-c", startLine(sandbox, opts), "sbx", ...argv];
}
