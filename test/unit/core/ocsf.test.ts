// ocsf-export: each kind of audit row sbx writes maps to the OCSF 1.8.0 class that says what happened, and validates
// against the schema's own requirements (test/support/ocsf-schema.ts, transcribed from the schema, not from the
// mapping): every attribute its class has, of its type, the required ones present. A secret is named, never its value.
import { describe, expect, test } from "bun:test";
import type { EgressEvent } from "../../../src/core/egress-events";
import { toOcsf, type AuditRecord, type OcsfEvent } from "../../../src/core/ocsf";
import { ruleText } from "../../../src/core/rules";
import { createDecisionSink } from "../../../src/policy/decision-sink";
import { Store } from "../../../src/store/store";
import { ocsfProblems } from "../../support/ocsf-validate";

const T = Date.UTC(2026, 10, 28, 9, 30, 15, 123);
const row = (kind: string, action: string, detail: Record<string, unknown>, over: Partial<AuditRecord> = {}): AuditRecord => ({ id: 42, ts: T, sandboxId: 7, sandbox: "demo", kind, action, detail, ...over });

/** The event for a row, checked against the schema first. */
function ocsf(r: AuditRecord): OcsfEvent {
  const e = toOcsf(r, "0.1.0");
  expect({ problems: ocsfProblems(e), event: e }).toEqual({ problems: [], event: e });
  return e;
}
const at = (e: OcsfEvent, path: string): unknown => path.split(".").reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], e);
const pick = (e: OcsfEvent, ...paths: string[]) => Object.fromEntries(paths.map((p) => [p, at(e, p)]));

describe("ocsf-export: every event carries what OCSF requires of all", () => {
  test("classification adds up, time is epoch ms, metadata names sbx, the OCSF version and the row", () => {
    const e = ocsf(row("lifecycle", "create", { name: "demo", repo: "/src/app" }));
    expect(pick(e, "class_uid", "category_uid", "activity_id", "type_uid", "time", "severity_id", "metadata.version", "metadata.product.name", "metadata.product.vendor_name", "metadata.product.version", "metadata.uid", "metadata.event_code")).toEqual({
      class_uid: 0,
      category_uid: 0,
      activity_id: 99,
      type_uid: 99,
      time: T,
      severity_id: 1,
      "metadata.version": "1.8.0",
      "metadata.product.name": "sbx",
      "metadata.product.vendor_name": "sbx",
      "metadata.product.version": "0.1.0",
      "metadata.uid": "42",
      "metadata.event_code": "lifecycle:create",
    });
  });

  test("the validator is no rubber stamp: a missing required attribute, a wrong type, an unknown attribute and a bad sum are each caught", () => {
    const good = toOcsf(row("egress", "allowed", { method: "CONNECT", host: "api.github.com", port: 443, address: "140.82.112.6", pattern: "api.github.com", source: "sandbox", bytesUp: 10, bytesDown: 20, durationMs: 5 }), "0.1.0");
    expect(ocsfProblems(good)).toEqual([]);
    const { time: _t, ...noTime } = good;
    expect(ocsfProblems(noTime)).toContain("event.time: required, missing");
    expect(ocsfProblems({ ...good, dst_endpoint: { hostname: "x", port: 70_000 } }).join()).toContain("port_t is in 0..65535");
    expect(ocsfProblems({ ...good, dst_endpoint: { ip: "not-an-ip" } }).join()).toContain("is not a ip_t");
    expect(ocsfProblems({ ...good, time: T / 1000 }).join()).toContain("must be an integer");
    expect(ocsfProblems({ ...good, sbx_host: "x" })).toContain("event.sbx_host: no such attribute");
    expect(ocsfProblems({ ...good, type_uid: 400101 }).join()).toContain("type_uid 400101");
    expect(ocsfProblems({ ...good, metadata: { ...(good.metadata as object), profiles: [] } }).join()).toContain("of profile security_control");
    expect(ocsfProblems({ ...good, src_endpoint: undefined, dst_endpoint: undefined }).join()).toContain("null");
  });
});

