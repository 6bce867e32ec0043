// The parts every OCSF event sbx writes shares (`sbx logs --export ocsf`): the audit row it comes from, the classes and
// their captions, the classification, metadata and status fields, and the typed readers of a row's detail. Pure.
//
// OCSF 1.8.0 (schema.ocsf.io/1.8.0). Each value written here is of the attribute's OCSF type: ids are integers from the
// class's own enum, `time` is epoch milliseconds, ports are integers 0-65535, an address is written as `ip` only when
// it is one, and a detail value of the wrong type is left out rather than written as something it is not.
import { formatIp, parseIp } from "./addresses";

export const OCSF_VERSION = "1.8.0";

/** One audit row as `sbx logs` reads it (the daemon's AuditView, structurally). */
export interface AuditRecord {
  id: number;
  /** Epoch milliseconds. */
  ts: number;
  sandboxId: number | null;
  /** The sandbox's name, or null for a row of no sandbox (or one whose row is gone). */
  sandbox: string | null;
  kind: string;
  action: string;
  detail: Record<string, unknown>;
}

/** An OCSF event: plain JSON. */
export type OcsfEvent = Record<string, unknown>;

/** The classes sbx writes, by class_uid: caption, category and the category's caption. */
export const CLASSES = {
  0: { name: "Base Event", category: 0, categoryName: "Uncategorized" },
  3005: { name: "User Access Management", category: 3, categoryName: "Identity & Access Management" },
  4001: { name: "Network Activity", category: 4, categoryName: "Network Activity" },
  4002: { name: "HTTP Activity", category: 4, categoryName: "Network Activity" },
} as const;
export type ClassUid = keyof typeof CLASSES;

export const SEVERITY = { informational: 1, low: 2, medium: 3 } as const;
const SEVERITY_NAMES: Record<number, string> = { 1: "Informational", 2: "Low", 3: "Medium" };

/** `status_id`: the outcome of the activity the event describes. */
export const STATUS = { unknown: 0, success: 1, failure: 2 } as const;
const STATUS_NAMES: Record<number, string> = { 0: "Unknown", 1: "Success", 2: "Failure" };

/** The security_control profile's `action_id`: what the control did with the activity. */
export const ACTION = { allowed: 1, denied: 2, observed: 3, modified: 4 } as const;
const ACTION_NAMES: Record<number, string> = { 1: "Allowed", 2: "Denied", 3: "Observed", 4: "Modified" };

/** The security_control profile's `disposition_id`: the outcome of the control's decision. */
export const DISPOSITION = { allowed: 1, blocked: 2, dropped: 6, approved: 8, rejected: 25 } as const;
const DISPOSITION_NAMES: Record<number, string> = { 1: "Allowed", 2: "Blocked", 6: "Dropped", 8: "Approved", 25: "Rejected" };

export interface Classified {
  classUid: ClassUid;
  activityId: number;
  activityName: string;
  severityId: number;
  statusId: number;
  /** With `statusId` failure: what went wrong, as sbx said it. */
  statusDetail?: string | undefined;
  /** The source's own code for the outcome (a refusal's reason), a string in OCSF. */
  statusCode?: string | undefined;
  /** The security control's decision (applies the security_control profile). */
  actionId?: number | undefined;
  dispositionId?: number | undefined;
  message: string;
}

/**
 * The fields every event has: classification (type_uid = class_uid × 100 + activity_id), time, severity, status,
 * metadata (product sbx, the row's id as `uid`, kind:action as `event_code`) and the security control's decision.
 */
export function envelope(row: AuditRecord, c: Classified, productVersion: string): OcsfEvent {
  const cls = CLASSES[c.classUid];
  const control = c.actionId !== undefined || c.dispositionId !== undefined;
  return {
    class_uid: c.classUid,
    class_name: cls.name,
    category_uid: cls.category,
    category_name: cls.categoryName,
    activity_id: c.activityId,
    activity_name: c.activityName,
    type_uid: c.classUid * 100 + c.activityId,
    type_name: `${cls.name}: ${c.activityName}`,
    time: Math.trunc(row.ts),
    severity_id: c.severityId,
    severity: SEVERITY_NAMES[c.severityId],
    status_id: c.statusId,
    status: STATUS_NAMES[c.statusId],
    ...(c.statusCode !== undefined ? { status_code: c.statusCode } : {}),
    ...(c.statusDetail !== undefined ? { status_detail: c.statusDetail } : {}),
    ...(c.actionId !== undefined ? { action_id: c.actionId, action: ACTION_NAMES[c.actionId] } : {}),
    ...(c.dispositionId !== undefined ? { disposition_id: c.dispositionId, disposition: DISPOSITION_NAMES[c.dispositionId] } : {}),
    message: c.message,
    metadata: {
      version: OCSF_VERSION,
      product: { name: "sbx", vendor_name: "sbx", version: productVersion },
      uid: String(row.id),
      log_name: "audit",
      event_code: `${row.kind}:${row.action}`,
      ...(control ? { profiles: ["security_control"] } : {}),
    },
  };
}

// ── the row's detail, read by type ────────────────────────────────────────

export function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

/** A whole number a long_t can hold, else undefined. */
export function long(v: unknown): number | undefined {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : undefined;
}

/** A port (port_t: an integer 0-65535), else undefined. */
export function port(v: unknown): number | undefined {
  return typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= 65_535 ? v : undefined;
}

/** A host name as a DNS name is written (labels of letters, digits, `-` and `_`), else null. */
function dnsName(host: string): string | null {
  return host.length <= 253 && /^(?=[^.])[A-Za-z0-9_-]{1,63}(?:\.[A-Za-z0-9_-]{1,63})*\.?$/.test(host) ? host : null;
}

/** An IP address in its canonical text (ip_t), else null. */
export function ipText(host: string): string | null {
  const b = parseIp(host.replace(/^\[(.*)\]$/, "$1"));
  return b ? formatIp(b) : null;
}

/**
 * The far end of a connection as an OCSF network endpoint: an address as `ip`, a DNS name as `hostname`, anything else
 * (what a refused request named, `(any)`) as `name`, which is free text; with the address connected to, when known.
 */
export function hostEndpoint(host: string | undefined, p: number | undefined, address?: string | null): OcsfEvent | undefined {
  const ip = host === undefined ? null : ipText(host);
  const name = host === undefined || ip !== null ? null : dnsName(host);
  const connected = typeof address === "string" ? ipText(address) : null;
  const e: OcsfEvent = {
    ...(ip !== null ? { ip } : connected !== null ? { ip: connected } : {}),
    ...(name !== null ? { hostname: name } : host !== undefined && ip === null ? { name: host } : {}),
    ...(p !== undefined ? { port: p } : {}),
  };
  return Object.keys(e).some((k) => k !== "port") ? e : undefined;
}

/** The sandbox as the near end of what it sent: its name and its id. */
export function sandboxEndpoint(row: AuditRecord, ip?: string | null): OcsfEvent | undefined {
  if (row.sandboxId === null) return undefined;
  return { uid: String(row.sandboxId), ...(row.sandbox !== null ? { name: row.sandbox } : {}), ...(ip ? { ip } : {}) };
}

/** How a sandbox is named in a message: its name, its id when its row is gone, or "sbx" for a row of no sandbox. */
export function who(row: AuditRecord): string {
  return row.sandbox ?? (row.sandboxId !== null ? `sandbox #${row.sandboxId}` : "sbx");
}

/** Keeps only the entries whose value is not undefined (an absent attribute, never a null one). */
export function defined(o: Record<string, unknown>): OcsfEvent {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}
