// The sandbox's own view of its egress policy, served by its proxy at /sbx/egress (origin-form): what it may reach,
// what it was refused lately and why, and a way to ask the user for a host with a reason. Read-only but for that ask,
// which only files a pending approval; it never sees or changes another sandbox's policy.
import type { IncomingMessage, ServerResponse } from "node:http";
import { normalizeHost, parsePattern } from "../core/allowlist";
import { parseIp } from "../core/addresses";
import { BUILTIN_ALLOWLIST, isHostService, patternFor } from "../core/egress";
import type { FeedEvent } from "../events/feed";
import type { Store } from "../store/store";
import { approvalHost, policyFor } from "./service";
import { DESK_MAX_BODY, DESK_MAX_WAIT_S, DESK_MAX_WAITS } from "../core/bounds";

export const DESK_PATH = "/sbx/egress";
/** The longest one `wait` may hold a request open (the shim asks again until its own deadline). */
export const MAX_WAIT_S = DESK_MAX_WAIT_S;
const MAX_WHY = 300;
const MAX_BODY = DESK_MAX_BODY;

export interface EgressDeskOptions {
  store: Store;
  sandbox: { id: number; name: string };
  /** The live feed: an ask shows up where denials do (dashboard, chat, desktop). */
  publish?: (e: FeedEvent) => void;
  now?: () => number;
}

/** Pure: text a sandbox wrote, fit to show a person: printable, one line, bounded. */
export function deskText(s: string, max = MAX_WHY): string {
  return s.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, " ").replace(/\s+/g, " ").trim().slice(0, max);
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text), "Cache-Control": "no-store" });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string | null> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_BODY) return null;
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** The handler for /sbx/egress…; anything else under it is a 404 that says what there is. */
export function createEgressDesk(o: EgressDeskOptions): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const now = o.now ?? Date.now;
  const { store } = o;
  const approvalView = (id: number) => {
    const a = store.getApproval(id);
    return a && a.sandboxId === o.sandbox.id ? { id: a.id, host: a.host, port: a.port, state: a.state, count: a.count, reason: a.reason } : null;
  };
  /** Waits held now (at most DESK_MAX_WAITS: a sandbox cannot make the daemon hold, and poll for, ever more). */
  let waits = 0;
  return async (req, res) => {
    const url = new URL(req.url ?? "/", "http://sandbox");
    const path = url.pathname.replace(/\/+$/, "");
    try {
      if (req.method === "GET" && path === DESK_PATH) {
        const lists = policyFor(store, o.sandbox.id);
        const blocked = store
          .listAudit({ sandboxId: o.sandbox.id, kind: "egress", limit: 200 })
          .filter((a) => a.action === "denied")
          .reverse() // newest first
          .slice(0, 20)
          .map((a) => ({ at: a.ts, ...(a.detail as Record<string, unknown>) }));
        const pending = store
          .listApprovals({ state: "pending", sandboxId: o.sandbox.id })
          .filter((a) => a.kind === "egress")
          .map((a) => ({ id: a.id, host: a.host, port: a.port, count: a.count, reason: a.reason }));
        // A level takes the built-in list's place (core/levels.ts).
        const allowlist = { sandbox: lists.sandbox, global: lists.global, builtin: lists.level ? [] : BUILTIN_ALLOWLIST, published: lists.published ?? [], level: lists.level ?? null, once: lists.once ?? [] };
        json(res, 200, { sandbox: o.sandbox.name, allowlist, blocked, pending });
        return;
      }
      if (req.method === "POST" && path === `${DESK_PATH}/ask`) {
        const text = await readBody(req);
        let body: { host?: unknown; port?: unknown; why?: unknown };
        try {
          body = text === null ? {} : (JSON.parse(text) as typeof body);
        } catch {
          body = {};
        }
        const host = typeof body.host === "string" ? body.host.trim() : "";
        const port = body.port === undefined ? 443 : Number(body.port);
        const why = typeof body.why === "string" ? deskText(body.why) : "";
        if (!host || !Number.isInteger(port) || port < 1 || port > 65535) return json(res, 400, { error: "bad_request", message: "send {host, port?, why}: a host name, a port (default 443) and one line saying why" });
        if (why.length < 3) return json(res, 400, { error: "bad_request", message: "say why in a few words (--why): the person deciding reads it" });
        const suggest = patternFor(host, port);
        // A service of the host is asked for as itself (allowing publishes it); anything else must be a pattern the
        // allowlist would take.
        if (!isHostService(suggest)) {
          const p = parsePattern(suggest);
          if (!p.ok) return json(res, 400, { error: "refused", message: `${host}:${port} cannot be allowed: ${p.reason}` });
        }
        const key = approvalHost(suggest);
        if (key === null) return json(res, 400, { error: "refused", message: `${host}:${port} is not something one approval allows (ask for one host)` });
        const a = store.recordPending(o.sandbox.id, key, port, `asked: ${why}`);
        if (a === null) return json(res, 429, { error: "too_many", message: "this sandbox has too many requests waiting; wait for the person to answer some" });
        store.audit({ sandboxId: o.sandbox.id, kind: "egress", action: "asked", detail: { host: key, port, why, approvalId: a.id } });
        if (a.count === 1) {
          try {
            o.publish?.({ kind: "egress", at: now(), sandbox: o.sandbox, action: "denied", method: "ASK", host: key, port, reason: "asked", detail: why, suggest, approvalId: a.id, count: a.count });
          } catch {
            // the feed is best effort; the request is filed
          }
        }
        // Said before it waits: sbx looks a name up only once a person allowed it (policy/private-pairing.ts).
        const name = normalizeHost(host);
        const note =
          name !== null && !parseIp(name) && !isHostService(suggest)
            ? `if ${name} resolves to a private address (a company's own DNS), allowing it allows ${name} with that address only (${name}@ADDRESS, shown in sbx logs); another address later is a new decision`
            : undefined;
        return json(res, 200, { ...approvalView(a.id), ...(note ? { note } : {}) });
      }
      const m = /^\/sbx\/egress\/approvals\/([1-9][0-9]{0,9})$/.exec(path);
      if (req.method === "GET" && m) {
        const id = Number(m[1]);
        const wait = Math.min(MAX_WAIT_S, Math.max(0, Number(url.searchParams.get("wait") ?? "0") || 0));
        const until = now() + wait * 1000;
        let v = approvalView(id);
        if (v !== null && v.state === "pending" && wait > 0) {
          if (waits >= DESK_MAX_WAITS) {
            return json(res, 429, { error: "too_many", message: `this sandbox already waits on ${DESK_MAX_WAITS} requests at once; ask again in a moment (sbx-egress does)` });
          }
          waits++;
          try {
            while (v !== null && v.state === "pending" && now() < until && !req.destroyed) {
              await Bun.sleep(250);
              v = approvalView(id);
            }
          } finally {
            waits--;
          }
        }
        if (v === null) return json(res, 404, { error: "not_found", message: `no request ${id} of this sandbox` });
        return json(res, 200, v);
      }
      json(res, 404, { error: "not_found", message: `GET ${DESK_PATH} (this sandbox's allowlist and what it was refused), POST ${DESK_PATH}/ask {host, port, why}, GET ${DESK_PATH}/approvals/ID?wait=SECONDS` });
    } catch (e) {
      if (!res.headersSent) json(res, 500, { error: "internal", message: (e as Error).message });
    }
  };
}
