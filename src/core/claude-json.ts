// What of the host's ~/.claude.json a sandbox gets: settings Claude Code needs to start without asking again, never a
// credential, and only the current project's entry. Pure.
import { credentialArgs, fieldPath, urlWithoutCredentials } from "./copy-in";

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

/** Told each part of the host's file left out, by field (a JSON path) and why; never the value. */
export type Removed = (field: string, what: string) => void;

/**
 * An MCP server entry without what carries its credentials: its `env` and `headers` (never copied), the parts of its
 * `args` that set one (`-e NAME=…`, `--token …`, `--api-key=…`, an Authorization header, a URL's userinfo or key
 * parameter) and of its `url` (userinfo, key parameters, the fragment; the whole URL when a key is in its path).
 */
function mcpServer(v: unknown, at: string, removed: Removed): unknown {
  if (!v || typeof v !== "object" || Array.isArray(v)) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    if (k === "env" || k === "headers") continue;
    const here = fieldPath(at, k);
    if (k === "url" && typeof x === "string") {
      const u = urlWithoutCredentials(x);
      for (const why of u.removed) removed(here, why);
      if (u.url !== null) out[k] = u.url;
      continue;
    }
    if (k === "args" && Array.isArray(x)) {
      const drop = new Map(credentialArgs(x).map((d) => [d.index, d.what]));
      const args: unknown[] = [];
      x.forEach((a, i) => {
        const why = drop.get(i);
        if (why !== undefined) return removed(fieldPath(here, i), why);
        if (typeof a === "string" && /^(?:https?|wss?):\/\//i.test(a)) {
          const u = urlWithoutCredentials(a);
          for (const w of u.removed) removed(fieldPath(here, i), `a URL's ${w.replace(/^its /, "")}`);
          if (u.url !== null) args.push(u.url);
          return;
        }
        args.push(a);
      });
      out[k] = args;
      continue;
    }
    out[k] = x;
  }
  return out;
}

function mcpServers(v: unknown, at: string, removed: Removed): unknown {
  if (!v || typeof v !== "object" || Array.isArray(v)) return undefined;
  return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, s]) => [k, mcpServer(s, fieldPath(at, k), removed)]));
}

/**
 * The sandbox's ~/.claude.json from the host's text, as a value (the copy-in scan then reads every field of it), or
 * null when the host's cannot be read as an object (then none is copied). Kept: the keys in KEEP; of `projects`, only
 * the entry of `repo` itself (Claude Code keys it by the exact path: no other path's entry, whatever it has in common);
 * every MCP server without what carries its credentials (mcpServer). Dropped: everything else, among them
 * `primaryApiKey`, `customApiKeyResponses` (key fingerprints), `oauthAccount` and other projects' history.
 */
export function claudeJsonView(text: string, repo: string, removed: Removed = () => {}): Record<string, unknown> | null {
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
      const m = mcpServers(x, "mcpServers", removed);
      if (m !== undefined) out[k] = m;
    } else if (k === "projects") {
      const p = x && typeof x === "object" && !Array.isArray(x) && Object.hasOwn(x, repo) ? (x as Record<string, unknown>)[repo] : undefined;
      if (p && typeof p === "object" && !Array.isArray(p)) {
        const entry = { ...(p as Record<string, unknown>) };
        if ("mcpServers" in entry) entry.mcpServers = mcpServers(entry.mcpServers, fieldPath(fieldPath("projects", repo), "mcpServers"), removed) ?? {};
        out.projects = { [repo]: entry };
      }
    } else out[k] = x;
  }
  return out;
}

/** claudeJsonView as the file's text (no scan of its fields: the copy-in door does that). */
export function sandboxClaudeJson(text: string, repo: string): string | null {
  const v = claudeJsonView(text, repo);
  return v === null ? null : `${JSON.stringify(v, null, 2)}\n`;
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

/** Past this many characters Claude Code cuts the name and adds a hash of the path (whose kind changed between versions). */
const CLAUDE_KEY_MAX = 200;

/**
 * Pure: whether a dir under ~/.claude/projects may hold `repo`'s transcripts: its name is the key, or (a long path) the
 * key's first 200 characters and a hash. Many paths share a name (`/a/b-c`, `/a/b/c`, `/a/b.c`): what is in such a dir
 * is shown only when it proves to be `repo`'s (transcriptOwner).
 */
export function mayBeProjectDir(name: string, repo: string): boolean {
  const key = claudeProjectKey(repo);
  if (key.length <= CLAUDE_KEY_MAX) return name === key;
  return name.startsWith(`${key.slice(0, CLAUDE_KEY_MAX)}-`) && /^[0-9A-Za-z]+$/.test(name.slice(CLAUDE_KEY_MAX + 1));
}

/**
 * Pure: whose a transcript (JSON Lines) is, by the `cwd` Claude Code writes on its lines: `mine` when at least one
 * line names one and every one named is `repo` or under it; `other` when one is elsewhere; `unproven` when none says.
 */
export function transcriptOwner(text: string, repo: string): "mine" | "other" | "unproven" {
  let seen = false;
  for (const line of text.split("\n")) {
    if (!line.includes('"cwd"')) continue;
    let cwd: unknown;
    try {
      cwd = (JSON.parse(line) as { cwd?: unknown }).cwd;
    } catch {
      continue;
    }
    if (cwd === undefined) continue;
    if (typeof cwd !== "string" || (cwd !== repo && !cwd.startsWith(`${repo}/`))) return "other";
    seen = true;
  }
  return seen ? "mine" : "unproven";
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
