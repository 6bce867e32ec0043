// Policy levels through the proxy's own read path: the store's identity and lists (policyFor), the policy service, and
// the proxy's Decider (its decision, one lookup through a fake resolver, the address check). Hostile first: what an
// agent inside can name (address forms, names that resolve inward) against the most open level.
import { afterEach, describe, expect, test } from "bun:test";
import { NO_FACTS, type LevelSetting } from "../../../src/core/levels";
import type { EgressEvent } from "../../../src/core/egress-events";
import { policyFor, PolicyService } from "../../../src/policy/service";
import { Decider, type Verdict } from "../../../src/proxy/decision";
import { Store } from "../../../src/store/store";

let store: Store;
afterEach(() => store?.close());

/** Addresses a name resolves to, as the hostile DNS an agent could point at would answer. */
const DNS: Record<string, string[]> = {
  "ok.example": ["93.184.216.36"],
  "registry.npmjs.org": ["104.16.1.35"],
  "github.com": ["140.82.121.4"],
  "objects.githubusercontent.com": ["185.199.108.133"],
  "claude.ai": ["160.79.104.11"],
  "pypi.org": ["151.101.0.223"],
  "api.anthropic.com": ["160.79.104.10"],
  "api.openai.com": ["162.159.140.245"],
  "rebind.example": ["93.184.216.35", "10.0.0.1"],
  "meta.example": ["169.254.169.254"],
  "private.example": ["192.168.1.20"],
  "v6loop.example": ["::1"],
  "mapped.example": ["::ffff:127.0.0.1"],
  "mappedmeta.example": ["::ffff:169.254.169.254"],
  "ula.example": ["fd00::5"],
  "own.example": ["81.2.69.160"],
  localhost: ["127.0.0.1"],
  "git.corp.example": ["10.20.30.40"],
  "db.example": ["10.0.0.5"],
};
/** This host's own (public) address: refused as a destination whatever the level. */
const HOST_OWN = ["81.2.69.160"];

function world(identity: Record<string, unknown> = {}, t = { now: 1_000_000 }) {
  store = new Store(":memory:", { now: () => t.now });
  const sb = store.createSandbox({ name: "demo", repo: "/r", backend: "docker", identity });
  const policy = new PolicyService({ store, now: () => t.now });
  const denied: EgressEvent[] = [];
  const decider = new Decider({
    sandbox: { id: sb.id, name: sb.name },
    policy: () => policyFor(store, sb.id, t.now),
    consume: (pattern) => policy.useOnce(sb.id, pattern),
    resolve: async (h) => {
      const a = DNS[h];
      if (!a) throw new Error("ENOTFOUND");
      return a;
    },
    hostAddresses: () => HOST_OWN,
    emit: (e) => void denied.push(e),
  });
  const check = (host: string, port = 443): Promise<Verdict> => decider.check("proxy", "CONNECT", host, port);
  return { sb, policy, decider, check, denied, t };
}

const level = (l: LevelSetting["level"], repo = NO_FACTS): { policy: LevelSetting } => ({ policy: { level: l, repo, at: 1 } });
const outcome = (v: Verdict) => (v.ok ? `allowed:${v.source}` : v.status === 403 ? `refused:${v.reason}` : `unreachable`);

describe("level-open-never-private: the open level reaches every public host and never the host, private, link-local or metadata addresses", () => {
  const hostile: [string, number, string][] = [
    ["127.0.0.1", 443, "host-address"],
    ["2130706433", 443, "host-address"], // 127.0.0.1 as one number
    ["0x7f.1", 80, "host-address"],
    ["[::1]", 443, "host-address"],
    ["[::ffff:127.0.0.1]", 443, "host-address"],
    ["host.sbx.internal", 443, "host-address"],
    ["0.0.0.0", 8080, "host-address"],
    ["10.0.0.1", 443, "ip-literal"],
    ["10.255.255.255", 22, "ip-literal"],
    ["169.254.169.254", 80, "ip-literal"],
    ["[::ffff:169.254.169.254]", 80, "ip-literal"],
    ["[::ffff:a9fe:a9fe]", 80, "ip-literal"],
    ["[64:ff9b::a9fe:a9fe]", 80, "ip-literal"],
    ["[::ffff:10.0.0.1]", 443, "ip-literal"],
    ["[fd00::1]", 443, "ip-literal"],
    ["[fe80::1]", 443, "ip-literal"],
    ["100.64.0.1", 443, "ip-literal"],
    ["81.2.69.160", 443, "host-address"], // the host's own address, as a literal
    ["localhost", 443, "host-address"],
    ["rebind.example", 443, "internal-address"], // one inward address among public ones refuses the name
    ["meta.example", 80, "internal-address"],
    ["mappedmeta.example", 80, "internal-address"],
    ["private.example", 443, "internal-address"],
    ["ula.example", 443, "internal-address"],
    ["v6loop.example", 443, "host-address"],
    ["mapped.example", 443, "host-address"],
    ["own.example", 443, "host-address"],
  ];
  for (const [host, port, reason] of hostile) {
    test(`${host}:${port} is refused (${reason})`, async () => {
      const { check } = world(level("open"));
      expect(outcome(await check(host, port))).toBe(`refused:${reason}`);
    });
  }

  test("any public name or address, on any port, is allowed, and the decision names the level", async () => {
    const { check } = world(level("open"));
    for (const [h, p] of [["ok.example", 443], ["ok.example", 8443], ["93.184.216.34", 22], ["[2606:4700::1]", 443]] as const) {
      const v = await check(h, p);
      expect({ h, p, v: outcome(v) }).toEqual({ h, p, v: "allowed:level" });
      if (v.ok) expect(v.pattern).toContain("level open");
    }
  });

  test("a private address is reached only through an exact address the person allowed, as on any level", async () => {
    const { check, policy, sb } = world(level("open"));
    expect(outcome(await check("db.example"))).toBe("refused:internal-address");
    policy.allow({ kind: "sandbox", sandbox: sb }, ["10.0.0.5"], "cli:ann");
    expect(outcome(await check("db.example"))).toBe("allowed:level");
    // A network of them does not count: only that exact address.
    policy.allow({ kind: "sandbox", sandbox: sb }, ["10.0.0.0/8"], "cli:ann");
    expect(outcome(await check("rebind.example"))).toBe("refused:internal-address");
  });

  test("a level never names an address: a repo whose remote or .npmrc names one gets no exact entry out of it", async () => {
    const repo = { registries: [], registryHosts: [{ host: "10.20.30.40", file: ".npmrc" }], forges: [{ host: "169.254.169.254", remote: "origin" }, { host: "git.corp.example", remote: "corp" }] };
    const { check } = world(level("balanced", repo));
    expect(outcome(await check("10.20.30.40"))).toBe("refused:ip-literal");
    expect(outcome(await check("169.254.169.254", 80))).toBe("refused:ip-literal");
    // Its name is allowed (the person's forge); where it resolves inward, the address check refuses it.
    expect(outcome(await check("git.corp.example"))).toBe("refused:internal-address");
  });
});

