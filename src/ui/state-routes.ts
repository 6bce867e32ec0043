// What the dashboard page reads: /api/state (sandboxes, pending approvals, allowlists, recent feed) and /api/events (the
// feed as server-sent events, bounded per page). Registered on the dashboard's app, behind its session check.
import type { Hono } from "hono";
import { streamSSE } from "hono/streaming";
import { BUILTIN_ALLOWLIST, isHostService, patternFor } from "../core/egress";
import { levelOf } from "../core/levels";
import { SSE_MAX_QUEUED } from "../core/bounds";
import { spendLine, type SpendView } from "../core/llm-budget";
import type { UiEnv } from "./auth";
import { feedFromAudit, stateFrom, type DataSource, type FeedEvent } from "../events/feed";

export interface StateRouteDeps {
  source: DataSource;
  now: () => number;
  /** Feed history sent on connect and in /api/state. */
  historyLimit: number;
  /** SSE keep-alive comment interval. */
  keepAliveMs: number;
}

const withLine = (v: SpendView) => ({ ...v, line: spendLine(v) });

/** GET /api/state and GET /api/events. */
export function stateRoutes(app: Hono<UiEnv>, d: StateRouteDeps): void {
  const { source, now, historyLimit, keepAliveMs } = d;
  const { store } = source;
const nameOf = (() => {
  const names = new Map<number, string>();
  return (id: number) => {
    if (!names.has(id)) names.set(id, store.getSandbox(id)?.name ?? `#${id}`);
    return names.get(id)!;
  };
})();

const history = (): FeedEvent[] =>
  store
    .listAudit({ limit: historyLimit * 2 })
    .map((r) => feedFromAudit(r, nameOf))
    .filter((e): e is FeedEvent => e !== null)
    .slice(-historyLimit);

app.get("/api/state", (c) => {
  const sandboxes = store.listSandboxes();
  const byId = new Map(sandboxes.map((s) => [s.id, s]));
  const lastActivity = (id: number, fallback: number) => {
    const a = store.listAudit({ sandboxId: id, limit: 1 })[0]?.ts ?? 0;
    return Math.max(a, fallback);
  };
  return c.json({
    csrf: c.get("session").csrf,
    now: now(),
    sandboxes: sandboxes.map((s) => ({
      id: s.id,
      name: s.name,
      repo: s.repo,
      backend: s.backend,
      state: stateFrom(source, s),
      createdAt: s.createdAt,
      lastActivity: lastActivity(s.id, s.lastUsedAt ?? s.updatedAt),
      // Its LLM spend, with the line the page shows (`$0.42 of $5.00 today`).
      llm: source.spendOf ? withLine(source.spendOf(s)) : null,
    })),
    pending: store.listApprovals({ state: "pending" }).map((a) => ({
      id: a.id,
      sandboxId: a.sandboxId,
      sandbox: byId.get(a.sandboxId)?.name ?? nameOf(a.sandboxId),
      // What the bridge refused (`host` is its subject), a sandbox at its LLM budget, or an egress request; all but an
      // egress request for a host on the network are one sandbox's: the page offers no "every sandbox" for them.
      kind: a.kind,
      sandboxOnly: a.kind !== "egress" || isHostService(patternFor(a.host, a.port)),
      host: a.host,
      port: a.port,
      reason: a.reason,
      count: a.count,
      firstSeen: a.firstSeen,
      lastSeen: a.lastSeen,
      pattern: patternFor(a.host, a.port),
    })),
    allowlists: {
      builtin: BUILTIN_ALLOWLIST,
      global: store.listAllow(null).map((e) => ({ pattern: e.pattern, addedBy: e.addedBy, addedAt: e.addedAt, expiresAt: e.expiresAt, once: e.once })),
      sandboxes: sandboxes.map((s) => ({
        id: s.id,
        name: s.name,
        // Its policy level (null: the built-in list).
        level: levelOf(s.identity)?.level ?? null,
        entries: store.listAllow(s.id).map((e) => ({ pattern: e.pattern, addedBy: e.addedBy, addedAt: e.addedAt, expiresAt: e.expiresAt, once: e.once })),
      })),
    },
    feed: history(),
  });
});

app.get("/api/events", (c) =>
  streamSSE(c, async (stream) => {
    let chain: Promise<void> = Promise.resolve();
    // Events waiting to be written: a page that does not read (a tab asleep, a client that stalls) is let go past
    // SSE_MAX_QUEUED rather than held in memory; the page opens its feed again and reloads /api/state when it can.
    let queued = 0;
    const send = (event: string, data: string) => {
      if (queued >= SSE_MAX_QUEUED) return void stream.abort();
      queued++;
      chain = chain
        .then(() => stream.writeSSE({ event, data }))
        .catch(() => undefined)
        .finally(() => void queued--);
    };
    send("hello", JSON.stringify({ now: now() }));
    const unsubscribe = source.events.subscribe((e) => send("feed", JSON.stringify(e)));
    const keepAlive = setInterval(() => {
      if (queued > 0) return; // something is being written already
      chain = chain.then(() => stream.write(": keep-alive\n\n")).then(() => undefined).catch(() => undefined);
    }, keepAliveMs);
    await new Promise<void>((resolve) => {
      stream.onAbort(() => {
        unsubscribe();
        clearInterval(keepAlive);
        resolve();
      });
    });
  }),
);
}
