// The one function that decides a sandbox's environment: terminal and locale variables, SANDBOX, and what other pieces add.

/** Host variables passed through so agents render properly; nothing else of the host's environment goes in. */
const PASS = new Set(["TERM", "COLORTERM", "FORCE_COLOR", "NO_COLOR", "LANG"]);

/**
 * Pure: the environment a sandbox's processes get. `extra` is for the pieces that add to it (proxy variables,
 * LLM base URLs with placeholder keys, the user's `env:` config); they are applied last.
 */
export function sandboxEnv(host: Readonly<Record<string, string | undefined>>, name: string, extra: Readonly<Record<string, string>> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of Object.keys(host).sort()) {
    const v = host[k];
    if (v === undefined) continue;
    if (PASS.has(k) || /^LC_[A-Z_]+$/.test(k)) out[k] = v;
  }
  out.SANDBOX = name;
  return { ...out, ...extra };
}
