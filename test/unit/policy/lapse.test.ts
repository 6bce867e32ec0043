// Allows for a time and for once, through the proxy's own read path (policyFor, the policy service, the Decider with
// its `consume`), on a fake clock: an expired entry refuses the next connection before any sweep; the sweep deletes
// and says what lapsed (audit row, feed event, `sbx logs`); a one-time approval lets exactly one connection through.
import { afterEach, describe, expect, test } from "bun:test";
import { ONCE_TTL_MS } from "../../../src/core/allow-term";
import { feedFromAudit, type FeedEvent } from "../../../src/events/feed";
import { policyFor, PolicyService } from "../../../src/policy/service";
import { pairApprovedNames } from "../../../src/policy/private-pairing";
import { Decider, type Verdict } from "../../../src/proxy/decision";
import { Store } from "../../../src/store/store";

let store: Store;
afterEach(() => store?.close());

const DNS: Record<string, string[]> = { "lapse.example": ["93.184.216.40"], "db.example": ["10.0.0.5"], "other.example": ["93.184.216.41"], "pair.example": ["10.0.0.7"] };
const MIN = 60_000;

function world(opts: { slowDns?: boolean } = {}) {
  const t = { now: 1_700_000_000_000 };
  store = new Store(":memory:", { now: () => t.now });
  const sb = store.createSandbox({ name: "demo", repo: "/r", backend: "docker" });
  const other = store.createSandbox({ name: "other", repo: "/r", backend: "docker" });
  const events: FeedEvent[] = [];
  const policy = new PolicyService({ store, publish: (e) => void events.push(e), now: () => t.now });
  const deciderFor = (id: number) =>
    new Decider({
      sandbox: { id, name: `#${id}` },
      policy: () => policyFor(store, id, t.now),
      consume: (pattern) => policy.useOnce(id, pattern),
      resolve: async (h) => {
        // Every lookup waits: connections made at once all pass the decision before any of them is let through.
        if (opts.slowDns) await Bun.sleep(20);
        const a = DNS[h];
        if (!a) throw new Error("ENOTFOUND");
        return a;
      },
      hostAddresses: () => [],
      emit: () => undefined,
    });
  const decider = deciderFor(sb.id);
  const check = (host: string, port = 443) => decider.check("proxy", "CONNECT", host, port);
  const logs = () => store.listAudit({ kind: "allowlist" }).map((r) => feedFromAudit(r, (id) => store.getSandbox(id)?.name ?? "?"));
  return { t, sb, other, policy, events, check, deciderFor, logs };
}

const outcome = (v: Verdict) => (v.ok ? `allowed:${v.source}` : v.status === 403 ? `refused:${v.reason}` : "unreachable");

