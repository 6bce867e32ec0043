// sbx's audit log as OCSF 1.8.0 events, one per row (`sbx logs --export ocsf`). Pure.
//
// Egress is Network Activity (4001) and HTTP Activity (4002), ocsf-egress.ts. A decision on what a sandbox may reach
// (an allow, deny or removal on an allowlist, an approval answered, a host service published, a bridge approval, and a
// sandbox's own request for one) is User Access Management (3005): it changes the standing privileges of an identity
// (the sandbox, or every sandbox for the global list), made by an actor (the person, through the CLI, the dashboard or
// chat), with Assign and Revoke activities. Authorize Session (3003), the other IAM class of authorization, reports
// privileges given to a new session at logon: an approval is neither tied to a logon nor to a session, and outlives
// both. Every other row (lifecycle, sessions, the bridge's commands, guards, ref sync, limits) is a Base Event (0)
// with the row's detail in `unmapped`, so nothing of the log is lost.
import { patternFor } from "./egress";
import { blockedRawEvent, egressEvent, llmEvent } from "./ocsf-egress";
import { ACTION, DISPOSITION, SEVERITY, STATUS, defined, envelope, long, port, str, who, type AuditRecord, type Classified, type OcsfEvent } from "./ocsf-common";

export { OCSF_VERSION, type AuditRecord, type OcsfEvent } from "./ocsf-common";

/** One audit row as one OCSF event; `productVersion` is sbx's own (metadata.product.version). */
export function toOcsf(row: AuditRecord, productVersion: string): OcsfEvent {
  if (row.kind === "egress") {
    if (row.action === "blocked-raw") return blockedRawEvent(row, productVersion);
    if (row.action === "asked") return askedEvent(row, productVersion);
    if (["allowed", "denied", "error", "secret.used", "secret.outside"].includes(row.action)) return egressEvent(row, productVersion);
  }
  if (row.kind === "guard" && row.action === "llm.request") return llmEvent(row, productVersion);
  if ((row.kind === "allowlist" || row.kind === "bridge") && ["allow", "deny", "remove"].includes(row.action)) return decisionEvent(row, productVersion);
  if (row.kind === "allowlist" && row.action === "publish") return publishEvent(row, productVersion);
  return baseEvent(row, productVersion);
}

const SANDBOX_TYPE = { type_id: 99, type: "sbx sandbox" };

/** The identity a privilege is given to: one sandbox, or every sandbox (the global list). */
function grantee(row: AuditRecord, global: boolean): OcsfEvent {
  if (global || row.sandboxId === null) return { uid: "*", name: "every sandbox", ...SANDBOX_TYPE };
  return { uid: String(row.sandboxId), ...(row.sandbox !== null ? { name: row.sandbox } : {}), ...SANDBOX_TYPE };
}

/** Who decided: `cli:<user>`, `dashboard`, `chat:<sender>` as the policy service records it (a person's account). */
function decider(by: string | undefined): OcsfEvent | undefined {
  return by ? { user: { name: by, type_id: 1, type: "User" } } : undefined;
}

/**
 * An allowlist or bridge decision (`allow`, `deny`, `remove`): Assign Privileges for an allow, Revoke Privileges for a
 * removal. A deny of a host answers a sandbox's request with no: the assignment it asked for is refused (Assign
 * Privileges, status Failure, action Denied, disposition Rejected), which is what a SIEM asks of "denied access
 * requests". A rule that sees requests (`sbx allow|deny HOST --method/--path`) is recorded as its text, `allow …` or
 * `deny … on HOST` (a host pattern holds no space, so the two never mix): adding a deny rule takes part of what was
 * allowed away (Revoke), removing one gives it back (Assign).
 */
