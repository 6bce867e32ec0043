// Signed HTTP both ways: sbx's webhook scheme (v1) and Slack's request signing (v0) are one construction, an
// HMAC-SHA256 over "<version>:<timestamp>:<raw body>" keyed with a shared secret, sent as "<version>=<hex>", valid
// while the timestamp is within five minutes of now; plus the memory that refuses a request seen before.
import { createHmac, timingSafeEqual } from "node:crypto";

/** How far a signed request's timestamp may be from now, either way (Slack: "more than five minutes", the same here). */
export const SIGNATURE_WINDOW_S = 300;

/** sbx's own headers (webhook deliveries and signed decisions). */
export const SBX_TIMESTAMP = "x-sbx-timestamp";
export const SBX_SIGNATURE = "x-sbx-signature";
/** Slack's. */
export const SLACK_TIMESTAMP = "x-slack-request-timestamp";
export const SLACK_SIGNATURE = "x-slack-signature";

export type SchemeVersion = "v0" | "v1";

/** Pure: the signature header's value for a body sent at `timestamp` (seconds since the epoch, as a decimal string). */
export function sign(secret: string, version: SchemeVersion, timestamp: string, body: Uint8Array | string): string {
  const mac = createHmac("sha256", secret).update(`${version}:${timestamp}:`).update(body).digest("hex");
  return `${version}=${mac}`;
}

export type SignatureCheck = { ok: true; timestamp: number } | { ok: false; why: "missing" | "bad-timestamp" | "stale" | "bad-signature" };

/** What a refusal says (the request's sender reads it; it names no secret and no expected value). */
export const CHECK_TEXT: Record<Exclude<SignatureCheck, { ok: true }>["why"], string> = {
  missing: "the request is not signed (no timestamp or signature header)",
  "bad-timestamp": "the request's timestamp is not a number of seconds",
  stale: `the request's timestamp is more than ${SIGNATURE_WINDOW_S / 60} minutes from now (a replay, or a clock that is off)`,
  "bad-signature": "the request's signature does not match its body",
};

/**
 * Checks a signed request: the timestamp first (a stale one is refused before any MAC is computed), then the signature,
 * compared in constant time. `body` is the raw bytes as received: never a re-serialised parse of them.
 */
export function verify(
  secret: string,
  version: SchemeVersion,
  got: { timestamp: string | null | undefined; signature: string | null | undefined; body: Uint8Array | string },
  nowMs: number,
  windowS = SIGNATURE_WINDOW_S,
): SignatureCheck {
  if (!got.timestamp || !got.signature) return { ok: false, why: "missing" };
  if (!/^\d{1,12}$/.test(got.timestamp)) return { ok: false, why: "bad-timestamp" };
  const ts = Number(got.timestamp);
  if (Math.abs(nowMs / 1000 - ts) > windowS) return { ok: false, why: "stale" };
  const want = Buffer.from(sign(secret, version, got.timestamp, got.body), "utf8");
  const have = Buffer.from(got.signature.trim(), "utf8");
  if (have.length !== want.length || !timingSafeEqual(have, want)) return { ok: false, why: "bad-signature" };
  return { ok: true, timestamp: ts };
}

/**
 * Keys seen within a window (a decision's nonce, a Slack request's signature): `take` answers "new" once per key, then
 * "seen" until it is older than the window (by then its timestamp is refused anyway). Bounded: when `max` keys are
 * live, a new one is "full" (refused), never admitted by forgetting one that could still be replayed.
 */
export class SeenOnce {
  private readonly seen = new Map<string, number>();
  constructor(
    private readonly max = 4096,
    private readonly ttlMs = 2 * SIGNATURE_WINDOW_S * 1000,
  ) {}

  take(key: string, nowMs: number): "new" | "seen" | "full" {
    const until = this.seen.get(key);
    if (until !== undefined && until > nowMs) return "seen";
    if (this.seen.size >= this.max) {
      for (const [k, t] of this.seen) if (t <= nowMs) this.seen.delete(k);
      if (this.seen.size >= this.max) return "full";
    }
    this.seen.set(key, nowMs + this.ttlMs);
    return "new";
  }

  size(): number {
    return this.seen.size;
  }
}
