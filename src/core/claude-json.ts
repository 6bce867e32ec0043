// What of the host's ~/.claude.json a sandbox gets: settings Claude Code needs to start without asking again, never a
// credential, and only the current project's entry. Pure.

/** Top-level keys that are settings and history of the CLI itself, not credentials or other projects' data. */
const KEEP = new Set([
  "numStartups",
  "installMethod",
  "autoUpdates",
  "theme",
  "verbose",
  "editorMode",
  "preferredNotifChannel",
  "hasCompletedOnboarding",
  "lastOnboardingVersion",
  "hasTrustDialogAccepted",
  "bypassPermissionsModeAccepted",
  "shiftEnterKeyBindingInstalled",
  "tipsHistory",
  "firstStartTime",
  "userID",
  "mcpServers",
  "projects",
]);

/** An MCP server entry without the values that carry its secrets (its `env` and `headers`, and a URL's userinfo). */
function mcpServer(v: unknown): unknown {
  if (!v || typeof v !== "object" || Array.isArray(v)) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    if (k === "env" || k === "headers") continue;
    out[k] = k === "url" && typeof x === "string" ? x.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^@/]*@/i, "$1") : x;
  }
  return out;
}

function mcpServers(v: unknown): unknown {
  if (!v || typeof v !== "object" || Array.isArray(v)) return undefined;
  return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, s]) => [k, mcpServer(s)]));
}

/**
 * The sandbox's ~/.claude.json from the host's text, or null when the host's cannot be read as an object (then none
 * is copied). Kept: the keys in KEEP; of `projects`, only `repo`'s entry; every MCP server without `env`/`headers`.
 * Dropped: everything else, among them `primaryApiKey`, `customApiKeyResponses` (key fingerprints), `oauthAccount`
 * and other projects' history.
 */
export function sandboxClaudeJson(text: string, repo: string): string | null {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (!v || typeof v !== "object" || Array.isArray(v)) return null;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    if (!KEEP.has(k)) continue;
    if (k === "mcpServers") {
      const m = mcpServers(x);
      if (m !== undefined) out[k] = m;
    } else if (k === "projects") {
      const p = (x as Record<string, unknown> | null)?.[repo];
      if (p && typeof p === "object" && !Array.isArray(p)) {
        const entry = { ...(p as Record<string, unknown>) };
        if ("mcpServers" in entry) entry.mcpServers = mcpServers(entry.mcpServers) ?? {};
        out.projects = { [repo]: entry };
      }
    } else out[k] = x;
  }
  return `${JSON.stringify(out, null, 2)}\n`;
}

/**
 * What of the host's ~/.claude a sandbox sees: settings, instructions, commands, agents, output styles and skills. Not
 * other projects' transcripts (`projects/*`), the prompt history of every project (`history.jsonl`), todos, shell
 * snapshots, IDE locks or the login (`.credentials.json`). The current project's transcripts come on their own.
 */
export const CLAUDE_DIR_SHOWN = ["settings.json", "CLAUDE.md", "commands", "agents", "output-styles", "skills"] as const;

/** Pure: the name Claude Code gives a project's dir under ~/.claude/projects (every character but [A-Za-z0-9] as `-`). */
export function claudeProjectKey(repo: string): string {
  return repo.replace(/[^A-Za-z0-9]/g, "-");
}

/** Host paths (relative to $HOME) that hold credentials: overlaying one, or a dir that holds one, shows them inside. */
export const CREDENTIAL_PATHS = [
  ".ssh",
  ".gnupg",
  ".aws",
  ".azure",
  ".netrc",
  ".docker",
  ".kube",
  ".config/gh",
  ".config/gcloud",
  ".config/hub",
  ".config/sbx",
  ".local/share/keyrings",
  ".password-store",
  ".npmrc",
  ".pypirc",
  ".git-credentials",
  "Library/Keychains",
] as const;

/** The credential locations an overlay of `dir` would show inside ($HOME-relative), empty when none. */
export function credentialsUnder(dir: string, home: string): string[] {
  const rel = dir === home ? "" : dir.startsWith(`${home}/`) ? dir.slice(home.length + 1) : null;
  if (rel === null) return [];
  return CREDENTIAL_PATHS.filter((c) => rel === "" || c === rel || c.startsWith(`${rel}/`) || rel.startsWith(`${c}/`));
}
