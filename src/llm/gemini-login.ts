// The host's Gemini CLI Google sign-in (~/.gemini/oauth_creds.json): the LLM proxy's Code Assist route adds its access
// token; one about to expire is refreshed here, on the host, with Gemini CLI's own OAuth client, and written back the
// way Gemini CLI writes it (expiry_date in ms). Nothing of it ever goes into a sandbox.
import { readFileSync } from "node:fs";
import { z } from "zod";
import { writeBack } from "../sys/write-back";

/**
 * Gemini CLI's OAuth client for its Google sign-in, as its own source has it. An "installed app" client: Google's
 * flow for desktop programs treats its secret as public, and a refresh needs the user's refresh token besides.
 */
export const GEMINI_CLIENT_ID = "681255809395-oo8ft2oprdrnp9e3aqf6av3hmdib135j.apps.googleusercontent.com";
export const GEMINI_CLIENT_SECRET = "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";
export const GOOGLE_TOKEN_URL = "https://oauth2.googleapis.com/token";

/** Refreshed when it has less than this left (keys.ts stops using a token a minute before it expires). */
const REFRESH_MARGIN_MS = 5 * 60_000;

/** After a failed refresh, the next is tried no sooner: a sandbox's every request must not become one to Google. */
const RETRY_AFTER_FAILURE_MS = 60_000;

const CredsSchema = z.object({ access_token: z.string().min(1), refresh_token: z.string().min(1).optional(), expiry_date: z.number().optional() }).passthrough();

function readCreds(file: string): z.infer<typeof CredsSchema> | null {
  try {
    const r = CredsSchema.safeParse(JSON.parse(readFileSync(file, "utf8")));
    return r.success ? r.data : null;
  } catch {
    return null;
  }
}

export interface GeminiRefresherOptions {
  file: string;
  tokenUrl?: string;
  fetch?: typeof fetch;
  now?: () => number;
}

/**
 * Keeps the host's Google sign-in for Gemini CLI fresh: `fresh()` refreshes when the access token has under five
 * minutes left and there is a refresh token, one refresh at a time, and writes the new token back (mode kept, atomic
 * rename, every other field as it was). No file, no refresh token, or not due: nothing happens.
 */
export class GeminiRefresher {
  private inflight: Promise<void> | null = null;
  private failedAt = -Infinity;
  private failure = "";
  constructor(private readonly o: GeminiRefresherOptions) {}

  private now(): number {
    return (this.o.now ?? Date.now)();
  }

  async fresh(): Promise<void> {
    const c = readCreds(this.o.file);
    if (!c?.refresh_token || c.expiry_date === undefined || c.expiry_date - this.now() > REFRESH_MARGIN_MS) return;
    if (this.now() - this.failedAt < RETRY_AFTER_FAILURE_MS) throw new Error(this.failure);
    this.inflight ??= this.refresh(c.refresh_token).finally(() => {
      this.inflight = null;
    });
    return this.inflight;
  }

  private async refresh(refreshToken: string): Promise<void> {
    try {
      const r = await (this.o.fetch ?? fetch)(this.o.tokenUrl ?? GOOGLE_TOKEN_URL, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ client_id: GEMINI_CLIENT_ID, client_secret: GEMINI_CLIENT_SECRET, grant_type: "refresh_token", refresh_token: refreshToken }).toString(),
      });
      if (!r.ok) throw new Error(`refreshing the host's Gemini sign-in answered ${r.status}; run \`gemini\` on the host and sign in again`);
      const got = z
        .object({ access_token: z.string().min(1), expires_in: z.number().positive(), refresh_token: z.string().min(1).optional(), id_token: z.string().min(1).optional(), scope: z.string().optional(), token_type: z.string().optional() })
        .parse(await r.json());
      const cur = readCreds(this.o.file);
      if (!cur) return;
      const next = {
        ...cur,
        access_token: got.access_token,
        expiry_date: this.now() + got.expires_in * 1000,
        ...(got.refresh_token ? { refresh_token: got.refresh_token } : {}),
        ...(got.id_token ? { id_token: got.id_token } : {}),
        ...(got.scope ? { scope: got.scope } : {}),
        ...(got.token_type ? { token_type: got.token_type } : {}),
      };
      writeBack(this.o.file, `${JSON.stringify(next, null, 2)}\n`);
    } catch (e) {
      this.failedAt = this.now();
      this.failure = (e as Error).message;
      throw e;
    }
  }
}