function decisionEvent(row: AuditRecord, productVersion: string): OcsfEvent {
  const d = row.detail;
  const pattern = str(d.pattern) ?? "?";
  const global = d.scope === "global";
  const what = row.kind === "bridge" ? "bridge" : "egress";
  const by = str(d.by) ?? "someone";
  const to = global ? "every sandbox" : who(row);
  const approval = long(d.approvalId);
  const asked = approval !== undefined ? ` (approval ${approval})` : "";
  const denyRule = what === "egress" && pattern.startsWith("deny ");
  const assign = { classUid: 3005 as const, activityId: 1, activityName: "Assign Privileges", severityId: SEVERITY.informational };
  const revoke = { classUid: 3005 as const, activityId: 2, activityName: "Revoke Privileges", severityId: SEVERITY.informational, statusId: STATUS.success };
  const c: Classified =
    row.action === "allow"
      ? { ...assign, statusId: STATUS.success, actionId: ACTION.allowed, dispositionId: DISPOSITION.approved, message: `${by} allowed ${to} ${what} ${pattern}${asked}` }
      : row.action === "remove"
        ? denyRule
          ? { ...assign, statusId: STATUS.success, message: `${by} removed the rule ${pattern} from ${to}` }
          : { ...revoke, message: `${by} removed ${what} ${pattern} from ${to}` }
        : denyRule
          ? { ...revoke, message: `${by} added the rule ${pattern} for ${to}` }
          : { ...assign, statusId: STATUS.failure, statusDetail: `denied by ${by}`, actionId: ACTION.denied, dispositionId: DISPOSITION.rejected, message: `${by} denied ${to} ${what} ${pattern}${asked}` };
  return defined({
    ...envelope(row, c, productVersion),
    user: grantee(row, global),
    actor: decider(str(d.by)),
    privileges: [`${what}:${pattern}`],
    resources: [{ name: pattern, type: row.kind === "bridge" ? "bridge subject" : "egress destination" }],
    unmapped: defined({ kind: row.kind, action: row.action, scope: str(d.scope), approvalId: approval }),
  });
}

/** A sandbox asking for a host itself (`sbx-egress ask`): a request for the privilege, not yet answered. */
function askedEvent(row: AuditRecord, productVersion: string): OcsfEvent {
  const d = row.detail;
  const host = str(d.host) ?? "?";
  const p = port(d.port);
  const pattern = p === undefined ? host : patternFor(host, p);
  const why = str(d.why);
  const c: Classified = {
    classUid: 3005,
    activityId: 99,
    activityName: "Request Privileges",
    severityId: SEVERITY.informational,
    statusId: STATUS.unknown,
    message: `${who(row)} asked for ${pattern}${why ? `: ${why}` : ""}`,
  };
  const me = grantee(row, false);
  return defined({
    ...envelope(row, c, productVersion),
    user: me,
    actor: { user: me },
    privileges: [`egress:${pattern}`],
    resources: [{ name: pattern, type: "egress destination" }],
    unmapped: defined({ kind: row.kind, action: row.action, why, approvalId: long(d.approvalId) }),
  });
}

/** `sbx publish`: host services (loopback address:port) a sandbox may now, or no longer, reach. */
function publishEvent(row: AuditRecord, productVersion: string): OcsfEvent {
  const d = row.detail;
  const list = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);
  const added = list(d.added);
  const removed = list(d.removed);
  const activity = added.length > 0 && removed.length === 0 ? { activityId: 1, activityName: "Assign Privileges" } : removed.length > 0 && added.length === 0 ? { activityId: 2, activityName: "Revoke Privileges" } : { activityId: 99, activityName: "Update Privileges" };
  const changed = [...added, ...removed];
  const c: Classified = {
    classUid: 3005,
    ...activity,
    severityId: SEVERITY.informational,
    statusId: STATUS.success,
    message: `${who(row)}: published ${added.join(", ") || "nothing new"}${removed.length ? `; withdrew ${removed.join(", ")}` : ""}`,
  };
  return defined({
    ...envelope(row, c, productVersion),
    user: grantee(row, false),
    privileges: (changed.length ? changed : list(d.published)).map((e) => `publish:${e}`),
    resources: changed.map((e) => ({ name: e, type: "host service" })),
    unmapped: { kind: row.kind, action: row.action, published: list(d.published) },
  });
}

/**
 * Any other row: a Base Event (activity Other, named by the row's action) with the row's detail as it is in
 * `unmapped`. A held-back count (`audit.held-back`) is an aggregate: its count and window are said as OCSF says them.
 */
function baseEvent(row: AuditRecord, productVersion: string): OcsfEvent {
  const d = row.detail;
  const heldBack = row.kind === "daemon" && row.action === "audit.held-back";
  const c: Classified = {
    classUid: 0,
    activityId: 99,
    activityName: row.action || "Other",
    severityId: SEVERITY.informational,
    statusId: STATUS.unknown,
    message: `${who(row)}: ${row.kind} ${row.action}`,
  };
  const count = heldBack ? long(d.rows) : undefined;
  const from = heldBack ? long(d.from) : undefined;
  const until = heldBack ? long(d.until) : undefined;
  return defined({
    ...envelope(row, c, productVersion),
    ...(count !== undefined && from !== undefined && until !== undefined ? { count, start_time: from, end_time: until } : {}),
    unmapped: { kind: row.kind, action: row.action, ...(row.sandbox !== null ? { sandbox: row.sandbox } : {}), ...(row.sandboxId !== null ? { sandboxId: row.sandboxId } : {}), detail: d },
  });
}
