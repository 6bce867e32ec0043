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
export function startLine(sandbox: string): string {
  const notFound = shQuote(`${commandNotFound("%s", sandbox.replaceAll("%", "%%"))}\\n`);
  return `echo 500 > /proc/self/oom_score_adj 2>/dev/null; command -v "$1" >/dev/null 2>&1 || { printf ${notFound} "$1" >&2; exit ${EXIT_COMMAND_NOT_FOUND}; }; exec "$@"`;
}

/** Pure: argv as it runs in a Docker sandbox: through `startLine` (`$0` is "sbx", so the shell's own errors say sbx). */
export function inSandboxArgv(sandbox: string, argv: readonly string[]): string[] {
  return ["/bin/sh", "-c", startLine(sandbox), "sbx", ...argv];
}
