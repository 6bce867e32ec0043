// nft rendering is golden-tested; parsing reads back what the renderer marks; naming respects useradd's limits.
import { describe, expect, test } from "bun:test";
import { guestUser, parseGuestUser, USER_NAME_MAX } from "../../../../src/drivers/linux-user/naming";
import { chainMatches, parseMarker, parseTable, renderBase, renderRemove, renderSandbox } from "../../../../src/drivers/linux-user/nft";
import { golden } from "./golden";

describe("nft render", () => {
  test("base table: map, dispatch chain on the output hook", () => golden("base.nft", renderBase()));
  test("running sandbox: only 127.0.0.1:<port>, then log and reject", () =>
    golden("run.nft", renderSandbox({ id: "abc123def456", uid: 998, mode: "run", proxyPort: 41234 })));
  test("running sandbox with local services: its own loopback servers, checked on input by the socket's cgroup", () =>
    golden("run-local.nft", renderSandbox({ id: "abc123def456", uid: 998, mode: "run", proxyPort: 41234, local: { level: 2, path: "sbx/abc123def456" } })));
  test("running sandbox with the transparent path: its DNS and its TCP to named addresses redirected to its port (nat), and UDP to it allowed", () => {
    const text = renderSandbox({ id: "abc123def456", uid: 998, mode: "run", proxyPort: 41234, transparent: true });
    golden("run-transparent.nft", text);
    expect(text).toContain("ip daddr 127.77.0.0/16 meta l4proto tcp redirect to :41234");
    expect(text).toContain("udp dport 53 redirect to :41234");
    expect(text).toContain("ip daddr 127.0.0.1 udp dport 41234 accept");
    // Without it (and when stopped) the nat chain is there but empty: nothing is redirected.
    for (const other of [renderSandbox({ id: "abc123def456", uid: 998, mode: "run", proxyPort: 41234 }), renderSandbox({ id: "abc123def456", uid: 998, mode: "stop", transparent: true })]) {
      expect(other).not.toContain("redirect");
      expect(other).not.toContain("udp dport");
    }
  });
  test("a cgroup path nft would misread is refused", () => {
    expect(() => renderSandbox({ id: "a1", uid: 998, mode: "run", proxyPort: 1, local: { level: 2, path: 'x" accept; #' } })).toThrow(/bad cgroup/);
  });
  test("stopped sandbox: log and reject everything", () => golden("stop.nft", renderSandbox({ id: "abc123def456", uid: 998, mode: "stop" })));
  test("remove: elements, then chain", () => golden("remove.nft", renderRemove("abc123def456", [998])));
  test("remove with the input chain: its element and chain too", () => golden("remove-in.nft", renderRemove("abc123def456", [998], "sbx", { uids: [998], chain: true })));
  test("remove with the nat chain: its element and chain too", () =>
    golden("remove-nat.nft", renderRemove("abc123def456", [998], "sbx", { uids: [998], chain: true }, { uids: [998], chain: true })));
  test("refuses a run chain without a valid port, and uid 0", () => {
    expect(() => renderSandbox({ id: "a1", uid: 998, mode: "run" })).toThrow(/port/);
    expect(() => renderSandbox({ id: "a1", uid: 0, mode: "stop" })).toThrow(/uid/);
  });
});

