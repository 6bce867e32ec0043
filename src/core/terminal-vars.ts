// The host variables a sandbox session inherits (terminal and locale only); dependency-free so the attach path loads it cheaply.

/** Host variables passed through so agents render properly; nothing else of the host's environment goes in. */
const PASS = new Set(["TERM", "COLORTERM", "FORCE_COLOR", "NO_COLOR", "LANG"]);

/** Pure: the terminal and locale variables of the host, and nothing else. */
export function terminalVars(host: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of Object.keys(host).sort()) {
    const v = host[k];
    if (v === undefined) continue;
    if (PASS.has(k) || /^LC_[A-Z_]+$/.test(k)) out[k] = v;
  }
  return out;
}

/**
 * Pure: a session's terminal variables for where its output goes. To a terminal: as they are. To a pipe or a file
 * (`sbx run … | tee`, `> out.txt`): the conventions that keep colour codes out, since a program inside cannot tell (in
 * a terminal session it has sbx's PTY, not the pipe): NO_COLOR=1, TERM=dumb (chalk, supports-color, git, grep and
 * rich go by it), no COLORTERM, and no FORCE_COLOR (which rich reads as "force", whatever its value, so it is
 * dropped, not set to 0). A FORCE_COLOR the person set themselves (not 0 or false) says they want colour in the pipe:
 * then nothing changes.
 */
export function forOutput(vars: Readonly<Record<string, string>>, outputIsTTY: boolean): Record<string, string> {
  const force = vars.FORCE_COLOR;
  if (outputIsTTY || (force !== undefined && force !== "0" && force !== "false")) return { ...vars };
  const { COLORTERM: _c, FORCE_COLOR: _f, ...rest } = vars;
  return { ...rest, NO_COLOR: "1", TERM: "dumb" };
}