describe("ocsf-export: egress connections are Network Activity (4001)", () => {
  test("an allowed tunnel: Close, allowed, to the host and the address connected to, with the bytes each way and the rule", () => {
    const e = ocsf(row("egress", "allowed", { method: "CONNECT", host: "api.github.com", port: 443, address: "140.82.112.6", pattern: "api.github.com", source: "sandbox", bytesUp: 1200, bytesDown: 34000, durationMs: 812 }));
    expect(pick(e, "class_uid", "activity_id", "type_uid", "action_id", "disposition_id", "status_id", "dst_endpoint", "src_endpoint", "traffic", "duration", "policy.name", "connection_info.direction_id")).toEqual({
      class_uid: 4001,
      activity_id: 2,
      type_uid: 400102,
      action_id: 1,
      disposition_id: 1,
      status_id: 1,
      dst_endpoint: { ip: "140.82.112.6", hostname: "api.github.com", port: 443 },
      src_endpoint: { uid: "7", name: "demo" },
      traffic: { bytes_out: 1200, bytes_in: 34000, bytes: 35200 },
      duration: 812,
      "policy.name": "api.github.com",
      "connection_info.direction_id": 2,
    });
  });

  test("a refused CONNECT: Refuse, denied and blocked, the reason as status code and detail; an IP literal is an ip", () => {
    const e = ocsf(row("egress", "denied", { method: "CONNECT", host: "169.254.169.254", port: 80, reason: "private-address", detail: "169.254.169.254 is a metadata address" }));
    expect(pick(e, "class_uid", "activity_id", "action_id", "disposition_id", "status_id", "status_code", "status_detail", "dst_endpoint", "severity_id")).toEqual({
      class_uid: 4001,
      activity_id: 5,
      action_id: 2,
      disposition_id: 2,
      status_id: 2,
      status_code: "private-address",
      status_detail: "169.254.169.254 is a metadata address",
      dst_endpoint: { ip: "169.254.169.254", port: 80 },
      severity_id: 2,
    });
  });

  test("a connection that could not be made: Fail; the proxy's own refusal of any host names no hostname it never had", () => {
    const e = ocsf(row("egress", "error", { method: "CONNECT", host: "api.example.com", port: 443, address: "93.184.216.34", message: "connect ECONNREFUSED" }));
    expect(pick(e, "class_uid", "activity_id", "status_id", "status_detail")).toEqual({ class_uid: 4001, activity_id: 4, status_id: 2, status_detail: "connect ECONNREFUSED" });
    const busy = ocsf(row("egress", "error", { method: "CONNECT", host: "(any)", port: 0, address: null, message: "256 connections at once" }));
    expect(busy.dst_endpoint).toEqual({ name: "(any)", port: 0 });
  });

  test("a packet the firewall dropped around the proxy: Refuse, disposition Dropped, its addresses, protocol and IP version", () => {
    const e = ocsf(row("egress", "blocked-raw", { uid: 1001, proto: "udp", family: "ipv6", dst: "2001:4860:4860::8888", dport: 53, src: "fd00::2", out: "eth0", summary: "udp [2001:4860:4860::8888]:53" }));
    expect(pick(e, "class_uid", "activity_id", "action_id", "disposition_id", "severity_id", "src_endpoint", "dst_endpoint", "connection_info")).toEqual({
      class_uid: 4001,
      activity_id: 5,
      action_id: 2,
      disposition_id: 6,
      severity_id: 3,
      src_endpoint: { uid: "7", name: "demo", ip: "fd00::2" },
      dst_endpoint: { ip: "2001:4860:4860::8888", port: 53 },
      connection_info: { direction_id: 2, direction: "Outbound", protocol_name: "udp", protocol_ver_id: 6 },
    });
  });

  test("the transparent path (a client that ignored the proxy variables) is said in unmapped", () => {
    const e = ocsf(row("egress", "denied", { method: "CONNECT", host: "?", port: 443, reason: "unnamed-address", detail: "10.0.0.9 stands for no name", path: "transparent" }));
    expect(at(e, "unmapped.path")).toBe("transparent");
  });
});

