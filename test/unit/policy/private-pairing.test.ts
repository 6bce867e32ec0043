// private-answers-one-approval (issue 39): a name on a company's private DNS reaches its private address only paired
// with it (`name@address`), never as a name alone, never as the address alone, never at another address; one approval
// is enough (a person's allow of the name pairs it with what it resolves to, and a refusal of a listed name offers the
// pairing); sbx never looks up a name nobody allowed.
import { afterEach, describe, expect, test } from "bun:test";
import { parsePattern } from "../../../src/core/allowlist";
import { compilePolicy, decide, checkAddresses, type PolicyLists } from "../../../src/core/egress";
import { PolicyService, policyFor } from "../../../src/policy/service";
import { pairApprovedNames, pairsFor } from "../../../src/policy/private-pairing";
import { createEventBus, type FeedEvent } from "../../../src/events/feed";
import { Store } from "../../../src/store/store";
import { Decider } from "../../../src/proxy/decision";

let store: Store;
afterEach(() => store?.close());

const check = (lists: PolicyLists, host: string, addresses: string[], port = 443, own: string[] = []) => {
  const p = compilePolicy(lists);
  const d = decide(p, host, port);
  if (!d.allow) return { ok: false as const, reason: d.reason, suggest: d.suggest };
  const a = checkAddresses(p, d.host, addresses, port, new Set(own));
  return a.ok ? { ok: true as const } : { ok: false as const, reason: a.reason, suggest: a.suggest, detail: a.detail };
};

describe("name@address patterns", () => {
  test("a name with one non-public address, canonical; with a port; IPv6 in brackets", () => {
    expect(parsePattern("Registry.Corp@10.1.2.3")).toMatchObject({ ok: true, canonical: "registry.corp@10.1.2.3" });
    expect(parsePattern("registry.corp@10.1.2.3:8443")).toMatchObject({ ok: true, canonical: "registry.corp@10.1.2.3:8443" });
    expect(parsePattern("registry.corp@[fd00::1]:8443")).toMatchObject({ ok: true, canonical: "registry.corp@[fd00::1]:8443" });
    expect(parsePattern("registry.corp@[FD00:0::1]")).toMatchObject({ ok: true, canonical: "registry.corp@[fd00::1]" });
  });
  test("never the host's loopback, never a public address, never a wildcard or an address as the name", () => {
    for (const bad of ["r.corp@127.0.0.1", "r.corp@0.0.0.0", "r.corp@[::1]", "r.corp@[::ffff:127.0.0.1]", "r.corp@8.8.8.8", "*.corp.example@10.0.0.1", "10.0.0.2@10.0.0.1", "localhost@10.0.0.1", "r.corp@10.0.0.0/8", "r.corp@", "@10.0.0.1"]) {
      expect({ bad, ok: parsePattern(bad).ok }).toEqual({ bad, ok: false });
    }
  });
});

describe("private-answers-one-approval: what a pairing reaches", () => {
  const listed: PolicyLists = { sandbox: ["registry.corp"], global: [] };
  const paired: PolicyLists = { sandbox: ["registry.corp@10.1.2.3"], global: [] };
  test("a listed name on a private address is refused, and the refusal offers the pairing (name and address together)", () => {
    const r = check(listed, "registry.corp", ["10.1.2.3"]);
    expect(r).toMatchObject({ ok: false, reason: "internal-address", suggest: "registry.corp@10.1.2.3" });
    expect((r as { detail: string }).detail).toContain("registry.corp resolves to 10.1.2.3");
    expect(check(listed, "registry.corp", ["10.1.2.3"], 8443)).toMatchObject({ ok: false });
  });
  test("the pairing allows the name to that address, on the default ports", () => {
    expect(check(paired, "registry.corp", ["10.1.2.3"])).toEqual({ ok: true });
    expect(check(paired, "registry.corp", ["10.1.2.3"], 80)).toEqual({ ok: true });
    expect(check(paired, "registry.corp", ["10.1.2.3"], 8443)).toMatchObject({ ok: false, reason: "port-not-allowed" });
  });
  test("an address that changes is a new decision; a second private address beside it too", () => {
    expect(check(paired, "registry.corp", ["10.1.2.4"])).toMatchObject({ ok: false, reason: "internal-address", suggest: "registry.corp@10.1.2.4" });
    expect(check(paired, "registry.corp", ["10.1.2.3", "192.168.7.7"])).toMatchObject({ ok: false, suggest: "registry.corp@192.168.7.7" });
    // A public answer is a public answer: the name is allowed.
    expect(check(paired, "registry.corp", ["93.184.216.34"])).toEqual({ ok: true });
  });
  test("never the address alone, never another name that resolves there, never the host's own address", () => {
    expect(check(paired, "10.1.2.3", ["10.1.2.3"])).toMatchObject({ ok: false, reason: "ip-literal" });
    expect(check({ sandbox: ["registry.corp@10.1.2.3", "evil.example"], global: [] }, "evil.example", ["10.1.2.3"])).toMatchObject({ ok: false, reason: "internal-address" });
    expect(check({ sandbox: ["registry.corp@192.168.1.5"], global: [] }, "registry.corp", ["192.168.1.5"], 443, ["192.168.1.5"])).toMatchObject({ ok: false, reason: "host-address" });
    expect(check(paired, "other.corp", ["10.1.2.3"])).toMatchObject({ ok: false, reason: "not-allowlisted" });
  });
});

