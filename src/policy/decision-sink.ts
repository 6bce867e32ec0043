// The proxy's side of policy: every egress decision recorded (a denial as a pending approval), off the hot path.
import type { Approval } from "../core/schemas";
import type { EgressEvent } from "../core/egress-events";
import type { Store } from "../store/store";
import { approvalHost } from "./service";

export interface DecisionSinkOptions {
  /** Called once per new pending approval (not on repeats): the desktop/terminal notification hook. */
  notify?: (approval: Approval, event: Extract<EgressEvent, { type: "denied" }>) => void;
  /** Allowed-traffic audit rows are batched and written this often (ms). */
  flushMs?: number;
}

export interface DecisionSink {
  onDecision: (e: EgressEvent) => void;
  /** Writes buffered audit rows now. */
  flush(): void;
  close(): void;
}

/**
 * The proxy's onDecision for the daemon: a denial records a pending approval (deduplicated per sandbox and
 * host) and an audit row at once; allowed tunnels and errors are audited in batches off the hot path.
 */
export function createDecisionSink(store: Store, opts: DecisionSinkOptions = {}): DecisionSink {
  const flushMs = opts.flushMs ?? 250;
  let buffer: { sandboxId: number; action: string; detail: Record<string, unknown> }[] = [];
  let timer: ReturnType<typeof setTimeout> | null = null;

  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    if (buffer.length === 0) return;
    const rows = buffer;
    buffer = [];
    store.write(() => {
      for (const r of rows) store.audit({ sandboxId: r.sandboxId, kind: "egress", action: r.action, detail: r.detail });
    });
  };
  const schedule = () => {
    if (buffer.length >= 500) flush();
    else
      timer ??= setTimeout(() => {
        try {
          flush();
        } catch {
          // The audit is best-effort from a timer: a closed or busy database must not take the daemon down.
        }
      }, flushMs);
  };

  const onDecision = (e: EgressEvent) => {
    if (e.type === "denied") {
      const host = e.suggest === null ? null : approvalHost(e.suggest);
      store.audit({
        sandboxId: e.sandbox.id,
        kind: "egress",
        action: "denied",
        detail: { method: e.method, host: e.host, port: e.port, reason: e.reason, detail: e.detail, ...pathOf(e) },
      });
      if (host !== null) {
        const approval = store.recordPending(e.sandbox.id, host, e.port, `${e.reason}: ${e.detail}`);
        if (approval?.count === 1) opts.notify?.(approval, e);
      }
      return;
    }
    if (e.type === "closed") {
      buffer.push({
        sandboxId: e.sandbox.id,
        action: "allowed",
        detail: {
          method: e.method,
          host: e.host,
          port: e.port,
          address: e.address,
          pattern: e.pattern,
          source: e.source,
          // A request's path (never its query), for the log and the OCSF export's HTTP Activity; a tunnel has none.
          ...(e.target !== undefined ? { target: e.target } : {}),
          bytesUp: e.bytesUp,
          bytesDown: e.bytesDown,
          durationMs: e.durationMs,
          ...pathOf(e),
        },
      });
    } else if (e.type === "secret") {
      // Every use and every refused use of a secret, by name: never its value, never the query that may hold it.
      buffer.push({
        sandboxId: e.sandbox.id,
        action: e.action === "used" ? "secret.used" : "secret.outside",
        detail: { secret: e.name, method: e.method, host: e.host, port: e.port, target: e.target, ...(e.reason ? { reason: e.reason } : {}), ...pathOf(e) },
      });
    } else {
      buffer.push({ sandboxId: e.sandbox.id, action: "error", detail: { method: e.method, host: e.host, port: e.port, address: e.address, message: e.message, ...pathOf(e) } });
    }
    schedule();
  };

  let closed = false;
  return {
    onDecision: (e) => {
      if (!closed) onDecision(e);
    },
    flush,
    close() {
      flush();
      closed = true;
    },
  };
}

/** The audit detail's `path`, said only for the transparent path (the proxy path is the common one, as before). */
function pathOf(e: EgressEvent): { path?: "transparent" } {
  return e.path === "transparent" ? { path: "transparent" } : {};
}