describe("level-locked: nothing but sbx's own routes and what the person allows", () => {
  test("not even the built-in list: api.anthropic.com, registries and forges are refused", async () => {
    const { check } = world(level("locked"));
    for (const h of ["api.anthropic.com", "registry.npmjs.org", "github.com", "ok.example"]) expect({ h, v: outcome(await check(h)) }).toEqual({ h, v: "refused:not-allowlisted" });
  });

  test("the person's own entries and published services still apply", async () => {
    const { check, policy, sb } = world({ ...level("locked"), publish: ["127.0.0.1:5432"] });
    policy.allow({ kind: "sandbox", sandbox: sb }, ["ok.example"], "cli:ann");
    policy.allow({ kind: "global" }, ["github.com"], "cli:ann");
    expect(outcome(await check("ok.example"))).toBe("allowed:sandbox");
    expect(outcome(await check("github.com"))).toBe("allowed:global");
    expect(outcome(await check("host.sbx.internal", 5432))).toBe("allowed:published");
  });

  test("a stored level that does not read back is locked, never open (fail closed)", async () => {
    for (const bad of [{ level: "wide-open" }, { level: "open", repo: "x" }, "open", 7]) {
      const { check } = world({ policy: bad });
      expect({ bad, v: outcome(await check("ok.example")) }).toEqual({ bad, v: "refused:not-allowlisted" });
      expect({ bad, v: outcome(await check("api.anthropic.com")) }).toEqual({ bad, v: "refused:not-allowlisted" });
      store.close();
    }
  });
});

describe("level-balanced: the agent's API and login, the repo's registries and forge", () => {
  const repo = { registries: [{ preset: "npm", file: "package.json" }], registryHosts: [{ host: "npm.corp.example", file: ".npmrc" }], forges: [{ host: "github.com", remote: "origin" }] };

  test("what the repo uses is allowed as the level's; anything else is refused", async () => {
    const { check } = world(level("balanced", repo));
    expect(outcome(await check("registry.npmjs.org"))).toBe("allowed:level");
    expect(outcome(await check("github.com"))).toBe("allowed:level");
    expect(outcome(await check("objects.githubusercontent.com"))).toBe("allowed:level");
    expect(outcome(await check("ok.example"))).toBe("refused:not-allowlisted");
    expect(outcome(await check("pypi.org"))).toBe("refused:not-allowlisted");
    // Its default ports only, as any host pattern.
    expect(outcome(await check("registry.npmjs.org", 8443))).toBe("refused:port-not-allowed");
  });

  test("the agents it runs: Claude Code's when it has run none; then those it ran, and only those", async () => {
    const none = world(level("balanced", repo));
    expect(outcome(await none.check("api.anthropic.com"))).toBe("allowed:level");
    expect(outcome(await none.check("claude.ai"))).toBe("allowed:level");
    expect(outcome(await none.check("api.openai.com"))).toBe("refused:not-allowlisted");
    store.close();
    const codex = world({ ...level("balanced", repo), agents: { codex: "0.171.0" } });
    expect(outcome(await codex.check("api.openai.com"))).toBe("allowed:level");
    expect(outcome(await codex.check("api.anthropic.com"))).toBe("refused:not-allowlisted");
  });

  test("no level: the built-in list, as before levels", async () => {
    const { check } = world();
    expect(outcome(await check("api.anthropic.com"))).toBe("allowed:builtin");
    expect(outcome(await check("registry.npmjs.org"))).toBe("refused:not-allowlisted");
  });

  test("a level changed in the store applies to the next connection, no restart", async () => {
    const { check, sb } = world(level("locked"));
    expect(outcome(await check("ok.example"))).toBe("refused:not-allowlisted");
    store.updateIdentity(sb.id, level("open"));
    expect(outcome(await check("ok.example"))).toBe("allowed:level");
    store.updateIdentity(sb.id, level("locked"));
    expect(outcome(await check("ok.example"))).toBe("refused:not-allowlisted");
  });
});
