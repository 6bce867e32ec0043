// A webhook receiver on 127.0.0.1 that checks deliveries as `sbx help chat-setup` documents them, with its own
// node:crypto code (not sbx's signer): X-Sbx-Signature = "v1=" + hex HMAC-SHA256(secret, "v1:" + X-Sbx-Timestamp +
// ":" + raw body), the timestamp within five minutes. It can answer 200, fail (500), refuse (401), or hang (never
// answer); and it signs decisions for sbx's decision API the same documented way.
import { createHmac, timingSafeEqual } from "node:crypto";

export interface Delivery {
  event: string;
  delivery: string;
  timestamp: string;
  signature: string;
  /** Whether the signature and timestamp hold, as the receiver checks them. */
  verified: boolean;
  body: Record<string, unknown>;
  at: number;
}

export type ReceiverMode = "ok" | "fail" | "refuse" | "hang";

export interface FakeWebhook {
  readonly url: string;
  readonly deliveries: Delivery[];
  /** Requests received, answered or not (a hanging receiver holds them). */
  received(): number;
  /** Requests held unanswered right now. */
  hanging(): number;
  mode(m: ReceiverMode): void;
  waitFor<T>(pred: (ds: Delivery[]) => T | undefined | false, timeoutMs?: number): Promise<T>;
  stop(): Promise<void>;
}

export function sbxSign(secret: string, ts: string, body: string): string {
  return `v1=${createHmac("sha256", secret).update(`v1:${ts}:${body}`).digest("hex")}`;
}

export function startFakeWebhook(secret: string, path = "/hooks/sbx"): FakeWebhook {
  const deliveries: Delivery[] = [];
  let m: ReceiverMode = "ok";
  let received = 0;
  const held = new Set<() => void>();
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      received++;
      if (new URL(req.url).pathname !== path) return new Response("no such hook", { status: 404 });
      const raw = await req.text();
      const ts = req.headers.get("x-sbx-timestamp") ?? "";
      const sig = req.headers.get("x-sbx-signature") ?? "";
      const want = Buffer.from(sbxSign(secret, ts, raw));
      const fresh = /^\d+$/.test(ts) && Math.abs(Date.now() / 1000 - Number(ts)) <= 300;
      const verified = fresh && sig.length === want.length && timingSafeEqual(Buffer.from(sig), want);
      deliveries.push({ event: req.headers.get("x-sbx-event") ?? "", delivery: req.headers.get("x-sbx-delivery") ?? "", timestamp: ts, signature: sig, verified, body: JSON.parse(raw), at: Date.now() });
      if (m === "hang") return new Promise<Response>((r) => held.add(() => r(new Response("late", { status: 503 }))));
      if (m === "fail") return new Response("down", { status: 500 });
      if (m === "refuse" || !verified) return new Response("bad signature", { status: 401 });
      return new Response("ok");
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}${path}`,
    deliveries,
    received: () => received,
    hanging: () => held.size,
    mode: (x) => void (m = x),
    async waitFor(pred, timeoutMs = 5000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const v = pred(deliveries);
        if (v) return v;
        if (Date.now() > end) throw new Error(`fake webhook: timed out waiting (${deliveries.length} deliveries)`);
        await Bun.sleep(10);
      }
    },
    async stop() {
      for (const r of held) r();
      held.clear();
      await server.stop(true);
    },
  };
}

/** Signs a decision for sbx's API as the docs say, and POSTs it; tampering options for the hostile tests. */
export async function signedDecision(
  decideUrl: string,
  secret: string,
  body: Record<string, unknown>,
  o: { timestamp?: number; signature?: string; raw?: string } = {},
): Promise<{ status: number; json: Record<string, unknown>; sent: { body: string; headers: Record<string, string> } }> {
  const text = o.raw ?? JSON.stringify(body);
  const ts = String(o.timestamp ?? Math.floor(Date.now() / 1000));
  const headers = { "content-type": "application/json", "x-sbx-timestamp": ts, "x-sbx-signature": o.signature ?? sbxSign(secret, ts, text) };
  const res = await fetch(decideUrl, { method: "POST", headers, body: text, signal: AbortSignal.timeout(5000) });
  return { status: res.status, json: (await res.json()) as Record<string, unknown>, sent: { body: text, headers } };
}
