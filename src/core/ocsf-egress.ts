// What the egress and LLM proxies audited, as OCSF 1.8.0 network events. Pure.
//
// A connection (CONNECT, a tunnel, a packet the firewall dropped) is Network Activity (4001): `Close` for one that was
// allowed (its row is written when it ends, with the bytes each way), `Refuse` for one refused, `Fail` for one that
// could not be made. A request sbx read (plain HTTP it forwarded, a request inside a connection it terminated, an LLM
// call) is HTTP Activity (4002), its activity the request's method. A refusal is action Denied, disposition Blocked
// (Dropped for the firewall's); a request a secret was swapped into is action Modified, one whose placeholder went
// unswapped where it may not go is action Denied. A secret is named, never its value: no row holds one.
import {
  ACTION,
  DISPOSITION,
  SEVERITY,
  STATUS,
  defined,
  envelope,
  hostEndpoint,
  ipText,
  long,
  port,
  sandboxEndpoint,
  str,
  who,
  type AuditRecord,
  type Classified,
  type OcsfEvent,
} from "./ocsf-common";

/** HTTP Activity's activity_id for each method OCSF 1.8.0 names; any other method is 99 (Other), named as sent. */
const HTTP_ACTIVITY: Record<string, number> = { CONNECT: 1, DELETE: 2, GET: 3, HEAD: 4, OPTIONS: 5, POST: 6, PUT: 7, TRACE: 8, PATCH: 9 };
const HTTP_ACTIVITY_NAMES: Record<number, string> = { 1: "Connect", 2: "Delete", 3: "Get", 4: "Head", 5: "Options", 6: "Post", 7: "Put", 8: "Trace", 9: "Patch" };

function httpActivity(method: string): { activityId: number; activityName: string } {
  const id = HTTP_ACTIVITY[method.toUpperCase()];
  return id === undefined ? { activityId: 99, activityName: method || "Other" } : { activityId: id, activityName: HTTP_ACTIVITY_NAMES[id]! };
}

/** Where the proxy's rows say where a request went: the host, its port, and the address connected to. */
function target(d: Record<string, unknown>): { host: string | undefined; port: number | undefined; where: string } {
  const host = str(d.host);
  const p = port(d.port);
  return { host, port: p, where: host === undefined ? "?" : p === undefined ? host : `${host}:${p}` };
}

/** The transparent path (a client that ignored the proxy variables) is said in `unmapped`, as the row says it. */
function unmappedOf(row: AuditRecord, extra: Record<string, unknown> = {}): OcsfEvent {
  return defined({ kind: row.kind, action: row.action, path: str(row.detail.path), ...extra });
}

const OUTBOUND_TCP = { direction_id: 2, direction: "Outbound", protocol_name: "tcp" };

/** An `egress` row of the proxy's (allowed, denied, error, secret.*), as Network or HTTP Activity. */
export function egressEvent(row: AuditRecord, productVersion: string): OcsfEvent {
  const d = row.detail;
  const method = str(d.method) ?? "";
  const t = target(d);
  const path = str(d.target);
  // A request sbx read is an HTTP event; a CONNECT (a tunnel, or the connection a terminated one came in) is not.
  const http = method !== "" && method.toUpperCase() !== "CONNECT";
  const c = classify(row, http, t.where);
  const dst = hostEndpoint(t.host, t.port, str(d.address));
  const request = http
    ? defined({ http_method: method, url: path !== undefined ? defined({ hostname: dst?.hostname, port: t.port, path }) : undefined })
    : undefined;
  const upBytes = long(d.bytesUp);
  const downBytes = long(d.bytesDown);
  const traffic = upBytes !== undefined || downBytes !== undefined ? defined({ bytes_out: upBytes, bytes_in: downBytes, bytes: (upBytes ?? 0) + (downBytes ?? 0) }) : undefined;
  const pattern = str(d.pattern);
  const policy = pattern !== undefined ? defined({ name: pattern, type: sourceText(str(d.source)), is_applied: true }) : undefined;
  const secret = str(d.secret);
  return defined({
    ...envelope(row, c, productVersion),
    src_endpoint: sandboxEndpoint(row),
    dst_endpoint: dst,
    connection_info: OUTBOUND_TCP,
    http_request: request,
    traffic,
    duration: long(d.durationMs),
    policy,
    unmapped: unmappedOf(row, defined({ secret, reason: str(d.reason) })),
  });
}

function sourceText(source: string | undefined): string | undefined {
  if (source === undefined) return undefined;
  return { sandbox: "sandbox allowlist", global: "global allowlist", builtin: "built-in allowlist", published: "published host service" }[source] ?? source;
}

