// What of the host a new Docker sandbox sees: the dirs overlaid into it (none that shows a credential, unless the
// person says so) and how Claude Code's login reaches it (injected by the LLM proxy, or overlaid and readable).
import { existsSync, realpathSync } from "node:fs";
import { join, resolve } from "node:path";
import { credentialsUnder } from "../../core/claude-json";
import type { Config } from "../../core/config";
import { SbxError } from "../../core/errors";
import { storedValues } from "../../secrets/stored";
import { expandHome } from "../../sys/config-file";
import type { Env } from "../../sys/env";
import type { NewSandbox } from "../driver";
import type { ClaudeAuth } from "./args";

/** Where the host keeps Claude Code's OAuth login. */
function claudeCredentials(home: string): string {
  return join(home, ".claude", ".credentials.json");
}

/** Whether the host has an Anthropic key or Claude login the LLM proxy can inject (env, sbx secrets, ~/.claude). */
export function hostHasClaudeCredentials(env: Env, configDir: string): boolean {
  const names = ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"];
  if (names.some((n) => (env.raw[n] ?? "") !== "")) return true;
  if (existsSync(claudeCredentials(env.vars.HOME))) return true;
  try {
    const secrets = storedValues(configDir);
    return names.some((n) => (secrets[n] ?? "") !== "");
  } catch {
    return false;
  }
}

/**
 * The Claude credentials mode of a new sandbox: the flag, else inject when the host has something to inject, else
 * overlay (then a login made inside stays in the sandbox's overlay). Warns when the agent will be able to read the
 * host's credentials file.
 */
export function claudeAuthFor(env: Env, configDir: string, n: Pick<NewSandbox, "name" | "claudeAuth">, config: Pick<Config, "claudeAuth">, log: (l: string) => void): ClaudeAuth {
  const mode: ClaudeAuth = n.claudeAuth ?? config.claudeAuth ?? (hostHasClaudeCredentials(env, configDir) ? "inject" : "overlay");
  const file = claudeCredentials(env.vars.HOME);
  if (mode === "overlay" && existsSync(file)) {
    log(
      `warning: --claude-auth overlay: the agent in sandbox ${n.name} can read your Claude credentials (${file}) and could use or copy them. ` +
        "The default, --claude-auth inject, keeps them on the host and adds them to the agent's API requests on the way out.",
    );
  }
  return mode;
}

/**
 * The overlays every sandbox gets, plus the user's own (`--overlay`, and `overlays` in the config file). One that
 * would show a credential location inside (it is one, or holds one) is refused unless `exposeCredentials`, and
 * then each is named in a warning.
 */
export function overlaysFor(home: string, extra: readonly string[], cwd: string, exposeCredentials = false, warn: (line: string) => void = () => {}): string[] {
  const out = [join(home, ".claude"), join(home, ".config", "fish")];
  for (const p of extra) {
    let abs = resolve(cwd, expandHome(p, home));
    try {
      abs = realpathSync(abs);
    } catch {
      /* a missing dir becomes an empty one inside */
    }
    if (abs === "/" || abs === home) {
      throw new SbxError("usage", `cannot overlay ${abs}: overlay a specific directory, not / or your whole home`, {
        hint: "Name the dirs the agent needs, e.g. --overlay ~/.config/nvim",
      });
    }
    const creds = credentialsUnder(abs, home);
    if (creds.length > 0 && !exposeCredentials) {
      throw new SbxError("policy_denied", `will not overlay ${abs}: the agent could read the credentials in ${creds.map((c) => `~/${c}`).join(", ")}`, {
        hint: "sbx keeps credentials on the host: git and gh go through its bridge with your token, the LLM proxy adds API keys. Leave it out, or overlay a dir without them; --expose-credentials overlays it anyway.",
      });
    }
    for (const c of creds) warn(`warning: --expose-credentials: the agent in this sandbox can read ~/${c}`);
    out.push(abs);
  }
  // What they hold is read for secrets each time a container is made (the views, secrets/copy-in.ts), not here:
  // a hit is left out of the view and said then.
  return [...new Set(out)];
}
