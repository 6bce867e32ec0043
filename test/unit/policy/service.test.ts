// The one allowlist and approvals service: every decision is the store change, one audit row in the feed's shape and one
// event on the live feed, the same from the CLI, the dashboard and chat; a pattern the core refuses changes nothing.
import { afterEach, describe, expect, test } from "bun:test";
import { PolicyService } from "../../../src/policy/service";
import { Store } from "../../../src/store/store";
import { feedFromAudit, type FeedEvent } from "../../../src/events/feed";

let store: Store;
afterEach(() => store?.close());

function world() {
  store = new Store(":memory:");
  const sb = store.createSandbox({ name: "demo", repo: "/r", backend: "docker" });
  const other = store.createSandbox({ name: "other", repo: "/r", backend: "docker" });
  const events: FeedEvent[] = [];
  const policy = new PolicyService({ store, publish: (e) => void events.push(e), now: () => 1 });
  const audited = () => store.listAudit({ kind: "allowlist" }).map((r) => feedFromAudit(r, (id) => store.getSandbox(id)?.name ?? "?"));
  const pending = () => store.listApprovals({ state: "pending" }).map((a) => `${a.host}:${a.port}`);
  return { sb, other, policy, events, audited, pending };
}

const summary = (e: FeedEvent | null) => e && e.kind === "decision" && [e.action, e.pattern, e.scope, e.sandbox?.name ?? null, e.by];

describe("one policy service", () => {
  test("allow answers the pending approvals it covers and publishes one decision, audited in the feed's shape", () => {
    const { sb, other, policy, events, audited, pending } = world();
    store.recordPending(sb.id, "api.example.com", 443, "not allowed");
    store.recordPending(sb.id, "cdn.example.com", 443, "not allowed");
    store.recordPending(other.id, "api.example.com", 443, "not allowed");
    const [r] = policy.allow({ kind: "sandbox", sandbox: sb }, ["API.example.com"], "cli:ann");
    expect(r).toMatchObject({ pattern: "api.example.com", changed: true });
    expect(r!.resolved.map((a) => a.host)).toEqual(["api.example.com"]);
    // Other hosts and other sandboxes still wait for their own answer.
    expect(pending().sort()).toEqual(["api.example.com:443", "cdn.example.com:443"]);
    expect(events.map(summary)).toEqual([["allow", "api.example.com", "sandbox", "demo", "cli:ann"]]);
    expect(audited().map(summary)).toEqual(events.map(summary));
  });

  test("a global allow answers every sandbox's pending request it covers", () => {
    const { sb, other, policy, pending } = world();
    store.recordPending(sb.id, "registry.npmjs.org", 443, "x");
    store.recordPending(other.id, "registry.npmjs.org", 443, "x");
    policy.allow({ kind: "global" }, ["*.npmjs.org"], "zulip:ann@example.com");
    expect(pending()).toEqual([]);
  });

  test("allowing what is allowed already is no news: no event, no audit row", () => {
    const { sb, policy, events, audited } = world();
    policy.allow({ kind: "sandbox", sandbox: sb }, ["example.com", "Example.COM"], "cli:ann");
    policy.allow({ kind: "sandbox", sandbox: sb }, ["example.com"], "cli:ann");
    expect(events).toHaveLength(1);
    expect(audited()).toHaveLength(1);
  });

  test("a pattern the core refuses refuses the whole call: nothing is added, answered or announced", () => {
    const { sb, policy, events, pending } = world();
    store.recordPending(sb.id, "good.example", 443, "x");
    for (const bad of [["good.example", "*"], ["*.com"], ["good.example", "0.0.0.0/0"]]) {
      expect(() => policy.allow({ kind: "sandbox", sandbox: sb }, bad, "cli:ann")).toThrow();
    }
    expect(store.listAllow(sb.id)).toEqual([]);
    expect(pending()).toEqual(["good.example:443"]);
    expect(events).toEqual([]);
  });

  test("deny removes (canonical, or an entry stored verbatim before a rule changed) and answers pending requests for that host", () => {
    const { sb, policy, events, pending } = world();
    policy.allow({ kind: "sandbox", sandbox: sb }, ["example.com"], "cli:ann");
    store.addAllow(sb.id, "Legacy.Example", "old");
    store.recordPending(sb.id, "evil.example", 8443, "x");
    const r = policy.deny({ kind: "sandbox", sandbox: sb }, ["example.com", "Legacy.Example", "evil.example", "never.example"], "ui");
    expect(r.map((x) => [x.pattern, x.changed, x.resolved.length])).toEqual([
      ["example.com", true, 0],
      ["legacy.example", true, 0],
      ["evil.example", false, 1],
      ["never.example", false, 0],
    ]);
    expect(pending()).toEqual([]);
    expect(events.slice(1).map(summary)).toEqual([
      ["remove", "example.com", "sandbox", "demo", "ui"],
      ["remove", "legacy.example", "sandbox", "demo", "ui"],
      ["deny", "evil.example", "sandbox", "demo", "ui"],
    ]);
  });

  test("deciding an approval names it in the event and the audit row; allow-global answers the others it covers", () => {
    const { sb, other, policy, events, audited, pending } = world();
    const a = store.recordPending(sb.id, "api.example.com", 443, "not allowed")!;
    const b = store.recordPending(sb.id, "evil.example", 8443, "not allowed")!;
    store.recordPending(other.id, "api.example.com", 443, "not allowed");
    policy.decide(a.id, "allow-global", "cli:ann");
    policy.decide(b.id, "deny", "cli:ann");
    const got = events.map((e) => e.kind === "decision" && [e.action, e.pattern, e.scope, e.approvalId]);
    expect(got).toEqual([
      ["allow", "api.example.com", "global", a.id],
      ["deny", "evil.example:8443", "sandbox", b.id],
    ]);
    expect(audited().map((e) => e && e.kind === "decision" && e.approvalId)).toEqual([a.id, b.id]);
    expect(pending()).toEqual([]);
    expect(store.listAllow(null).map((e) => e.pattern)).toEqual(["api.example.com"]);
  });
});