describe("ocsf-export: requests sbx read are HTTP Activity (4002)", () => {
  test("plain HTTP it forwarded: the method is the activity, the URL its host, port and path (never the query)", () => {
    const e = ocsf(row("egress", "allowed", { method: "POST", host: "registry.example", port: 80, address: "10.1.2.3", pattern: "registry.example", source: "global", target: "/v1/upload", bytesUp: 5, bytesDown: 6, durationMs: 7 }));
    expect(pick(e, "class_uid", "activity_id", "activity_name", "type_uid", "http_request", "policy.type")).toEqual({
      class_uid: 4002,
      activity_id: 6,
      activity_name: "Post",
      type_uid: 400206,
      http_request: { http_method: "POST", url: { hostname: "registry.example", port: 80, path: "/v1/upload" } },
      "policy.type": "global allowlist",
    });
  });

  test("a plain request refused: blocked, with its method; a method OCSF 1.8.0 does not name is Other, named as sent", () => {
    const e = ocsf(row("egress", "denied", { method: "GET", host: "example.org", port: 80, reason: "not-allowed", detail: "example.org is not on the allowlist" }));
    expect(pick(e, "class_uid", "activity_id", "action_id", "disposition_id", "http_request")).toEqual({ class_uid: 4002, activity_id: 3, action_id: 2, disposition_id: 2, http_request: { http_method: "GET" } });
    const other = ocsf(row("egress", "allowed", { method: "PROPFIND", host: "dav.example", port: 80, address: "10.1.2.3", pattern: "dav.example", source: "sandbox", target: "/" }));
    expect(pick(other, "activity_id", "activity_name", "type_uid")).toEqual({ activity_id: 99, activity_name: "PROPFIND", type_uid: 400299 });
  });

  test("a secret swapped in is action Modified; its placeholder sent where it may not go is Denied, severity Medium; by name only", () => {
    const used = ocsf(row("egress", "secret.used", { secret: "SENTRY_TOKEN", method: "GET", host: "sentry.io", port: 443, target: "/api/0/projects/" }));
    expect(pick(used, "class_uid", "activity_id", "action_id", "status_id", "http_request.url.path", "unmapped.secret")).toEqual({ class_uid: 4002, activity_id: 3, action_id: 4, status_id: 1, "http_request.url.path": "/api/0/projects/", "unmapped.secret": "SENTRY_TOKEN" });
    const outside = ocsf(row("egress", "secret.outside", { secret: "SENTRY_TOKEN", method: "POST", host: "sentry.io", port: 443, target: "/upload", reason: "POST is not among its methods" }));
    expect(pick(outside, "action_id", "status_id", "severity_id", "status_detail")).toEqual({ action_id: 2, status_id: 2, severity_id: 3, status_detail: "POST is not among its methods" });
  });

  test("a model call the LLM proxy forwarded: the provider as the service, the response code", () => {
    const e = ocsf(row("guard", "llm.request", { provider: "anthropic", method: "POST", path: "/v1/messages", status: 529, credential: "api-key", ms: 2200 }));
    expect(pick(e, "class_uid", "activity_id", "dst_endpoint", "http_request", "http_response", "status_id", "status_code", "duration")).toEqual({
      class_uid: 4002,
      activity_id: 6,
      dst_endpoint: { svc_name: "anthropic", name: "anthropic" },
      http_request: { http_method: "POST", url: { path: "/v1/messages" } },
      http_response: { code: 529 },
      status_id: 2,
      status_code: "529",
      duration: 2200,
    });
  });
});

