// GET /v1/logs: the audit log, one sandbox's or all, with a long-poll follow (`sbx logs -f`).
import type { Hono } from "hono";
import type { SandboxService } from "../sandboxes/service";
import type { Store } from "../store/store";
import { AuditViewSchema, LogsQuerySchema, LogsSchema, type AuditView } from "./protocol";

export interface LogsRouteDeps {
  /** Resolves `--sandbox NAME`. */
  service: Pick<SandboxService, "resolve">;
  store: Store;
}

export function logsRoutes(app: Hono, deps: LogsRouteDeps): void {
  const { store } = deps;
  const svc = deps.service;

  app.get("/v1/logs", async (c) => {
    const q = LogsQuerySchema.parse(c.req.query());
    const sandboxId = q.sandbox ? (await svc.resolve(q.sandbox, { ...(q.repo ? { repo: q.repo } : {}) })).id : undefined;
    const names = new Map(store.listSandboxes({ all: true }).map((s) => [s.id, s.name]));
    const read = () =>
      store.listAudit({
        ...(sandboxId !== undefined ? { sandboxId } : {}),
        ...(q.after !== undefined ? { afterId: q.after } : {}),
        ...(q.kind !== undefined ? { kind: q.kind } : {}),
        ...(q.since !== undefined ? { since: q.since } : {}),
        limit: q.limit || (q.after !== undefined ? 10_000 : 100),
      });
    let entries = read();
    if (entries.length === 0 && q.waitMs && q.after !== undefined) {
      // Long-poll: the store is re-read rather than waiting on an event (every writer is in this daemon, but not every
      // kind of audit row is published on the bus).
      const until = Date.now() + q.waitMs;
      const aborted = () => c.req.raw.signal.aborted;
      while (entries.length === 0 && Date.now() < until && !aborted()) {
        await Bun.sleep(Math.min(100, until - Date.now()));
        entries = read();
      }
    }
    const views: AuditView[] = entries.map((e) =>
      AuditViewSchema.parse({ ...e, sandbox: e.sandboxId === null ? null : (names.get(e.sandboxId) ?? null) }),
    );
    const cursor = views.length ? views[views.length - 1]!.id : (q.after ?? 0);
    return c.json(LogsSchema.parse({ entries: views, cursor }));
  });
}
