// Dashboard access: a random launch token (constant-time compare), cookie sessions with a CSRF token each, and the same-origin checks for mutations.
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/** A fresh URL-safe random secret (256 bits). */
export function randomSecret(bytes = 32): string {
  return randomBytes(bytes).toString("base64url");
}

/** Constant-time equality of two strings of any length (compares their SHA-256 digests). */
export function safeEqual(a: string, b: string): boolean {
  const da = createHash("sha256").update(a, "utf8").digest();
  const db = createHash("sha256").update(b, "utf8").digest();
  return timingSafeEqual(da, db) && a.length === b.length;
}

export interface Session {
  id: string;
  csrf: string;
  createdAt: number;
}

/** The dashboard app's request context: the session the request signed in with (set once it is checked). */
export type UiEnv = { Variables: { session: Session } };

/** How long a dashboard session lasts (a browser tab left open over a week signs in again). */
export const SESSION_MAX_AGE_MS = 7 * 24 * 3600 * 1000;

/**
 * Cookie sessions signed with a key, so a daemon that restarts with the same key (kept 0600 in the state dir) still
 * knows the tabs it let in: the dashboard reconnects by itself. A session id is `<nonce>.<issued ms>.<mac>`; its CSRF
 * token is another MAC of the id. Nothing is stored per session; a changed key ends them all.
 */
export class Sessions {
  constructor(
    private readonly key: string = randomSecret(),
    private readonly now: () => number = Date.now,
    private readonly maxAgeMs = SESSION_MAX_AGE_MS,
  ) {}

  private mac(what: string): string {
    return createHmac("sha256", this.key).update(what).digest("base64url");
  }

  create(): Session {
    const createdAt = this.now();
    const body = `${randomSecret(24)}.${createdAt}`;
    const id = `${body}.${this.mac(`session:${body}`)}`;
    return { id, csrf: this.mac(`csrf:${id}`), createdAt };
  }

  /** The session `id` names when its MAC is this key's (compared in constant time) and it has not expired; else null. */
  find(id: string | undefined): Session | null {
    if (id === undefined) return null;
    const m = /^([A-Za-z0-9_-]{32}\.(\d{1,16}))\.([A-Za-z0-9_-]{43})$/.exec(id);
    if (!m) return null;
    if (!safeEqual(m[3]!, this.mac(`session:${m[1]}`))) return null;
    const createdAt = Number(m[2]);
    const age = this.now() - createdAt;
    if (age < 0 || age > this.maxAgeMs) return null;
    return { id, csrf: this.mac(`csrf:${id}`), createdAt };
  }
}

export type TicketState = "unused" | "used" | "expired" | "unknown";

/**
 * Single-use launch tickets: `sbx ui` asks the daemon for one instead of ever seeing the dashboard's token,
 * so a launch link left in a file, a terminal or browser history is dead once used or after its TTL.
 */
export class LaunchTickets {
  private readonly byTicket = new Map<string, { expiresAt: number; used: boolean }>();
  constructor(
    private readonly max = 64,
    private readonly now: () => number = Date.now,
  ) {}

  issue(ttlMs: number): { ticket: string; expiresAt: number } {
    const ticket = randomSecret();
    const expiresAt = this.now() + ttlMs;
    this.byTicket.set(ticket, { expiresAt, used: false });
    while (this.byTicket.size > this.max) this.byTicket.delete(this.byTicket.keys().next().value!);
    return { ticket, expiresAt };
  }

  private find(ticket: string): { expiresAt: number; used: boolean } | null {
    let found: { expiresAt: number; used: boolean } | null = null;
    for (const [t, v] of this.byTicket) if (safeEqual(t, ticket)) found = v;
    return found;
  }

  /** Marks the ticket used; true only for a known, unused, unexpired one (compared in constant time). */
  redeem(ticket: string): boolean {
    const t = this.find(ticket);
    if (!t || t.used || this.now() >= t.expiresAt) return false;
    t.used = true;
    return true;
  }

  state(ticket: string): TicketState {
    const t = this.find(ticket);
    if (!t) return "unknown";
    if (t.used) return "used";
    return this.now() >= t.expiresAt ? "expired" : "unused";
  }
}

/** Host names the dashboard answers to: anything else is a DNS-rebinding attempt. */
const LOCAL_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);

/** Whether a Host header names this machine's loopback (with any port). */
export function isLocalHost(host: string | undefined): boolean {
  if (!host) return false;
  const h = host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : host.split(":")[0]!;
  return LOCAL_HOSTS.has(h.toLowerCase());
}

export type OriginCheck = { ok: true } | { ok: false; why: string };

/**
 * The same-origin check for a state-changing request. `Sec-Fetch-Site`, when the browser sends it, must be
 * `same-origin`; `Origin` must be present and equal to this server's own origin. A request with neither is
 * refused: every browser sends `Origin` on a POST, so only forged or non-browser requests lack both.
 */
export function checkSameOrigin(headers: { origin?: string | undefined; secFetchSite?: string | undefined; host?: string | undefined }): OriginCheck {
  const site = headers.secFetchSite?.toLowerCase();
  if (site !== undefined && site !== "same-origin") return { ok: false, why: `cross-site request (Sec-Fetch-Site: ${site})` };
  const origin = headers.origin;
  if (origin === undefined || origin === "" || origin === "null") return { ok: false, why: "missing Origin header" };
  if (!headers.host || origin.toLowerCase() !== `http://${headers.host.toLowerCase()}`) return { ok: false, why: "Origin does not match this dashboard" };
  return { ok: true };
}

/** The dashboard's Content-Security-Policy: only its own files, no inline script or style, no framing. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** Headers on every response. `Referrer-Policy: no-referrer` keeps the launch URL (with its token) out of Referer. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "Content-Security-Policy": CONTENT_SECURITY_POLICY,
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Resource-Policy": "same-origin",
  "Cache-Control": "no-store",
};
