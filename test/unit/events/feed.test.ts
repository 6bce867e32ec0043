// The feed: the in-memory bus isolates listeners, and proxy decisions and audit rows map to feed events.
import { describe, expect, test } from "bun:test";
import { createEventBus, feedFromAudit, feedFromEgress, type FeedEvent } from "../../../src/events/feed";
import { Store } from "../../../src/store/store";
import { FEED_COMMAND_MAX, FEED_EVENTS_BURST, FEED_EVENTS_PER_SECOND, FEED_TEXT_MAX } from "../../../src/core/bounds";

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

describe("bounded: the live feed", () => {
  const denied = (id: number, i: number, approval?: { id: number; count: number }): FeedEvent => ({
    kind: "egress",
    at: i,
    sandbox: { id, name: `s${id}` },
    action: "denied",
    method: "CONNECT",
    host: `h${i}.example`,
    port: 443,
    reason: "not-allowlisted",
    ...(approval ? { approvalId: approval.id, count: approval.count } : {}),
  });

  test("one sandbox's flood reaches listeners as a burst then a steady rate; a new approval always; another sandbox's all", () => {
    let now = 1_000;
    const bus = createEventBus(undefined, { now: () => now });
    const got: FeedEvent[] = [];
    bus.subscribe((e) => got.push(e));
    for (let i = 0; i < 10_000; i++) bus.publish(denied(1, i));
    const flood = got.length;
    expect(flood).toBe(FEED_EVENTS_BURST);
    bus.publish(denied(1, 10_001, { id: 7, count: 1 }));
    expect(got.at(-1)?.kind === "egress" && got.at(-1)?.approvalId).toBe(7);
    for (let i = 0; i < 50; i++) bus.publish(denied(2, i));
    expect(got.filter((e) => e.sandbox?.id === 2).length).toBe(50);
    now += 1000;
    for (let i = 0; i < 1000; i++) bus.publish(denied(1, i));
    expect(got.filter((e) => e.sandbox?.id === 1).length).toBe(FEED_EVENTS_BURST + 1 + FEED_EVENTS_PER_SECOND);
    // A decision (a person's) is never held back.
    bus.publish({ kind: "decision", at: 1, sandbox: { id: 1, name: "s1" }, action: "allow", pattern: "x.example", scope: "sandbox", by: "cli:u" });
    expect(got.at(-1)?.kind).toBe("decision");
  });

  test("an event's text is bounded: a bridge command of 1 MiB of argv, a 16 KiB host", () => {
    const bus = createEventBus();
    const got: FeedEvent[] = [];
    bus.subscribe((e) => got.push(e));
    bus.publish({ kind: "bridge", at: 1, sandbox: { id: 1, name: "s" }, command: ["git", ...Array.from({ length: 256 }, () => "a".repeat(4096))], outcome: "refused", detail: "d".repeat(100_000) });
    bus.publish({ ...denied(1, 1), host: "h".repeat(16 * 1024) } as FeedEvent);
    for (const e of got) expect(JSON.stringify(e).length).toBeLessThan(FEED_COMMAND_MAX * 80 + 4 * FEED_TEXT_MAX);
    expect(got[0]?.kind === "bridge" && got[0].command[0]).toBe("git");
  });
});
