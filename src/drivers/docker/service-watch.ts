// Watches the engine's events for this state root's service containers while the daemon runs, so a service that
// crashes (exits when sbx did not stop it) or turns unhealthy is an audit row of its sandbox (`sbx logs`) and a desktop
// notice, at the moment it happens. `sbx status` and `sbx services` read the engine themselves and show it too.
import type { WatchContext, Watcher } from "../driver";
import { LABEL } from "./args";

/** The most of one event line kept (the engine's are a few hundred bytes; a longer one is dropped, never buffered). */
const MAX_LINE = 64 * 1024;

/** One engine event as the watcher reads it (only what it uses). */
interface EngineEvent {
  Type?: unknown;
  Action?: unknown;
  time?: unknown;
  timeNano?: unknown;
  Actor?: { Attributes?: Record<string, unknown> | null } | null;
}

/** What the watcher asks of the sandbox's services: whether sbx itself is stopping this container. */
export interface ExitOracle {
  exitExpected(container: string): boolean;
}

/**
 * Pure: what one event means for a sandbox of this root: a crash (a `die` sbx did not cause), an unhealthy turn, or
 * nothing. Labels are checked here too (the engine's filter is the first check, not the only one).
 */
export function serviceEvent(e: EngineEvent, root: string, oracle: ExitOracle, oom: Set<string>): { action: "service.exited" | "service.unhealthy"; sandboxId: string; service: string; container: string; detail: Record<string, unknown> } | null {
  if (e.Type !== "container" || typeof e.Action !== "string") return null;
  const a = e.Actor?.Attributes ?? {};
  const str = (k: string) => (typeof a[k] === "string" ? (a[k] as string) : "");
  if (str(LABEL.root) !== root || str(LABEL.role) !== "service") return null;
  const container = str("name");
  const base = { sandboxId: str(LABEL.sandbox), service: str(LABEL.service) || container, container };
  if (e.Action === "oom") {
    oom.add(container);
    return null;
  }
  if (e.Action === "die") {
    const killed = oom.delete(container);
    if (oracle.exitExpected(container)) return null;
    const code = Number.parseInt(str("exitCode"), 10);
    return { action: "service.exited", ...base, detail: { exitCode: Number.isInteger(code) ? code : null, ...(killed ? { oom: true } : {}) } };
  }
  if (e.Action === "health_status: unhealthy") return { action: "service.unhealthy", ...base, detail: {} };
  return null;
}

/**
 * Follows GET /events (filtered to this root's service containers) on the engine's socket; reconnects after the
 * engine goes away, from the last event's time. Nothing to watch without a socket (a TCP DOCKER_HOST): then only
 * `sbx status` and `sbx services` say a service crashed.
 * API: GET /events?filters={"type":["container"],"label":["sbx.root=<root>","sbx.role=service"]}&since=<t>
 */
export function watchServices(ctx: WatchContext, o: { apiSocket: string | undefined; root: string; oracle: ExitOracle; retryMs?: number }): Watcher[] {
  const sock = o.apiSocket;
  if (sock === undefined) {
    ctx.log.info("service events not watched: the engine is not on a unix socket (sbx status still shows a crashed service)");
    return [];
  }
  const stop = new AbortController();
  const oom = new Set<string>();
  let since = Math.floor(Date.now() / 1000);
  const filters = encodeURIComponent(JSON.stringify({ type: ["container"], label: [`${LABEL.root}=${o.root}`, `${LABEL.role}=service`] }));

  // A reconnect asks again from the last event's second: what was already seen of that second is seen once.
  const seen: string[] = [];
  const record = (e: EngineEvent) => {
    if (typeof e.time === "number" && Number.isFinite(e.time)) since = Math.max(since, Math.floor(e.time));
    const key = `${String(e.timeNano)}\0${String(e.Action)}\0${String(e.Actor?.Attributes?.name)}`;
    if (seen.includes(key)) return;
    seen.push(key);
    if (seen.length > 256) seen.shift();
    const ev = serviceEvent(e, o.root, o.oracle, oom);
    if (ev === null) return;
    const row = ctx.store.listSandboxes().find((r) => r.identity.id === ev.sandboxId && r.state !== "deleted");
    if (row === undefined) return;
    ctx.store.audit({ sandboxId: row.id, kind: "service", action: ev.action, detail: { name: row.name, service: ev.service, ...ev.detail } });
    const what = ev.action === "service.exited" ? `exited${ev.detail.exitCode !== null ? ` (code ${String(ev.detail.exitCode)})` : ""}${ev.detail.oom ? ", out of memory" : ""}` : "is unhealthy";
    ctx.notify({ title: `sbx: service ${ev.service} of ${row.name} ${what}`, body: `sbx services ${row.name} logs ${ev.service}` });
  };

  const follow = async (): Promise<void> => {
    const res = await fetch(`http://docker/events?filters=${filters}&since=${since}`, { unix: sock, signal: stop.signal } as RequestInit);
    if (res.status !== 200 || res.body === null) throw new Error(`GET /events answered ${res.status}`);
    const dec = new TextDecoder();
    let buf = "";
    for await (const chunk of res.body) {
      buf += dec.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          record(JSON.parse(line) as EngineEvent);
        } catch {
          /* not an event: skipped */
        }
      }
      if (buf.length > MAX_LINE) buf = "";
    }
  };

  const done = (async () => {
    let wait = o.retryMs ?? 1000;
    while (!stop.signal.aborted) {
      try {
        await follow();
        wait = o.retryMs ?? 1000;
      } catch (e) {
        if (stop.signal.aborted) break;
        ctx.log.warn("service events: the engine's stream failed; reconnecting", { err: e });
      }
      if (stop.signal.aborted) break;
      await new Promise<void>((r) => {
        const t = setTimeout(r, wait);
        stop.signal.addEventListener("abort", () => (clearTimeout(t), r()), { once: true });
      });
      wait = Math.min(wait * 2, 30_000);
    }
  })();

  return [
    {
      async stop() {
        stop.abort();
        await done;
      },
    },
  ];
}