describe("nft parse", () => {
  const json = JSON.stringify({
    nftables: [
      { metainfo: { version: "1.0.6" } },
      { table: { family: "inet", name: "sbx" } },
      { map: { name: "guests", type: "uid", map: "verdict", elem: [[998, { jump: { target: "sb_abc" } }]] } },
      { map: { name: "guests_in", type: "mark", map: "verdict", elem: [[998, { jump: { target: "si_abc" } }]] } },
      { map: { name: "guests_nat", type: "uid", map: "verdict", elem: [[998, { jump: { target: "sn_abc" } }]] } },
      { chain: { name: "output", hook: "output" } },
      { chain: { name: "input", hook: "input" } },
      { chain: { name: "sb_abc" } },
      { chain: { name: "si_abc" } },
      { chain: { name: "nat_output", hook: "output" } },
      { chain: { name: "sn_abc" } },
      { rule: { chain: "output", comment: "sbx dispatch", expr: [] } },
      { rule: { chain: "input", comment: "sbx dispatch in", expr: [] } },
      { rule: { chain: "nat_output", comment: "sbx dispatch nat", expr: [] } },
      { rule: { chain: "sb_abc", expr: [] } },
      { rule: { chain: "sb_abc", comment: "sbx id=abc uid=998 mode=run port=40123 local=2:unified/sbx/abc", expr: [] } },
      { rule: { chain: "si_abc", expr: [] } },
      { rule: { chain: "si_abc", comment: "sbx id=abc uid=998 mode=run port=40123 local=2:unified/sbx/abc", expr: [] } },
    ],
  });
  test("reads base, chains, markers and map elements", () => {
    const t = parseTable(json);
    expect(t.exists).toBe(true);
    expect(t.baseOk).toBe(true);
    const c = t.chains.get("sb_abc");
    expect(c?.uids).toEqual([998]);
    expect(c).toMatchObject({ inChain: true, inUids: [998] });
    const local = { level: 2, path: "unified/sbx/abc" };
    expect(chainMatches(c, { id: "abc", uid: 998, mode: "run", proxyPort: 40123, local })).toBe(true);
    // The same chain without the local-services rules (another cgroup, or none) is not what is wanted.
    expect(chainMatches(c, { id: "abc", uid: 998, mode: "run", proxyPort: 40123 })).toBe(false);
    expect(chainMatches(c, { id: "abc", uid: 998, mode: "run", proxyPort: 40123, local: { level: 2, path: "sbx/abc" } })).toBe(false);
    expect(chainMatches(c, { id: "abc", uid: 998, mode: "run", proxyPort: 40124 })).toBe(false);
    expect(chainMatches(c, { id: "abc", uid: 998, mode: "stop" })).toBe(false);
    // The transparent path is part of what is wanted: a chain made without it does not match one that wants it.
    expect(c).toMatchObject({ natChain: true, natUids: [998] });
    expect(chainMatches(c, { id: "abc", uid: 998, mode: "run", proxyPort: 40123, local, transparent: true })).toBe(false);
  });
  test("a table without the nat map or its dispatch is not a whole base (it is loaded again)", () => {
    const doc = JSON.parse(json) as { nftables: Record<string, unknown>[] };
    const without = (pred: (o: Record<string, unknown>) => boolean) => parseTable(JSON.stringify({ nftables: doc.nftables.filter((o) => !pred(o)) }));
    expect(without((o) => "map" in o && (o.map as { name: string }).name === "guests_nat").baseOk).toBe(false);
    expect(without((o) => "rule" in o && (o.rule as { comment?: string }).comment === "sbx dispatch nat").baseOk).toBe(false);
    // A chain whose guest has no nat element is not converged either.
    const noElem = without((o) => "map" in o && (o.map as { name: string }).name === "guests_nat");
    expect(chainMatches(noElem.chains.get("sb_abc"), { id: "abc", uid: 998, mode: "run", proxyPort: 40123, local: { level: 2, path: "unified/sbx/abc" } })).toBe(false);
  });
  test("no table: nothing exists", () => expect(parseTable("")).toMatchObject({ exists: false, baseOk: false }));
  test("markers round-trip", () => {
    expect(parseMarker("sbx id=x1 uid=5 mode=stop")).toEqual({ id: "x1", uid: 5, mode: "stop" });
    expect(parseMarker("sbx id=x1 uid=5 mode=run port=7 local=2:sbx/x1")).toEqual({ id: "x1", uid: 5, mode: "run", proxyPort: 7, local: { level: 2, path: "sbx/x1" } });
    expect(parseMarker("sbx id=x1 uid=5 mode=run port=7 transparent")).toEqual({ id: "x1", uid: 5, mode: "run", proxyPort: 7, transparent: true });
    expect(parseMarker("something else")).toBeNull();
  });
});

describe("guest names", () => {
  test.each([
    ["alice", "abc123def456", "sbx-alice-abc123def456"],
    ["Alice.Smith", "abc123def456", null],
    ["averyveryverylongusername", "abc123def456", null],
  ])("%s / %s", (host, id, want) => {
    const n = guestUser(host, id);
    if (want) expect(n).toBe(want);
    expect(n.length).toBeLessThanOrEqual(USER_NAME_MAX);
    expect(n).toMatch(/^[a-z_][a-z0-9_-]*$/);
    expect(parseGuestUser(n)).toBe(id);
    expect(guestUser(host, id)).toBe(n); // deterministic
  });
  test("two long host names that share a prefix get different tags", () => {
    expect(guestUser("averyveryverylongusername1", "abc")).not.toBe(guestUser("averyveryverylongusername2", "abc"));
  });
  test("foreign accounts do not parse", () => {
    expect(parseGuestUser("sbxt-e2e")).toBeNull();
    expect(parseGuestUser("postgres")).toBeNull();
  });
});
