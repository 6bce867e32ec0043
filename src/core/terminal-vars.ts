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