describe("ocsf-export: approvals are User Access Management (3005)", () => {
  test("allow for a sandbox: Assign Privileges to that sandbox, by the person who decided, approved", () => {
    const e = ocsf(row("allowlist", "allow", { pattern: "example.org", scope: "sandbox", by: "cli:alice", approvalId: 3 }));
    expect(pick(e, "class_uid", "category_uid", "activity_id", "type_uid", "user", "actor", "privileges", "action_id", "disposition_id", "status_id")).toEqual({
      class_uid: 3005,
      category_uid: 3,
      activity_id: 1,
      type_uid: 300501,
      user: { uid: "7", name: "demo", type_id: 99, type: "sbx sandbox" },
      actor: { user: { name: "cli:alice", type_id: 1, type: "User" } },
      privileges: ["egress:example.org"],
      action_id: 1,
      disposition_id: 8,
      status_id: 1,
    });
  });

  test("allow for every sandbox (the global list): the grantee is every sandbox", () => {
    const e = ocsf(row("allowlist", "allow", { pattern: "*.npmjs.org", scope: "global", by: "dashboard", approvalId: null }, { sandboxId: null, sandbox: null }));
    expect(at(e, "user")).toEqual({ uid: "*", name: "every sandbox", type_id: 99, type: "sbx sandbox" });
  });

  test("deny answers a request with no (assignment refused, rejected); remove revokes", () => {
    const deny = ocsf(row("allowlist", "deny", { pattern: "evil.example", scope: "sandbox", by: "chat:bob@example.com", approvalId: 9 }));
    expect(pick(deny, "activity_id", "status_id", "action_id", "disposition_id")).toEqual({ activity_id: 1, status_id: 2, action_id: 2, disposition_id: 25 });
    const remove = ocsf(row("allowlist", "remove", { pattern: "example.org", scope: "sandbox", by: "cli:alice", approvalId: null }));
    expect(pick(remove, "activity_id", "activity_name", "type_uid")).toEqual({ activity_id: 2, activity_name: "Revoke Privileges", type_uid: 300502 });
  });

  test("rules that see requests: an allow rule assigns, a deny rule revokes part of what was allowed, removing one gives it back", () => {
    const allow = ruleText({ effect: "allow", host: "api.github.com", methods: ["GET", "HEAD"], paths: ["/repos/acme/**"] });
    const deny = ruleText({ effect: "deny", host: "api.github.com", methods: ["DELETE"], paths: null });
    const of = (action: string, pattern: string) => pick(ocsf(row("allowlist", action, { pattern, scope: "sandbox", by: "cli:alice", approvalId: null })), "activity_id", "status_id", "action_id", "privileges");
    expect(of("allow", allow)).toEqual({ activity_id: 1, status_id: 1, action_id: 1, privileges: [`egress:${allow}`] });
    expect(of("deny", deny)).toEqual({ activity_id: 2, status_id: 1, action_id: undefined, privileges: [`egress:${deny}`] });
    expect(of("remove", deny)).toEqual({ activity_id: 1, status_id: 1, action_id: undefined, privileges: [`egress:${deny}`] });
    expect(of("remove", allow)).toEqual({ activity_id: 2, status_id: 1, action_id: undefined, privileges: [`egress:${allow}`] });
  });

  test("a bridge approval is the same class, its privilege the bridge's subject", () => {
    const e = ocsf(row("bridge", "allow", { pattern: "push feature/x", scope: "sandbox", by: "cli:alice", approvalId: 4 }));
    expect(pick(e, "class_uid", "privileges", "resources")).toEqual({ class_uid: 3005, privileges: ["bridge:push feature/x"], resources: [{ name: "push feature/x", type: "bridge subject" }] });
  });

  test("a sandbox asking for a host itself: a request for the privilege, its reason kept", () => {
    const e = ocsf(row("egress", "asked", { host: "pypi.org", port: 8443, why: "pip install for the tests", approvalId: 5 }));
    expect(pick(e, "class_uid", "activity_id", "activity_name", "privileges", "unmapped.why")).toEqual({ class_uid: 3005, activity_id: 99, activity_name: "Request Privileges", privileges: ["egress:pypi.org:8443"], "unmapped.why": "pip install for the tests" });
  });

  test("sbx publish: host services given (Assign) or withdrawn (Revoke)", () => {
    expect(at(ocsf(row("allowlist", "publish", { name: "demo", added: ["127.0.0.1:5432"], removed: [], published: ["127.0.0.1:5432"] })), "activity_id")).toBe(1);
    expect(at(ocsf(row("allowlist", "publish", { name: "demo", added: [], removed: ["127.0.0.1:5432"], published: [] })), "activity_id")).toBe(2);
  });
});