describe("approval-lapses: an allow for a time stops allowing at its expiry, by itself, and says so", () => {
  test("an expired entry refuses the next connection at once, before any sweep; the sweep then deletes it and says lapsed", async () => {
    const { t, sb, policy, events, check, logs } = world();
    policy.allow({ kind: "sandbox", sandbox: sb }, ["lapse.example"], "cli:ann", { kind: "for", ms: 30 * MIN });
    expect(outcome(await check("lapse.example"))).toBe("allowed:sandbox");
    t.now += 30 * MIN - 1;
    expect(outcome(await check("lapse.example"))).toBe("allowed:sandbox");
    t.now += 1;
    // Not swept: the row is still there, and allows nothing.
    expect(store.listAllow(sb.id).map((e) => e.pattern)).toEqual(["lapse.example"]);
    expect(outcome(await check("lapse.example"))).toBe("refused:not-allowlisted");
    expect(policy.sweep()).toBe(1);
    expect(store.listAllow(sb.id)).toEqual([]);
    expect(policy.sweep()).toBe(0);
    const lapsed = events.filter((e) => e.kind === "decision" && e.action === "lapsed");
    expect(lapsed).toEqual([expect.objectContaining({ kind: "decision", action: "lapsed", pattern: "lapse.example", scope: "sandbox", by: "sbx", sandbox: { id: sb.id, name: "demo" } })]);
    // `sbx logs` reads the audit row back as the same event.
    expect(logs().map((e) => e && e.kind === "decision" && [e.action, e.pattern, e.term ?? null])).toEqual([
      ["allow", "lapse.example", "for 30m"],
      ["lapsed", "lapse.example", expect.stringContaining("until ")],
    ]);
  });

  test("a global allow for a time lapses for every sandbox alike", async () => {
    const { t, other, policy, check, deciderFor } = world();
    policy.allow({ kind: "global" }, ["lapse.example"], "cli:ann", { kind: "for", ms: 5 * MIN });
    expect(outcome(await check("lapse.example"))).toBe("allowed:global");
    expect(outcome(await deciderFor(other.id).check("proxy", "CONNECT", "lapse.example", 443))).toBe("allowed:global");
    t.now += 5 * MIN;
    expect(outcome(await check("lapse.example"))).toBe("refused:not-allowlisted");
    expect(outcome(await deciderFor(other.id).check("proxy", "CONNECT", "lapse.example", 443))).toBe("refused:not-allowlisted");
  });

  test("for good wins over a time; a new time replaces a time; a time never shortens for good", async () => {
    const { t, sb, policy, check } = world();
    const scope = { kind: "sandbox" as const, sandbox: sb };
    policy.allow(scope, ["lapse.example"], "cli:ann", { kind: "for", ms: 10 * MIN });
    expect(policy.allow(scope, ["lapse.example"], "cli:ann", { kind: "for", ms: 60 * MIN })[0]!.changed).toBe(true);
    t.now += 30 * MIN;
    expect(outcome(await check("lapse.example"))).toBe("allowed:sandbox");
    expect(policy.allow(scope, ["lapse.example"], "cli:ann")[0]!.changed).toBe(true);
    expect(store.listAllow(sb.id)[0]).toMatchObject({ expiresAt: null, once: false });
    expect(policy.allow(scope, ["lapse.example"], "cli:ann", { kind: "for", ms: MIN })[0]!.changed).toBe(false);
    t.now += 1000 * MIN;
    expect(outcome(await check("lapse.example"))).toBe("allowed:sandbox");
    expect(policy.sweep()).toBe(0);
  });

  test("an approval allowed for a time answers the pending request and lapses like any other", async () => {
    const { t, sb, policy, check } = world();
    expect(outcome(await check("lapse.example"))).toBe("refused:not-allowlisted");
    const a = store.recordPending(sb.id, "lapse.example", 443, "not allowed")!;
    const d = policy.decide(a.id, "allow-sandbox", "ui", { kind: "for", ms: 2 * MIN });
    expect(d).toMatchObject({ action: "allow", added: true, pattern: "lapse.example" });
    expect(store.listApprovals({ state: "pending" })).toEqual([]);
    expect(outcome(await check("lapse.example"))).toBe("allowed:sandbox");
    t.now += 2 * MIN;
    expect(outcome(await check("lapse.example"))).toBe("refused:not-allowlisted");
  });

  test("an entry that lapsed while no sweep ran is made again by a new allow, not left as it was", async () => {
    const { t, sb, policy, check } = world();
    policy.allow({ kind: "sandbox", sandbox: sb }, ["lapse.example"], "cli:ann", { kind: "for", ms: MIN });
    t.now += 2 * MIN;
    expect(policy.allow({ kind: "sandbox", sandbox: sb }, ["lapse.example"], "cli:ann", { kind: "once" })[0]!.changed).toBe(true);
    expect(outcome(await check("lapse.example"))).toBe("allowed:once");
    expect(outcome(await check("lapse.example"))).toBe("refused:not-allowlisted");
  });
});

