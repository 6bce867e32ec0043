// The host's Codex login (~/.codex/auth.json): an API key, or a ChatGPT sign-in (access, refresh and id tokens and the
// account id). The LLM proxy adds it to a sandbox's Codex requests; a ChatGPT access token about to expire is refreshed
// here, on the host, and written back the way Codex itself writes it. Nothing of it ever goes into a sandbox.
import { readFileSync } from "node:fs";
import { z } from "zod";
import { writeBack } from "../sys/write-back";

/** Codex CLI's public OAuth client (the one its own `codex login` uses), for refreshing its tokens. */
export const CODEX_CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann";
export const CODEX_TOKEN_URL = "https://auth.openai.com/oauth/token";

/** Refreshed when it has less than this left. */
const REFRESH_MARGIN_MS = 5 * 60_000;

/** A refresh asked for from inside (Codex's own) is done at most this often: a sandbox cannot churn the host's login. */
const FORCED_REFRESH_MIN_MS = 60_000;

const AuthFileSchema = z
  .object({
    OPENAI_API_KEY: z.string().nullable().optional(),
    tokens: z
      .object({ id_token: z.string(), access_token: z.string().min(1), refresh_token: z.string().min(1), account_id: z.string().nullable().optional() })
      .passthrough()
      .nullable()
      .optional(),
    last_refresh: z.string().nullable().optional(),
  })
  .passthrough();
type AuthFile = z.infer<typeof AuthFileSchema>;

export type CodexLogin =
  | { kind: "apikey"; key: string }
  | { kind: "chatgpt"; access: string; refresh: string; accountId: string | null; plan: string | null; expiresAt: number | null };

/** Pure: the claims of a JWT, without checking its signature (which only its issuer can); null when it is not one. */
export function jwtClaims(token: string): Record<string, unknown> | null {
  const p = token.split(".");
  if (p.length !== 3) return null;
  try {
    const v = JSON.parse(Buffer.from(p[1]!, "base64url").toString("utf8")) as unknown;
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function authClaims(token: string): Record<string, unknown> {
  const c = jwtClaims(token)?.["https://api.openai.com/auth"];
  return c && typeof c === "object" ? (c as Record<string, unknown>) : {};
}

function readAuth(file: string): AuthFile | null {
  try {
    const r = AuthFileSchema.safeParse(JSON.parse(readFileSync(file, "utf8")));
    return r.success ? r.data : null;
  } catch {
    return null;
  }
}

/** The login in the host's auth.json, or null (no file, unreadable, neither an API key nor tokens). */
export function readCodexLogin(file: string | undefined): CodexLogin | null {
  if (!file) return null;
  const a = readAuth(file);
  if (!a) return null;
  if (a.OPENAI_API_KEY) return { kind: "apikey", key: a.OPENAI_API_KEY };
  const t = a.tokens;
  if (!t) return null;
  const exp = jwtClaims(t.access_token)?.exp;
  const plan = authClaims(t.id_token).chatgpt_plan_type;
  return {
    kind: "chatgpt",
    access: t.access_token,
    refresh: t.refresh_token,
    accountId: t.account_id ?? ((authClaims(t.id_token).chatgpt_account_id as string | undefined) ?? null),
    plan: typeof plan === "string" ? plan : null,
    expiresAt: typeof exp === "number" ? exp * 1000 : null,
  };
}

export interface CodexRefresherOptions {
  file: string;
  tokenUrl?: string;
  fetch?: typeof fetch;
  now?: () => number;
}

/**
 * Keeps the host's ChatGPT sign-in fresh: `fresh()` refreshes when the access token has under five minutes left (or
 * when `force`), one refresh at a time, and writes the new tokens back into auth.json (mode kept, atomic rename).
 */
export class CodexRefresher {
  private inflight: Promise<void> | null = null;
  private lastRefresh = -Infinity;
  constructor(private readonly o: CodexRefresherOptions) {}

  private now(): number {
    return (this.o.now ?? Date.now)();
  }

  async fresh(force = false): Promise<void> {
    const login = readCodexLogin(this.o.file);
    if (login?.kind !== "chatgpt") return;
    const due = login.expiresAt === null || login.expiresAt - this.now() <= REFRESH_MARGIN_MS;
    if (!due && (!force || this.now() - this.lastRefresh < FORCED_REFRESH_MIN_MS)) return;
    this.inflight ??= this.refresh(login.refresh).finally(() => {
      this.inflight = null;
    });
    return this.inflight;
  }

  private async refresh(refreshToken: string): Promise<void> {
    const r = await (this.o.fetch ?? fetch)(this.o.tokenUrl ?? CODEX_TOKEN_URL, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ client_id: CODEX_CLIENT_ID, grant_type: "refresh_token", refresh_token: refreshToken, scope: "openid profile email" }),
    });
    this.lastRefresh = this.now();
    if (!r.ok) throw new Error(`refreshing the host's Codex sign-in answered ${r.status}; run \`codex login\` on the host`);
    const got = z.object({ access_token: z.string().min(1), refresh_token: z.string().min(1).optional(), id_token: z.string().min(1).nullable().optional() }).parse(await r.json());
    const cur = readAuth(this.o.file);
    if (!cur?.tokens) return;
    const next = {
      ...cur,
      tokens: { ...cur.tokens, access_token: got.access_token, refresh_token: got.refresh_token ?? cur.tokens.refresh_token, id_token: got.id_token ?? cur.tokens.id_token },
      last_refresh: new Date(this.now()).toISOString(),
    };
    writeBack(this.o.file, `${JSON.stringify(next, null, 2)}\n`);
  }
}
