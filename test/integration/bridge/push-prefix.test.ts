// A sandbox pushes to its own branches (sbx/<name>/…) without asking; a push anywhere else (main, a tag, a colleague's
// branch) asks first: refused, recorded in the approvals queue egress uses, and once the user allows it there the next
// push of that branch goes through, and only that branch. Real bridge, real shim, real git, a real store.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bridgeSettingsOf, subjectText } from "../../../src/core/bridge-settings";
import { PolicyService } from "../../../src/policy/service";
import { Store } from "../../../src/store/store";
import { commitOn, git, makeHarness, refIn, type Harness } from "./harness";

let h: Harness;
let store: Store;
let id: number;
beforeAll(async () => {
  store = new Store(":memory:");
  id = store.createSandbox({ name: "demo", repo: "/r", backend: "docker" }).id;
  h = await makeHarness({
    settings: () => bridgeSettingsOf(store.getSandbox(id)!.identity),
    ask: (subject, reason) => {
      const a = store.recordPending(id, subjectText(subject), 0, reason, "bridge")!;
      return { id: a.id, count: a.count };
    },
  });
});
afterAll(async () => {
  await h.stop();
  store.close();
});

const pending = () => store.listApprovals({ state: "pending" }).map((a) => [a.kind, a.host, a.count]);

describe("the branch prefix", () => {
  test("its own branches go out without asking", async () => {
    await commitOn(h.clone, "work", { "a.txt": "a\n" });
    const r = await h.shim(["push", "origin", "work:sbx/demo/work"]);
    expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
    expect(await refIn(h.upstreamRepo, "refs/heads/sbx/demo/work")).not.toBe("");
    expect(pending()).toEqual([]);
  });

  test("outside it: refused, nothing reaches the remote, one pending approval (counted on a retry), and the message says what to do", async () => {
    const before = await refIn(h.upstreamRepo, "refs/heads/main");
    await commitOn(h.clone, "feature", { "b.txt": "b\n" });
    for (const [args, ref] of [[["push", "origin", "feature"], "feature"], [["push", "origin", "feature:main"], "main"], [["push", "origin", "feature:sbx/other/x"], "sbx/other/x"]] as const) {
      const r = await h.shim([...args]);
      expect({ args, code: r.code }).toEqual({ args, code: 77 });
      expect(r.stderr).toContain(`${ref} is outside it`);
      expect(r.stderr).toContain(`git push origin feature:sbx/demo/${ref}`);
      expect(r.stderr).toMatch(/approval \d+ is waiting \(sbx approvals allow \d+/);
      expect(r.stderr).toContain(`sbx bridge demo --allow-push ${ref}`);
    }
    expect(await refIn(h.upstreamRepo, "refs/heads/feature")).toBe("");
    expect(await refIn(h.upstreamRepo, "refs/heads/main")).toBe(before);
    expect((await h.shim(["push", "origin", "feature"])).code).toBe(77);
    expect(pending().sort()).toEqual([
      ["bridge", "push feature", 2],
      ["bridge", "push main", 1],
      ["bridge", "push sbx/other/x", 1],
    ]);
  });

  test("a tag outside it asks too", async () => {
    await git(h.clone, "tag", "v9.9");
    const r = await h.shim(["push", "origin", "v9.9"]);
    expect(r.code).toBe(77);
    expect(await refIn(h.upstreamRepo, "refs/tags/v9.9")).toBe("");
  });

  test("allowed in the queue: that branch's next push goes out; the others still ask; a deny changes nothing", async () => {
    const policy = new PolicyService({ store });
    const byHost = (s: string) => store.listApprovals({ state: "pending" }).find((a) => a.host === s)!;
    expect(() => policy.decide(byHost("push feature").id, "allow-global", "test")).toThrow(/cannot be allowed for every sandbox/);
    const d = policy.decide(byHost("push feature").id, "allow-sandbox", "test");
    expect({ pattern: d.pattern, added: d.added, action: d.action }).toEqual({ pattern: "push feature", added: true, action: "allow" });
    expect(bridgeSettingsOf(store.getSandbox(id)!.identity).pushTo).toEqual(["feature"]);
    const ok = await h.shim(["push", "origin", "feature"]);
    expect({ code: ok.code, err: ok.code === 0 ? "" : ok.stderr }).toEqual({ code: 0, err: "" });
    expect(await refIn(h.upstreamRepo, "refs/heads/feature")).not.toBe("");
    policy.decide(byHost("push main").id, "deny", "test");
    expect((await h.shim(["push", "origin", "feature:main"])).code).toBe(77);
    expect(store.listAudit({ kind: "bridge" }).map((a) => a.action)).toEqual(["allow", "deny"]);
  });
});
