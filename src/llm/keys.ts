// Where the host's LLM credentials come from, read at request time: env, sbx's stored secrets, the host's Claude credentials file.
import { readFileSync } from "node:fs";
import { z } from "zod";
import { join } from "node:path";
import { storedValues } from "../secrets/stored";
import { readCodexLogin } from "./codex-login";
import type { LlmCredentialKind } from "../core/credential-scope";

/** The LLM proxy's routes: the providers' APIs, and Codex's (the OpenAI API with a key, ChatGPT's backend signed in). */
export type Provider = "anthropic" | "openai" | "google" | "codex" | "codeassist";

/**
 * Headers that carry the credential for one request to one provider; `upstream` when not the route's own; `kind` names
 * its scope in the one table (core/credential-scope.ts), checked before the headers are added.
 */
export type Credential = { headers: Record<string, string>; source: string; kind: LlmCredentialKind; upstream?: "chatgpt" };

export interface KeySources {
  /** Host environment variables (passed in, read once by the caller). */
  env: Readonly<Record<string, string | undefined>>;
  /** sbx's stored secrets (`sbx secret set`), read now (secrets/stored.ts: the vault's values as the daemon holds them). */
  stored?: () => Readonly<Record<string, string>>;
  /** The host's `~/.claude/.credentials.json` (Claude Code's OAuth login). */
  claudeCredentialsFile?: string;
  /** The host's `~/.codex/auth.json` (Codex's API key or ChatGPT sign-in). */
  codexAuthFile?: string;
  /** The host's `~/.gemini/oauth_creds.json` (Gemini CLI signed in with Google). */
  geminiOauthFile?: string;
  /** Claude Code's login as macOS keeps it (the Keychain item's text, same shape as the credentials file). */
  claudeKeychain?: () => string | undefined;
}

const ClaudeCredentials = z.object({
  claudeAiOauth: z.object({ accessToken: z.string().min(1), expiresAt: z.number().optional() }).passthrough(),
}).passthrough();

/** The beta flag Anthropic's API requires with an OAuth bearer token. */
export const ANTHROPIC_OAUTH_BETA = "oauth-2025-04-20";

function claudeOauthText(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  try {
    const parsed = ClaudeCredentials.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data.claudeAiOauth.accessToken : undefined;
  } catch {
    return undefined;
  }
}

function claudeOauth(file: string | undefined): string | undefined {
  if (!file) return undefined;
  try {
    return claudeOauthText(readFileSync(file, "utf8"));
  } catch {
    return undefined;
  }
}

const GeminiOauth = z.object({ access_token: z.string().min(1), refresh_token: z.string().optional(), expiry_date: z.number().optional() }).passthrough();

/** The access token of Gemini CLI's Google sign-in, unless it has expired (or expires within a minute). */
function geminiOauth(file: string | undefined): string | undefined {
  if (!file) return undefined;
  try {
    const p = GeminiOauth.safeParse(JSON.parse(readFileSync(file, "utf8")));
    if (!p.success) return undefined;
    if (p.data.expiry_date !== undefined && p.data.expiry_date < Date.now() + 60_000) return undefined;
    return p.data.access_token;
  } catch {
    return undefined;
  }
}

/** Whether the host has a Google sign-in for Gemini CLI at all (valid or not): which login a sandbox's placeholder imitates. */
export function hasGeminiSignIn(file: string | undefined): boolean {
  if (!file) return false;
  try {
    return GeminiOauth.safeParse(JSON.parse(readFileSync(file, "utf8"))).success;
  } catch {
    return false;
  }
}

/** Every secret value the host knows from these sources (for redaction). */
export function knownSecretValues(src: KeySources): string[] {
  const out: string[] = [];
  const names = ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "GH_TOKEN", "GITHUB_TOKEN"];
  for (const n of names) if (src.env[n]) out.push(src.env[n]!);
  try {
    out.push(...Object.values(src.stored?.() ?? {}));
  } catch {}
  const o = claudeOauth(src.claudeCredentialsFile) ?? claudeOauthText(src.claudeKeychain?.());
  if (o) out.push(o);
  try {
    if (src.geminiOauthFile) {
      const g = GeminiOauth.safeParse(JSON.parse(readFileSync(src.geminiOauthFile, "utf8")));
      if (g.success) out.push(g.data.access_token, ...(g.data.refresh_token ? [g.data.refresh_token] : []));
    }
  } catch {}
  const c = readCodexLogin(src.codexAuthFile);
  if (c?.kind === "apikey") out.push(c.key);
  if (c?.kind === "chatgpt") out.push(c.access, c.refresh);
  return out;
}

/** A variable whose name says it holds a credential (and whose value is long enough to be one, and not a path). */
const SECRET_VAR = /TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL/i;

/**
 * Every secret the host holds, by name, read now: for the copy-in scan (secrets/copy-in.ts), which looks for each in
 * every form. The sbx secrets file, the environment's credential-named variables, and the logins the LLM proxy uses
 * (Claude's access and refresh tokens, Gemini's, Codex's key or ChatGPT tokens).
 */
