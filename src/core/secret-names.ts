// Pure: the keys sbx knows by name (its LLM logins and forge tokens), which `sbx secret import` takes from a shell, and
// what a shell has of them that sbx does not (a key only the person's shell exports never reaches the daemon).

export const IMPORTABLE_KEYS: readonly string[] = [
  "ANTHROPIC_API_KEY",
  "CLAUDE_CODE_OAUTH_TOKEN",
  "OPENAI_API_KEY",
  "GEMINI_API_KEY",
  "GOOGLE_API_KEY",
  "GH_TOKEN",
  "GITHUB_TOKEN",
  "GITLAB_TOKEN",
  "GIT_TOKEN",
];

/** Pure: the known keys set in `env` that sbx has not stored. */
export function keysToImport(env: Readonly<Record<string, string | undefined>>, stored: ReadonlySet<string>): string[] {
  return IMPORTABLE_KEYS.filter((n) => (env[n] ?? "") !== "" && !stored.has(n));
}