/** The class, activity, outcome and control decision of one egress row. */
function classify(row: AuditRecord, http: boolean, where: string): Classified {
  const d = row.detail;
  const sb = who(row);
  const method = str(d.method) ?? "";
  const act = (networkActivity: { activityId: number; activityName: string }) =>
    http ? { classUid: 4002 as const, ...httpActivity(method) } : { classUid: 4001 as const, ...networkActivity };
  switch (row.action) {
    case "allowed":
      return {
        ...act({ activityId: 2, activityName: "Close" }),
        severityId: SEVERITY.informational,
        statusId: STATUS.success,
        actionId: ACTION.allowed,
        dispositionId: DISPOSITION.allowed,
        message: `${sb} ${http ? `sent ${method} to` : "reached"} ${where}${str(d.pattern) ? ` (allowed by ${str(d.pattern)})` : ""}`,
      };
    case "denied": {
      const reason = str(d.reason);
      const detail = str(d.detail);
      return {
        ...act({ activityId: 5, activityName: "Refuse" }),
        severityId: SEVERITY.low,
        statusId: STATUS.failure,
        statusCode: reason,
        statusDetail: detail ?? reason,
        actionId: ACTION.denied,
        dispositionId: DISPOSITION.blocked,
        message: `${sb} was refused ${where}${detail ? `: ${detail}` : ""}`,
      };
    }
    case "secret.used":
    case "secret.outside": {
      const used = row.action === "secret.used";
      const name = str(d.secret) ?? "?";
      return {
        ...act({ activityId: 6, activityName: "Traffic" }),
        severityId: used ? SEVERITY.informational : SEVERITY.medium,
        statusId: used ? STATUS.success : STATUS.failure,
        statusDetail: used ? undefined : (str(d.reason) ?? `secret ${name} may not go to ${where}`),
        actionId: used ? ACTION.modified : ACTION.denied,
        message: used ? `${sb}'s request to ${where} had secret ${name} swapped in` : `${sb} sent secret ${name}'s placeholder to ${where}, where it may not go: left unswapped`,
      };
    }
    default: {
      // "error": what was allowed could not be reached (or the proxy could take no more connections).
      const message = str(d.message);
      return {
        ...act({ activityId: 4, activityName: "Fail" }),
        severityId: SEVERITY.low,
        statusId: STATUS.failure,
        statusDetail: message,
        message: `${sb} could not reach ${where}${message ? `: ${message}` : ""}`,
      };
    }
  }
}

/**
 * A raw connection around the proxy that the kernel firewall dropped (linux-user nft log, macOS pflog): Network
 * Activity `Refuse`, disposition Dropped, with the addresses and protocol the packet had.
 */
export function blockedRawEvent(row: AuditRecord, productVersion: string): OcsfEvent {
  const d = row.detail;
  const dst = str(d.dst);
  const dport = port(d.dport);
  const proto = str(d.proto);
  const family = str(d.family);
  const summary = str(d.summary) ?? dst ?? "?";
  const c: Classified = {
    classUid: 4001,
    activityId: 5,
    activityName: "Refuse",
    severityId: SEVERITY.medium,
    statusId: STATUS.failure,
    statusDetail: "sent around the sbx proxy, dropped by the firewall",
    actionId: ACTION.denied,
    dispositionId: DISPOSITION.dropped,
    message: `${who(row)} sent ${summary} around the sbx proxy: dropped by the firewall`,
  };
  const src = str(d.src);
  return defined({
    ...envelope(row, c, productVersion),
    src_endpoint: sandboxEndpoint(row, src === undefined ? null : ipText(src)),
    dst_endpoint: hostEndpoint(dst, dport),
    connection_info: defined({
      direction_id: 2,
      direction: "Outbound",
      protocol_name: proto,
      protocol_ver_id: family === "ipv4" ? 4 : family === "ipv6" ? 6 : undefined,
    }),
    unmapped: unmappedOf(row, defined({ uid: long(d.uid), out: str(d.out), query: str(d.query) })),
  });
}

/** A model call the LLM proxy forwarded (`llm.request`): HTTP Activity, the provider as the far end's service name. */
export function llmEvent(row: AuditRecord, productVersion: string): OcsfEvent {
  const d = row.detail;
  const method = str(d.method) ?? "";
  const provider = str(d.provider);
  const code = typeof d.status === "number" && Number.isInteger(d.status) && d.status >= 100 && d.status <= 599 ? d.status : undefined;
  const ok = code !== undefined && code < 400;
  const path = str(d.path);
  const c: Classified = {
    classUid: 4002,
    ...httpActivity(method),
    severityId: ok ? SEVERITY.informational : SEVERITY.low,
    statusId: code === undefined ? STATUS.unknown : ok ? STATUS.success : STATUS.failure,
    statusCode: code === undefined ? undefined : String(code),
    message: `${who(row)} called ${provider ?? "a model provider"}: ${method} ${path ?? ""}${code !== undefined ? ` → ${code}` : ""}`.trimEnd(),
  };
  return defined({
    ...envelope(row, c, productVersion),
    src_endpoint: sandboxEndpoint(row),
    dst_endpoint: provider !== undefined ? { svc_name: provider, name: provider } : undefined,
    http_request: defined({ http_method: method || undefined, url: path !== undefined ? { path } : undefined }),
    http_response: code !== undefined ? { code } : undefined,
    duration: long(d.ms),
    unmapped: unmappedOf(row, defined({ credential: str(d.credential) })),
  });
}