describe("ocsf-export: every other row is a Base Event with its entry kept", () => {
  test("lifecycle, sessions, bridge commands, guards: class 0, the action named, the detail in unmapped", () => {
    for (const [kind, action, detail] of [
      ["lifecycle", "rm", { name: "demo", force: false }],
      ["session", "session.start", { session: "s1", argv: ["fish"] }],
      ["guard", "git.allowed", { tool: "git", args: ["push", "origin", "x"], decision: "allowed", exitCode: 0 }],
      ["limit", "pids", { count: 3 }],
      ["secret", "secret.bound", { secret: "SENTRY_TOKEN", hosts: ["sentry.io"], source: "env" }],
    ] as const) {
      const e = ocsf(row(kind, action, detail));
      expect(pick(e, "class_uid", "activity_id", "activity_name", "unmapped.detail")).toEqual({ class_uid: 0, activity_id: 99, activity_name: action, "unmapped.detail": detail });
    }
  });

  test("a held-back count is an aggregate: its count and window", () => {
    const e = ocsf(row("daemon", "audit.held-back", { rows: 1234, actions: { "egress denied": 1234 }, from: T - 5000, until: T, budget: "200 rows at once, then 1 a second" }));
    expect(pick(e, "count", "start_time", "end_time")).toEqual({ count: 1234, start_time: T - 5000, end_time: T });
  });

  test("a row of no sandbox (a failed create) validates too", () => {
    ocsf(row("lifecycle", "create.failed", { name: "x", error: "no engine" }, { sandboxId: null, sandbox: null }));
  });
});

describe("ocsf-export: a secret is named, never its value", () => {
  test("the rows the proxy's decision sink writes for a secret's use hold its name and path, and so does every export of them", () => {
    const VALUE = "sk_live_R3alV4lueN0tForS4ndb0x";
    const store = new Store(":memory:");
    const sb = store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    const sink = createDecisionSink(store, { flushMs: 0 });
    const base = { sandbox: { id: sb.id, name: "demo" }, path: "proxy" as const, host: "sentry.io", port: 443, at: T };
    // What the terminator emits: the path without the query (which held the value once it was swapped in).
    const events: EgressEvent[] = [
      { ...base, type: "secret", method: "GET", target: "/api/0/", name: "SENTRY_TOKEN", action: "used", reason: null },
      { ...base, type: "secret", method: "POST", target: "/upload", name: "SENTRY_TOKEN", action: "outside", reason: "POST is not among its methods" },
      { ...base, type: "closed", method: "GET", address: "35.1.2.3", source: "sandbox", pattern: "sentry.io", target: "/api/0/", bytesUp: 1, bytesDown: 2, durationMs: 3 },
    ];
    for (const e of events) sink.onDecision(e);
    sink.flush();
    const rows = store.listAudit({ sandboxId: sb.id }).map((r) => ({ ...r, sandbox: "demo" }));
    expect(rows.map((r) => r.action)).toEqual(["secret.used", "secret.outside", "allowed"]);
    const out = JSON.stringify(rows.map((r) => ocsf(r)));
    expect(out).toContain("SENTRY_TOKEN");
    expect(out).not.toContain(VALUE);
    store.close();
  });

  test("a secret row's OCSF event carries only the fields named for it: a value some writer put in the detail would not go out", () => {
    const e = ocsf(row("egress", "secret.used", { secret: "SENTRY_TOKEN", value: "sk_live_leak", method: "GET", host: "sentry.io", port: 443, target: "/api/" }));
    expect(JSON.stringify(e)).not.toContain("sk_live_leak");
  });
});
