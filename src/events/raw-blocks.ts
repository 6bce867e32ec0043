// The live feed's side of blocked raw connections (the user-account kinds' watchers audit them; the daemon publishes them here).
import type { Store } from "../store/store";
import { feedFromAudit, type FeedEvent } from "./feed";

/**
 * Publishes the audit row just written as the dashboard's history shows it (`feedFromAudit`: an egress denial with
 * reason `blocked-raw`), so the dashboard, the desktop notifier (one per sandbox and host per interval, like proxy
 * denials) and the chat bot see it. Repeats of the same destination within windowMs are audited but not published
 * again (a blocked TCP connect retries its SYN).
 */
export function rawBlockFeed(
  store: Pick<Store, "getSandbox">,
  publish: (e: FeedEvent) => void,
  opts: { windowMs?: number; now?: () => number } = {},
): (sandboxId: number, auditId: number, audit: { kind: string; action: string; detail: Record<string, unknown> }) => void {
  const window = opts.windowMs ?? 10_000;
  const now = opts.now ?? Date.now;
  const last = new Map<string, number>();
  return (sandboxId, auditId, audit) => {
    const row = { id: auditId, ts: now(), sandboxId, ...audit };
    const e = feedFromAudit(row, (id) => store.getSandbox(id)?.name ?? `#${id}`);
    if (!e || e.kind !== "egress") return;
    const key = `${sandboxId}|${e.method}|${e.host}|${e.port}`;
    const t = now();
    const prev = last.get(key);
    if (prev !== undefined && t - prev < window) return;
    last.set(key, t);
    if (last.size > 2000) for (const [k, v] of last) if (t - v >= window) last.delete(k);
    publish(e);
  };
}
