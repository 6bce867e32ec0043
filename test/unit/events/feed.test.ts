// The feed: the in-memory bus isolates listeners, and proxy decisions and audit rows map to feed events.
import { describe, expect, test } from "bun:test";
import { createEventBus, feedFromAudit, feedFromEgress, type FeedEvent } from "../../../src/events/feed";
import { Store } from "../../../src/store/store";

describe("event bus", () => {
  test("a throwing listener does not stop the others; unsubscribe removes it", () => {
    const errors: unknown[] = [];
    const bus = createEventBus((e) => errors.push(e));
    const got: FeedEvent[] = [];
    const off = bus.subscribe(() => {
      throw new Error("boom");
    });
    bus.subscribe((e) => got.push(e));
    const e: FeedEvent = { kind: "bridge", at: 1, sandbox: { id: 1, name: "demo" }, command: ["git", "push"], outcome: "ok" };
    bus.publish(e);
    expect(got).toEqual([e]);
    expect(errors).toHaveLength(1);
    off();
    expect(bus.size()).toBe(1);
  });
});

describe("mapping", () => {
  test("a proxy denial carries its pending approval; closed tunnels are 'allowed'", () => {
    const sandbox = { id: 3, name: "demo" };
    expect(
      feedFromEgress({ type: "denied", sandbox, method: "CONNECT", host: "example.org", port: 443, reason: "not-allowlisted", detail: "x", suggest: "example.org", at: 5 }, { id: 9, count: 1 }),
    ).toEqual({ kind: "egress", at: 5, sandbox, action: "denied", method: "CONNECT", host: "example.org", port: 443, reason: "not-allowlisted", detail: "x", suggest: "example.org", approvalId: 9, count: 1 });
    expect(feedFromEgress({ type: "closed", sandbox, method: "CONNECT", host: "a.test", port: 443, at: 6 })).toMatchObject({ kind: "egress", action: "allowed" });
  });

  test("audit rows of egress, bridge and allowlist kinds become feed events; others are skipped", () => {
    const name = () => "demo";
    const row = (kind: string, action: string, detail: Record<string, unknown>, sandboxId: number | null = 1) => ({ id: 1, ts: 7, sandboxId, kind, action, detail });
    expect(feedFromAudit(row("egress", "denied", { method: "GET", host: "x.test", port: 80, reason: "not-allowlisted" }), name)).toMatchObject({ kind: "egress", action: "denied", host: "x.test" });
    expect(feedFromAudit(row("bridge", "refused", { argv: ["git", "push", "ext::sh"] }), name)).toMatchObject({ kind: "bridge", outcome: "refused", command: ["git", "push", "ext::sh"] });
    expect(feedFromAudit(row("allowlist", "allow", { pattern: "pypi.org", scope: "global", by: "ui" }, null), name)).toMatchObject({ kind: "decision", sandbox: null, scope: "global" });
    expect(feedFromAudit(row("egress", "denied", { host: 42 }), name)).toBeNull();
    // The transparent path is marked (what sbx logs and the dashboard show); the proxy path, the common one, is not.
    expect(feedFromAudit(row("egress", "allowed", { method: "CONNECT", host: "x.test", port: 443, path: "transparent" }), name)).toMatchObject({ path: "transparent" });
    expect(feedFromAudit(row("egress", "allowed", { method: "CONNECT", host: "x.test", port: 443 }), name)).not.toHaveProperty("path");
    const sb = { id: 1, name: "a" };
    expect(feedFromEgress({ type: "closed", sandbox: sb, path: "transparent", method: "GET", host: "x.test", port: 80, at: 1 })).toMatchObject({ path: "transparent" });
    expect(feedFromEgress({ type: "closed", sandbox: sb, path: "proxy", method: "GET", host: "x.test", port: 80, at: 1 })).not.toHaveProperty("path");
    expect(feedFromAudit(row("lifecycle", "create", {}), name)).toBeNull();
  });
});