describe("private-answers-one-approval: one approval", () => {
  function world() {
    store = new Store(":memory:");
    const sb = store.createSandbox({ name: "demo", repo: "/r", backend: "docker" });
    const bus = createEventBus();
    const policy = new PolicyService({ store, publish: (e) => bus.publish(e) });
    return { sb, bus, policy };
  }
  const lookups: string[] = [];
  const resolver = (answers: Record<string, string[]>) => async (h: string) => (lookups.push(h), answers[h] ?? []);

  test("a person allows a refused name once; sbx looks it up then, pairs it with its private address, and the next connection goes through", async () => {
    const { sb, bus, policy } = world();
    lookups.length = 0;
    const resolve = resolver({ "registry.corp": ["10.1.2.3"] });
    pairApprovedNames({ subscribe: (fn) => bus.subscribe(fn), policy, store, resolve });
    const events: FeedEvent[] = [];
    bus.subscribe((e) => void events.push(e));
    const decider = new Decider({ sandbox: { id: sb.id, name: sb.name }, policy: () => policyFor(store, sb.id), resolve, hostAddresses: () => [], emit: (e) => {
      if (e.type === "denied" && e.suggest) store.recordPending(sb.id, e.suggest, e.port, e.reason);
    } });
    // Refused as a name: no lookup of a name nobody allowed.
    expect(await decider.check("proxy", "CONNECT", "registry.corp", 443)).toMatchObject({ ok: false, reason: "not-allowlisted" });
    expect(lookups).toEqual([]);
    const [pending] = store.listApprovals({ state: "pending" });
    expect(pending!.host).toBe("registry.corp");
    policy.decide(pending!.id, "allow-sandbox", "cli:ann");
    for (let i = 0; i < 50 && policyFor(store, sb.id).sandbox.length < 2; i++) await Bun.sleep(5);
    expect([...policyFor(store, sb.id).sandbox].sort()).toEqual(["registry.corp", "registry.corp@10.1.2.3"]);
    expect(events.filter((e) => e.kind === "decision").map((e) => e.kind === "decision" && [e.pattern, e.by])).toEqual([
      ["registry.corp", "cli:ann"],
      ["registry.corp@10.1.2.3", "cli:ann (approved registry.corp, which resolves to a private address)"],
    ]);
    expect(await decider.check("proxy", "CONNECT", "registry.corp", 443)).toMatchObject({ ok: true, address: "10.1.2.3" });
  });

  test("`sbx allow NAME` that answers the name's pending refusal (the 403's own advice) pairs it too; an allow nobody asked for is not looked up", async () => {
    const { sb, bus, policy } = world();
    lookups.length = 0;
    const resolve = resolver({ "registry.corp": ["10.1.2.3"], "unasked.corp": ["10.1.2.9"] });
    pairApprovedNames({ subscribe: (fn) => bus.subscribe(fn), policy, store, resolve });
    const decider = new Decider({ sandbox: { id: sb.id, name: sb.name }, policy: () => policyFor(store, sb.id), resolve, hostAddresses: () => [], emit: (e) => {
      if (e.type === "denied" && e.suggest) store.recordPending(sb.id, e.suggest, e.port, e.reason);
    } });
    expect(await decider.check("proxy", "CONNECT", "registry.corp", 443)).toMatchObject({ ok: false, reason: "not-allowlisted" });
    const [r] = policy.allow({ kind: "sandbox", sandbox: sb }, ["registry.corp"], "cli:ann");
    expect(r!.resolved.length).toBe(1);
    for (let i = 0; i < 50 && policyFor(store, sb.id).sandbox.length < 2; i++) await Bun.sleep(5);
    expect([...policyFor(store, sb.id).sandbox].sort()).toEqual(["registry.corp", "registry.corp@10.1.2.3"]);
    expect(await decider.check("proxy", "CONNECT", "registry.corp", 443)).toMatchObject({ ok: true, address: "10.1.2.3" });
    // A name put on the list before anything asked for it is not looked up on the allow (its first use offers the pairing).
    policy.allow({ kind: "sandbox", sandbox: sb }, ["unasked.corp"], "cli:ann");
    await Bun.sleep(30);
    expect(lookups.filter((h) => h === "unasked.corp")).toEqual([]);
  });

  test("the name's answer moves to another private address after the approval: each connection is judged on its own lookup, refused, and filed as the new pairing", async () => {
    const { sb, bus, policy } = world();
    const answers: Record<string, string[]> = { "registry.corp": ["10.1.2.3"] };
    const resolve = async (h: string) => answers[h] ?? [];
    pairApprovedNames({ subscribe: (fn) => bus.subscribe(fn), policy, store, resolve });
    const decider = new Decider({ sandbox: { id: sb.id, name: sb.name }, policy: () => policyFor(store, sb.id), resolve, hostAddresses: () => [], emit: (e) => {
      if (e.type === "denied" && e.suggest) store.recordPending(sb.id, e.suggest, e.port, e.reason);
    } });
    await decider.check("proxy", "CONNECT", "registry.corp", 443);
    policy.decide(store.listApprovals({ state: "pending" })[0]!.id, "allow-sandbox", "cli:ann");
    for (let i = 0; i < 50 && policyFor(store, sb.id).sandbox.length < 2; i++) await Bun.sleep(5);
    expect(await decider.check("proxy", "CONNECT", "registry.corp", 443)).toMatchObject({ ok: true, address: "10.1.2.3" });
    answers["registry.corp"] = ["10.66.0.7"];
    expect(await decider.check("proxy", "CONNECT", "registry.corp", 443)).toMatchObject({ ok: false, reason: "internal-address", suggest: "registry.corp@10.66.0.7" });
    expect(store.listApprovals({ state: "pending" }).map((a) => a.host)).toEqual(["registry.corp@10.66.0.7"]);
    // Both addresses in one answer: the approved one alone does not carry the other.
    answers["registry.corp"] = ["10.1.2.3", "10.66.0.7"];
    expect(await decider.check("proxy", "CONNECT", "registry.corp", 443)).toMatchObject({ ok: false, suggest: "registry.corp@10.66.0.7" });
    // Back where it was approved: through again, nothing new asked.
    answers["registry.corp"] = ["10.1.2.3"];
    expect(await decider.check("proxy", "CONNECT", "registry.corp", 443)).toMatchObject({ ok: true, address: "10.1.2.3" });
  });

  test("a listed name's refusal is filed as the pairing; allowing it lets the next connection through", async () => {
    const { sb, policy } = world();
    policy.allow({ kind: "sandbox", sandbox: sb }, ["registry.corp"], "x");
    const decider = new Decider({ sandbox: { id: sb.id, name: sb.name }, policy: () => policyFor(store, sb.id), resolve: async () => ["10.1.2.3"], hostAddresses: () => [], emit: (e) => {
      if (e.type === "denied" && e.suggest) store.recordPending(sb.id, e.suggest, e.port, e.reason);
    } });
    expect(await decider.check("proxy", "CONNECT", "registry.corp", 443)).toMatchObject({ ok: false, reason: "internal-address" });
    const [pending] = store.listApprovals({ state: "pending" });
    expect(pending!.host).toBe("registry.corp@10.1.2.3");
    const d = policy.decide(pending!.id, "allow-sandbox", "cli:ann");
    expect(d.pattern).toBe("registry.corp@10.1.2.3");
    expect(await decider.check("proxy", "CONNECT", "registry.corp", 443)).toMatchObject({ ok: true });
    // sbx deny NAME answers the name's pending pairings and removes nothing it should not.
    store.recordPending(sb.id, "registry.corp@10.9.9.9", 443, "internal-address");
    policy.deny({ kind: "sandbox", sandbox: sb }, ["registry.corp"], "x");
    expect(store.listApprovals({ state: "pending" })).toEqual([]);
  });

  test("only non-public answers are paired: never loopback, the unspecified address or the host's own; a public answer pairs nothing", () => {
    expect(pairsFor("r.corp", 443, ["10.1.2.3", "127.0.0.1", "0.0.0.0", "::1", "93.184.216.34", "192.168.1.5", "fd00::7"], new Set(["192.168.1.5"]))).toEqual(["r.corp@10.1.2.3", "r.corp@[fd00::7]"]);
    expect(pairsFor("r.corp", 8443, ["10.1.2.3"])).toEqual(["r.corp@10.1.2.3:8443"]);
    expect(pairsFor("r.corp", 443, ["93.184.216.34"])).toEqual([]);
  });
});