export function hostSecretsByName(src: KeySources): Record<string, string> {
  const out: Record<string, string> = {};
  const add = (name: string, v: unknown) => {
    if (typeof v === "string" && v.length >= 8 && !v.startsWith("/") && out[name] === undefined) out[name] = v;
  };
  for (const [k, v] of Object.entries(src.env)) if (SECRET_VAR.test(k)) add(k, v);
  try {
    for (const [k, v] of Object.entries(src.stored?.() ?? {})) add(k, v);
  } catch {}
  const claude = (text: string | undefined) => {
    try {
      const o = (JSON.parse(text ?? "") as { claudeAiOauth?: Record<string, unknown> }).claudeAiOauth;
      add("Claude login (access token)", o?.accessToken);
      add("Claude login (refresh token)", o?.refreshToken);
    } catch {}
  };
  try {
    if (src.claudeCredentialsFile) claude(readFileSync(src.claudeCredentialsFile, "utf8"));
  } catch {}
  claude(src.claudeKeychain?.());
  try {
    if (src.geminiOauthFile) {
      const g = JSON.parse(readFileSync(src.geminiOauthFile, "utf8")) as Record<string, unknown>;
      add("Gemini login (access token)", g.access_token);
      add("Gemini login (refresh token)", g.refresh_token);
    }
  } catch {}
  const c = readCodexLogin(src.codexAuthFile);
  if (c?.kind === "apikey") add("Codex login (key)", c.key);
  if (c?.kind === "chatgpt") {
    add("Codex login (access token)", c.access);
    add("Codex login (refresh token)", c.refresh);
  }
  return out;
}

/** Looks up the credential for a provider now (a rotated key is used on the next request). */
export function credentialFor(provider: Provider, src: KeySources): Credential | undefined {
  let secrets: Readonly<Record<string, string>> = {};
  try {
    secrets = src.stored?.() ?? {};
  } catch {
    secrets = {};
  }
  // sbx's stored secrets win over the environment: `sbx secret set` is how a user rotates without restarting.
  const get = (n: string): string | undefined => secrets[n] || src.env[n] || undefined;
  switch (provider) {
    case "anthropic": {
      const key = get("ANTHROPIC_API_KEY");
      if (key) return { headers: { "x-api-key": key }, source: "ANTHROPIC_API_KEY", kind: "anthropic-api-key" };
      const tok = get("ANTHROPIC_AUTH_TOKEN") ?? get("CLAUDE_CODE_OAUTH_TOKEN");
      if (tok) return { headers: { authorization: `Bearer ${tok}`, "anthropic-beta": ANTHROPIC_OAUTH_BETA }, source: "token", kind: "anthropic-oauth" };
      const oauth = claudeOauth(src.claudeCredentialsFile);
      if (oauth) return { headers: { authorization: `Bearer ${oauth}`, "anthropic-beta": ANTHROPIC_OAUTH_BETA }, source: "claude-credentials", kind: "anthropic-oauth" };
      const chain = claudeOauthText(src.claudeKeychain?.());
      if (chain) return { headers: { authorization: `Bearer ${chain}`, "anthropic-beta": ANTHROPIC_OAUTH_BETA }, source: "claude-keychain", kind: "anthropic-oauth" };
      return undefined;
    }
    case "openai": {
      const key = get("OPENAI_API_KEY");
      return key ? { headers: { authorization: `Bearer ${key}` }, source: "OPENAI_API_KEY", kind: "openai-api-key" } : undefined;
    }
    case "codex": {
      // A key wins (the person's own OpenAI account), as in Codex itself; else the ChatGPT sign-in, to ChatGPT's backend.
      const key = get("OPENAI_API_KEY");
      if (key) return { headers: { authorization: `Bearer ${key}` }, source: "OPENAI_API_KEY", kind: "openai-api-key" };
      const login = readCodexLogin(src.codexAuthFile);
      if (login?.kind === "apikey") return { headers: { authorization: `Bearer ${login.key}` }, source: "codex-auth.json", kind: "openai-api-key" };
      if (login?.kind === "chatgpt") {
        return { headers: { authorization: `Bearer ${login.access}`, ...(login.accountId ? { "chatgpt-account-id": login.accountId } : {}) }, source: "codex-chatgpt", kind: "chatgpt-sign-in", upstream: "chatgpt" };
      }
      return undefined;
    }
    case "codeassist": {
      // Gemini CLI signed in with Google: its access token, while it is valid (Gemini CLI on the host renews it).
      const t = geminiOauth(src.geminiOauthFile);
      return t ? { headers: { authorization: `Bearer ${t}` }, source: "gemini-oauth", kind: "google-sign-in" } : undefined;
    }
    case "google": {
      const key = get("GEMINI_API_KEY") ?? get("GOOGLE_API_KEY");
      return key ? { headers: { "x-goog-api-key": key }, source: "GEMINI_API_KEY", kind: "gemini-api-key" } : undefined;
    }
  }
}

/** Where this host keeps what the LLM proxy injects: its environment, sbx's stored secrets, Claude's and Codex's logins. */
export function hostKeySources(env: { raw: Readonly<Record<string, string>>; vars: { HOME: string } }, configDir: string, keychain?: { value(): string | undefined }): KeySources {
  const codexHome = env.raw.CODEX_HOME?.startsWith("/") ? env.raw.CODEX_HOME : join(env.vars.HOME, ".codex");
  return {
    env: env.raw,
    stored: () => storedValues(configDir),
    claudeCredentialsFile: join(env.vars.HOME, ".claude", ".credentials.json"),
    codexAuthFile: join(codexHome, "auth.json"),
    geminiOauthFile: join(env.vars.HOME, ".gemini", "oauth_creds.json"),
    ...(keychain ? { claudeKeychain: () => keychain.value() } : {}),
  };
}
