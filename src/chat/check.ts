// Checks a Zulip bot's key against its server before `sbx chat setup` saves it (GET /api/v1/users/me): a refused key, another organisation or no answer refuses the setup, saying what to do.
import { SbxError } from "../core/errors";
import type { ZulipConfig } from "./config";
import { ZulipClient, ZulipError, type Fetch, type ZulipMe } from "./zulip";

export interface CheckOptions {
  fetch?: Fetch;
  /** How long the server has to answer (default 10 s). */
  timeoutMs?: number;
}

const KEY_HINT =
  "Check that --email is the bot's own email and that the key file holds that bot's current API key (Zulip: Personal settings → Bots → the bot → API key; generating a new key voids the old one). Nothing was saved.";
const SITE_HINT =
  "Check --site: it is the organisation's address as your browser shows it (https://ORG.zulipchat.com, or your own server's), without /api or a page's path. Nothing was saved.";

/** Asks the server who the key belongs to; returns that, or throws an SbxError that says what was wrong and what to do. */
export async function checkZulipKey(cfg: Pick<ZulipConfig, "site" | "email" | "apiKey">, opts: CheckOptions = {}): Promise<ZulipMe> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  let me: ZulipMe;
  try {
    me = await new ZulipClient(cfg, { requestTimeoutMs: timeoutMs, ...(opts.fetch ? { fetch: opts.fetch } : {}) }).me();
  } catch (e) {
    if (e instanceof ZulipError) throw keyRefusal(e, cfg, timeoutMs);
    throw e;
  }
  const asked = cfg.email.toLowerCase();
  if (me.email.toLowerCase() !== asked && me.deliveryEmail?.toLowerCase() !== asked) {
    throw new SbxError("config", `the Zulip server at ${cfg.site} says this key belongs to ${me.email}, not ${cfg.email}`, {
      hint: "Give the bot's own email as --email, or the key of that bot. Nothing was saved.",
    });
  }
  return me;
}

/** Pure: a failed GET /api/v1/users/me as the person setting up chat should read it. */
export function keyRefusal(e: ZulipError, cfg: Pick<ZulipConfig, "site" | "email">, timeoutMs: number): SbxError {
  const url = `${cfg.site}/api/v1/users/me`;
  const said = `HTTP ${e.status ?? "?"}: ${e.detail}`;
  if (e.code === "NETWORK") {
    const cause = e.cause as { name?: string; code?: string } | undefined;
    if (cause?.code === "UnexpectedRedirect") {
      return new SbxError("config", `the server at ${cfg.site} answered ${url} with a redirect (sbx does not send the bot's key on to another address)`, {
        hint: `Give --site as the address a browser ends up at (often https:// where http:// was given). ${SITE_HINT}`,
      });
    }
    const why = cause?.name === "TimeoutError" ? `no answer within ${timeoutMs >= 1000 ? `${Math.round(timeoutMs / 1000)} s` : `${timeoutMs} ms`}` : cause?.code === "ECONNREFUSED" ? "connection refused" : e.detail;
    return new SbxError("unavailable", `no answer from the Zulip server at ${url} (${why})`, {
      hint: `Check --site and that this machine reaches that server (a browser on it opens ${cfg.site}). Nothing was saved.`,
    });
  }
  if (e.code === "HTTP" || e.code === "SHAPE") {
    if (e.status !== null && e.status >= 500) {
      return new SbxError("unavailable", `the Zulip server at ${cfg.site} failed to answer ${url} (HTTP ${e.status})`, {
        hint: "The server is in trouble: try again in a while. Nothing was saved.",
      });
    }
    return new SbxError("config", `${cfg.site} does not answer as a Zulip server (${url}: ${e.code === "SHAPE" ? "JSON that is not Zulip's" : `HTTP ${e.status}, not JSON`})`, { hint: SITE_HINT });
  }
  // Zulip's own refusals. Its `msg` may be translated; its `code` is not, except that "wrong organisation" has none of its own.
  if (/subdomain/i.test(e.detail) || e.code === "INVALID_SUBDOMAIN") {
    return new SbxError("config", `${cfg.email} is not in the Zulip organisation at ${cfg.site} (${said})`, {
      hint: "Give --site as the address of the organisation where the bot was made (the one your browser shows on its Personal settings → Bots page), or make a bot in this one. Nothing was saved.",
    });
  }
  if (e.code === "REALM_DEACTIVATED") {
    return new SbxError("permission", `the Zulip organisation at ${cfg.site} is deactivated (${said})`, {
      hint: "Use an organisation that is active (check --site). Nothing was saved.",
    });
  }
  if (e.code === "USER_DEACTIVATED") {
    return new SbxError("permission", `the bot ${cfg.email} is deactivated on ${cfg.site} (${said})`, {
      hint: "Reactivate it (Personal settings → Bots → Inactive bots), or make a new bot and use its email and key. Nothing was saved.",
    });
  }
  if (e.status === 401 || e.status === 403 || /API_KEY|UNAUTHORIZED/.test(e.code)) {
    return new SbxError("permission", `the Zulip server at ${cfg.site} refused the key for ${cfg.email} (${said})`, { hint: KEY_HINT });
  }
  return new SbxError("config", `the Zulip server at ${cfg.site} refused ${url} (${said}, code ${e.code})`, {
    hint: `Check --site, --email and the key file. Nothing was saved.`,
  });
}