describe("approval-once: a one-time approval lets exactly one connection through, and not a second", () => {
  test("approvals allow N --once: the next connection goes, the one after is refused; nothing stays on the list", async () => {
    const { sb, policy, check, logs } = world();
    const a = store.recordPending(sb.id, "lapse.example", 443, "not allowed")!;
    policy.decide(a.id, "allow-sandbox", "cli:ann", { kind: "once" });
    expect(store.listApprovals({ state: "pending" })).toEqual([]);
    expect(outcome(await check("lapse.example"))).toBe("allowed:once");
    const second = await check("lapse.example");
    expect(outcome(second)).toBe("refused:not-allowlisted");
    expect(store.listAllow(sb.id)).toEqual([]);
    expect(policyFor(store, sb.id).sandbox).toEqual([]);
    expect(store.listAudit({ kind: "allowlist" }).map((r) => r.action)).toEqual(["allow", "once-used"]);
    expect(logs()[0]).toMatchObject({ action: "allow", term: "once (one connection)" });
  });

  test("connections made at once: exactly one of them gets through", async () => {
    const { sb, policy, check } = world({ slowDns: true });
    policy.allow({ kind: "sandbox", sandbox: sb }, ["lapse.example"], "cli:ann", { kind: "once" });
    const all = await Promise.all(Array.from({ length: 8 }, () => check("lapse.example")));
    expect(all.map(outcome).sort()).toEqual(["allowed:once", ...Array(7).fill("refused:not-allowlisted")]);
  });

  test("a one-time approval of an address a name resolves to is used up by that name's one connection", async () => {
    const { sb, policy, check } = world();
    policy.allow({ kind: "sandbox", sandbox: sb }, ["db.example"], "cli:ann");
    expect(outcome(await check("db.example"))).toBe("refused:internal-address");
    policy.allow({ kind: "sandbox", sandbox: sb }, ["10.0.0.5"], "cli:ann", { kind: "once" });
    expect(outcome(await check("db.example"))).toBe("allowed:sandbox");
    expect(outcome(await check("db.example"))).toBe("refused:internal-address");
    expect(outcome(await check("10.0.0.5"))).toBe("refused:ip-literal");
  });

  test("a name approved once that resolves to a private address: the name and its pairing go with that one connection", async () => {
    const { sb, policy, check } = world();
    // Even beside a lasting allow of the address itself (as a test site's is), the pairing is not a second way in.
    policy.allow({ kind: "sandbox", sandbox: sb }, ["10.0.0.7"], "cli:ann");
    policy.allow({ kind: "sandbox", sandbox: sb }, ["pair.example", "pair.example@10.0.0.7"], "cli:ann", { kind: "once" });
    expect(outcome(await check("pair.example"))).toBe("allowed:once");
    expect(outcome(await check("pair.example"))).toBe("refused:not-allowlisted");
    expect(store.listAllow(sb.id).map((e) => e.pattern)).toEqual(["10.0.0.7"]);
  });

  test("the pairing sbx makes after an approval of such a name lasts as the approval does: once, or until the same moment", async () => {
    const { t, sb, policy, events, check } = world();
    const listeners: ((e: FeedEvent) => void)[] = [];
    const paired = new PolicyService({ store, publish: (e) => listeners.forEach((l) => l(e)), now: () => t.now });
    pairApprovedNames({ subscribe: (fn) => (listeners.push(fn), () => undefined), policy, store, resolve: async (h) => DNS[h] ?? [] });
    const a = store.recordPending(sb.id, "pair.example", 443, "not allowed")!;
    paired.decide(a.id, "allow-sandbox", "cli:ann", { kind: "once" });
    await Bun.sleep(20);
    expect(store.listAllow(sb.id).map((e) => [e.pattern, e.once])).toEqual([["pair.example", true], ["pair.example@10.0.0.7", true]]);
    expect(outcome(await check("pair.example"))).toBe("allowed:once");
    expect(outcome(await check("pair.example"))).toBe("refused:not-allowlisted");
    const b = store.recordPending(sb.id, "pair.example", 443, "not allowed")!;
    paired.decide(b.id, "allow-sandbox", "cli:ann", { kind: "for", ms: 10 * MIN });
    await Bun.sleep(20);
    const [name, pair] = store.listAllow(sb.id);
    expect(pair).toMatchObject({ pattern: "pair.example@10.0.0.7", once: false });
    expect(Math.abs(pair!.expiresAt! - name!.expiresAt!)).toBeLessThan(1000);
    t.now += 10 * MIN;
    expect(outcome(await check("pair.example"))).toBe("refused:not-allowlisted");
    expect(policy.sweep()).toBe(2);
    expect(events.filter((e) => e.kind === "decision" && e.action === "lapsed")).toHaveLength(2);
  });

  test("one never used lapses after ONCE_TTL_MS, and the sweep says it lapsed unused", async () => {
    const { t, sb, policy, check, events } = world();
    policy.allow({ kind: "sandbox", sandbox: sb }, ["lapse.example"], "cli:ann", { kind: "once" });
    t.now += ONCE_TTL_MS;
    expect(outcome(await check("lapse.example"))).toBe("refused:not-allowlisted");
    expect(policy.sweep()).toBe(1);
    expect(events.at(-1)).toMatchObject({ kind: "decision", action: "lapsed", pattern: "lapse.example", term: "once, never used" });
  });

  test("a proxy that cannot use one up lets nothing through on it", async () => {
    const { sb, policy } = world();
    policy.allow({ kind: "sandbox", sandbox: sb }, ["lapse.example"], "cli:ann", { kind: "once" });
    const d = new Decider({ sandbox: { id: sb.id, name: "demo" }, policy: () => policyFor(store, sb.id), resolve: async () => ["93.184.216.40"], hostAddresses: () => [], emit: () => undefined });
    expect(outcome(await d.check("proxy", "CONNECT", "lapse.example", 443))).toBe("refused:not-allowlisted");
    expect(store.listAllow(sb.id)).toHaveLength(1);
  });

  test("once is for one sandbox: refused for every sandbox, for the bridge's approvals and for a service of the host", () => {
    const { sb, policy } = world();
    expect(() => policy.allow({ kind: "global" }, ["lapse.example"], "cli:ann", { kind: "once" })).toThrow(/not for every sandbox/);
    const bridge = store.recordPending(sb.id, "push:feature", 0, "outside the prefix", "bridge")!;
    expect(() => policy.decide(bridge.id, "allow-sandbox", "cli:ann", { kind: "once" })).toThrow(/for good or not at all/);
    const svc = store.recordPending(sb.id, "127.0.0.1", 5432, "host-address")!;
    expect(() => policy.decide(svc.id, "allow-sandbox", "cli:ann", { kind: "for", ms: MIN })).toThrow(/for good or not at all/);
    const host = store.recordPending(sb.id, "lapse.example", 443, "x")!;
    expect(() => policy.decide(host.id, "allow-global", "cli:ann", { kind: "once" })).toThrow(/not for every sandbox/);
    // A refused call changes nothing: each is still pending.
    expect(store.listApprovals({ state: "pending" }).map((a) => a.id).sort()).toEqual([bridge.id, svc.id, host.id].sort());
  });

  test("once over what is allowed already changes nothing and uses nothing up", async () => {
    const { sb, policy, check } = world();
    policy.allow({ kind: "sandbox", sandbox: sb }, ["lapse.example"], "cli:ann");
    expect(policy.allow({ kind: "sandbox", sandbox: sb }, ["lapse.example"], "cli:ann", { kind: "once" })[0]!.changed).toBe(false);
    for (let i = 0; i < 3; i++) expect(outcome(await check("lapse.example"))).toBe("allowed:sandbox");
  });

  test("another sandbox's connection never uses this sandbox's one", async () => {
    const { sb, other, policy, deciderFor, check } = world();
    policy.allow({ kind: "sandbox", sandbox: sb }, ["lapse.example"], "cli:ann", { kind: "once" });
    expect(outcome(await deciderFor(other.id).check("proxy", "CONNECT", "lapse.example", 443))).toBe("refused:not-allowlisted");
    expect(outcome(await check("lapse.example"))).toBe("allowed:once");
  });
});
